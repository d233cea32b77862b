"""What --browser costs: archiver crawl with --browser never, auto and always on the same sites.

    python3 benchmarks/browser_bench.py --pages 1500 --always-pages 200 --runs 3
    python3 benchmarks/browser_bench.py --pages 5000 --part auto    # never against auto only

For each site (the generated benchmark site, served by nginx, and the demo of
examples/site), each mode crawls it into a fresh folder, in turn (never, auto,
always, then the next run in another order). Measured per run: wall time, pages
per second, how many pages were rendered, and peak memory of the whole process
tree (the crawl, its worker processes, Playwright's driver and every Chromium
process) as proportional set size, sampled from /proc every SAMPLE_SECONDS
(ru_maxrss would see one process only, a sum of RSS would count shared pages
once per process). --browser always renders every page, so it runs on a site of
its own size (--always-pages), against never on that same site. Progress goes to
stderr, the markdown report (medians) to stdout, with the load averages before and
after: on a shared machine, compare CPU seconds (the whole process tree's, from
wait4) as well as wall time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from server import running_nginx
from sitegen import DOCROOT, generate_site

SAMPLE_SECONDS = 0.2
PARTS = ("auto", "always", "demo")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "site"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load() -> str:
    """The load averages over 1, 5 and 15 minutes (the machine may be shared: say how busy it was)."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants, from /proc/<pid>/task/<tid>/children."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.scandir(f"/proc/{current}/task"):
                todo.extend(int(child) for child in Path(task.path, "children").read_text().split())
        except OSError:
            continue
    return found


def tree_pss_kb(pid: int) -> int:
    """Proportional set size of ``pid`` and all its descendants, in KiB.

    PSS, not RSS: Chromium's processes share much of their memory, which a sum of
    RSS would count once per process.
    """
    total = 0
    for member in _tree(pid):
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
                break
    return total


@dataclass(frozen=True)
class Run:
    """One crawl: its mode, wall time, peak memory of its process tree, and what it did."""

    mode: str
    wall_seconds: float
    cpu_seconds: float
    """User and system CPU of the crawl and every process it started and reaped (Chromium too)."""
    peak_pss_mb: float
    """Peak proportional set size of the crawl's whole process tree."""
    pages: int
    """HTML pages fetched with a 2xx."""
    rendered: int
    exit_code: int

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.wall_seconds if self.wall_seconds else 0.0


def crawl(url: str, output: Path, mode: str, extra: Sequence[str]) -> Run:
    """Run archiver crawl as a child process, sampling the RSS of its process tree until it exits."""
    command = [sys.executable, "-m", "archiver", "crawl", url, "-o", str(output), "--quiet"]
    command += ["--browser", mode, *extra]
    peak = 0
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    errors: list[bytes] = []
    reader = threading.Thread(target=lambda: errors.append(child.stderr.read() if child.stderr else b""))
    reader.start()
    while True:
        # wait4, not poll(): its rusage counts the CPU of the whole tree the child reaped.
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_pss_kb(child.pid))
        time.sleep(SAMPLE_SECONDS)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    if child.returncode not in (0, 4):  # 4: complete, with some error answers
        log(f"  {mode}: exit {child.returncode}: {b''.join(errors).decode(errors='replace')[-500:]}")
    pages, rendered = _counts(output / "manifest.sqlite3")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(mode, wall, cpu, peak / 1024, pages, rendered, child.returncode)


def _counts(manifest: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{manifest}?mode=ro", uri=True) as db:
        pages = db.execute(
            "SELECT COUNT(*) FROM urls WHERE outcome = 'fetched' AND content_type = 'text/html' "
            "AND status BETWEEN 200 AND 299"
        ).fetchone()[0]
        rendered = db.execute("SELECT COUNT(*) FROM urls WHERE dom_warc_file IS NOT NULL").fetchone()[0]
    return pages, rendered


@contextmanager
def demo_site() -> Iterator[Path]:
    """examples/site as a folder nginx serves (its docroot a link to the demo)."""
    folder = Path(tempfile.mkdtemp(prefix="archiver-bench-demo-"))
    try:
        (folder / DOCROOT).symlink_to(EXAMPLES)
        (folder / "redirects.conf").write_text("")  # server.py's nginx includes the site's redirects
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench(
    name: str, site_dir: Path, modes: Sequence[str], runs: int, work: Path, extra: Sequence[str]
) -> list[Run]:
    """Crawl ``site_dir`` ``runs`` times in each mode, the order rotating from run to run."""
    done: list[Run] = []
    with running_nginx(site_dir) as server:
        url = server.url + "/index.html"
        for run in range(runs):
            order = list(modes[run % len(modes) :]) + list(modes[: run % len(modes)])
            for mode in order:
                output = work / f"{name}-{mode}-{run}"
                shutil.rmtree(output, ignore_errors=True)
                result = crawl(url, output, mode, extra)
                log(
                    f"{name} run {run + 1} {mode}: {result.wall_seconds:.2f} s, "
                    f"CPU {result.cpu_seconds:.2f} s, {result.pages} pages, "
                    f"{result.rendered} rendered, peak {result.peak_pss_mb:.0f} MB, load {load()}"
                )
                done.append(result)
    return done


def table(name: str, results: list[Run], modes: Sequence[str]) -> list[str]:
    """Medians per mode, and wall time against never."""
    lines = [
        f"### {name}",
        "",
        "| --browser | runs | wall s | CPU s | pages/s | pages | rendered | peak PSS MB (tree) "
        "| wall vs never |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    medians = {}
    for mode in modes:
        mine = [run for run in results if run.mode == mode and run.exit_code in (0, 4)]  # 4: error answers
        if not mine:
            lines.append(f"| {mode} | 0 | failed | | | | | | |")
            continue
        medians[mode] = statistics.median(run.wall_seconds for run in mine)
        lines.append(
            f"| {mode} | {len(mine)} | {medians[mode]:.2f} | "
            f"{statistics.median(run.cpu_seconds for run in mine):.2f} | "
            f"{statistics.median(run.pages_per_second for run in mine):.1f} | "
            f"{statistics.median(run.pages for run in mine):.0f} | "
            f"{statistics.median(run.rendered for run in mine):.0f} | "
            f"{statistics.median(run.peak_pss_mb for run in mine):.0f} | "
            + (f"{medians[mode] / medians['never']:.2f}x |" if "never" in medians else " |")
        )
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1500, help="generated site for never and auto")
    parser.add_argument("--always-pages", type=int, default=200, help="generated site for never and always")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "archiver-bench")
    parser.add_argument("--archiver-arg", action="append", default=[], help="extra archiver crawl argument")
    parser.add_argument(
        "--part",
        action="append",
        choices=PARTS,
        help="measure only this part (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    parts = args.part or PARTS
    report = ["## --browser never, auto, always", "", f"load before: {load()}", ""]
    sites = [
        ("auto", f"generated site, {args.pages} pages", args.pages, ("never", "auto")),
        ("always", f"generated site, {args.always_pages} pages", args.always_pages, ("never", "always")),
    ]
    for part, name, pages, modes in sites:
        if part not in parts:
            continue
        site_dir = args.workdir / f"site-{pages}-seed0"
        generate_site(site_dir, pages)
        results = bench(f"site{pages}", site_dir, modes, args.runs, args.workdir, args.archiver_arg)
        report += table(name, results, modes)
    if "demo" in parts:
        with demo_site() as site_dir:
            results = bench("demo", site_dir, ("never", "auto"), args.runs, args.workdir, args.archiver_arg)
            report += table("examples/site (the demo)", results, ("never", "auto"))
    report += [f"load after: {load()}", ""]
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
