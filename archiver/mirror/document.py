"""A capture as its mirror file: HTML, CSS and SVG rewritten, anything else decoded as received.

The one rule of what a mirror file holds, whoever writes it: a worker process
drafting a page during the crawl (draft()), the crawl's writer, the crawl's
last pass over the pages whose links changed, and ``archiver mirror``
(record_files.RecordFiles, from the WARC records). A page rewritten with the same local
paths comes out byte for byte the same from all of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver.content import (
    CSS_TYPE,
    DEFAULT_DECODE_LIMIT,
    MAX_MARKUP,
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
from archiver.mirror.linker import Memo, Resolver
from archiver.mirror.local_paths import LocalPaths
from archiver.mirror.output import MirrorOutput
from archiver.mirror.rewrite import rewrite_html, rewrite_svg
from archiver.mirror.stylesheets import rewrite_css_bytes
from archiver.paths import url_to_path
from archiver.store.previous import Previous
from archiver.store.rows import ManifestRow
from archiver.warc.records import sha1_digest

REWRITE_LIMIT = DEFAULT_DECODE_LIMIT
"""HTML, CSS and SVG are rewritten in memory: decoded past this, the rest is left out (and noted)."""
DECODED_FILE_LIMIT = 256 * 1024**2
"""Bytes a content-encoded file of another type is decoded to at most (the rest is not expanded:
servers encode text, and a small body that inflates past this is a bomb)."""
ASSET_LIMIT = 4 * 1024**3
"""Bytes copied at most for a file stored as it is (no Content-Encoding)."""
CHUNK = 256 * 1024


def rewritten(
    chunks: Iterable[bytes],
    url: str,
    content_type: str | None,
    content_encoding: str | None,
    path: str,
    resolve: Resolver,
    memo: Memo | None,
    referrer_encoding: str | None | UnknownEncoding = None,
    refresh: str | None = None,
) -> tuple[bytes, str | None]:
    """The mirror file of an HTML, CSS or SVG document stored at ``path``, and its note (None if none).

    ``chunks``: the payload as stored (still content-encoded). ``referrer_encoding``: of a
    stylesheet, the encoding of the document that refers to it (findings.findings()), or why
    it is not known: ValueError then, unless the stylesheet names its own (read as UTF-8, it
    would be other bytes than the crawl's file). ``refresh``: the answer's Refresh header (of a
    page: rewrite.refresh_tag()).
    """
    mime = mime_type(content_type)
    decoding = Decoding(chunks, content_encoding, REWRITE_LIMIT)
    body, capped = bounded_document(b"".join(decoding), mime)
    if (decoding.cut or capped) and mime != CSS_TYPE:
        body = without_cut_tag(body)
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
        body = rewrite_html(body, url, charset, resolve, path, memo, xml=mime == XHTML_TYPE, refresh=refresh)
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


def without_cut_tag(body: bytes) -> bytes:
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
    refresh: str | None = None,
) -> Draft:
    """The mirror file of a fetched HTML, CSS or SVG document, with links as the crawl knows them now
    (``referrer_encoding``, ``refresh``: see rewritten())."""
    path = url_to_path(url, mime_type(content_type) or None)
    resolve.drafting(url, path)
    body, note = rewritten(
        (raw,), url, content_type, content_encoding, path, resolve, memo, referrer_encoding, refresh
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
