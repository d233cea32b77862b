"""Ctrl-C and SIGTERM outside the crawl's event loop (which turns them into its stop): in the
commands over snapshots, and in the forked processes that build a mirror or check one.

In the command's own process either signal raises where the program is (KeyboardInterrupt,
Terminated), which cuts short whatever call it is waiting in. But a library's bare ``except:``
catches what a signal handler raises while that library runs (warcio decodes every header line
of a WARC record inside one), and the stop would be lost: ``archiver mirror`` sent SIGTERM at
that instant built its mirror to the end and exited 0. So the stop is noted as well, and the
commands obey() it before each record they read and before they commit what they built. One
met in a finalizer (``__del__``, which the garbage collector runs wherever the program is) cannot
propagate: Python printed it with a traceback ("Exception ignored in"); noted, it is left
unsaid there.

Forked helpers leave both signals to their parent, which stops, says so in one line, and ends
them. A terminal's Ctrl-C, timeout(1) and systemd signal the whole process group. A child that
ignored the signals only once its own code ran could still be hit in the instant after the
fork, and print a traceback of its own: so the parent holds the signals (blocked) while it
forks, the child starts with them blocked, ignores them, then lets them through.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


class Terminated(BaseException):
    """SIGTERM, raised where the program is (as Ctrl-C raises KeyboardInterrupt)."""


_asked: type[BaseException] | None = None
"""What the last stop signal raised, while raised_and_noted() runs."""


def _raise_and_note(signum: int, frame: object) -> None:
    global _asked
    _asked = KeyboardInterrupt if signum == signal.SIGINT else Terminated
    raise _asked


@contextlib.contextmanager
def raised_and_noted() -> Iterator[None]:
    """While the block runs, Ctrl-C raises KeyboardInterrupt and SIGTERM Terminated, both noted."""
    global _asked
    _asked = None
    before = {stop: signal.signal(stop, _raise_and_note) for stop in STOP_SIGNALS}
    unraisable = sys.unraisablehook

    def unsaid_if_noted(raised: sys.UnraisableHookArgs) -> None:
        if not (_asked is not None and isinstance(raised.exc_value, _asked)):
            unraisable(raised)

    sys.unraisablehook = unsaid_if_noted
    try:
        yield
    finally:
        sys.unraisablehook = unraisable
        for stop, handler in before.items():
            signal.signal(stop, handler)
        _asked = None


def obey() -> None:
    """Raise the stop that was asked, if one was: again, if a library swallowed it on its way."""
    if _asked is not None:
        raise _asked


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait while the block runs (it forks), then reach this process."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def leave_stop_signals_to_the_parent() -> None:
    """In a child forked under stop_signals_held(): Ctrl-C and SIGTERM ignored from now on."""
    global _asked
    _asked = None  # the parent obeys a stop it noted; this child is ended by it
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
