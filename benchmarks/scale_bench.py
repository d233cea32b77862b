"""A very large crawl on one machine: does memory stay flat from 100k pages to 1M?

    python3 benchmarks/scale_bench.py --pages 1000000 --workdir /big/disk/scale

Generates (or reuses) a site of ``--pages`` pages with sitegen.py, serves it
with nginx on 127.0.0.1, and runs one ``archiver crawl`` with the embedded
defaults (SQLite frontier and manifest, WARC and live mirror). Every
``--every`` seconds it samples the crawl's whole process tree (RSS and PSS,
worker processes included) and the counts the crawl publishes for
``archiver control DIR status``. The report gives, at each checkpoint (a
count of fetches: pages, their requisites, redirects and dead links), the
peak memory so far and the fetches per second since the last checkpoint, then
the wall time and the disk the snapshot takes; the samples go to
``WORKDIR/samples.csv`` as they are taken. Memory is flat when the whole
crawl's peak is within 20% of the peak up to 100,000 fetches.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from measure import Sampling, descendants, pss_kb, rss_kb
from server import running_nginx
from sitegen import generate_site

FLAT = 1.2
"""The last checkpoint's peak may be at most this many times the first's."""


@dataclass(frozen=True)
class Sample:
    """The crawl at one moment."""

    seconds: float
    fetched: int
    queued: int
    rss_kb: int
    pss_kb: int


def published_counts(snapshot: Path) -> dict[str, int]:
    """The counts the crawl published last in DIR/control.sqlite3 (empty before the first)."""
    path = snapshot / "control.sqlite3"
    if not path.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            row = db.execute("SELECT counts FROM status WHERE id = 1").fetchone()
    except sqlite3.Error:
        return {}
    return json.loads(row[0]) if row else {}


class Sampler(Sampling):
    """Samples a process tree's memory and the crawl's counts in a thread; each sample is also
    appended to ``log`` (CSV) as it is taken, to watch a long run."""

    def __init__(self, pid: int, snapshot: Path, every: float, log: Path) -> None:
        self.samples: list[Sample] = []
        self._pid, self._snapshot = pid, snapshot
        self._started = time.monotonic()
        self._last: dict[str, int] = {}
        self._out = open(log, "w", newline="")  # noqa: SIM115 - closed by stop()
        self._log = csv.writer(self._out)
        self._log.writerow(Sample.__dataclass_fields__)
        super().__init__(every)

    def stop(self) -> None:
        super().stop()
        self._out.close()

    def sample(self) -> None:
        pids = descendants(self._pid)
        counts = published_counts(self._snapshot) or self._last
        self._last = counts
        taken = Sample(
            round(time.monotonic() - self._started, 1),
            int(counts.get("fetched", 0)),
            int(counts.get("queued", 0)),
            sum(rss_kb(pid) for pid in pids),
            sum(pss_kb(pid) for pid in pids),
        )
        self.samples.append(taken)
        self._log.writerow(dataclasses.astuple(taken))
        self._out.flush()


def disk_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` take on disk (allocated blocks, as du counts)."""
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


def checkpoint_lines(samples: Sequence[Sample], checkpoints: Sequence[int]) -> list[str]:
    """A markdown table: at each checkpoint, the peaks so far and the rate since the last one."""
    lines = [
        "| fetches | at (s) | peak RSS so far (MB) | peak PSS so far (MB) | fetches/s since last |",
        "|---:|---:|---:|---:|---:|",
    ]
    last_seconds, last_fetched = 0.0, 0
    for mark in checkpoints:
        upto = [sample for sample in samples if sample.fetched <= mark]
        reached = next((sample for sample in samples if sample.fetched >= mark), None)
        if reached is None:
            lines.append(f"| {mark:,} | not reached | | | |")
            continue
        upto.append(reached)
        rate = (reached.fetched - last_fetched) / max(reached.seconds - last_seconds, 1e-6)
        lines.append(
            f"| {mark:,} | {reached.seconds:.0f} | {max(s.rss_kb for s in upto) / 1024:.0f} | "
            f"{max(s.pss_kb for s in upto) / 1024:.0f} | {rate:.0f} |"
        )
        last_seconds, last_fetched = reached.seconds, reached.fetched
    if samples and samples[-1].fetched > last_fetched:
        end = samples[-1]
        rate = (end.fetched - last_fetched) / max(end.seconds - last_seconds, 1e-6)
        rss, pss = max(s.rss_kb for s in samples) / 1024, max(s.pss_kb for s in samples) / 1024
        lines.append(
            f"| {end.fetched:,} (last sample) | {end.seconds:.0f} | {rss:.0f} | {pss:.0f} | {rate:.0f} |"
        )
    return lines


def flat_verdict(samples: Sequence[Sample], first: int) -> str:
    """Whether the whole crawl's peak PSS stayed within FLAT of the peak up to ``first`` pages."""
    early = [sample.pss_kb for sample in samples if sample.fetched <= first]
    if not early or not samples:
        return "not measured"
    ratio = max(sample.pss_kb for sample in samples) / max(max(early), 1)
    verdict = "flat" if ratio <= FLAT else "NOT flat"
    return f"peak PSS over the whole crawl / peak up to {first:,} pages = {ratio:.2f} ({verdict})"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1_000_000, help="pages of the generated site")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/archiver-scale"), help="site and outputs")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--keep", action="store_true", help="keep the snapshot afterwards")
    parser.add_argument("archiver_arg", nargs="*", help="more options for archiver crawl (after --)")
    args = parser.parse_args(argv)
    marks = [mark for mark in (10_000, 100_000, 250_000, 500_000, 750_000) if mark < args.pages]
    args.checkpoints = [*marks, args.pages]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    site_dir = args.workdir / f"site-{args.pages}"
    site = generate_site(site_dir, args.pages, 0)
    print(
        f"site: {site.pages:,} pages, {site.requests:,} URLs, {site.total_bytes / 1e9:.1f} GB, "
        f"ready in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    snapshot = args.workdir / "snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    with running_nginx(site_dir) as server:
        command = [
            sys.executable,
            "-m",
            "archiver",
            "crawl",
            f"{server.url}/index.html",
            "-o",
            str(snapshot),
            "--quiet",
            *args.archiver_arg,
        ]
        began = time.perf_counter()
        with open(args.workdir / "crawl.stderr", "wb") as stderr:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
            sampler = Sampler(process.pid, snapshot, args.every, args.workdir / "samples.csv")
            code = process.wait()
            sampler.stop()
        wall = time.perf_counter() - began
    samples = sampler.samples
    totals = json.loads((snapshot / "crawl.json").read_text()).get("stats", {})
    fetched = int(totals.get("fetched", 0)) + int(totals.get("redirected", 0))
    print(f"### {args.pages:,}-page crawl\n")
    print("```\n" + " ".join(command).replace(server.url, "http://HOST:PORT") + "\n```\n")
    print(
        f"- exit {code}; wall {wall:.0f} s; {fetched:,} fetches of {totals.get('urls', 0):,} URLs "
        f"({fetched / max(wall, 1e-6):.0f} per second overall, start and end included)"
    )
    print(f"- site {site.total_bytes / 1e9:.1f} GB; snapshot {disk_bytes(snapshot) / 1e9:.1f} GB on disk")
    for part in ("warc", "mirror", "manifest.sqlite3"):
        path = snapshot / part
        if path.exists():
            size = disk_bytes(path) if path.is_dir() else path.stat().st_blocks * 512
            print(f"  - {part}: {size / 1e9:.2f} GB")
    print(f"- memory: {flat_verdict(samples, args.checkpoints[0] if args.pages <= 100_000 else 100_000)}\n")
    print("\n".join(checkpoint_lines(samples, args.checkpoints)))
    if not args.keep:
        shutil.rmtree(snapshot, ignore_errors=True)
    return 0 if code in (0, 4) else 1


if __name__ == "__main__":
    sys.exit(main())
