"""Run a crawl end to end: open the snapshot, wire the stages, resume, report.

>>> import asyncio
>>> from pathlib import Path
>>> config = CrawlConfig(seeds=("http://127.0.0.1:9/",), output=Path("snap"), max_tries=1)
>>> # result = asyncio.run(crawl(config))   # a snapshot folder appears in snap/
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import logging.handlers
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archiver import __version__
from archiver.config import CrawlConfig
from archiver.crawling.capture_workers import CaptureWorkers
from archiver.crawling.crawler import Crawler
from archiver.crawling.fetch import Fetcher
from archiver.crawling.frontier import SqliteFrontier
from archiver.crawling.politeness import HostPolicy
from archiver.crawling.stats import CrawlStats, render_report, summary
from archiver.crawling.writer import WriteItem, Writer
from archiver.errors import ArchiverError, SnapshotError
from archiver.scope import Scope
from archiver.store.manifest import QUEUED, SKIPPED, Manifest, ManifestRow, StoredPayloads
from archiver.store.snapshot import TORN_TAILS, UNCOMMITTED_TAILS, Snapshot
from archiver.urls import normalize_url
from archiver.warc.files import WarcFiles, member_end, torn_offset

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
PROGRESS_EVERY = 0.5
LOG_BATCH = 256
RELOAD_BATCH = 1000
"""URLs done by an earlier run claimed in one call when a crawl resumes."""


@dataclass
class CrawlResult:
    """What a finished (or stopped) crawl leaves for its caller."""

    snapshot: Snapshot
    stats: CrawlStats
    totals: dict[str, Any] = field(default_factory=dict)
    seeds_failed: list[tuple[str, str]] = field(default_factory=list)
    """Seeds that got no response at all, with why."""
    warnings: list[str] = field(default_factory=list)
    """Things the user should know that did not stop the crawl (a torn WARC record...)."""

    @property
    def interrupted(self) -> bool:
        return self.stats.stop_reason is not None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _start_crawl_json(snapshot: Snapshot, config: CrawlConfig, resume: bool) -> dict[str, Any]:
    data: dict[str, Any] = snapshot.read_crawl_json() if resume else {}
    data["archiver_version"] = __version__
    data["settings"] = config.to_json()
    data.setdefault("started", _now())
    data.setdefault("runs", []).append({"started": _now()})
    data.update(finished=None, status="running")
    snapshot.write_crawl_json(data)
    return data


def _finish_crawl_json(snapshot: Snapshot, data: dict[str, Any], result: CrawlResult) -> None:
    status = "interrupted" if result.interrupted else "finished"
    data["runs"][-1].update(
        finished=_now(),
        status=status,
        stop_reason=result.stats.stop_reason,
        fetched=result.stats.fetched,
        seconds=round(result.stats.elapsed(), 3),
    )
    data.update(
        finished=_now(), status=status, stats={k: v for k, v in result.totals.items() if k != "errors"}
    )
    snapshot.write_crawl_json(data)


class _BatchingHandler(logging.handlers.MemoryHandler):
    """Buffers log lines, writing them when LOG_BATCH are held, on a warning, or a second on."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._flushed_at = 0.0

    def shouldFlush(self, record: logging.LogRecord) -> bool:  # noqa: N802 - logging's name
        return super().shouldFlush(record) or record.created - self._flushed_at >= 1.0

    def flush(self) -> None:
        super().flush()
        self._flushed_at = time.time()


@contextlib.contextmanager
def _crawl_log(snapshot: Snapshot) -> Iterator[None]:
    file_handler = logging.FileHandler(snapshot.log_path, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    # A line per fetch: written in batches (a flush per line cost more than the fetch's
    # parsing), at once for a warning.
    handler = _BatchingHandler(LOG_BATCH, logging.WARNING, file_handler)
    logger = logging.getLogger("archiver")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
        file_handler.close()


@contextlib.asynccontextmanager
async def _stop_on_signals(crawler: Crawler, enabled: bool) -> AsyncIterator[None]:
    """Ctrl-C and SIGTERM stop the crawl cleanly instead of killing it mid-record."""
    loop = asyncio.get_running_loop()
    installed = []
    if enabled:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, crawler.stop, f"signal {sig.name}")
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def _show_progress(crawler: Crawler) -> None:
    while True:
        await asyncio.sleep(PROGRESS_EVERY)
        line = crawler.stats.progress_line(crawler.frontier.pending())
        sys.stderr.write(f"\r\x1b[K{line}")
        sys.stderr.flush()


async def _seed(crawler: Crawler, writer: Writer, seeds: list[str]) -> None:
    for seed in seeds:
        if crawler.frontier.seen(seed):
            continue
        row = ManifestRow(url=seed, found_by="seed", depth=0, outcome=QUEUED)
        await writer.put(WriteItem(None, met=[row]))
        await crawler.add(seed, 0, "seed")


async def _reload(crawler: Crawler, manifest: Manifest) -> tuple[int, int]:
    """Refill the frontier from the manifest of an interrupted crawl; returns pages and bytes done."""
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
    return pages, size


async def crawl(config: CrawlConfig, *, resume: bool = False, handle_signals: bool = False) -> CrawlResult:
    """Crawl ``config.seeds`` into the snapshot folder ``config.output``.

    With ``resume``, continue the crawl saved there. Cancelled, the writer
    still closes WARC and manifest, so the snapshot can be resumed.
    """
    seeds = [normalize_url(seed) for seed in config.seeds]
    snapshot = Snapshot(config.output)
    if resume:
        if not snapshot.is_snapshot():
            raise SnapshotError(f"{snapshot.root} holds no crawl to resume")
        snapshot.log_path.parent.mkdir(parents=True, exist_ok=True)
    else:
        snapshot.create()
    torn = _torn_files(snapshot, config.warc_prefix) if resume else []
    warnings = [
        f"{name} ends in a record cut short at offset {offset} (left as is; new records go to a new file)"
        for name, offset in torn
    ]
    for warning in warnings:
        logging.getLogger("archiver").warning(warning)
    data = _start_crawl_json(snapshot, config, resume)
    _record_tails(snapshot, data, TORN_TAILS, torn)
    manifest = Manifest.open(snapshot.manifest_path)
    if resume:
        uncommitted = _uncommitted_tails(snapshot, config.warc_prefix, manifest, dict(torn))
        for name, offset in uncommitted:
            warnings.append(
                f"{name} holds records from offset {offset} that the interrupted crawl "
                f"wrote but never committed (left as is; those URLs are fetched again)"
            )
            logging.getLogger("archiver").warning(warnings[-1])
        _record_tails(snapshot, data, UNCOMMITTED_TAILS, uncommitted)
    warcs = WarcFiles(
        snapshot.warc_dir,
        config.warc_prefix,
        config.warc_max_size,
        info={
            "isPartOf": config.warc_prefix,
            "description": "crawl of " + " ".join(seeds),
            "http-header-user-agent": config.user_agent,
        },
        payloads=StoredPayloads(manifest),
    )
    writer = Writer(snapshot, warcs, manifest, config.writer_queue_size)
    scope = Scope.from_seeds(seeds, config.scope, config.include, config.exclude, config.max_depth)
    result = CrawlResult(snapshot, CrawlStats(), warnings=warnings)
    frontier = SqliteFrontier(snapshot.frontier_path)
    with _crawl_log(snapshot):
        async with (
            frontier,
            Fetcher(config) as fetcher,
            CaptureWorkers(config.worker_processes) as workers,
        ):
            policy = HostPolicy(
                concurrency=config.host_concurrency or config.concurrency,
                delay=config.delay,
                obey_robots=config.obey_robots,
                user_agent=config.user_agent,
                fetch_robots=fetcher.fetch_robots,
                max_delay=config.max_retry_after,
            )
            crawler = Crawler(config, frontier, fetcher, writer, scope, result.stats, policy, workers)
            if resume:
                crawler.count_done(*await _reload(crawler, manifest))
            writer_task = asyncio.create_task(writer.run())
            progress = asyncio.create_task(_show_progress(crawler)) if config.progress else None
            try:
                async with _stop_on_signals(crawler, handle_signals):
                    await _seed(crawler, writer, seeds)
                    await crawler.run()
            finally:
                if progress:
                    progress.cancel()
                    sys.stderr.write("\r\x1b[K")
                if writer.error is None and not writer_task.done():
                    await writer.finish()
                with contextlib.suppress(Exception):
                    await writer_task
                await writer.close()
    if writer.error is not None:
        result.stats.stop_reason = f"write error: {writer.error}"
    with Manifest.open(snapshot.manifest_path) as manifest:
        result.totals = summary(manifest)
        for seed in seeds:
            row = manifest.get(seed)
            if row is not None and row.status is None and row.outcome == "failed":
                result.seeds_failed.append((seed, row.reason or "no response"))
    _finish_crawl_json(snapshot, data, result)
    return result


def _torn_files(snapshot: Snapshot, prefix: str) -> list[tuple[str, int]]:
    """(file, offset) of WARC files whose last record a crash cut short (left as they are)."""
    torn = []
    for path in sorted(snapshot.warc_dir.glob(f"{prefix}-*.warc.gz")):
        offset = torn_offset(path)
        if offset is not None:
            torn.append((path.name, offset))
    return torn


def _uncommitted_tails(
    snapshot: Snapshot, prefix: str, manifest: Manifest, torn: dict[str, int]
) -> list[tuple[str, int]]:
    """(file, offset) from which WARC files hold whole records no manifest row was committed for.

    The writer appends a batch's records, then commits its rows: a crash in
    between (kill -9, a power cut) leaves records no row, CDXJ line or mirror
    file names. The last committed record of a file is a response or revisit
    followed by its request: what follows those two members is such a tail.
    """
    tails = []
    for path in sorted(snapshot.warc_dir.glob(f"{prefix}-*.warc.gz")):
        end = torn.get(path.name, path.stat().st_size)
        last = manifest.last_capture_offset(path.name)
        # No row at all: only the warcinfo record was committed.
        committed = member_end(path, 0, 1) if last is None else member_end(path, last, 2)
        if committed is not None and committed < end:
            tails.append((path.name, committed))
    return tails


def _record_tails(snapshot: Snapshot, data: dict[str, Any], key: str, tails: list[tuple[str, int]]) -> None:
    """Note tails a crash left under ``key`` in crawl.json, so verify knows them from damage done later."""
    if not tails:
        return
    known = data.setdefault(key, [])
    for name, offset in tails:
        if {"file": name, "offset": offset} not in known:
            known.append({"file": name, "offset": offset})
    snapshot.write_crawl_json(data)


def _fast_event_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed: it costs a quarter less CPU per request."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def crawl_command(
    config: CrawlConfig | None, output: Path, *, resume: bool, mirror: bool, quiet: bool
) -> int:
    """What ``archiver crawl`` does: crawl, build the mirror, print the report; an exit code."""
    if resume:
        settings = Snapshot(output).read_crawl_json().get("settings") or {}
        try:
            config = CrawlConfig.from_json(
                settings, output=output, progress=not quiet and sys.stderr.isatty()
            )
        except (TypeError, KeyError, ValueError) as exc:
            raise SnapshotError(f"cannot read the settings in {output}/crawl.json: {exc}") from None
    assert config is not None
    with asyncio.Runner(loop_factory=_fast_event_loop()) as runner:
        result = runner.run(crawl(config, resume=resume, handle_signals=True))
    for warning in result.warnings:
        print(f"archiver: warning: {warning}", file=sys.stderr)
    if result.seeds_failed and len(result.seeds_failed) == len(config.seeds):
        url, why = result.seeds_failed[0]
        raise ArchiverError(f"could not fetch {url}: {why}")
    if mirror and not result.interrupted:
        from archiver.mirror.build import build_mirror

        mirrored = build_mirror(result.snapshot.root)
        if not quiet:
            print(mirrored.summary())
    if not quiet:
        print(render_report(result.totals, result.stats))
    if result.interrupted:
        print(
            f"archiver: crawl stopped ({result.stats.stop_reason}); continue it with: "
            f"archiver crawl --resume -o {output} (or browse what is there after: "
            f"archiver mirror {output})",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if "signal" in (result.stats.stop_reason or "") else EXIT_FAILED
    return EXIT_OK
