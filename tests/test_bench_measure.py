"""The benchmark's measurements: peak memory is summed over a crawler's processes, not one process's."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
sys.path.insert(0, BENCHMARKS)
try:
    import measure
finally:
    sys.path.remove(BENCHMARKS)

HOLD = (
    "import sys, time; data = bytearray(60 * 1024 * 1024); data[::4096] = b'x' * len(data[::4096]); "
    "time.sleep(float(sys.argv[1]))"
)


def test_peak_memory_sums_the_process_tree(tmp_path: Path) -> None:
    # A parent and its child each touch 60 MiB at once: the tree's peak holds both, ru_maxrss one.
    script = (
        "import subprocess, sys; "
        f"child = subprocess.Popen([sys.executable, '-c', {HOLD!r}, '1.0']); "
        f"exec({HOLD!r}.replace('float(sys.argv[1])', '1.0')); child.wait()"
    )
    result = measure.run_measured([sys.executable, "-c", script], tmp_path / "out", tmp_path / "err")
    assert result.exit_code == 0, result.stderr_tail()
    # Sampled over both processes (ru_maxrss is one process's, and can be the image of a large
    # parent that forked it, before its exec).
    assert result.peak_tree_rss_kb / 1024 > 115


def test_pages_shared_by_forked_processes_count_once_in_pss(tmp_path: Path) -> None:
    # A parent touches 60 MiB, then forks a child that only reads them: summed RSS counts the
    # pages twice, summed PSS once (as capture workers forked from the crawl share its pages).
    script = (
        "import os, time; data = bytearray(60 * 1024 * 1024); data[::4096] = b'x' * len(data[::4096]); "
        "pid = os.fork(); time.sleep(1.0); "
        "os._exit(0) if pid == 0 else os.waitpid(pid, 0)"
    )
    result = measure.run_measured([sys.executable, "-c", script], tmp_path / "out", tmp_path / "err")
    assert result.exit_code == 0, result.stderr_tail()
    assert result.peak_tree_rss_kb / 1024 > 115
    assert 55 < result.peak_tree_pss_mb < 90
