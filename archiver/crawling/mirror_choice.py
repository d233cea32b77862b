"""Whether the mirror is written during the crawl or built after it: judged from what the crawl costs.

Drafting a page's mirror file as it is captured (mirror/live.py) costs more
CPU than rebuilding the mirror from the WARC files at the end: its links are
looked up as the crawl stands, many of them guesses asked again page after
page, and it runs beside the fetching, in its process or its workers. While
the crawl waits on the network (a distant or slow server, a --delay) that CPU
is idle anyway, and the mirror is ready when the crawl ends. When the crawl
waits on the CPU instead, drafting slows every fetch and the rebuild, which
runs in one process per CPU, is cheaper. DraftingJudge tells the two apart,
from either of two signs:

- the crawl's own process keeps the CPU busy: over a window of WINDOW_SECONDS
  and at least WINDOW_CAPTURES captures, it used BUSY_SHARE of a core or more,
  or waited for one (busy_seconds(): on a machine whose CPUs other programs
  keep busy, the crawl gets less CPU than it asks for, and is held back by it
  all the more);
- its worker processes fall behind: after BEHIND_AFTER captures, ``backlog``
  captures or more wait for a worker, on average (BEHIND_WEIGHT).

Once either is seen, drafting stops for the rest of the crawl; the choice is
never taken back (a mirror half written live and half rebuilt saves nothing).

>>> judge = DraftingJudge(backlog=4, clock=iter(range(100)).__next__, cpu=lambda: 0.0)
>>> any(judge.captured() for _ in range(60))   # an idle process: drafting stays
False
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

WINDOW_SECONDS = 0.5
WINDOW_CAPTURES = 25
"""A window ends once it has lasted WINDOW_SECONDS and seen this many captures."""
BUSY_SHARE = 0.5
"""CPU seconds per second of the crawl's process from which it counts as bound by CPU. Its event
loop, writer and parsing share one interpreter. Measured (benchmarks/): every crawl at loopback,
and the Python docs (big pages) even 50 ms away, 0.9 to 1.2; the generated site 50 ms away at
--concurrency 16, about 0.5, where both ways take the same time."""
BEHIND_AFTER = 400
"""Captures the workers prepare before their backlog is judged."""
BEHIND_WEIGHT = 0.02
"""Weight of each capture's backlog in its running average (about the last 50 captures)."""


_SCHEDSTAT: dict[int, int | None] = {}
"""Each thread's schedstat file, kept open (a read then costs 2 us, an open 16), by native id."""


def busy_seconds() -> float:
    """CPU seconds this process used, plus the seconds the calling thread (the event loop's)
    waited for a CPU while ready to run (Linux's schedstat): what its work took of the machine,
    whether it got a CPU or queued for one. Where schedstat cannot be read, the CPU seconds
    alone (time.process_time()).

    >>> busy_seconds() >= time.process_time()
    True
    """
    used = time.process_time()
    thread = threading.get_native_id()
    if thread not in _SCHEDSTAT:
        _SCHEDSTAT[thread] = None
        with contextlib.suppress(OSError):
            _SCHEDSTAT[thread] = os.open(f"/proc/self/task/{thread}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    schedstat = _SCHEDSTAT[thread]
    if schedstat is None:
        return used
    try:
        # "nanoseconds on a CPU, nanoseconds waiting for one, timeslices"
        return used + int(os.pread(schedstat, 64, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return used


class DraftingJudge:
    """Sees whether drafting the mirror holds the crawl back; see the module docstring."""

    def __init__(
        self,
        backlog: int,
        clock: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = busy_seconds,
    ) -> None:
        """``backlog``: captures waiting for a worker, on average, that make the workers behind.
        ``clock`` and ``cpu``: wall seconds, and the process's CPU seconds, used or waited for
        (given by tests)."""
        self.backlog = backlog
        self.backlog_average = 0.0
        self.reason: str | None = None
        """Why drafting stopped (None while it goes on)."""
        self._clock = clock
        self._cpu = cpu
        self._window: tuple[float, float] | None = None
        self._captures = 0
        self._in_workers = 0

    def captured(self, waiting: int | None = None) -> bool:
        """Note one capture prepared (``waiting``: the backlog of the worker it went to, if one);
        True once drafting should stop (and every time after)."""
        if self.reason is not None:
            return True
        if waiting is not None:
            self._in_workers += 1
            self.backlog_average += (waiting - self.backlog_average) * BEHIND_WEIGHT
            if self._in_workers >= BEHIND_AFTER and self.backlog_average >= self.backlog:
                self.reason = f"{self.backlog_average:.1f} captures wait for a worker, on average"
                return True
        now, cpu = self._clock(), self._cpu()
        if self._window is None:
            self._window = (now, cpu)
            return False
        self._captures += 1
        began, used = self._window
        if now - began < WINDOW_SECONDS or self._captures < WINDOW_CAPTURES:
            return False
        share = (cpu - used) / (now - began)
        if share >= BUSY_SHARE:
            self.reason = f"its process used or waited for {share:.2f} CPU seconds a second"
            return True
        self._window, self._captures = (now, cpu), 0
        return False
