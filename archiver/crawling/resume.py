"""Resume: what a crawl that was stopped or killed left behind, and the frontier it continues from.

Every URL the crawl met has a manifest row, ``queued`` until its fetch is
stored, so the frontier is rebuilt from the manifest.

The writer appends a batch's records to the WARC file, then commits their
rows, so a crash (kill -9, a power cut, a full disk while committing) can
leave bytes past the file's last committed record: whole records whose rows
were never committed, and maybe a last record cut short. Their URLs are still
``queued`` and are fetched again, so left in the WARC file they would be a
second capture of the same URL to every tool that reads it (pywb, warcio,
cdxj-indexer), and a torn one would be damage. So recovery cuts each WARC file
back to the end of its last committed record and keeps what it cut in
``crash-tails/`` (out of ``warc/``, so no tool indexes it), noted in crawl.json.
The WARC files then hold exactly the records the manifest names: still the
record of truth, with one record per URL.

CDXJ lines are appended (to ``index.cdxj.pending``) before their batch is
committed too: those naming no committed record are dropped the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

from archiver.config import CrawlConfig
from archiver.crawling.crawler import Crawler
from archiver.crawling.frontier import QueueItem
from archiver.crawling.politeness import KeptRobots
from archiver.crawling.recorded import FOUND_BY_ROBOTS
from archiver.errors import SnapshotError
from archiver.report import shell_word
from archiver.robots_answer import UNREACHABLE, robots_answer
from archiver.scope import BYTE_LIMIT, EXCLUDED, PAGE_LIMIT, ROBOTS, ROBOTS_UNREACHABLE
from archiver.store.committed import committed_end, last_named
from archiver.store.crawl_record import CrawlRecord
from archiver.store.crawler_chains import stored_robots_body
from archiver.store.index_rebuild import mend_index
from archiver.store.manifest import Manifest
from archiver.store.previous import open_previous
from archiver.store.referrers import MAX_HOPS
from archiver.store.rows import FETCHED, QUEUED, REDIRECTED, SKIPPED, ManifestRow
from archiver.store.seeds import seed_landings
from archiver.store.snapshot import CRASH_TAILS, Snapshot
from archiver.urls import is_earlier_form, normalize_url
from archiver.warc.cdxj import mark_keyed, marked_keyed
from archiver.warc.files import warc_paths
from archiver.warc.members import RecordPlaces, member_end
from archiver.warc.reader import WarcReader

log = logging.getLogger("archiver")

RELOAD_BATCH = 1000
"""URLs done by an earlier run claimed in one call when a crawl resumes."""


def recover(snapshot: Snapshot, prefix: str, manifest: Manifest, record: CrawlRecord) -> list[str]:
    """Cut what a crash left past the last commit off each WARC file and the pending CDXJ lines.

    Returns a warning for each file cut. Safe to run again after a crash of its own:
    what is cut is found again from the manifest, and kept aside under the same name.
    """
    warnings = []
    for path in warc_paths(snapshot.warc_dir, prefix):
        committed = committed_end(path, manifest)
        end, damaged = committed.end, committed.damaged
        size = path.stat().st_size
        if end >= size:
            continue
        kept = _set_aside(snapshot, path, end)
        record.note(
            CRASH_TAILS,
            [{"file": path.name, "offset": end, "length": size - end, "kept_in": kept}],
        )
        # Committed before the file is cut: cut first, a crash between would leave rows naming
        # records past the file's end, which no later resume could tell from damage.
        requeued = manifest.requeue_cut(path.name, end) if damaged else []
        manifest.commit()
        if end == 0:
            path.unlink()  # not even its warcinfo record was whole
        else:
            os.truncate(path, end)
        if damaged:
            _drop_cut_cdxj(snapshot.cdxj_path, path.name, end)
            shown = ", ".join(requeued[:3]) + (f" and {len(requeued) - 3} more" if len(requeued) > 3 else "")
            warnings.append(
                f"{path.name}: cut the {size - end} bytes from offset {end}, where it is damaged (kept in "
                f"{kept}); the {len(requeued)} URLs whose records were there are fetched again: {shown}"
            )
        else:
            warnings.append(
                f"{path.name}: cut the {size - end} bytes a crash left after its last committed record "
                f"(offset {end}; kept in {kept}); their URLs are fetched again"
            )
    drop_uncommitted_cdxj(snapshot.cdxj_pending_path, manifest)
    for warning in warnings:
        log.warning(warning)
    return warnings


def mend_lost_index(snapshot: Snapshot, manifest: Manifest, record: CrawlRecord) -> list[str]:
    """Write the CDXJ index again from the WARC files if an earlier run ended (and so left it
    whole and marked) and it was lost or changed since (store/index_rebuild.py): the end of this
    run would merge its own lines into what is left and mark that as whole. Returns a warning
    saying so, or nothing."""
    earlier = record.data.get("runs", [])[:-1]
    if not any(isinstance(run, dict) and run.get("finished") for run in earlier):
        return []  # killed before its first end: its lines are all still pending
    mended = mend_index(snapshot.cdxj_path, snapshot.cdxj_pending_path, snapshot.warc_dir, manifest)
    if mended.rebuilt is None:
        return []
    return [
        f"indexes/{snapshot.cdxj_path.name} was lost or damaged since the last run: written again "
        f"from the WARC files ({mended.rebuilt} lines)"
    ]


def check_manifest_kept(snapshot: Snapshot, prefix: str) -> None:
    """Raise SnapshotError if the manifest is gone while the WARC files hold records (see
    manifest_lost): --repair writes it again (crawling/repair.py)."""
    if manifest_lost(snapshot, prefix):
        raise SnapshotError(
            f"{snapshot.root} has WARC records but no manifest ({snapshot.manifest_path.name}): "
            f"resuming would cut them; {snapshot.repair_advice}"
        )


def check_manifest_readable(snapshot: Snapshot) -> None:
    """Raise SnapshotError if the manifest is damaged (Manifest.damage_in): read before a resume
    writes anything, so a refused resume changes nothing."""
    damage = Manifest.damage_in(snapshot.manifest_path)
    if damage:
        raise SnapshotError(f"{damage}; resuming would build on it: {snapshot.repair_advice}")


def check_records_in_place(snapshot: Snapshot) -> None:
    """Raise SnapshotError if a record the manifest names is not where its row says
    (records_out_of_place): read before a resume writes anything."""
    moved = records_out_of_place(snapshot)
    if moved:
        raise SnapshotError(
            f"{moved}; resuming would build on it "
            f"(archiver verify {shell_word(snapshot.root)} lists what else is wrong)"
        )


def records_out_of_place(snapshot: Snapshot) -> str | None:
    """Where the first record the manifest names is not where its row says, and why (None if
    every one is): no record (a gzip member, or ``WARC/`` in an uncompressed file) starts at its
    offset, or none (nor the file's end) just past its length. Bytes inserted or removed since
    the crawl moved the records after them; recovery would take the first moved one for a
    crash's tail and cut the rest, and the rows would name other bytes. Two reads of a few bytes
    a record, nothing inflated, each file opened once. A record past the file's end is left to
    recover() (a file cut short: fetched again)."""
    if not Manifest.begun(snapshot.manifest_path):
        return None
    with (
        Manifest.open(snapshot.manifest_path, readonly=True) as manifest,
        RecordPlaces(snapshot.warc_dir) as files,
    ):
        places = (
            place
            for row in manifest.captures()
            for place in (
                (row.url, row.warc_file, row.warc_offset, row.warc_length),
                (row.url, row.dom_warc_file, row.dom_warc_offset, row.dom_warc_length),
            )
        )
        last: dict[str, int] = {}
        for url, name, offset, length in places:
            if name is None or offset is None or not length:
                continue
            if name not in last:
                named = last_named(manifest, name)
                last[name] = 0 if named is None else named.offset
            # Past the last record a row names, a crash may have left anything (zeros, after a
            # power cut): recover() cuts it.
            moved = files.moved(name, offset, length, offset < last[name])
            if moved:
                return (
                    f"warc/{name}@{offset}: the record of {url} is not where the manifest says ({moved}): "
                    "bytes were inserted or removed since it was written"
                )
    return None


def manifest_lost(snapshot: Snapshot, prefix: str) -> bool:
    """True if the manifest is gone (missing, or never begun) while the WARC files hold records
    past their warcinfo: a crawl killed as it began has none, so the manifest was lost since,
    and recovery would cut every record it no longer names."""
    if Manifest.begun(snapshot.manifest_path):
        return False
    for path in warc_paths(snapshot.warc_dir, prefix):
        first = member_end(path, 0, 1)
        if first is not None and first < path.stat().st_size:
            return True
    return False


def _set_aside(snapshot: Snapshot, path: Path, offset: int) -> str:
    """Copy ``path`` from ``offset`` on into crash-tails/ (synced to disk); returns where, relative."""
    folder = snapshot.crash_tails_dir
    folder.mkdir(exist_ok=True)
    kept = folder / f"{path.name}.{offset}.tail"
    partial = kept.with_name(kept.name + ".partial")
    with open(path, "rb") as source, open(partial, "wb") as target:
        source.seek(offset)
        shutil.copyfileobj(source, target)
        target.flush()
        os.fsync(target.fileno())
    os.replace(partial, kept)
    return str(kept.relative_to(snapshot.root))


def drop_uncommitted_cdxj(pending: Path, manifest: Manifest) -> None:
    """Keep only the pending CDXJ lines that name a record a committed row names."""
    if not pending.exists():
        return
    temporary = pending.with_name(pending.name + ".tmp")
    with (
        open(pending, encoding="utf-8", errors="replace") as lines,
        open(temporary, "w", encoding="utf-8") as out,
    ):
        for line in lines:
            location = _location(line)
            if location is not None and manifest.has_capture_at(*location):
                out.write(line)
    os.replace(temporary, pending)


def _drop_cut_cdxj(index: Path, warc_file: str, end: int) -> None:
    """Drop the lines of the sorted ``index`` that name a record of ``warc_file`` cut at ``end``."""
    drop_cdxj_lines(index, lambda place: place[0] == warc_file and place[1] >= end)


def drop_cdxj_lines(index: Path, dropped: Callable[[tuple[str, int]], bool]) -> None:
    """Drop the lines of ``index`` whose record's (file, offset) is ``dropped``, the others kept
    in their order; an index marked keyed (cdxj.mark_keyed) is marked again: no line is added."""
    if not index.exists():
        return
    keyed = marked_keyed(index)
    temporary = index.with_name(index.name + ".tmp")
    with (
        open(index, encoding="utf-8", errors="surrogateescape") as lines,
        open(temporary, "w", encoding="utf-8", errors="surrogateescape") as out,
    ):
        for line in lines:
            location = _location(line)
            if location is None or not dropped(location):
                out.write(line)
    os.replace(temporary, index)
    if keyed:
        mark_keyed(index)


def _lifted(reason: str | None, config: CrawlConfig) -> bool:
    """True if a URL skipped for ``reason`` is to be tried again by a crawl with ``config``: a
    robots.txt out of reach is asked again."""
    return reason in (PAGE_LIMIT, BYTE_LIMIT, ROBOTS_UNREACHABLE) or (
        reason == ROBOTS and not config.obey_robots
    )


def _location(line: str) -> tuple[str, int] | None:
    """(file, offset) of a CDXJ line's record, or None for a line a crash cut short."""
    if not line.endswith("\n"):
        return None
    try:
        block = json.loads(line.split(" ", 2)[2])
        return str(block["filename"]), int(block["offset"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


async def reload(crawler: Crawler, manifest: Manifest) -> None:
    """Refill the frontier (and the renders not done) from the manifest of an interrupted crawl,
    count what it did, and take in the scope where its seeds' redirects landed.

    URLs skipped for a reason the crawl's settings may have lifted since (a page or
    byte limit, which --resume may raise; robots.txt, if --ignore-robots is given now)
    are queued again: the limits skip them again if they still hold. URLs still to
    fetch that the --exclude patterns now match are skipped as excluded.
    """
    pages = size = 0
    done: list[str] = []
    excluded = []
    for row in manifest.rows():
        if row.outcome == SKIPPED and not _lifted(row.reason, crawler.config):
            continue
        if row.outcome in (QUEUED, SKIPPED):
            # --exclude given with --resume applies to what is still to fetch.
            if crawler.scope.skip_reason(row.url, row.depth, requisite=True) != EXCLUDED:
                await crawler.add(row.url, row.depth, row.found_by, row.parent, row.request)
                continue
            excluded.append(dataclasses.replace(row, outcome=SKIPPED, reason=EXCLUDED))
        else:
            if not row.for_crawlers:  # robots.txt and sitemaps count against no --max-pages
                pages += 1
                size += row.length or 0
            if row.render_pending and row.outcome == FETCHED and crawler.renderer is not None:
                page = QueueItem(row.url, row.depth, 0, found_by=row.found_by, parent=row.parent)
                crawler.renderer.resume(page, row.render_reason or "")
        done.append(row.url)
        if is_earlier_form(row.url):  # kept by an earlier version: links name it escaped now
            done.append(normalize_url(row.url))
        if len(done) >= RELOAD_BATCH:
            await crawler.frontier.claim(done)
            done.clear()
    await crawler.frontier.claim(done)
    crawler.count_done(pages, size)
    crawler.scope = crawler.scope.with_seeds(seed_landings(manifest))
    for row in excluded:  # before the writer starts: this is the only writer yet
        manifest.upsert(row)
    manifest.commit()


def kept_robots(snapshot: Snapshot, manifest: Manifest) -> Iterator[KeptRobots]:
    """(origin, status, body, seconds since it came, URL it came from) of each robots.txt answer an
    interrupted crawl read rules from (redirects followed), also one a page linked first (its row
    says so): one that gave rules or said there are none (robots_answer()). One out of reach, or a chain given
    up, is asked again: of one the crawl asked itself, (origin, None, b"", 0.0, URL), so that its
    answer now is recorded again, as the crawl never interrupted would have recorded it (the
    snapshot holds every answer the crawl read rules from, and the row names the latest). A
    re-archive's revisit of an unchanged robots.txt is read from the previous snapshot it refers to."""
    now = time.time()
    previous = open_previous(snapshot)
    with WarcReader(snapshot.warc_dir) as records, previous or contextlib.nullcontext():
        first_hops = (
            "url LIKE '%/robots.txt' AND found_by != 'redirect' AND (parent IS NULL OR found_by != 'robots')"
        )
        for first in manifest.rows(where=first_hops):
            if "/" in first.url.partition("://")[2].removesuffix("/robots.txt"):
                continue  # no origin's own robots.txt
            origin = first.url.removesuffix("/robots.txt")
            end: ManifestRow | None = first
            for _hop in range(MAX_HOPS):
                if end is None or end.outcome != REDIRECTED or not end.redirect_to:
                    break
                end = manifest.get(end.redirect_to)
            body = None
            if (
                end is not None
                and end.outcome == FETCHED
                and end.status is not None
                and end.fetched_at is not None
                and robots_answer(end.status) != UNREACHABLE
            ):
                # Of one cut at the size limit, the whole lines the crawl read its rules from.
                body = stored_robots_body(manifest, records, end, previous)
            if end is not None and end.status is not None and end.fetched_at is not None and body is not None:
                age = now - datetime.fromisoformat(end.fetched_at).timestamp()
                yield origin, end.status, body, max(age, 0.0), end.url
            elif first.found_by == FOUND_BY_ROBOTS:
                yield origin, None, b"", 0.0, first.url
