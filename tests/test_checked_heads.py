"""Readers of a snapshot take a record's headers only once its digests vouch for them.

Each test changes a byte of a record's head in place (its gzip member compressed again, so
only its digests tell, as in an uncompressed WARC file) and shows that the reader treats the
record as damaged instead of taking the changed headers.
"""

from __future__ import annotations

import gzip
from typing import Any

from conftest import manifest_rows
from test_verify_tamper import edit_in_place, server_blanked

from archiver import cli

GZIPPED = gzip.compress(b"the same bytes, stored twice" * 20, mtime=0)


async def test_a_changed_head_of_a_payload_captured_twice_does_not_share_its_file(
    site: Any, run_crawl: Any, capsys: Any
) -> None:
    """Two captures of one stored payload share a mirror file only under one Content-Encoding.
    The mirror build reads that of the first capture from its record: changed there (the gzip
    it was sent with renamed away), it must not be taken as the second's (none), which would
    give the second the first's file: the first is damage, and the second gets its own."""
    site.page("/", links=["/a.bin", "/b.bin"])
    site.file("/a.bin", GZIPPED, "application/octet-stream", headers={"Content-Encoding": "gzip"})
    site.file("/b.bin", GZIPPED, "application/octet-stream")
    await site.start()
    root = (await run_crawl(site.url("/"), concurrency=1)).snapshot.root
    rows = manifest_rows(root)
    first, second = rows[site.url("/a.bin")], rows[site.url("/b.bin")]
    assert first.record_type == "response" and second.record_type == "revisit"
    assert first.local_path != second.local_path
    assert first.warc_offset is not None and first.warc_length is not None
    edit_in_place(
        root / "warc" / str(first.warc_file),
        first.warc_offset,
        first.warc_length,
        server_blanked(b"Content-Encoding: gzip", b"Content-Encodinx: gzip"),
    )
    assert cli.main(["mirror", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"{first.url}: kept mirror/{first.local_path} as the crawl wrote it" in out, out
    rebuilt = manifest_rows(root)[second.url]
    assert rebuilt.local_path == second.local_path
    assert (root / "mirror" / str(rebuilt.local_path)).read_bytes() == GZIPPED
