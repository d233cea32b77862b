"""A WARC file whose warcinfo record is damaged gets it written again by crawl --resume --repair."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conftest import manifest_rows
from repairs import mirror_bytes, run_archiver
from test_repair_index import crawled
from test_verify_tamper import members
from warcio.archiveiterator import ArchiveIterator

__all__ = ["crawled"]  # the fixture, used by name


async def test_a_damaged_warcinfo_is_set_aside_and_written_again_from_crawl_json(crawled: Path, site) -> None:
    """verify names the damaged warcinfo; --repair keeps its bytes in damaged-records/ and writes
    a warcinfo record of the same length in its place (every record after it stays where the
    manifest and the index say), fetching nothing; verify then passes."""
    root = crawled
    (warc,) = (root / "warc").glob("*.warc.gz")
    offsets = members(warc)
    data = bytearray(warc.read_bytes())
    data[offsets[1] // 2] ^= 0xFF  # a byte of its gzip data: it no longer inflates
    warc.write_bytes(bytes(data))
    damaged = bytes(data[: offsets[1]])
    rows, mirror, hits = manifest_rows(root, for_crawlers=True), mirror_bytes(root), dict(site.hits)

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1 and f"{warc.name}@0" in verified.stdout

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 4, repaired.stderr  # as the crawl: /missing answered 404
    assert repaired.stderr.splitlines()[0] == (
        f"archiver: warning: {warc.name}@0: the file's warcinfo record is damaged: set aside in "
        "damaged-records/, written again from crawl.json"
    )
    assert dict(site.hits) == hits
    (note,) = json.loads((root / "crawl.json").read_text())["repairs"]
    assert (root / note["kept_in"]).read_bytes() == damaged
    assert members(warc) == offsets and len(warc.read_bytes()) == len(data)
    with open(warc, "rb") as stream:
        info = next(iter(ArchiveIterator(stream)))
    assert info.rec_type == "warcinfo"
    assert info.rec_headers.get_header("WARC-Filename") == warc.name
    stamp = warc.name.rsplit("-", 2)[-2]
    assert (
        info.rec_headers.get_header("WARC-Date").replace("-", "").replace(":", "").replace("T", "")[:14]
        == stamp
    )
    said = info.content_stream().read().decode()
    assert f"description: crawl of {site.url('/')}\r\n" in said and "isPartOf: archiver\r\n" in said
    assert manifest_rows(root, for_crawlers=True) == rows and mirror_bytes(root) == mirror
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
