"""Subprocesses a test starts are killed when it ends, passed or failed (conftest's autouse
fixture): a test that fails or times out while a crawl runs must not leave the crawl running."""

from __future__ import annotations

import subprocess
from typing import TypeVar

P = TypeVar("P", bound=subprocess.Popen)

_started: list[subprocess.Popen] = []


def track(process: P) -> P:
    """Kill ``process`` at the end of the running test if it still runs then."""
    _started.append(process)
    return process


def kill_leftovers() -> list[str]:
    """Kill what the test started and left running; the command lines of those killed."""
    killed = []
    for process in _started:
        if process.poll() is None:
            process.kill()
            killed.append(" ".join(map(str, process.args)))  # type: ignore[arg-type]
        process.communicate(timeout=30)  # reaped, and its pipes closed
    _started.clear()
    return killed
