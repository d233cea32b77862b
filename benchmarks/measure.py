"""Measure processes: a command's wall time, CPU and peak RSS as a child of its own; a live process's CPU."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
SAMPLE_EVERY = 0.02
"""Seconds between two samples of a process tree's resident memory."""
RESCAN_EVERY = 5
"""Samples between two scans of /proc for new descendants (a scan costs ~1 ms)."""
PSS_EVERY = 5
"""Samples between two readings of the tree's proportional set size (the kernel walks each
process's page tables for it: too costly for every sample)."""


@dataclass(frozen=True)
class RunResult:
    """How one command ran: exit code, wall and CPU seconds, peak resident memory."""

    command: tuple[str, ...]
    exit_code: int
    wall_seconds: float
    user_seconds: float
    system_seconds: float
    peak_rss_kb: int
    stderr_path: Path
    peak_tree_rss_kb: int = 0
    """Peak of the RSS summed over the process and every descendant, sampled (worker processes
    included: ru_maxrss is the largest one process's peak, never a sum)."""
    peak_tree_pss_kb: int = 0
    """Peak of the PSS summed over the same processes: a page shared by forked processes counts
    once in all (split between them), where summed RSS counts it in each."""

    @property
    def cpu_seconds(self) -> float:
        """User plus system CPU time."""
        return self.user_seconds + self.system_seconds

    @property
    def peak_rss_mb(self) -> float:
        """Peak RSS in MiB (Linux reports ru_maxrss in KiB)."""
        return self.peak_rss_kb / 1024

    @property
    def peak_tree_rss_mb(self) -> float:
        """Peak RSS of all the crawler's processes together, in MiB (at least its own peak)."""
        return max(self.peak_tree_rss_kb, self.peak_rss_kb) / 1024

    @property
    def peak_tree_pss_mb(self) -> float:
        """Peak memory of all the crawler's processes together, shared pages counted once, in MiB."""
        return self.peak_tree_pss_kb / 1024

    def stderr_tail(self, lines: int = 15) -> str:
        """The last lines the command wrote to stderr."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def run_measured(command: list[str], stdout_path: Path, stderr_path: Path) -> RunResult:
    """Run ``command`` as a fresh child process (exec'd, so it starts with its own RSS) and measure it.

    os.wait4 gives the child's own rusage (its peak RSS, not the runner's), where
    RUSAGE_CHILDREN would mix it with every child before it.
    """
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        sampler = TreeMemory(child.pid)
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.send_signal(signal.SIGTERM)  # e.g. Ctrl-C: do not leave a crawler running
            child.wait()
            raise
        finally:
            sampler.stop()
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
    return RunResult(
        command=tuple(command),
        exit_code=child.returncode,
        wall_seconds=wall,
        user_seconds=usage.ru_utime,
        system_seconds=usage.ru_stime,
        peak_rss_kb=usage.ru_maxrss,
        stderr_path=stderr_path,
        peak_tree_rss_kb=sampler.peak_kb,
        peak_tree_pss_kb=sampler.peak_pss_kb,
    )


class Sampling:
    """Calls ``sample()`` every ``every`` seconds in a thread until ``stop()``."""

    def __init__(self, every: float) -> None:
        self._every = every
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling (what was gathered stays readable)."""
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self._every):
            self.sample()

    def sample(self) -> None:
        raise NotImplementedError


class TreeMemory(Sampling):
    """Samples, in a thread, the RSS (and less often the PSS) summed over a process and its
    descendants; keeps the peaks."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kb = 0
        self.peak_pss_kb = 0
        self._pids = {pid}
        self._samples = 0
        super().__init__(SAMPLE_EVERY)

    def sample(self) -> None:
        if self._samples % RESCAN_EVERY == 0:
            self._pids = descendants(self.pid)
        if self._samples % PSS_EVERY == 0:
            self.peak_pss_kb = max(self.peak_pss_kb, sum(pss_kb(pid) for pid in self._pids))
        self._samples += 1
        self.peak_kb = max(self.peak_kb, sum(rss_kb(pid) for pid in self._pids))


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


def descendants(root: int) -> set[int]:
    """``root`` and every live process below it."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            facts = _parent_and_ticks(int(entry.name))
            if facts is not None:
                parents[int(entry.name)] = facts[0]
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def _parent_and_ticks(pid: int) -> tuple[int, int] | None:
    """(parent pid, user+system clock ticks) of a live process, from /proc/<pid>/stat."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces: skip past it
    return int(fields[1]), int(fields[11]) + int(fields[12])


def process_tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a live process and its children (e.g. nginx's master and workers)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        facts = _parent_and_ticks(int(entry.name))
        if facts is not None and (int(entry.name) == pid or facts[0] == pid):
            total += facts[1]
    return total / CLOCK_TICKS
