"""Benchmark a re-archive: a generated site crawled, then crawled again unchanged with --previous.

The site (sitegen.py) is served by nginx (server.py), which sends ETag and
Last-Modified and answers conditional requests with 304s. Each run crawls it
into a fresh snapshot (the first archive), then again into another with
``--previous`` naming the first run's snapshot (the re-archive); runs after the
first alternate which of the two goes first. The report gives, for each, the
median wall time, CPU time and bytes written: the bytes of the files of the
snapshot that are its own (a file hard-linked from the previous snapshot's
mirror is counted once, in the previous one), by part (warc/, mirror/, the rest).

    python3 benchmarks/rearchive_bench.py --pages 10000 --runs 2
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from measure import RunResult, run_measured
from server import serve_site
from sitegen import generate_site


def own_bytes(snapshot: Path, other: Path | None) -> dict[str, int]:
    """Bytes of the files of ``snapshot`` by part (warc, mirror, other), leaving out files that are
    hard links to files of ``other``."""
    shared: set[tuple[int, int]] = set()
    if other is not None:
        for folder, _, names in os.walk(other):
            for name in names:
                found = os.lstat(os.path.join(folder, name))
                shared.add((found.st_dev, found.st_ino))
    parts = {"warc": 0, "mirror": 0, "other": 0}
    for folder, _, names in os.walk(snapshot):
        relative = Path(folder).relative_to(snapshot).parts
        part = relative[0] if relative and relative[0] in parts else "other"
        for name in names:
            found = os.lstat(os.path.join(folder, name))
            if (found.st_dev, found.st_ino) not in shared:
                parts[part] += found.st_size
    return parts


def crawl(url: str, output: Path, logs: Path, previous: Path | None) -> RunResult:
    command = [sys.executable, "-m", "archiver", "crawl", url, "-o", str(output), "--quiet"]
    if previous is not None:
        command += ["--previous", str(previous)]
    name = output.name
    result = run_measured(command, logs / f"{name}.out", logs / f"{name}.err")
    if result.exit_code not in (0, 4):  # 4: complete, with error answers (the site's dead links)
        raise SystemExit(f"{' '.join(command)} exited with {result.exit_code}:\n{result.stderr_tail()}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000, help="HTML pages (default 10000)")
    parser.add_argument("--runs", type=int, default=2, help="runs of each crawl (default 2; medians)")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "archiver-rearchive-bench"
    )
    args = parser.parse_args()
    site = args.workdir / f"site-{args.pages}"
    info = generate_site(site, args.pages)
    logs = args.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    outputs = args.workdir / "out"
    shutil.rmtree(outputs, ignore_errors=True)
    outputs.mkdir()
    first: list[tuple[RunResult, dict[str, int]]] = []
    again: list[tuple[RunResult, dict[str, int]]] = []
    with serve_site(site) as base:
        url = f"{base}/index.html"
        baseline = outputs / "first-0"
        first.append((crawl(url, baseline, logs, None), own_bytes(baseline, None)))
        print(f"first archive: {first[-1][0].wall_seconds:.1f} s", file=sys.stderr)
        for run in range(args.runs):
            jobs = ["again"] + (["first"] if run > 0 else [])
            for kind in jobs if run % 2 == 0 else reversed(jobs):
                out = outputs / f"{kind}-{run}"
                done = first if kind == "first" else again
                done.append(
                    (
                        crawl(url, out, logs, baseline if kind == "again" else None),
                        own_bytes(out, baseline if kind == "again" else None),
                    )
                )
                print(f"{kind} archive {run}: {done[-1][0].wall_seconds:.1f} s", file=sys.stderr)
    print(
        f"Site: {info.pages} pages, {info.assets} other files, {info.total_bytes / 1e6:.1f} MB, "
        f"served by nginx on 127.0.0.1; {args.runs} runs each, medians.\n"
    )
    print("| crawl | wall s | CPU s | bytes written | of which WARC | mirror | other |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in (("first archive", first), ("re-archive (--previous, unchanged)", again)):
        wall = statistics.median(r.wall_seconds for r, _ in runs)
        cpu = statistics.median(r.cpu_seconds for r, _ in runs)
        sizes = {part: statistics.median(b[part] for _, b in runs) for part in ("warc", "mirror", "other")}
        total = sum(sizes.values())
        print(
            f"| {name} | {wall:.1f} | {cpu:.1f} | {total / 1e6:.1f} MB | {sizes['warc'] / 1e6:.1f} MB "
            f"| {sizes['mirror'] / 1e6:.1f} MB | {sizes['other'] / 1e6:.1f} MB |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
