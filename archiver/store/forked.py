"""What a process forked to share a command's work (a mirror build's part, verify's mirror checks)
does before its work: leave Ctrl-C and SIGTERM to its parent (stop_signals.py), end with its
parent however the parent ends, and keep no copy of the parent's snapshot lock.

A parent killed outright (``kill -9``) ends no child by itself: a child left running wrote the
snapshot on, beside the resumed crawl, and its copy of the lock's descriptor kept the lock (one
open file for both) until it ended, so the resume was refused. Each child asks the kernel to
end it with its parent (where the system can say so: Linux), and closes its copies of the
lock's descriptors: the lock stays the parent's, and ends with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

from archiver.stop_signals import leave_stop_signals_to_the_parent
from archiver.store.lock import forget_inherited_locks

PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal a process gets when the thread that forked it ends (Linux)."""


def forked_helper_started(parent: int) -> None:
    """In a child forked under stop_signals_held() by ``parent`` (its pid), from a thread that
    waits for it: the three things above, before any work."""
    leave_stop_signals_to_the_parent()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the kernel was asked
        os._exit(1)
    forget_inherited_locks()
