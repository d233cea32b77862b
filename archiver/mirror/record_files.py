"""Mirror files written from WARC records: ``archiver mirror`` and a crawl's last pass read
each capture back (a revisit's payload from the record it refers to, a rendered page from its
DOM) and write what :mod:`archiver.mirror.document` says its file holds. Apart from that rule
because only these read the WARC files; a crawl drafts its pages from the bytes it fetched."""

from __future__ import annotations

import functools

from archiver.content import CSS_TYPE, MAX_MARKUP, PARSED_TYPES, bounded_document, mime_type
from archiver.errors import UnknownEncoding
from archiver.media_types import as_taken, content_type_field
from archiver.mirror.document import (
    REWRITE_LIMIT,
    chunks_of,
    decoded,
    link_unchanged,
    note_of,
    rewritten,
    without_cut_tag,
)
from archiver.mirror.linker import Memo, Resolver
from archiver.mirror.output import MirrorOutput
from archiver.mirror.plan import coding_of
from archiver.mirror.rewrite import rewrite_html
from archiver.mirror.scripts import neutralise_scripts
from archiver.mirror.stats import MirrorStats
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
            refresh = own_headers.get_header("Refresh") if own_headers else None
            body, note = rewritten(
                chunks, row.url, content_type, encoding, path, self.resolve, self.memo, referred, refresh
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
            html = without_cut_tag(html)
        html = rewrite_html(html, row.url, "utf-8", self.resolve, path, self.memo, page_charset=charset)
        note = f"cut at {MAX_MARKUP:,} tags: the rendered DOM holds more" if capped else None
        self.stats.count("text/html", files.write(path, (neutralise_scripts(html),), lambda: note))
