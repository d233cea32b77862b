"""A captured URL read back from the snapshot: the record holding its payload, revisits followed.

The mirror builds its files from these, and a browser rendering a page is
answered from them for every URL the crawl has captured already.
"""

from __future__ import annotations

from typing import Any

from archiver.store.manifest import Manifest, ManifestRow
from archiver.warc.reader import WarcReader


def payload_record(manifest: Manifest, records: WarcReader, row: ManifestRow) -> tuple[Any, Any]:
    """(record holding the payload, the row's own HTTP headers) of a response or revisit row.

    A revisit's payload is that of the response it refers to, which must be
    a whole stored response with the same digest; raises ValueError if not.
    """
    assert row.warc_file is not None and row.warc_offset is not None
    record = records.record(row.warc_file, row.warc_offset, row.warc_length)
    if record.rec_type != "revisit":
        return record, record.http_headers
    http_headers = record.http_headers
    refers_to = record.rec_headers.get_header("WARC-Refers-To-Target-URI")
    original = manifest.get(refers_to) if refers_to else None
    if (
        original is None
        or original.record_type != "response"
        or not original.warc_file
        or original.payload_digest != row.payload_digest
        or original.warc_offset is None
    ):
        raise ValueError(f"revisit of {refers_to}: no stored response with its payload")
    return (
        records.record(original.warc_file, original.warc_offset, original.warc_length),
        http_headers,
    )
