"""A manifest written again from the WARC files of a large site holds a bounded number of URLs in memory."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from conftest import manifest_rows
from repairs import lose_manifest, run_archiver

from archiver.crawling.repair import rebuild_lost_manifest
from archiver.store import rediscovery
from archiver.store.snapshot import Snapshot

FOUND = ("found_by", "parent", "depth")


async def test_finding_how_each_url_was_found_holds_a_batch_of_urls_not_a_level(
    site, run_crawl, monkeypatch
) -> None:
    """The walk from the seeds, level by level, reads the URLs waiting to be met from SQLite a
    batch at a time: with levels of 40 and 80 URLs and batches of 5, it never holds more than a
    batch (and the one it is meeting); every URL is found as the crawl found it (the chain of
    redirects met last on its level too), and verify passes."""
    pages = [f"/p{number}" for number in range(40)]
    site.page("/", links=[*pages, "/old"])
    site.redirect("/old", "/older").redirect("/older", "/landed").page("/landed")
    for number, page in enumerate(pages):
        site.page(page, links=[f"/q{number}a", f"/q{number}b", "/"])
        site.page(f"/q{number}a").page(f"/q{number}b")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    before = manifest_rows(root, for_crawlers=True)
    assert len(before) > 120
    lose_manifest(root)

    monkeypatch.setattr(rediscovery, "MET_BATCH", 5)  # the batch: 5 URLs
    held: list[int] = []
    meet = rediscovery.Rediscovery.meet

    def counted(discovery: rediscovery.Rediscovery, *args: Any) -> None:
        held.append(sum(isinstance(thing, rediscovery.Met) for thing in gc.get_objects()))
        meet(discovery, *args)

    monkeypatch.setattr(rediscovery.Rediscovery, "meet", counted)
    snapshot = Snapshot(root)
    settings = snapshot.read_crawl_json()["settings"]
    captures = sum(1 for row in before.values() if row.warc_file)
    warnings = await asyncio.to_thread(rebuild_lost_manifest, snapshot, settings["warc_prefix"], settings)
    assert warnings == [
        f"the manifest was lost: written again from the WARC files, {captures} captures; the "
        "crawl goes on from them"
    ]
    assert len(held) > 120 and max(held) <= rediscovery.MET_BATCH + 2, max(held)

    after = manifest_rows(root, for_crawlers=True)
    assert {url: [getattr(row, name) for name in FOUND] for url, row in after.items()} == {
        url: [getattr(row, name) for name in FOUND] for url, row in before.items()
    }
    mirrored = await asyncio.to_thread(run_archiver, "mirror", str(root))
    assert mirrored.returncode == 0, mirrored.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
