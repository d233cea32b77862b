"""Hostile servers and careless operators: each run against a local site, measured, its outcome checked.

Where ``hostile_bench.py``'s bodies try the decoders, these try the snapshot's
life: two writers at once, a stale lock after ``kill -9``, options given with
``--resume``, Ctrl-C, SIGTERM and a full disk in each phase, bad input, a reader
that goes away, and servers that loop, never end, or send huge headers. Peak
RSS is the measured command's own, from ``wait4`` (what ``/usr/bin/time -v``
reports), its mirror processes included.

    python3 benchmarks/hostile_bench.py --table runs > runs.md
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ARCHIVER = [sys.executable, "-m", "archiver"]
PAGES = 300


@dataclass
class Run:
    """One command's exit code, peak RSS (MB), wall time (s) and the last line it wrote on stderr."""

    code: int
    rss: float
    wall: float
    line: str

    def shown(self) -> str:
        return f"{self.rss:.0f} MB / {self.wall:.1f} s"


class Site(BaseHTTPRequestHandler):
    """/pN link to 20 other pages; /loop, /endless, /headers and /dotdot misbehave."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        path = self.path
        if path == "/loop":
            return self._answer(302, b"", {"Location": "/loop2"})
        if path == "/loop2":
            return self._answer(302, b"", {"Location": "/loop"})
        if path == "/endless":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"\0" * 65536)
            except OSError:
                return None
        if path == "/headers":
            many = {f"X-Filler-{n}": "v" * 4000 for n in range(256)}  # 1 MB of headers
            return self._answer(200, b"<p>h</p>", many)
        if path == "/dotdot":
            links = "".join(
                f'<a href="{t}">x</a>' for t in ("/../../etc/passwd", "/a/../../../b", "/%2e%2e/c")
            )
            return self._answer(200, links.encode(), {})
        n = int(path[2:]) if path.startswith("/p") and path[2:].isdigit() else 0
        links = "".join(f'<a href="/p{(n * 7 + k) % PAGES}">{k}</a>' for k in range(20))
        return self._answer(200, f"<title>p{n}</title>{links}".encode(), {})

    def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    """The site's server: a crawl killed mid-answer is expected, not an error to print."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


def start(*args: str, file_limit: int | None = None) -> subprocess.Popen[bytes]:
    """``archiver *args`` in its own process group, its files limited to ``file_limit`` bytes (EFBIG)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.Popen(
        [*ARCHIVER, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=limit,
    )


def finish(process: subprocess.Popen[bytes], began: float) -> Run:
    """Wait for ``process``: its exit code, peak RSS, wall time and last line of stderr."""
    assert process.stderr is not None
    stderr = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = stderr.strip().splitlines()
    line = "TRACEBACK" if "Traceback" in stderr else (lines[-1] if lines else "")
    code = process.returncode if process.returncode >= 0 else 128 - process.returncode
    return Run(code, usage.ru_maxrss / 1024, time.monotonic() - began, line)


def run(*args: str, file_limit: int | None = None) -> Run:
    began = time.monotonic()
    return finish(start(*args, file_limit=file_limit), began)


def stopped(signum: int, after: Callable[[], bool], *args: str) -> Run:
    """``archiver *args``, sent ``signum`` (to its group, as a terminal does) once ``after()`` holds."""
    began = time.monotonic()
    process = start(*args)
    while not after() and process.poll() is None:
        time.sleep(0.01)
    if process.poll() is None:
        os.killpg(process.pid, signum)
    return finish(process, began)


def crawling(snap: Path) -> Callable[[], bool]:
    """True once the crawl into ``snap`` has written part of its WARC."""
    return lambda: any(f.stat().st_size > 20_000 for f in snap.glob("warc/*.warc.gz"))


def one_record_a_url(snap: Path) -> str:
    """'verify N' (verify's exit code) and whether any URL has two responses in the WARCs."""
    from warcio.archiveiterator import ArchiveIterator

    seen: dict[str, int] = {}
    for warc in snap.glob("warc/*.warc.gz"):
        with warc.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    seen[uri] = seen.get(uri, 0) + 1
    twice = sum(1 for n in seen.values() if n > 1)
    return f"verify {run('verify', str(snap)).code}, {len(seen)} URLs, {twice} with two records"


def scenarios(site: str, work: Path) -> list[tuple[str, Callable[[], tuple[Run, str]]]]:
    """(input, what runs it -> (the measured run, what was checked after)) for each hostile input."""
    slow = ["--delay", "0.02", "--quiet", "--no-mirror"]
    seed = site + "p0"

    def fresh(name: str) -> Path:
        snap = work / name
        subprocess.run(["rm", "-rf", str(snap)], check=True)
        return snap

    def second_writer(command: list[str]) -> Callable[[], tuple[Run, str]]:
        def go() -> tuple[Run, str]:
            snap = fresh("locked")
            first = start("crawl", seed, "-o", str(snap), *slow)
            while not crawling(snap)():
                time.sleep(0.01)
            second = run(*[str(snap) if part == "DIR" else part for part in command])
            going = first.poll() is None
            os.killpg(first.pid, signal.SIGTERM)
            first.wait()
            return second, f"the first crawl still running: {going}"

        return go

    def kill9_then_resume() -> tuple[Run, str]:
        snap = fresh("killed")
        stopped(signal.SIGKILL, crawling(snap), "crawl", seed, "-o", str(snap), *slow)
        resumed = run("crawl", "--resume", str(snap), "--quiet")
        return resumed, one_record_a_url(snap)

    def options_with_resume() -> tuple[Run, str]:
        snap = fresh("options")
        stopped(signal.SIGTERM, crawling(snap), "crawl", seed, "-o", str(snap), *slow)
        resumed = run("crawl", "--resume", str(snap), "--delay", "0", "--exclude", "/p1[0-9]$", "--quiet")
        settings = json.loads((snap / "crawl.json").read_text())["settings"]
        return resumed, f"crawl.json: delay {settings['delay']}, exclude {settings['exclude']}"

    def signal_in_crawl(signum: int) -> Callable[[], tuple[Run, str]]:
        def go() -> tuple[Run, str]:
            snap = fresh("signalled")
            first = stopped(signum, crawling(snap), "crawl", seed, "-o", str(snap), *slow)
            return (
                first,
                f"resume exit {run('crawl', '--resume', str(snap), '--quiet').code}; "
                + one_record_a_url(snap),
            )

        return go

    def mirrored() -> Path:
        snap = work / "mirrored"
        if not snap.exists():
            run("crawl", seed, "-o", str(snap), "--quiet")
        return snap

    def signal_in_mirror() -> tuple[Run, str]:
        snap = mirrored()
        before = sorted(p.name for p in (snap / "mirror").rglob("*"))
        partial = snap / ".mirror.partial"
        stop = stopped(signal.SIGTERM, lambda: partial.is_dir(), "mirror", str(snap))
        kept = sorted(p.name for p in (snap / "mirror").rglob("*")) == before
        return stop, f"mirror before kept: {kept}, partial left: {partial.exists()}"

    def full_disk(limit: int) -> Callable[[], tuple[Run, str]]:
        def go() -> tuple[Run, str]:
            snap = fresh("full")
            stop = run("crawl", seed, "-o", str(snap), "--quiet", file_limit=limit)
            resumed = run("crawl", "--resume", str(snap), "--quiet")
            return stop, f"resume exit {resumed.code}; " + one_record_a_url(snap)

        return go

    def empty_manifest() -> tuple[Run, str]:
        snap = fresh("empty")
        subprocess.run(["cp", "-a", str(mirrored()), str(snap)], check=True)
        before = sorted(p.name for p in (snap / "mirror").rglob("*"))
        import sqlite3

        db = sqlite3.connect(snap / "manifest.sqlite3")
        db.execute("DELETE FROM urls")
        db.commit()
        db.close()
        refused = run("mirror", str(snap))
        return refused, f"mirror untouched: {sorted(p.name for p in (snap / 'mirror').rglob('*')) == before}"

    def broken_pipe() -> tuple[Run, str]:
        began = time.monotonic()
        process = subprocess.Popen(
            [*ARCHIVER, "verify", str(mirrored()), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdout is not None
        process.stdout.read(10)
        process.stdout.close()
        return finish(process, began), "as `| head -c 10`; its report fits the pipe's buffer"

    def no_seed() -> tuple[Run, str]:
        snap = fresh("noseed")
        failed = run("crawl", "http://127.0.0.1:9/", "-o", str(snap), "--quiet", "--max-tries", "1")
        checked = subprocess.run([*ARCHIVER, "verify", str(snap)], capture_output=True, text=True)
        said = (checked.stdout.strip().splitlines() or [""])[0]
        return failed, f"verify exit {checked.returncode}: {said[:60]}"

    def hostile_path(path: str, *options: str) -> Callable[[], tuple[Run, str]]:
        def go() -> tuple[Run, str]:
            snap = fresh("hostile")
            crawled = run("crawl", site + path, "-o", str(snap), "--quiet", *options)
            return crawled, f"verify exit {run('verify', str(snap)).code}"

        return go

    def bad(*args: str) -> Callable[[], tuple[Run, str]]:
        def go() -> tuple[Run, str]:
            return run(*[a.replace("{work}", str(work)) for a in args]), ""

        return go

    (work / "not.pem").write_text("hello")
    return [
        ("14.2 `crawl --resume DIR` while a crawl writes DIR", second_writer(["crawl", "--resume", "DIR"])),
        ("14.2 `mirror DIR` while a crawl writes DIR", second_writer(["mirror", "DIR"])),
        ("14.2/14.6 kill -9 mid-crawl, then `crawl --resume DIR`", kill9_then_resume),
        ("14.7 `crawl --resume DIR --delay 0 --exclude X` (no -o)", options_with_resume),
        ("14.7 `--user alice` (an abbreviation)", bad("crawl", seed, "-o", "{work}/abbr", "--user", "alice")),
        ("14.8 Ctrl-C mid-crawl", signal_in_crawl(signal.SIGINT)),
        ("14.8 SIGTERM mid-crawl", signal_in_crawl(signal.SIGTERM)),
        ("14.8 SIGTERM during `archiver mirror`", signal_in_mirror),
        ("14.8 full disk as the crawl begins (files capped at 20 KB)", full_disk(20_000)),
        ("14.8 full disk mid-crawl (files capped at 100 KB)", full_disk(100_000)),
        ("14.8 `archiver mirror` on an empty manifest", empty_manifest),
        ("14.8 `verify --json` into a reader that goes away", broken_pipe),
        ("14.8 every seed fails", no_seed),
        (
            "14.8 `--ca-bundle` not PEM",
            bad("crawl", seed, "-o", "{work}/ca", "--ca-bundle", "{work}/not.pem"),
        ),
        ("14.8 `serve --port 99999`", bad("serve", str(work / "mirrored"), "--port", "99999")),
        ("14.8 `--resolve HOST:not-an-ip`", bad("crawl", seed, "-o", "{work}/r", "--resolve", "h:not-an-ip")),
        ("server: redirect loop", hostile_path("loop")),
        ("server: endless body, `--max-file-size 20M`", hostile_path("endless", "--max-file-size", "20M")),
        ("server: 1 MB of response headers", hostile_path("headers")),
        ("server: `/../` links (their targets answer /p0's page)", hostile_path("dotdot")),
    ]


def main(work: Path, only: str = "") -> None:
    """Print the markdown table of every scenario (of those whose name holds a part of ``only``)."""
    server = Server(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        print("| input | peak RSS / wall | exit | its line on stderr | after |")
        print("|---|---|---|---|---|")
        for name, go in scenarios(site, work):
            if only and not any(part in name for part in only.split(",")):
                continue
            measured, after = go()
            line = measured.line.replace(str(work), "DIR").replace("|", "\\|")[:110]
            print(f"| {name} | {measured.shown()} | {measured.code} | {line} | {after} |", flush=True)
    finally:
        server.shutdown()
