"""A capture as its mirror file: HTML, CSS and SVG rewritten, anything else decoded as received.

The one rule of what a mirror file holds, whoever writes it: a worker process
drafting a page during the crawl (draft()), the crawl's writer, the crawl's
last pass over the pages whose links changed, and ``archiver mirror``
(RecordFiles, from the WARC records). A page rewritten with the same local
paths comes out byte for byte the same from all of them.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.content import (
    CSS_TYPE,
    DEFAULT_DECODE_LIMIT,
    HTML_TYPES,
    MAX_MARKUP,
    PARSED_TYPES,
    SVG_TYPE,
    XHTML_TYPE,
    Decoding,
    bounded_document,
    content_codings,
    mime_type,
)
from archiver.encodings import stylesheet_names_its_encoding
from archiver.errors import UnknownEncoding
from archiver.links import charset_from_content_type
from archiver.media_types import as_taken, content_type_field
from archiver.mirror.linker import Memo, Resolver
from archiver.mirror.local_paths import LocalPaths
from archiver.mirror.output import MirrorOutput
from archiver.mirror.plan import coding_of
from archiver.mirror.rewrite import rewrite_html, rewrite_svg
from archiver.mirror.scripts import neutralise_scripts
from archiver.mirror.stylesheets import rewrite_css_bytes
from archiver.paths import url_to_path
from archiver.sizes import human_bytes
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.referrers import (
    Reading,
    encoding_for,
    referred_by,
    referrer_key,
    referrer_reading,
    stored_body,
)
from archiver.store.rows import ManifestRow
from archiver.store.stored import payload_record, rendered_dom
from archiver.warc.reader import WarcReader, read_to_end
from archiver.warc.records import sha1_digest

REWRITE_LIMIT = DEFAULT_DECODE_LIMIT
"""HTML, CSS and SVG are rewritten in memory: decoded past this, the rest is left out (and noted)."""
DECODED_FILE_LIMIT = 256 * 1024**2
"""Bytes a content-encoded file of another type is decoded to at most (the rest is not expanded:
servers encode text, and a small body that inflates past this is a bomb)."""
ASSET_LIMIT = 4 * 1024**3
"""Bytes copied at most for a file stored as it is (no Content-Encoding)."""
CHUNK = 256 * 1024


@dataclass
class MirrorStats:
    """What a mirror build (or a crawl's mirror) wrote."""

    pages: int = 0
    stylesheets: int = 0
    other: int = 0
    bytes: int = 0
    redirects: int = 0
    """Redirecting URLs whose links lead to a local file."""
    shared: int = 0
    """Captures that share the file of an identical one (/dir/ and /dir/index.html)."""
    rewritten: int = 0
    """Pages a crawl wrote again at its end, as links on them changed state after they were written."""
    errors: list[str] = field(default_factory=list)
    """One line per capture that could not be written (URL: why)."""
    kept: list[str] = field(default_factory=list)
    """One line per capture whose record could not be read, its file before kept (URL: why)."""
    rekeyed: int = 0
    """CDXJ lines keyed again: an earlier version keyed them where pywb does not look."""
    reindexed: int | None = None
    """Lines of the CDXJ index written again from the WARC files (it was lost or damaged)."""
    seconds: float = 0.0

    def add(self, other: MirrorStats) -> None:
        """Count what another process of the same build wrote."""
        self.pages += other.pages
        self.stylesheets += other.stylesheets
        self.other += other.other
        self.bytes += other.bytes
        self.errors.extend(other.errors)
        self.kept.extend(other.kept)

    def count(self, mime: str | None, size: int) -> None:
        """Count one file written."""
        if mime == CSS_TYPE:
            self.stylesheets += 1
        elif mime in HTML_TYPES:
            self.pages += 1
        else:
            self.other += 1
        self.bytes += size

    @property
    def files(self) -> int:
        return self.pages + self.stylesheets + self.other

    @property
    def unfaithful(self) -> bool:
        """True if some capture has no file, or a file kept from before that its record can no
        longer vouch for: a script must see it (archiver mirror and a crawl's last pass exit 1)."""
        return bool(self.errors or self.kept)

    def summary(self) -> str:
        """One line for the terminal."""
        rewritten = f", {self.rewritten} pages written again at the end" if self.rewritten else ""
        kept = f"; {len(self.kept)} kept as the crawl wrote them" if self.kept else ""
        kept += f"; {self.rekeyed} index lines keyed again as pywb looks them up" if self.rekeyed else ""
        kept += (
            f"; index written again from the WARC files ({self.reindexed} lines)"
            if self.reindexed is not None
            else ""
        )
        line = (
            f"mirror: {self.files} files ({self.pages} pages, {self.stylesheets} stylesheets, "
            f"{self.other} other), {human_bytes(self.bytes)}, {self.redirects} redirects, "
            f"{self.shared} shared{rewritten}; "
            f"{len(self.errors)} errors{kept}; {self.seconds:.1f} s"
        )
        lines = [*_first(self.errors, "errors"), *_first(self.kept, "files kept")]
        return "\n".join([line, *(f"  {problem}" for problem in lines)])


SHOWN = 20
"""Errors, and files kept, the summary names at most each (a damaged WARC file may hold thousands)."""


def _first(said: list[str], what: str) -> list[str]:
    """The first SHOWN lines of ``said``, and how many more there are (verify names each record).

    >>> _first([f"u{n}" for n in range(22)], "errors")[-2:]
    ['u19', '... and 2 more errors (archiver verify names each record)']
    """
    more = len(said) - SHOWN
    if more <= 0:
        return said
    return [*said[:SHOWN], f"... and {more} more {what} (archiver verify names each record)"]


def rewritten(
    chunks: Iterable[bytes],
    url: str,
    content_type: str | None,
    content_encoding: str | None,
    path: str,
    resolve: Resolver,
    memo: Memo | None,
    referrer_encoding: str | None | UnknownEncoding = None,
) -> tuple[bytes, str | None]:
    """The mirror file of an HTML, CSS or SVG document stored at ``path``, and its note (None if none).

    ``chunks``: the payload as stored (still content-encoded). ``referrer_encoding``: of a
    stylesheet, the encoding of the document that refers to it (findings.findings()), or why
    it is not known: ValueError then, unless the stylesheet names its own (read as UTF-8, it
    would be other bytes than the crawl's file).
    """
    mime = mime_type(content_type)
    decoding = Decoding(chunks, content_encoding, REWRITE_LIMIT)
    body, capped = bounded_document(b"".join(decoding), mime)
    if (decoding.cut or capped) and mime != CSS_TYPE:
        body = _without_cut_tag(body)
    charset = charset_from_content_type(content_type)
    if isinstance(referrer_encoding, UnknownEncoding):
        if mime == CSS_TYPE and not stylesheet_names_its_encoding(body, charset):
            why = referrer_encoding.why
            raise ValueError(f"the record of the document that refers to it cannot be read ({why})")
        referrer_encoding = None
    if mime == CSS_TYPE:
        body = rewrite_css_bytes(body, url, charset, resolve, path, memo, referrer_encoding)
    elif mime == SVG_TYPE:
        body = rewrite_svg(body, url, charset, resolve, path, memo)
    else:
        body = rewrite_html(body, url, charset, resolve, path, memo, xml=mime == XHTML_TYPE)
    return body, _note(decoding, capped)


def decoded(chunks: Iterable[bytes], content_encoding: str | None) -> Decoding:
    """The mirror file of a capture that is not rewritten: its payload with its coding undone."""
    limit = DECODED_FILE_LIMIT if content_codings(content_encoding) else ASSET_LIMIT
    return Decoding(chunks, content_encoding, limit)


def note_of(decoding: Decoding, capped: bool = False) -> str | None:
    """What the mirror's file lacks, said for the manifest and index.html; None if nothing."""
    return _note(decoding, capped)


def _note(decoding: Decoding, capped: bool = False) -> str | None:
    notes = [decoding.problem] if decoding.problem else []
    if decoding.cut:
        notes.append(f"cut at {decoding.limit // 1024**2} MiB: the body decodes to more")
    if capped:
        notes.append(f"cut at {MAX_MARKUP:,} tags or url(): the document holds more")
    return "; ".join(notes) or None


def _without_cut_tag(body: bytes) -> bytes:
    """A page cut at the decoding limit without the tag the cut split (no ">" after its "<"):
    the rewriter does not see an unclosed tag, so a link in it would stay as the site wrote it."""
    start = body.rfind(b"<")
    return body[:start] if start != -1 and body.find(b">", start) == -1 else body


@dataclass(frozen=True)
class Draft:
    """A page's mirror file written during the crawl, before all its links were fetched."""

    path: str
    """Where it was written for: its natural path (the writer checks it is the one it gets)."""
    body: bytes
    note: str | None
    guesses: dict[str, str | None]
    """Links whose answer was a guess (LocalPaths): URL -> the local path used, or None."""


def draft(
    raw: bytes,
    url: str,
    content_type: str | None,
    content_encoding: str | None,
    resolve: LocalPaths,
    memo: Memo | None,
    referrer_encoding: str | None = None,
) -> Draft:
    """The mirror file of a fetched HTML, CSS or SVG document, with links as the crawl knows them now
    (``referrer_encoding``: see rewritten())."""
    path = url_to_path(url, mime_type(content_type) or None)
    resolve.drafting(url, path)
    body, note = rewritten(
        (raw,), url, content_type, content_encoding, path, resolve, memo, referrer_encoding
    )
    return Draft(path, body, note, dict(resolve.guesses))


def chunks_of(stream: Any) -> Iterator[bytes]:
    """A readable stream's bytes, CHUNK at a time."""
    return iter(lambda: stream.read(CHUNK), b"")


def link_unchanged(
    previous: Previous | None,
    files: MirrorOutput,
    row: ManifestRow,
    path: str,
    body: bytes | None = None,
    content_encoding: str | None = None,
) -> int | None:
    """The size of a re-archive's previous file of ``row``, unchanged, linked (or copied) at
    ``path``; None when there is none to take. ``body``: what a page or stylesheet is rewritten
    to (its links may have changed): linked only when the previous file holds the same bytes.
    Else the file is the payload decoded under ``content_encoding``, this capture's: the
    previous capture of the same stored bytes may have been sent under another coding, so its
    file is taken only if it holds the stored bytes themselves exactly when this capture has
    no coding to undo either."""
    if previous is None:
        return None
    found = previous.mirror_file(row.url, row.payload_digest)
    if found is None or (body is not None and hashlib.sha256(body).hexdigest() != found[1]):
        return None
    source, sha256, size = found
    if body is None and _holds_payload(source, row.payload_digest) == bool(content_codings(content_encoding)):
        return None
    return files.link(path, source, sha256, size)


def _holds_payload(path: Path, payload_digest: str | None) -> bool:
    """True if the file at ``path`` holds the bytes whose digest is ``payload_digest``."""
    digest = hashlib.sha1()
    try:
        with open(path, "rb") as file:
            while chunk := file.read(CHUNK):
                digest.update(chunk)
    except OSError:
        return False
    return sha1_digest(digest) == payload_digest


class RecordFiles:
    """Writes captures' mirror files from their WARC records (a revisit's payload from the record
    it refers to), rewriting with ``resolve``; counts them in ``stats``."""

    def __init__(
        self,
        records: WarcReader,
        manifest: Manifest,
        resolve: Resolver,
        stats: MirrorStats,
        previous: Previous | None = None,
    ) -> None:
        """``previous``: the snapshot a re-archive's revisits may refer to."""
        self.records = records
        self.previous = previous
        self.manifest = manifest
        self.resolve = resolve
        self.stats = stats
        self.memo = Memo()
        self._encodings: dict[str, Reading | UnknownEncoding] = {}
        """Of stylesheets' referrers: the encoding each is read in, by the stylesheets' parent."""

    def close(self) -> None:
        """Close the WARC files read (and the previous snapshot's); safe to call twice."""
        self.records.close()
        if self.previous is not None:
            self.previous.close()

    def write(self, files: MirrorOutput, row: ManifestRow, path: str) -> None:
        """Write the mirror file of the capture of ``row`` at ``path`` (a page rendered in a
        browser from its DOM)."""
        if row.dom_warc_file is not None and row.dom_warc_offset is not None:
            self._write_rendered(files, row, path)
            return
        stored, own_headers = payload_record(self.manifest, self.records, row, self.previous)
        content_type = as_taken(
            content_type_field(own_headers.headers) if own_headers else None, row.content_type
        )
        # A revisit's own headers say how its (identical, still encoded) payload was encoded.
        encoding = own_headers.get_header("Content-Encoding") if own_headers else None
        if row.content_type not in PARSED_TYPES:  # a re-archive's unchanged file is not read again
            linked = link_unchanged(self.previous, files, row, path, content_encoding=encoding)
            if linked is not None:
                self.stats.count(row.content_type, linked)
                return
        chunks = chunks_of(stored.raw_stream)
        mime = row.content_type or mime_type(content_type)
        if mime in PARSED_TYPES:
            referred = self.referrer_encoding(row) if mime == CSS_TYPE else None
            body, note = rewritten(
                chunks, row.url, content_type, encoding, path, self.resolve, self.memo, referred
            )
            # Rewritten from the first REWRITE_LIMIT bytes decoded: the rest of a larger record,
            # where its digests and CRC are settled (its head's among them), is read and checked
            # before the file is written from it.
            read_to_end(stored)
            size = link_unchanged(self.previous, files, row, path, body) if note is None else None
            self.stats.count(mime, size if size is not None else files.write(path, (body,), lambda: note))
            return
        decoding = decoded(chunks, encoding)
        self.stats.count(mime, files.write(path, decoding, lambda: note_of(decoding)))

    def referrer_encoding(self, row: ManifestRow) -> str | None | UnknownEncoding:
        """The encoding of the document that refers to the stylesheet of ``row``
        (store/referrers.py), each document read once, one that cannot be read too: then why
        (UnknownEncoding), which matters only to a stylesheet that names no encoding of its own
        (rewritten())."""
        key = referrer_key(row)
        document, linked = referred_by(row, self.manifest.get)
        if key not in self._encodings:
            body_of = functools.partial(
                stored_body, self.manifest, self.records, previous=self.previous, quiet=False
            )
            try:
                self._encodings[key] = referrer_reading(
                    document,
                    self.manifest.get,
                    body_of,
                    dom_of=lambda page: rendered_dom(self.records, page, REWRITE_LIMIT)[0],
                )
            except UnknownEncoding as exc:
                self._encodings[key] = exc
        found = self._encodings[key]
        return found if isinstance(found, UnknownEncoding) else encoding_for(linked, found)

    def content_encoding(self, source: str) -> str:
        """The Content-Encoding (plan.coding_of) of the record at ``source`` ('file offset length').

        Its head is taken only once the record is read to its end and checked (WarcReader.head()):
        a changed byte there would be taken as another coding, so a second capture of the payload
        would share (or not) the file of the first by headers no digest vouches for. A record that
        cannot be read has a coding of its own, that of no other record: nothing shares its file
        (it is reported when it is written)."""
        warc_file, offset, length = source.rsplit(" ", 2)
        try:
            headers = self.records.head(warc_file, int(offset), int(length) or None).http_headers
        except Exception:  # noqa: BLE001 - a damaged record is reported when it is written
            return f"unreadable {source}"
        return coding_of(headers.get_header("Content-Encoding") if headers else None)

    def _write_rendered(self, files: MirrorOutput, row: ManifestRow, path: str) -> None:
        """A page rendered in a browser: its DOM, links rewritten, scripts made inert (see scripts.py)."""
        html, charset = rendered_dom(self.records, row, REWRITE_LIMIT)
        html, capped = bounded_document(html, "text/html")
        if capped:
            html = _without_cut_tag(html)
        html = rewrite_html(html, row.url, "utf-8", self.resolve, path, self.memo, page_charset=charset)
        note = f"cut at {MAX_MARKUP:,} tags: the rendered DOM holds more" if capped else None
        self.stats.count("text/html", files.write(path, (neutralise_scripts(html),), lambda: note))
