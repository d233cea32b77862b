"""How a run is asked to stop: the future a signal handler (or archiver control) completes,
--max-time's timer, and the reason a stopped run notes in its stats."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from archiver.crawling.stats import CrawlStats

MAX_TIME_STOP = "--max-time reached"
"""The start of the stop reason of a run that lasted its --max-time."""
BROWSER_STOP = "the browser cannot start"
"""The start of the stop reason of a crawl whose browser exits as it starts (BrowserUnusable)."""


@contextlib.contextmanager
def max_time(stop: asyncio.Future[str] | None, seconds: float | None) -> Iterator[asyncio.Future[str] | None]:
    """``stop``, or one that --max-time gives its reason once the run has lasted that long,
    while the block runs: the run then stops as a signal stops it (it takes no more work,
    writes what it holds, and can be resumed)."""
    if seconds is None:
        yield stop
        return
    loop = asyncio.get_running_loop()
    timed: asyncio.Future[str] = stop if stop is not None else loop.create_future()

    def time_is_up() -> None:
        if not timed.done():
            timed.set_result(f"{MAX_TIME_STOP} after {seconds:g} s")

    timer = loop.call_later(seconds, time_is_up)
    try:
        yield timed
    finally:
        timer.cancel()


def note_stop(stats: CrawlStats, stop: asyncio.Future[str] | None) -> None:
    """Note the reason ``stop`` was given, if it was and no other reason is noted yet."""
    if stop is not None and stop.done() and not stop.cancelled() and stats.stop_reason is None:
        stats.stop_reason = stop.result()
