"""Resume: what a crawl that was stopped or killed left behind, and the frontier it continues from.

Every URL the crawl met has a manifest row, ``queued`` until its fetch is
stored, so the frontier is rebuilt from the manifest. What a crash can leave
in the WARC files past the last commit is found here and recorded in
crawl.json, so ``archiver verify`` tells it from damage done later.
"""

from __future__ import annotations

import logging

from archiver.crawling.crawler import Crawler
from archiver.store.crawl_record import CrawlRecord
from archiver.store.manifest import QUEUED, SKIPPED, Manifest
from archiver.store.snapshot import TORN_TAILS, UNCOMMITTED_TAILS, Snapshot
from archiver.warc.files import warc_paths
from archiver.warc.reader import member_end, torn_offset

log = logging.getLogger("archiver")

RELOAD_BATCH = 1000
"""URLs done by an earlier run claimed in one call when a crawl resumes."""


def recover(snapshot: Snapshot, prefix: str, manifest: Manifest, record: CrawlRecord) -> list[str]:
    """Find the tails a crash left in the WARC files, note them in crawl.json; returns warnings."""
    torn = torn_files(snapshot, prefix)
    warnings = [
        f"{name} ends in a record cut short at offset {offset} (left as is; new records go to a new file)"
        for name, offset in torn
    ]
    record.note(TORN_TAILS, ({"file": name, "offset": offset} for name, offset in torn))
    uncommitted = uncommitted_tails(snapshot, prefix, manifest, dict(torn))
    warnings.extend(
        f"{name} holds records from offset {offset} that the interrupted crawl "
        f"wrote but never committed (left as is; those URLs are fetched again)"
        for name, offset in uncommitted
    )
    record.note(UNCOMMITTED_TAILS, ({"file": name, "offset": offset} for name, offset in uncommitted))
    for warning in warnings:
        log.warning(warning)
    return warnings


def torn_files(snapshot: Snapshot, prefix: str) -> list[tuple[str, int]]:
    """(file, offset) of WARC files whose last record a crash cut short (left as they are)."""
    torn = []
    for path in warc_paths(snapshot.warc_dir, prefix):
        offset = torn_offset(path)
        if offset is not None:
            torn.append((path.name, offset))
    return torn


def uncommitted_tails(
    snapshot: Snapshot, prefix: str, manifest: Manifest, torn: dict[str, int]
) -> list[tuple[str, int]]:
    """(file, offset) from which WARC files hold whole records no manifest row was committed for.

    The writer appends a batch's records, then commits its rows: a crash in
    between (kill -9, a power cut) leaves records no row, CDXJ line or mirror
    file names. The last committed record of a file is a response or revisit
    followed by its request: what follows those two members is such a tail.
    """
    tails = []
    for path in warc_paths(snapshot.warc_dir, prefix):
        end = torn.get(path.name, path.stat().st_size)
        last = manifest.last_capture_offset(path.name)
        # No row at all: only the warcinfo record was committed.
        committed = member_end(path, 0, 1) if last is None else member_end(path, last, 2)
        if committed is not None and committed < end:
            tails.append((path.name, committed))
    return tails


async def reload(crawler: Crawler, manifest: Manifest) -> None:
    """Refill the frontier from the manifest of an interrupted crawl, count what it did, and
    take in the scope where its seeds' redirects landed."""
    pages = size = 0
    done: list[str] = []
    for row in manifest.rows():
        if row.outcome == SKIPPED:
            continue
        if row.outcome == QUEUED:
            await crawler.add(row.url, row.depth, row.found_by, row.parent)
            continue
        done.append(row.url)
        if len(done) >= RELOAD_BATCH:
            await crawler.frontier.claim(done)
            done.clear()
        pages += 1
        size += row.length or 0
    await crawler.frontier.claim(done)
    crawler.count_done(pages, size)
    crawler.scope = crawler.scope.with_seeds(manifest.seed_landings())
