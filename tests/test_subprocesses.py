"""Subprocesses a test leaves running are killed when it ends (tests/subprocesses.py)."""

from __future__ import annotations

import subprocess
import sys

from subprocesses import kill_leftovers, track


def test_a_subprocess_left_running_is_killed_and_one_that_ended_is_reaped():
    ended = track(subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE))
    ended.wait(timeout=30)
    running = track(
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], stdout=subprocess.PIPE)
    )
    killed = kill_leftovers()
    assert running.returncode == -9 and ended.returncode == 0
    assert len(killed) == 1 and "time.sleep(300)" in killed[0]
    assert (
        running.stdout is not None
        and running.stdout.closed
        and ended.stdout is not None
        and ended.stdout.closed
    )
    assert kill_leftovers() == []
