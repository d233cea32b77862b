"""CrawlStats: the counters of one crawl run, kept by the crawler as it goes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class CrawlStats:
    """Counters of one crawl run, updated by the crawler as it goes."""

    started: float = field(default_factory=time.monotonic)
    fetched: int = 0
    """URLs that got an HTTP response (redirects included)."""
    failed: int = 0
    skipped: int = 0
    redirects: int = 0
    bytes: int = 0
    """Payload bytes received (as sent, before decoding)."""
    in_flight: int = 0
    waiting: int = 0
    """URLs waiting out a failed try before they are tried again."""
    rendered: int = 0
    """Pages rendered in a browser, their DOM kept."""
    render_failed: int = 0
    """Pages whose render failed (their HTTP capture stays)."""
    stop_reason: str | None = None
    note: str = ""
    """What an operator changed while the crawl runs, for the progress line ('paused, delay 2s')."""

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started
