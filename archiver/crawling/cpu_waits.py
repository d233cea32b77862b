"""Waiting for the browser on a machine that may leave it no CPU: its time counts while it works.

The browser runs at idle priority (chromium.lower_priority), so a busy machine can leave its
processes without any CPU for seconds, when a healthy browser answers nothing either. A wait
that counted wall time alone would call such a browser stuck, or a page hung, though nothing is
wrong. So each wait on the browser has two bounds: ``until``, past which a call that has not
ended is judged by what the processes expected to work for it did meanwhile, and ``bound``, a
wall bound much later. Processes that used HUNG_SHARE of the wait on the CPU without answering
are stuck (a loop): the wait ends at once. Processes that got next to none wait for the machine,
and are waited for while they do, until ``bound``: a process that is stopped for good, or waits
for nothing that will come, is caught then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from archiver.crawling.chromium import cpu_used_since
from archiver.errors import ArchiverError

T = TypeVar("T")

HUNG_SHARE = 0.1
"""Of a wait for an answer, the share the processes must have spent on the CPU for them to be
called stuck. A call costs milliseconds: processes that got a tenth of a CPU for the wait and did
not answer run something that keeps them (a loop, which takes all the CPU it gets: 40% of one at
idle priority on a machine kept at a load of 20 by other work), while the machine's normal work
leaves an idle browser a few thousandths."""
LEAST_WINDOW = 0.5
"""Seconds, at least, over which the processes' CPU is measured (the kernel counts it in ticks
of 10 ms)."""

CpuTimes = Callable[[bool], dict[int, float] | None]
"""The CPU seconds each process expected to answer has used so far (chromium.cpu_times()), None
where that cannot be known; called with True once a call has not ended in time, to find the
processes again."""


class NoAnswer(ArchiverError):
    """A call into the browser did not end in time (see answered_while_working)."""

    def __init__(self, busy: bool) -> None:
        super().__init__()
        self.busy = busy
        """True if the wait's time counted (the processes used the CPU meanwhile, as when
        something holds them, or the call waited on something else), False if the machine left
        them next to none until the wall bound."""


async def answered_while_working(
    call: Awaitable[T],
    cpu: CpuTimes,
    until: float,
    bound: float,
    elsewhere: Callable[[], bool] | None = None,
    measured_from: float | None = None,
) -> T:
    """What ``call`` gives, if it ends by ``until`` (time.monotonic()); past then, for as long
    again at a time until ``bound``, while the processes ``cpu`` measures have used less than
    HUNG_SHARE of the time since the call began on the CPU. Raises NoAnswer once they used more
    without answering, or at ``bound``; ``call`` is then cancelled. Where their CPU cannot be
    known, or while ``elsewhere()`` says the call waits on something else than them (a page's
    load on the crawl's fetch of what it asked for, whose time counts), ``until`` is the bound.
    The processes' CPU is counted from ``measured_from`` if given (a wait whose first part is
    work the call does, as a render's loading of its page, judges what came after). Cancelled,
    ``call`` is cancelled with it."""
    answer = asyncio.ensure_future(call)
    try:
        if measured_from is not None:
            await asyncio.wait({answer}, timeout=max(measured_from - time.monotonic(), 0.001))
            if answer.done():
                return answer.result()
        began, used_before = time.monotonic(), cpu(False)
        window = max(until - began, LEAST_WINDOW)
        while True:
            done, _ = await asyncio.wait({answer}, timeout=max(until - time.monotonic(), 0.001))
            if done:
                return answer.result()
            used = cpu(True)
            if used is None or used_before is None or (elsewhere is not None and elsewhere()):
                raise NoAnswer(busy=True)
            waited = time.monotonic() - began
            busy = waited >= LEAST_WINDOW and cpu_used_since(used_before, used) >= HUNG_SHARE * waited
            if busy or time.monotonic() >= bound:
                raise NoAnswer(busy)
            until = min(time.monotonic() + window, bound)
    finally:
        if not answer.done():
            answer.cancel()  # not awaited (a stop of the caller must not be swallowed) but read
            answer.add_done_callback(read_outcome)


def read_outcome(done: asyncio.Future[Any]) -> None:
    """Read what a future left behind that nobody awaits: asyncio reports an error nobody read."""
    if not done.cancelled():
        done.exception()
