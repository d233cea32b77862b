"""A captured URL read back from the snapshot: the record holding its payload, revisits followed;
the rendered DOM of a page.

The mirror builds its files from these, and a browser rendering a page is
answered from them for every URL the crawl has captured already. A revisit of
a re-archive may refer to a record of the previous snapshot (store/previous.py).
"""

from __future__ import annotations

from typing import Any

from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.rows import ManifestRow
from archiver.urls import try_normalize
from archiver.warc.dom import CHARSET_FIELD, page_of
from archiver.warc.reader import WarcReader, read_to_end
from archiver.warc.records import NOT_MODIFIED_PROFILE


def payload_record(
    manifest: Manifest, records: WarcReader, row: ManifestRow, previous: Previous | None = None
) -> tuple[Any, Any]:
    """(record holding the payload, the HTTP headers that describe it) of a response or revisit row.

    A revisit's payload is that of the response it refers to, which must be a
    whole stored response with the same digest, in this snapshot or in
    ``previous``; raises ValueError if not. Its headers are the revisit's own,
    but for a 304's revisit (server-not-modified), whose headers are the 304's:
    the original's then say how the payload is encoded.
    """
    assert row.warc_file is not None and row.warc_offset is not None
    record = records.record(row.warc_file, row.warc_offset, row.warc_length)
    if record.rec_type != "revisit":
        return record, record.http_headers
    # Its head is all its block holds, and all that is read of it: read to its end, checked,
    # so a changed byte of its headers (the payload's Content-Encoding, or the original it
    # names) is damage, as in a record read whole.
    http_headers = read_to_end(record).http_headers
    refers_to = record.rec_headers.get_header("WARC-Refers-To-Target-URI")
    refers_date = record.rec_headers.get_header("WARC-Refers-To-Date")
    original = manifest.get(refers_to) if refers_to else None
    if (
        original is not None
        and original.record_type == "response"
        and original.warc_file
        and original.payload_digest == row.payload_digest
        and original.warc_offset is not None
    ):
        payload = records.record(original.warc_file, original.warc_offset, original.warc_length)
    else:
        earlier = previous.at(refers_to, refers_date) if previous and refers_to and refers_date else None
        if earlier is None or earlier.payload_digest != row.payload_digest:
            raise ValueError(f"revisit of {refers_to}: no stored response with its payload")
        assert earlier.row.warc_file is not None and earlier.row.warc_offset is not None
        payload = earlier.snapshot.records.record(
            earlier.row.warc_file, earlier.row.warc_offset, earlier.row.warc_length
        )
    if record.rec_headers.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE:
        http_headers = payload.http_headers
    return payload, http_headers


def rendered_dom(records: WarcReader, row: ManifestRow, limit: int) -> tuple[bytes, str | None]:
    """The rendered DOM of the page of ``row`` (which has one) and the charset of its page
    (WARC-Page-Charset, which its queries are written in); raises ValueError if its record is
    no DOM of that page or holds more than ``limit`` bytes, or what reading a damaged one raises."""
    assert row.dom_warc_file is not None and row.dom_warc_offset is not None
    record = records.record(row.dom_warc_file, row.dom_warc_offset, row.dom_warc_length)
    if (
        record.rec_type != "resource"
        or page_of(record.rec_headers.get_header("WARC-Target-URI") or "") != row.url
    ):
        raise ValueError(f"no rendered DOM of {row.url} at {row.dom_warc_file}@{row.dom_warc_offset}")
    html = record.raw_stream.read(limit + 1)
    if len(html) > limit:  # the crawl keeps no DOM this large
        raise ValueError(f"the rendered DOM of {row.url} is larger than {limit} bytes")
    # Its WARC-Page-Charset is covered by its gzip member's CRC alone, met only at the
    # member's end, which a record read streamed may not have reached with its last byte.
    read_to_end(record)
    return html, record.rec_headers.get_header(CHARSET_FIELD)


def sent_referer(row: ManifestRow, reader: WarcReader) -> str | None:
    """The Referer (normalised) of the request record of ``row``'s capture, which follows its
    response or revisit record (warc/files.py); None if it sent none or cannot be read."""
    if row.warc_file is None or row.warc_offset is None or row.warc_length is None:
        return None
    try:
        record = reader.record(row.warc_file, row.warc_offset + row.warc_length)
        if record.rec_type != "request" or record.rec_headers.get_header("WARC-Target-URI") != row.url:
            return None
        sent = record.http_headers.get_header("Referer") if record.http_headers is not None else None
    except Exception:  # noqa: BLE001 - damaged: found by nothing, as before
        return None
    return try_normalize(sent) if sent else None
