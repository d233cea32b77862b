"""The crawler orchestrates: frontier -> fetch workers -> writer, and nothing else.

The seed's shape: a queue of ``(url, redirects_left)`` items, a fixed pool of
worker coroutines, ``join()`` to know the crawl is done, redirects handled
by the crawl itself (responses.py) so that chains which meet are fetched once.

Every stage comes in through a protocol (the seams): ``Frontier``, ``Fetch``,
``Politeness``, ``Prepare`` and ``WriteQueue``, so a browser that fetches, a
frontier shared through Redis, or a test double fits without touching this
module.

Whether a URL taken from the queue is fetched now is crawling/admission.py's
to say (limits, live excludes, robots.txt); what an answer fetched is recorded
as and leads to (a redirect's target, a page's links, its render),
crawling/responses.py's; which URLs a page or a redirect leads to,
crawling/discovery.py's.

Pages rendered in a browser (``Rendering``, see crawling/renderer.py) ask
the crawl for each URL they request and hand back what the render found
through render_pages.py, which captures through capture_now().
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from archiver.config import CrawlConfig
from archiver.crawling import log as crawl_log
from archiver.crawling.admission import Admission, item_row
from archiver.crawling.budget import Budget, LocalBudget
from archiver.crawling.control import Controls
from archiver.crawling.discovery import Discovery
from archiver.crawling.fetch import Fetch
from archiver.crawling.frontier import Frontier, QueueItem, request_facts, requeued, retry_due
from archiver.crawling.politeness import Politeness
from archiver.crawling.preparing import Prepare
from archiver.crawling.referrers import ReferrerEncodings
from archiver.crawling.responses import Responses
from archiver.crawling.settling import Settling
from archiver.crawling.stats import CrawlStats
from archiver.crawling.writer import WriteItem, WriteQueue
from archiver.errors import WriteError
from archiver.scope import (
    Scope,
)
from archiver.store.rows import FAILED, QUEUED

if TYPE_CHECKING:
    from archiver.crawling.renderer import Rendering

log = logging.getLogger("archiver.crawl")

DEFER_PAUSE = 0.01
"""Seconds a worker rests after putting back a URL whose host is busy."""


class Crawler:
    """Runs one crawl over ready-made stages (crawling/run.py's crawl() wires them)."""

    def __init__(
        self,
        config: CrawlConfig,
        frontier: Frontier,
        fetcher: Fetch,
        writer: WriteQueue,
        scope: Scope,
        stats: CrawlStats,
        policy: Politeness,
        workers: Prepare,
        renderer: Rendering | None = None,
        budget: Budget | None = None,
        controls: Controls | None = None,
        referrers: ReferrerEncodings | None = None,
    ) -> None:
        self.config = config
        self.frontier = frontier
        self.fetcher = fetcher
        self.writer = writer
        self.stats = stats
        self.discovery = Discovery(frontier, scope, stats, config.max_redirects, config.max_links_per_page)
        self.referrers = referrers or ReferrerEncodings()
        """The encodings of the documents read: what a stylesheet one refers to is read in."""
        self.policy = policy
        self.workers = workers
        self.renderer = renderer
        self.settling = Settling()
        """URLs whose outcome is not committed yet (the writer's on_commit hook settles them)."""
        self.budget = budget or LocalBudget(config.max_pages, config.max_bytes)
        """--max-pages and --max-bytes: counted here, or across crawl nodes (redis_budget.py)."""
        self.controls = controls or Controls()
        """What an operator changed while the crawl runs: a pause, excludes (crawling/control.py)."""
        self.jobs: dict[str, Callable[[QueueItem], Awaitable[None]]] = {}
        """What does the job of a queue item that is no URL to fetch, by its ``found_by``: read an
        origin's sitemaps (frontier.SITEMAPS_JOB), record its robots.txt (ROBOTS_JOB)."""
        self._stop = asyncio.Event()
        self._sources: set[asyncio.Task[None]] = set()
        """Tasks that queue URLs found outside the pages (feed())."""
        self.admission = Admission(
            config, frontier, writer, stats, policy, self.budget, self.controls, self.stop
        )
        """Whether a URL taken from the queue is fetched now: limits, live excludes, robots.txt."""
        self.responses = Responses(self)
        """What an answer fetched leads to: its row, a redirect's target, a page's links, its render."""

    def count_done(self, pages: int, size: int) -> None:
        """Count what earlier runs fetched against --max-pages and --max-bytes."""
        self.budget.count_done(pages, size)

    def stop(self, reason: str) -> None:
        """Stop taking new work; fetches in flight are abandoned (they stay queued)."""
        if self.stats.stop_reason is None:
            self.stats.stop_reason = reason
            log.warning("crawl stopped: %s; --resume continues it", reason)
        self._stop.set()
        self.controls.end()  # a paused crawl ends too

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def scope(self) -> Scope:
        """The crawl's scope (it grows where a seed's redirects land)."""
        return self.discovery.scope

    @scope.setter
    def scope(self, scope: Scope) -> None:
        self.discovery.scope = scope

    async def add(
        self, url: str, depth: int, found_by: str, parent: str | None = None, request: str | None = None
    ) -> bool:
        """Queue a URL met outside a page (a seed, or a URL queued by an earlier run, with what
        its row kept of its request: frontier.request_facts), unless claimed; True if queued here."""
        item = requeued(url, depth, found_by, parent, self.config.max_redirects, request)
        if not (await self.frontier.claim([url], [item]))[0]:
            return False
        # A URL that was waiting out a failed try waits out what is left of it.
        await self.frontier.put(item, delay=max(retry_due(request) - time.time(), 0.0))
        return True

    def feed(self, source: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``source`` beside the crawl, which is not done before it ends: what queues URLs
        found outside the pages (the sitemaps), or a capture a page's render asked for, which
        goes on when the render ends first."""
        task = asyncio.create_task(source)
        self._sources.add(task)
        task.add_done_callback(_ended_source)
        task.add_done_callback(self._sources.discard)
        return task

    async def run(self) -> None:
        """Crawl until the frontier is empty or stop() is called.

        Cancelled, workers are cancelled and what the writer holds is written.
        """
        async with asyncio.TaskGroup() as group:
            workers = [group.create_task(self._work()) for _ in range(self.config.concurrency)]
            if self.renderer is not None:
                workers.append(group.create_task(self.renderer.run()))
            drained = asyncio.ensure_future(self._drained())
            stopped = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait({drained, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if drained.done():
                    drained.result()  # the frontier's failure (Redis gone, this node given up) ends the crawl
            finally:
                for task in (*workers, drained, stopped, *self._sources):
                    task.cancel()
                self.admission.close()

    async def _drained(self) -> None:
        """Return once the queue is empty (the frontier's join waits for URLs waiting out a
        failed try too), no page waits for its render, and no source or capture fed beside
        the crawl runs (each can add to the others)."""
        while True:
            await self.frontier.join()
            if self._sources:
                # A source has queued what it found by the time its task ends.
                await asyncio.wait(set(self._sources), return_when=asyncio.FIRST_COMPLETED)
                continue
            if self.renderer is None or self.renderer.idle():
                return
            await self.renderer.join()

    async def _try_again(self, item: QueueItem, delay: float) -> None:
        """Put ``item`` back in the queue to be got in ``delay`` seconds; meanwhile it holds no
        worker and no slot of its host, and it waits in the frontier, so a frontier shared by
        crawl nodes keeps it if this process dies."""
        self.stats.waiting += 1
        # Its row keeps its tries and when it is due, so a resumed crawl neither tries it more
        # often nor sooner than this one would (a Retry-After among them).
        facts = request_facts(item, self.config.max_redirects, time.time() + delay)
        await self.writer.put(WriteItem(None, met=[item_row(item, QUEUED, request=facts)]))

        def due() -> None:
            self.stats.waiting -= 1

        asyncio.get_running_loop().call_later(delay, due)
        await self.frontier.put(item, delay=delay)

    async def _work(self) -> None:
        me = asyncio.current_task()
        # A cancellation a library swallowed must not leave a worker taking items forever.
        while not self.stopped and not (me is not None and me.cancelling()):
            await self.controls.running()
            item = await self.frontier.get()
            handled = False
            try:
                await self.controls.running()  # paused while this worker waited for an item
                if self.stopped:
                    pass
                elif item.found_by in self.jobs:
                    await self.jobs[item.found_by](item)
                    handled = True
                elif self.settling.taken_ahead(item.url):
                    handled = True
                else:
                    self.settling.start(item.url)
                    await self._handle(item)
                    handled = True
            except WriteError as exc:
                self.stop(f"write error: {exc}")
            except self.frontier.lost:  # the shared crawl is out of reach: this node stops
                raise
            except Exception as exc:  # one bad page must not stall the crawl
                log.exception("error handling %s", item.url)
                await self._record_crash(item, exc)
                handled = True
            finally:
                if not handled:
                    await self._put_back(item)
                await self.frontier.task_done(item)

    async def _put_back(self, item: QueueItem) -> None:
        """The crawl stops with ``item`` unhandled: it stays queued (its manifest row says so;
        a frontier shared by crawl nodes gives it to another node)."""
        try:
            await self.frontier.put(item)
        except Exception as exc:  # the crawl is stopping already (a full disk)
            log.warning("could not put %s back in the queue: %s", item.url, exc)

    async def _record_crash(self, item: QueueItem, exc: Exception) -> None:
        self.stats.failed += 1
        row = item_row(item, FAILED, reason=f"internal error: {type(exc).__name__}: {exc}")
        try:
            await self.writer.put(WriteItem(row))
        except WriteError as error:
            self.stop(f"write error: {error}")

    async def _handle(self, item: QueueItem) -> None:
        if not await self.admission.admitted(item):
            return
        if self.policy.busy(item.url) and self.frontier.pending() > 0:
            # Its host is at its limit: let this worker serve another host meanwhile,
            # so a slow host never holds every worker.
            self.settling.drop(item.url)
            await self.frontier.put(item)
            await asyncio.sleep(DEFER_PAUSE)
            return
        await self._capture(item)

    async def _capture(self, item: QueueItem) -> None:
        """Fetch ``item`` in one of its host's slots and hand its outcome to the writer (or to a
        later try: its capture stays unsettled until then)."""
        if not await self.admission.page_started(item):
            return
        async with self.policy.slot(item.url):
            self.stats.in_flight += 1
            try:
                outcome = await self.fetcher.fetch(item.request(), item.tries)
            finally:
                self.stats.in_flight -= 1
        if outcome.retry_in is not None:
            crawl_log.retrying(item.url, outcome.tries, outcome.error, outcome.retry_in)
            await self._try_again(dataclasses.replace(item, tries=outcome.tries), outcome.retry_in)
            return
        if outcome.capture is None:
            self.stats.failed += 1
            crawl_log.failed(item.url, outcome.tries, outcome.error)
            row = item_row(item, FAILED, reason=outcome.error, tries=outcome.tries)
            await self.writer.put(WriteItem(row))
            return
        await self.responses.handle(item, outcome)

    async def capture_now(self, item: QueueItem) -> None:
        """Capture ``item`` out of its turn (a page's render asks for it: render_pages.py), if
        limits and robots.txt let it be. Cancelled, the capture is abandoned."""
        try:
            if await self.admission.admitted(item):
                await self._capture(item)
        except WriteError as exc:
            self.stop(f"write error: {exc}")
            raise
        except Exception as exc:  # as in _work: recorded, so nobody waits for it forever
            log.exception("error handling %s", item.url)
            await self._record_crash(item, exc)


def _ended_source(task: asyncio.Task[None]) -> None:
    """Say what a task fed beside the crawl raised, as nobody may await it any more (a capture
    whose render ended). A write error has stopped the crawl already, and says so there."""
    error = None if task.cancelled() else task.exception()
    if error is not None and not isinstance(error, WriteError):
        log.error("a task beside the crawl failed: %s: %s", type(error).__name__, error)
