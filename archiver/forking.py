"""Forked helper processes (the mirror build's, verify's mirror check) leave Ctrl-C and SIGTERM
to their parent, which stops, says so in one line, and ends them.

A terminal's Ctrl-C, timeout(1) and systemd signal the whole process group. A child that
ignored the signals only once its own code ran could still be hit in the instant after the
fork, and print a traceback of its own: so the parent holds the signals (blocked) while it
forks, the child starts with them blocked, ignores them, then lets them through.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


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
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
