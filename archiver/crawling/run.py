"""crawl(): open the snapshot, wire the stages together, run them, and say what happened.

Wiring only: each stage is its own module (frontier, fetch, politeness,
capture workers, crawler, writer), where a crawl's processes share state is
backend.py's, running the stages run_stages.py's, resuming resume.py's (and,
for what a crawl holds beside its rows, kept_state.py's), crawl.json
store/crawl_record.py's. The library never prints: a caller that wants a
progress line passes ``progress``, one that handles signals passes ``stop``.

>>> import asyncio, tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as folder:
...     config = CrawlConfig(seeds=("http://127.0.0.1:9/",), output=Path(folder) / "snap", max_tries=1)
...     result = asyncio.run(crawl(config))  # nothing listens on port 9: not even its robots.txt
...     (config.output / "manifest.sqlite3").is_file()
True
>>> result.totals["no_answer"], result.seeds_failed[0][0], result.interrupted
(1, 'http://127.0.0.1:9/', False)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.config import CrawlConfig
from archiver.config_rules import NEVER
from archiver.crawling import resume as resuming
from archiver.crawling.backend import Backend, local_backend
from archiver.crawling.capture_workers import CaptureWorkers
from archiver.crawling.chromium import require_browser
from archiver.crawling.control import follow_controls, status_of
from archiver.crawling.crawler import Crawler
from archiver.crawling.fetch import Fetcher
from archiver.crawling.given_cookies import load_cookies
from archiver.crawling.kept_state import keep_beside_rows, take_back_streaks
from archiver.crawling.log import crawl_log
from archiver.crawling.mirror_choice import DraftingJudge
from archiver.crawling.recorded import RecordedFetch
from archiver.crawling.referrers import SnapshotEncodings
from archiver.crawling.render_pages import CrawlPages
from archiver.crawling.renderer import Renderer, open_renderer
from archiver.crawling.repair import find_again_once_fetched, rebuild_lost_manifest
from archiver.crawling.repair import repair as repair_damage
from archiver.crawling.revisiting import previous_snapshots
from archiver.crawling.run_stages import ProgressCallback, run_stages
from archiver.crawling.sitemap_stage import SitemapStage
from archiver.crawling.stats import CrawlStats
from archiver.crawling.stopping import max_time, note_stop
from archiver.crawling.writer import Writer
from archiver.errors import SnapshotError, WriteError
from archiver.mirror.live import LiveMirror
from archiver.mirror.stats import MirrorStats
from archiver.scope import Scope
from archiver.store.changes import Changes
from archiver.store.crawl_record import CrawlRecord
from archiver.store.lock import snapshot_lock
from archiver.store.manifest import Manifest
from archiver.store.payloads import PreviousPayloads, StoredPayloads
from archiver.store.previous import Previous, check_previous
from archiver.store.seeds import seed_ends, seed_failure
from archiver.store.snapshot import Snapshot
from archiver.store.totals import summary
from archiver.urls import normalize_url
from archiver.warc.files import WarcFiles, crawl_info


@dataclass
class CrawlResult:
    """What a finished (or stopped) crawl leaves for its caller."""

    snapshot: Snapshot
    stats: CrawlStats
    totals: dict[str, Any] = field(default_factory=dict)
    seeds_failed: list[tuple[str, str]] = field(default_factory=list)
    """Seeds that led to no archived page, with why: when all did, the crawl archived nothing."""
    warnings: list[str] = field(default_factory=list)
    """Things the user should know that did not stop the crawl (a torn WARC record...)."""
    parts_left_out: list[str] = field(default_factory=list)
    """Crawl nodes whose part the merge of a shared crawl left out (``warnings`` say why): the
    snapshot lacks them, and verify fails on it."""
    mirror: MirrorStats | None = None
    """What the mirror holds, once a crawl that writes one is done (None if it was stopped)."""

    @property
    def interrupted(self) -> bool:
        return self.stats.stop_reason is not None


async def crawl(
    config: CrawlConfig,
    *,
    resume: bool = False,
    progress: ProgressCallback | None = None,
    stop: asyncio.Future[str] | None = None,
    mirror: bool = True,
    repair: bool = False,
) -> CrawlResult:
    """Crawl ``config.seeds`` into the snapshot folder ``config.output``.

    With ``mirror``, the offline mirror is written as the crawl goes and
    finished (with index.html) when it is done. With ``resume``, continue the
    crawl saved there; with ``repair`` too, first read every WARC record and
    fetch again the captures found damaged (crawling/repair.py). ``stop``: once it has a
    result (a reason, such as "signal SIGINT"), the crawl stops taking work,
    writes what it holds and returns, interrupted, resumable. Cancelled, the
    writer still closes WARC and manifest, so the snapshot can be resumed.
    Holds the snapshot's writer lock throughout (SnapshotLocked if another
    process holds it). With ``config.frontier`` (Redis), this process is one
    node of a shared crawl (crawling/nodes.py).
    """
    if config.frontier is not None:
        from archiver.crawling.nodes import crawl_node

        return await crawl_node(config, progress=progress, stop=stop, mirror=mirror)
    seeds = [normalize_url(seed) for seed in config.seeds]
    chromium = require_browser(config.chromium) if config.browser != NEVER else None
    if config.previous is not None:
        check_previous(Path(config.previous), config.output)
    snapshot = Snapshot(config.output)
    if resume:
        snapshot.check_resumable()
    else:
        snapshot.check_new()
    with snapshot_lock(snapshot.root, "archiver crawl", create=not resume):
        if resume:
            snapshot.make_folders()
        else:
            snapshot.create()
        backend = local_backend()
        # What shuts down while the crawl finishes its mirror (the browser) is waited for last.
        async with contextlib.AsyncExitStack() as ending:
            return await run_crawl(
                config, seeds, chromium, snapshot, resume, progress, stop, mirror, backend, ending, repair
            )


async def run_crawl(
    config: CrawlConfig,
    seeds: list[str],
    chromium: str | None,
    snapshot: Snapshot,
    resume: bool,
    progress: ProgressCallback | None,
    stop: asyncio.Future[str] | None,
    write_mirror: bool,
    backend: Backend,
    ending: contextlib.AsyncExitStack | None = None,
    repair: bool = False,
) -> CrawlResult:
    """crawl() once the snapshot (or a node's part of it) is locked. What may shut down while the
    crawl finishes its mirror (its browser) is left to ``ending`` if given; ``repair``: see crawl()."""
    result = CrawlResult(snapshot, CrawlStats())
    if resume:
        Manifest.roll_back_killed_write(snapshot.manifest_path)  # before the checks read it
        if repair:  # a manifest lost or damaged is written again from the WARC files
            result.warnings = rebuild_lost_manifest(snapshot, config.warc_prefix, config.to_json())
        resuming.check_manifest_kept(snapshot, config.warc_prefix)
        resuming.check_manifest_readable(snapshot)  # before crawl.json notes a run
        resuming.check_records_in_place(snapshot)
    # crawl.json first: a crawl killed before it is written left nothing to resume (see check_new).
    record = CrawlRecord.start(snapshot, _settings(config), resume=resume)
    with crawl_log(snapshot, config.log_format):
        # A resumed crawl's manifest must be one (a crawl killed as it began may have left none).
        manifest = Manifest.open(
            snapshot.manifest_path, existing=resume and Manifest.begun(snapshot.manifest_path)
        )
        if resume:
            result.warnings += resuming.mend_lost_index(snapshot, manifest, record)
            result.warnings += resuming.recover(snapshot, config.warc_prefix, manifest, record)
            if repair:
                result.warnings += repair_damage(snapshot, config.warc_prefix, manifest, record)
        # The writer's thread and the fetch's each read the previous snapshot through their own.
        stored = previous_snapshots(config.previous)
        mirror = (
            LiveMirror(snapshot, manifest, share_pages=config.browser == NEVER, previous=stored.writer)
            if write_mirror
            else None
        )
        writer = Writer(
            snapshot,
            _warc_files(config, seeds, snapshot, manifest, stored.writer),
            manifest,
            config.writer_queue_size,
            mirror=mirror,
        )
        scope = Scope.from_settings(config.to_json())  # as verify rebuilds it from crawl.json
        frontier = backend.frontier(snapshot, writer)
        drafting = (
            (str(snapshot.manifest_path), scope) if mirror is not None and not mirror.deferred else None
        )
        async with (
            stored,
            frontier,
            Fetcher(config) as fetcher,
            CaptureWorkers(
                config.worker_processes,
                mirror=drafting,
                backlog=frontier.pending,
                judge=(DraftingJudge(_behind(config)), writer.defer_mirror) if drafting else None,
            ) as workers,
            _renderer(config, chromium, snapshot, result.stats, fetcher, ending) as renderer,
            SnapshotEncodings(snapshot) as read_back,
        ):
            # robots.txt and sitemaps are fetched outside the frontier, and kept.
            recorded = RecordedFetch(fetcher, frontier, writer, max_redirects=config.max_redirects)
            policy = backend.policy(config, recorded.fetch_robots)
            fetch = stored.fetch(fetcher)
            crawler = Crawler(
                config,
                frontier,
                fetch,
                writer,
                scope,
                result.stats,
                policy,
                workers,
                renderer,
                budget=backend.budget(config),
                referrers=backend.referrers(read_back),
            )
            writer.on_commit = crawler.settling.committed
            jar = fetcher.cookies
            if renderer is not None:
                renderer.attach(CrawlPages(crawler, renderer.answers.row))
            # Before reload(), which leaves the renders restored here to the renderer.
            keep_beside_rows(
                writer,
                manifest,
                jar,
                renderer,
                policy,
                resume,
                lambda: load_cookies(config, fetcher.credentials.hosts).for_browser(),
            )
            shared_jar = backend.cookies(jar) if backend.cookies is not None and jar is not None else None
            if shared_jar is not None:
                await shared_jar.sync()  # the cookies the crawl's other processes were set
            if resume and backend.reload:
                # Asked again when due, not now.
                await policy.adopt_robots(lambda: resuming.kept_robots(snapshot, manifest))
                take_back_streaks(manifest, policy)
                await resuming.reload(crawler, manifest)
            # A resumed crawl reads back the sitemaps it archived (a shared crawl's may be another node's).
            kept = read_back if resume and backend.reload else None
            sitemaps = SitemapStage(crawler, recorded, policy, kept=kept) if config.sitemaps else None

            def status() -> dict[str, Any]:
                return status_of(result.stats, crawler.controls, frontier.pending())

            sharing = asyncio.create_task(shared_jar.run()) if shared_jar is not None else None
            controls_done = asyncio.Event()
            controls = asyncio.create_task(
                follow_controls(backend.controls(snapshot), crawler, policy, record, status, controls_done)
            )
            try:
                shared = not backend.reload  # a frontier in Redis, shared by crawl nodes
                with max_time(stop, config.max_time) as stopping:
                    await run_stages(crawler, writer, seeds, progress, stopping, sitemaps, recorded, shared)
            finally:
                controls_done.set()  # its round in hand ends first (see follow_controls)
                with contextlib.suppress(asyncio.CancelledError):
                    await controls
                if sharing is not None and shared_jar is not None:
                    sharing.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sharing
                    # This process's last cookies, for the others; not by a crawl being cancelled
                    # (a node given up, Redis lost), whose cause must be what propagates.
                    task = asyncio.current_task()
                    if task is None or not task.cancelling():
                        with contextlib.suppress(Exception):
                            await shared_jar.sync()
                snapshot.control_path.unlink(missing_ok=True)  # its commands are in crawl.json
    if writer.error is not None:
        result.stats.stop_reason = f"write error: {writer.error}"
    note_stop(result.stats, stop)  # asked as the fetching ended: no mirror pass is begun
    if repair and not result.interrupted:  # before the mirror, which reads stylesheets by their parents
        await asyncio.to_thread(find_again_once_fetched, snapshot, config.to_json())
    if mirror is not None and not result.interrupted:
        try:
            with previous_snapshots(config.previous) as finishing:
                mirror.previous = finishing.writer
                result.mirror = await asyncio.to_thread(mirror.finish)
        except WriteError as exc:
            result.stats.stop_reason = f"write error: {exc}"
        # The last mirror pass runs to its end (in a thread); a stop asked meanwhile is noted,
        # so the crawl says it was stopped and its resume ends what was left.
        note_stop(result.stats, stop)
    with Manifest.open(snapshot.manifest_path) as manifest:
        result.totals = summary(manifest)
        result.seeds_failed = _seeds_failed(manifest, seeds)
        manifest.checkpoint()
    if config.previous is not None:
        # Kept in crawl.json: the report stays when the previous snapshot is gone.
        with (
            contextlib.suppress(SnapshotError),
            Changes(Snapshot(Path(config.previous)).manifest_path, snapshot.manifest_path) as changes,
        ):
            result.totals["changes"] = changes.counts()
    record.finish(
        stop_reason=result.stats.stop_reason,
        fetched=result.stats.fetched,
        seconds=result.stats.elapsed(),
        stats={k: v for k, v in result.totals.items() if k != "errors"},
    )
    return result


def _behind(config: CrawlConfig) -> int:
    """Captures waiting for a worker, on average, from which drafting the mirror holds the crawl
    back: half of what the fetch workers can hand over at once (mirror_choice.DraftingJudge)."""
    return max(2, config.concurrency // 2)


def _settings(config: CrawlConfig) -> dict[str, Any]:
    """The settings for crawl.json: a previous snapshot is named relative to this one's folder
    when it can be, so the two can move together."""
    settings = config.to_json()
    if config.previous is not None:
        old, new = os.path.abspath(config.previous), os.path.abspath(config.output)
        with contextlib.suppress(ValueError):  # another drive (Windows): the absolute path
            old = os.path.relpath(old, new)
        settings["previous"] = old
    return settings


@contextlib.asynccontextmanager
async def _renderer(
    config: CrawlConfig,
    chromium: str | None,
    snapshot: Snapshot,
    stats: CrawlStats,
    fetcher: Fetcher,
    ending: contextlib.AsyncExitStack | None,
) -> AsyncIterator[Renderer | None]:
    """The render stage of a crawl with --browser auto or always (the cookies its pages' browser
    sends go to ``fetcher``'s jar); None with never. Its browser's shutdown is left to ``ending``
    if given."""
    if chromium is None:
        yield None
        return
    async with open_renderer(
        config.browser,
        chromium,
        snapshot,
        stats,
        tabs=config.browser_tabs,
        timeout=config.browser_timeout,
        user_agent=config.user_agent,
        cookies=fetcher.cookies,
        ending=ending,
    ) as renderer:
        yield renderer


def _warc_files(
    config: CrawlConfig, seeds: list[str], snapshot: Snapshot, manifest: Manifest, previous: Previous | None
) -> WarcFiles:
    payloads = StoredPayloads(manifest)
    return WarcFiles(
        snapshot.warc_dir,
        config.warc_prefix,
        config.warc_max_size,
        info=crawl_info(config.warc_prefix, seeds, config.user_agent, _settings(config)),
        payloads=PreviousPayloads(payloads, previous) if previous is not None else payloads,
    )


def _seeds_failed(manifest: Manifest, seeds: list[str]) -> list[tuple[str, str]]:
    """Seeds that led to no archived page (no response, a refusal, an error answer, a
    redirect to nowhere or to a URL skipped), with why."""
    failed = []
    for seed, end in seed_ends(manifest):
        why = seed_failure(seed, end, manifest)
        if seed in seeds and why is not None:
            failed.append((seed, why))
    return failed
