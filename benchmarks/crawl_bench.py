"""Benchmark archiver side by side with wget and Scrapy: throughput, CPU per page and peak memory.

Loopback (nginx on 127.0.0.1, the crawlers' own cost shows), on generated sites:

    python3 benchmarks/crawl_bench.py --sizes 1000,10000,100000 --runs 3

On a real site, Debian's Python documentation (apt-get install python3-doc):

    python3 benchmarks/crawl_bench.py --site python-docs --runs 5

A server 50 ms away (root: nginx runs in a network namespace, see latency.py):

    python3 benchmarks/crawl_bench.py --latency-ms 50 --concurrency 8,32,128 --latency-pages 1000

Each crawl is a fresh child process, timed with os.wait4 (wall, user+sys CPU, peak
RSS); runs alternate between the crawlers. Progress goes to stderr, the markdown
report to stdout. See benchmarks/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchtables import WGET, RunRecord, crawler_table, ratio_table, summarize
from crawlcounts import WGET_WARC_NAME, CrawlCounts, archiver_counts, mirror_counts, wget_counts
from latency import METHODS, LatencyError, delayed_site, describe_delay
from measure import RunResult, process_tree_cpu_seconds, run_measured
from realsite import RealSiteError, make_real_site
from server import ServerError, nginx_version, running_nginx
from sitegen import SiteInfo, docroot, generate_site

ARCHIVER = "archiver"
SCRAPY = "scrapy"
WGET2 = "wget2"
TOOLS = (ARCHIVER, WGET, SCRAPY, WGET2)
DEFAULT_TOOLS = (ARCHIVER, WGET, SCRAPY)
SITES = ("generated", "python-docs")
SCRAPY_PACKAGES = ("scrapy", "warcio")
SPIDER = Path(__file__).with_name("scrapy_spider.py")
WGET_ERROR_RESPONSE_EXIT = 8
"""wget's exit code when a server answered an error (our 404 links): expected, not a failure."""
ARCHIVER_ERRORS_EXIT = 4
"""archiver's exit code for a crawl complete but for answers with an error status (the same links)."""
COMPLETE_SHARE = 0.99
"""Warn when a crawler fetched fewer than this share of the site's pages or 200 URLs."""
DISK_MARGIN = 3
"""Each run writes about this many times the site's size (WARC, mirror, logs)."""


def log(message: str) -> None:
    """Progress for the person watching: stderr, so stdout stays the markdown report."""
    print(message, file=sys.stderr, flush=True)


def csv_ints(text: str) -> list[int]:
    """'1000,10000' -> [1000, 10000]."""
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class Job:
    """One crawler setting to time: archiver at a concurrency, or wget."""

    tool: str
    concurrency: int = 0

    @property
    def label(self) -> str:
        """The crawler's name in the tables."""
        return f"{self.tool} c={self.concurrency}" if self.concurrency else self.tool


def archiver_command(url: str, output: Path, concurrency: int, extra: Sequence[str]) -> list[str]:
    """archiver with every output on (WARC, mirror, manifest), quiet."""
    return [
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        f"{url}/index.html",
        "-o",
        str(output),
        "--concurrency",
        str(concurrency),
        "--quiet",
        *extra,
    ]


def wget_command(url: str, output: Path) -> list[str]:
    """wget's closest equivalent: a mirror with requisites, converted links and a WARC file."""
    return [
        "wget",
        "--mirror",
        "--page-requisites",
        "--convert-links",
        "--adjust-extension",
        f"--warc-file={output / WGET_WARC_NAME}",
        "-e",
        "robots=off",
        "--no-verbose",
        "-q",
        "-P",
        str(output),
        f"{url}/index.html",
    ]


def wget2_command(url: str, output: Path) -> list[str]:
    """wget2 with wget's options but --warc-file, which wget2 does not have: a mirror only
    (it fetches in parallel, 5 threads by default)."""
    return ["wget2", *(part for part in wget_command(url, output)[1:] if not part.startswith("--warc-file"))]


def scrapy_command(python: Path, url: str, output: Path, concurrency: int) -> list[str]:
    """The Scrapy spider of scrapy_spider.py: WARC records with warcio, no mirror."""
    return [str(python), str(SPIDER), f"{url}/index.html", str(output), "--concurrency", str(concurrency)]


def compile_archiver() -> None:
    """Compile archiver's modules to bytecode once, as pip does when it installs a wheel: an
    editable install (or PYTHONDONTWRITEBYTECODE) would have every run compile them again,
    0.1 s of CPU a run (of 0.5 for the imports) that no installed copy pays."""
    spec = importlib.util.find_spec(ARCHIVER)
    if spec is None or spec.origin is None:
        raise ServerError("archiver is not importable: pip install -e . first")
    package = str(Path(spec.origin).parent)
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True, stdout=subprocess.DEVNULL)


def scrapy_python(venv: Path) -> Path:
    """The interpreter of a virtual environment holding Scrapy and warcio, made on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        log(f"making {venv} with {' '.join(SCRAPY_PACKAGES)} from PyPI (once)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *SCRAPY_PACKAGES], check=True)
    return python


@dataclass(frozen=True)
class Served:
    """A site being served: its URL, and how to read the server's CPU time so far."""

    url: str
    server_cpu_seconds: Callable[[], float]
    note: str


@contextmanager
def loopback_site(site_dir: Path, workers: str) -> Iterator[Served]:
    """nginx on 127.0.0.1, a free port."""
    with running_nginx(site_dir, workers=workers) as server:
        yield Served(server.url, lambda: process_tree_cpu_seconds(server.pid), "loopback, no added delay")


@contextmanager
def far_site(site_dir: Path, delay_ms: float, method: str, workers: str) -> Iterator[Served]:
    """nginx in a network namespace, every response ``delay_ms`` late."""
    with delayed_site(site_dir, delay_ms, method, workers) as site:
        yield Served(site.url, site.server_cpu_seconds, describe_delay(site))


class Bench:
    """Runs the jobs against one served site and keeps the records."""

    def __init__(self, args: argparse.Namespace, site: SiteInfo, served: Served) -> None:
        self.args = args
        self.site = site
        self.served = served
        self.records: list[RunRecord] = []
        self.verify_note = "not run"
        self.outputs: list[Path] = []

    def run_all(self, jobs: Sequence[Job]) -> None:
        """Every job ``--runs`` times, alternating the order from run to run."""
        for run in range(1, self.args.runs + 1):
            for job in jobs if run % 2 else list(reversed(jobs)):
                self.records.append(self.run_one(job, run))

    def run_one(self, job: Job, run: int) -> RunRecord:
        """Time one crawl into a fresh output folder and count what it fetched."""
        name = f"{job.label.replace(' ', '-').replace('=', '')}-{self.site.pages}p-run{run}"
        output = self.args.workdir / "runs" / name
        shutil.rmtree(output, ignore_errors=True)
        self.outputs.append(output)
        logs = self.args.workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        if job.tool == ARCHIVER:
            output.parent.mkdir(parents=True, exist_ok=True)
            command = archiver_command(self.served.url, output, job.concurrency, self.args.archiver_arg)
        elif job.tool == SCRAPY:
            output.mkdir(parents=True)
            command = scrapy_command(self.args.scrapy_python, self.served.url, output, job.concurrency)
        else:
            output.mkdir(parents=True)  # wget does not make the WARC file's folder
            maker = wget2_command if job.tool == WGET2 else wget_command
            command = maker(self.served.url, output)
        server_before = self.served.server_cpu_seconds()
        result = run_measured(command, logs / f"{name}.stdout", logs / f"{name}.stderr")
        server_cpu = self.served.server_cpu_seconds() - server_before
        self._report_run(job, run, result, server_cpu)
        counts = self._count(job, result, output)
        record = RunRecord(job.label, run, result, counts, server_cpu)
        self._report_counts(record)
        if counts is not None and job.tool == ARCHIVER and self.verify_note == "not run":
            self.verify_note = verify(output, logs)
            log(f"  archiver verify: {self.verify_note}")
        return record

    def remove_outputs(self) -> None:
        """Delete the outputs of every run on this site.

        Not between runs: ext4 skips inodes freed in the last minute or more
        when it allocates new ones, so deleting one run's 10,000 files just
        before the next run writes 10,000 added seconds of system time to
        whichever crawler came next, and made the two crawlers' times swing.
        """
        for output in self.outputs:
            shutil.rmtree(output, ignore_errors=True)
        self.outputs.clear()

    def _count(self, job: Job, result: RunResult, output: Path) -> CrawlCounts | None:
        expected = {0, WGET_ERROR_RESPONSE_EXIT} if job.tool in (WGET, WGET2) else {0, ARCHIVER_ERRORS_EXIT}
        if result.exit_code not in expected:
            log(
                f"  {job.label} FAILED with exit code {result.exit_code}; stderr ends:\n"
                + _indent(result.stderr_tail() or "(empty)")
            )
            return None
        try:
            if job.tool == WGET2:
                return mirror_counts(output)
            return archiver_counts(output) if job.tool == ARCHIVER else wget_counts(output)
        except (OSError, ValueError, EOFError, sqlite3.Error) as error:  # a crawl that left broken output
            log(f"  {job.label} FAILED: cannot count its output: {type(error).__name__}: {error}")
            return None

    def _report_run(self, job: Job, run: int, result: RunResult, server_cpu: float) -> None:
        pages = self.site.pages
        log(
            f"  run {run} {job.label}: {result.wall_seconds:.2f} s wall, "
            f"{pages / result.wall_seconds:.0f} pages/s, CPU {result.cpu_seconds:.1f} s "
            f"({result.cpu_seconds * 1000 / pages:.2f} ms/page), peak RSS {result.peak_rss_mb:.0f} MB "
            f"({result.peak_tree_rss_mb:.0f} MB all processes), server CPU {server_cpu:.2f} s, "
            f"exit {result.exit_code}, load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
        )

    def _report_counts(self, record: RunRecord) -> None:
        counts, site = record.counts, self.site
        if counts is None:
            return
        log(
            f"    fetched {counts.pages}/{site.pages} pages, {counts.distinct_ok}/{site.ok_responses} "
            f"distinct 200 URLs, {counts.responses} responses in all ({counts.ok} of them 200), "
            f"{counts.files} files"
        )
        short = (
            counts.pages < site.pages * COMPLETE_SHARE
            or counts.distinct_ok < site.ok_responses * COMPLETE_SHARE
        )
        if short and self.args.site == "generated":  # a real site's files are not all linked
            log(
                f"    WARNING: {record.crawler} missed {site.pages - counts.pages} pages and "
                f"{site.ok_responses - counts.distinct_ok} URLs that answer 200"
            )


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def verify(snapshot: Path, logs: Path) -> str:
    """Run `archiver verify` on a snapshot, measured as a crawl is: 'passed' or 'FAILED' with its
    summary line, wall and CPU seconds and the peak RSS of its processes (it forks one)."""
    result = run_measured(
        [sys.executable, "-m", "archiver", "verify", str(snapshot)],
        logs / f"verify-{snapshot.name}.stdout",
        logs / f"verify-{snapshot.name}.stderr",
    )
    text = (logs / f"verify-{snapshot.name}.stdout").read_text(errors="replace").strip()
    first_line = (text.splitlines() or [result.stderr_tail(1)[-200:]])[0]
    summary = first_line.removeprefix(f"{snapshot}: ")
    verdict = "passed" if result.exit_code == 0 else f"FAILED (exit {result.exit_code})"
    return (
        f"{verdict}: {summary}; {result.wall_seconds:.1f} s wall, {result.cpu_seconds:.1f} s CPU, "
        f"peak RSS {result.peak_tree_rss_mb:.0f} MB (all processes)"
    )


def tool_version(command: Sequence[str]) -> str:
    """First line of a tool's version output, or 'not found'."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError:
        return "not found"
    return ((done.stdout or done.stderr).strip().splitlines() or ["?"])[0]


def archiver_source() -> str:
    """The git commit archiver runs from ('-dirty': with uncommitted changes), if it runs from a checkout."""
    spec = importlib.util.find_spec("archiver")
    if spec is None or spec.origin is None:
        return ""
    # GIT_OPTIONAL_LOCKS=0: only look; never refresh the index while someone may be committing.
    described = subprocess.run(
        ["git", "-C", str(Path(spec.origin).parent), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
    )
    return f" (git {described.stdout.strip()})" if described.returncode == 0 else ""


def machine_lines(args: argparse.Namespace) -> list[str]:
    """What the numbers were measured on."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "?",
    )
    load = Path("/proc/loadavg").read_text().split()[:3]
    return [
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} CPUs ({model}), {platform.system()} {platform.release()}, "
        f"load average at start {' '.join(load)}",
        f"- python {platform.python_version()}, "
        f"{tool_version([sys.executable, '-m', 'archiver', '--version'])}{archiver_source()}, "
        f"{tool_version(['wget', '--version'])}",
        f"- server: {nginx_version()}, worker_processes {args.nginx_workers}, access_log off, sendfile on, "
        "keepalive_requests 100000",
    ]


def _shown(command: Sequence[str]) -> str:
    """A command line to print: 'python3' for this interpreter when that is what python3 runs."""
    python3 = shutil.which("python3")
    same = python3 is not None and os.path.realpath(python3) == os.path.realpath(sys.executable)
    return shlex.join(["python3" if same and part == sys.executable else part for part in command])


def command_lines(args: argparse.Namespace, concurrencies: Sequence[int]) -> list[str]:
    """The exact command lines run, with the URL and output folder as placeholders."""
    url, output = "http://HOST:PORT", Path("OUT")
    lines = []
    if ARCHIVER in args.tools:
        for concurrency in concurrencies:
            lines.append(_shown(archiver_command(url, output, concurrency, args.archiver_arg)))
        lines.append(_shown([sys.executable, "-m", "archiver", "verify", "OUT"]) + "  (once, measured)")
    if WGET in args.tools:
        lines.append(_shown(wget_command(url, output)))
    if WGET2 in args.tools:
        lines.append(_shown(wget2_command(url, output)))
    if SCRAPY in args.tools:
        lines.append(
            _shown(scrapy_command(Path("SCRAPY_VENV/bin/python"), url, output, args.scrapy_concurrency))
        )
    return ["```", *lines, "```"]


def site_line(site: SiteInfo, seconds: float) -> str:
    """One line describing a generated site."""
    return (
        f"{site.pages} pages ({site.page_bytes / site.pages / 1000:.1f} KB each, "
        f"{site.links / site.pages:.0f} links each), {site.assets} requisites, "
        f"{site.redirects} redirect URLs (301), {site.missing} dead links (404); "
        f"{site.total_bytes / 1e6:.0f} MB; ready in {seconds:.1f} s"
    )


def check_disk(args: argparse.Namespace, site: SiteInfo, jobs: int) -> None:
    """Warn when the work folder's disk looks too small for the outputs of every run on a site."""
    need = site.total_bytes * DISK_MARGIN * jobs * args.runs
    free = shutil.disk_usage(args.workdir).free
    if free < need:
        log(
            f"WARNING: {free / 1e9:.1f} GB free under {args.workdir}, "
            f"the outputs may need {need / 1e9:.1f} GB"
        )


def real_site_line(site: SiteInfo) -> str:
    """One line describing the real site."""
    return (
        f"Python documentation from python3-doc: {site.pages} HTML files "
        f"({site.page_bytes / site.pages / 1000:.1f} KB each), {site.assets} other files; "
        f"{site.total_bytes / 1e6:.0f} MB; with a 500, a redirect loop, two redirect chains and a "
        "dead link linked from /index.html"
    )


def bench_site(
    args: argparse.Namespace,
    pages: int,
    concurrencies: Sequence[int],
    serve: Callable[[Path], AbstractContextManager[Served]],
    heading: str,
) -> int:
    """Generate (or reuse) a site, serve it, run every job on it, print its tables; returns failed runs."""
    started = time.perf_counter()
    if args.site == "python-docs":
        site_dir = args.workdir / "site-python-docs"
        site = make_real_site(site_dir)
        description = real_site_line(site)
    else:
        site_dir = args.workdir / f"site-{pages}-seed{args.seed}"
        site = generate_site(site_dir, pages, args.seed)
        description = site_line(site, time.perf_counter() - started)
    log(f"{heading}: {description}, in {docroot(site_dir)}")
    jobs = [Job(ARCHIVER, concurrency) for concurrency in concurrencies] if ARCHIVER in args.tools else []
    for tool in (WGET, WGET2):
        if tool in args.tools:
            jobs.append(Job(tool))
    if SCRAPY in args.tools:
        jobs.append(Job(SCRAPY, args.scrapy_concurrency))
    check_disk(args, site, len(jobs))
    with serve(site_dir) as served:
        log(f"  serving {served.url}: {served.note}")
        bench = Bench(args, site, served)
        try:
            bench.run_all(jobs)
        finally:  # interrupted or not
            if not args.keep:
                bench.remove_outputs()
    summaries = summarize(bench.records, site)
    print(f"\n### {heading}\n\n- site: {description}\n- network: {served.note}")
    if ARCHIVER in args.tools:
        print(f"- archiver verify after its first run: {bench.verify_note}")
    print(f"- medians of {args.runs} run(s)\n")
    print(crawler_table(summaries, site) if summaries else "(every run failed)")
    if ARCHIVER in args.tools and len(args.tools) > 1 and summaries:
        print()
        print(ratio_table(summaries))
    sys.stdout.flush()
    return sum(not record.succeeded for record in bench.records)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, with mode-dependent defaults filled in."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=csv_ints,
        default=[1000, 10_000],
        help="site sizes in pages, loopback mode (default 1000,10000)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each crawler per site (default 3)")
    parser.add_argument(
        "--concurrency",
        type=csv_ints,
        help="archiver --concurrency values (default: 16 on loopback, 8,32,128 with latency)",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0,
        help="serve from a network namespace with this delay per response (needs root)",
    )
    parser.add_argument(
        "--latency-pages", type=int, default=1000, help="site size in latency mode (default 1000)"
    )
    parser.add_argument(
        "--delay-method",
        choices=METHODS,
        default="auto",
        help="how latency mode delays: netem, the delay proxy, or netem if the kernel has it",
    )
    parser.add_argument(
        "--tools",
        type=lambda text: [tool.strip() for tool in text.split(",")],
        default=list(DEFAULT_TOOLS),
        help=f"crawlers to run, of {','.join(TOOLS)} (default {','.join(DEFAULT_TOOLS)})",
    )
    parser.add_argument(
        "--site",
        choices=SITES,
        default="generated",
        help="generated sites of --sizes pages (default), or python-docs: Debian's python3-doc HTML",
    )
    parser.add_argument(
        "--scrapy-venv",
        type=Path,
        help="virtual environment with Scrapy and warcio, made on first use (default: WORKDIR/scrapy-venv)",
    )
    parser.add_argument(
        "--scrapy-concurrency", type=int, default=16, help="Scrapy's CONCURRENT_REQUESTS (default 16)"
    )
    parser.add_argument(
        "--archiver-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for archiver crawl (repeatable), e.g. --archiver-arg=--delay=0",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "archiver-bench",
        help="where sites and outputs go (default: %(default)s)",
    )
    parser.add_argument("--keep", action="store_true", help="keep every crawl's output")
    parser.add_argument("--seed", type=int, default=0, help="site generator seed (default 0)")
    parser.add_argument(
        "--nginx-workers", default="1", help="nginx worker_processes: a number or auto (default 1)"
    )
    args = parser.parse_args(argv)
    unknown = set(args.tools) - set(TOOLS)
    if unknown or not args.tools:
        parser.error(f"--tools takes a list of {', '.join(TOOLS)}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.concurrency is None:
        args.concurrency = [8, 32, 128] if args.latency_ms else [16]
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 1 if any crawl failed, 2 if it could not run at all."""
    args = parse_args(argv)
    # SIGTERM and SIGINT alike unwind through the context managers: nginx, proxy and namespace go away.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    args.workdir.mkdir(parents=True, exist_ok=True)
    failures = 0
    try:
        for tool in (WGET, WGET2):
            if tool in args.tools and shutil.which(tool) is None:
                raise ServerError(f"{tool} not found: install it (`apt-get install {tool}`) or leave it out")
        if ARCHIVER in args.tools:
            compile_archiver()
        if SCRAPY in args.tools:
            args.scrapy_python = scrapy_python(args.scrapy_venv or args.workdir / "scrapy-venv")
        print(f"## crawl benchmark: {', '.join(args.tools)}\n")
        print("\n".join(machine_lines(args)))
        if args.latency_ms:
            what = "Python docs" if args.site == "python-docs" else f"{args.latency_pages} pages"
            failures += bench_site(
                args,
                args.latency_pages,
                args.concurrency,
                lambda site_dir: far_site(site_dir, args.latency_ms, args.delay_method, args.nginx_workers),
                f"{what}, {args.latency_ms:g} ms away",
            )
        elif args.site == "python-docs":
            failures += bench_site(
                args,
                0,
                args.concurrency,
                lambda site_dir: loopback_site(site_dir, args.nginx_workers),
                "Python docs on loopback",
            )
        else:
            for pages in args.sizes:
                failures += bench_site(
                    args,
                    pages,
                    args.concurrency,
                    lambda site_dir: loopback_site(site_dir, args.nginx_workers),
                    f"{pages} pages on loopback",
                )
        print("\nCommands (HOST:PORT and OUT vary per run):\n")
        print("\n".join(command_lines(args, args.concurrency)))
    except (
        ServerError,
        LatencyError,
        RealSiteError,
        FileExistsError,
        subprocess.CalledProcessError,
    ) as error:
        log(f"error: {error}")
        return 2
    except KeyboardInterrupt:
        log("interrupted: the crawl, the server and any namespace were stopped")
        return 130
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
