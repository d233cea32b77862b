"""The bodies of archived pages read back for the completeness check: a page's record read
as the crawl read its answer (a revisit's payload taken from its original, here or in the
snapshot a re-archive refers to; the Content-Encoding undone up to the crawl's limit), and a
rendered page's DOM. Kept apart from the link checks, which judge what these return, so the
rules of where a body lives in the WARC files are read in one place."""

from __future__ import annotations

from archiver.content import DEFAULT_DECODE_LIMIT, decode_stream
from archiver.errors import WarcDamage
from archiver.media_types import content_type_field
from archiver.store.earlier import EarlierRecords
from archiver.store.rows import ManifestRow
from archiver.warc.dom import CHARSET_FIELD
from archiver.warc.integrity import Records
from archiver.warc.reader import PARSE_ERRORS, WarcReader
from archiver.warc.record_index import RecordEntry
from archiver.warc.records import NOT_MODIFIED_PROFILE


def read_dom(row: ManifestRow, records: Records, doms: WarcReader) -> tuple[bytes | None, str | None]:
    """The rendered DOM of a page and the charset of the page it was rendered from (which its
    queries are written in); None if its record is damaged (reported already) or unreadable."""
    entry = records.get((row.dom_warc_file or "", row.dom_warc_offset or 0))
    if entry is None or not entry.intact or entry.record_type != "resource":
        return None, None
    try:
        stored = doms.read(entry.file, entry.offset, DEFAULT_DECODE_LIMIT)
    except (OSError, WarcDamage, *PARSE_ERRORS):
        return None, None
    return stored.payload, stored.rec_headers.get_header(CHARSET_FIELD)


def read_page(
    entry: RecordEntry,
    records: Records,
    pages: WarcReader,
    revisited: WarcReader,
    earlier: EarlierRecords | None = None,
) -> tuple[bytes | None, str | None]:
    """The decoded body of an archived page and its Content-Type; None if it cannot be read.

    A damaged record is left out: the integrity check has reported it. A revisit's payload is
    its original's, here or in the ``earlier`` snapshot of a re-archive; a 304's revisit takes
    its original's headers too (its own are the 304's). An original is read only once the
    integrity check found it intact, as a page is: the body is decoded up to the crawl's limit,
    so the rest of a large record, where its digests are settled, is not read here.
    """
    if not entry.intact:
        return None, None
    try:
        stored = pages.record(entry.file, entry.offset)
        http = stored.http_headers
        if http is None:
            return None, None
        payload = stored.raw_stream
        if entry.record_type == "revisit":
            refers_to = entry.refers_to or ("", "")
            key = records.response_at(*refers_to)
            original = records.get(key) if key else None
            before = earlier.original(*refers_to) if original is None and earlier is not None else None
            if original is not None and original.intact:
                payload_record = revisited.record(original.file, original.offset)
            elif before is not None and before.row.warc_file and before.row.warc_offset is not None:
                where = (before.row.warc_file, before.row.warc_offset)
                payload_record = before.snapshot.records.record(*where)
            else:
                return None, None
            payload = payload_record.raw_stream
            if stored.rec_headers.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE:
                http = payload_record.http_headers
                if http is None:
                    return None, None
        # The crawl's decoder, with the crawl's limit: the same links as the crawl took.
        body = decode_stream(payload, http.get_header("Content-Encoding")).body
    except (OSError, WarcDamage, *PARSE_ERRORS):
        return None, None
    return body, content_type_field(http.headers)
