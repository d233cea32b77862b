"""Hostile bodies against the whole pipeline: each served by a local server, crawled, mirrored, verified.

For every body below (compression bombs, wrong or nested encodings, huge single
lines), a server on 127.0.0.1 serves a page linking to it; ``archiver crawl``
archives the site, then ``archiver mirror`` and ``archiver verify`` run under
``/usr/bin/time -v``. The markdown table gives each command's peak RSS and wall
time, the mirror file's size and the note the manifest holds for it.

    python3 benchmarks/hostile_bench.py [--only NAME,...] [--work DIR] > hostile.md

``--table runs`` prints instead the table of ``hostile_runs.py``: two writers,
kills, signals, a full disk, bad input and misbehaving servers.
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import brotlicffi
import hostile_runs

GIB = 1024**3
MIB = 1024**2
HEAD = b"<!doctype html><html><head><title>bomb</title></head><body><a href='/after'>after</a>"


def _compressed(coding: str, blocks: Iterator[bytes]) -> bytes:
    if coding == "br":
        compressor = brotlicffi.Compressor(quality=5)
        return b"".join(compressor.process(block) for block in blocks) + compressor.finish()
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}[coding]
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(compressor.compress(block) for block in blocks) + compressor.flush()


def _repeat(head: bytes, unit: bytes, size: int) -> Iterator[bytes]:
    yield head
    block = unit * (MIB // len(unit))
    for _ in range(size // len(block)):
        yield block


Body = tuple[bytes, str, str | None]
"""(stored bytes, Content-Type, Content-Encoding)."""


def bodies() -> dict[str, Callable[[], Body]]:
    """Each hostile body by name, made on demand."""
    return {
        "gzip bomb (1 GiB of zeros)": lambda: (
            _compressed("gzip", _repeat(HEAD, b"\0", GIB)),
            "text/html",
            "gzip",
        ),
        "deflate bomb, zlib-wrapped (1 GiB)": lambda: (
            _compressed("deflate", _repeat(HEAD, b"\0", GIB)),
            "text/html",
            "deflate",
        ),
        "deflate bomb, raw (1 GiB)": lambda: (
            _compressed("raw-deflate", _repeat(HEAD, b"\0", GIB)),
            "text/html",
            "deflate",
        ),
        "br bomb (1 GiB)": lambda: (_compressed("br", _repeat(HEAD, b"\0", GIB)), "text/html", "br"),
        "gzip, gzip (a gzip of a 1 GiB gzip bomb)": lambda: (
            gzip.compress(_compressed("gzip", _repeat(HEAD, b"\0", GIB))),
            "text/html",
            "gzip, gzip",
        ),
        "gzip bomb of links (1 GiB of <a href>)": lambda: (
            _compressed("gzip", _repeat(HEAD, b"<a href='/after'>a</a>\n", GIB)),
            "text/html",
            "gzip",
        ),
        "one 1 GiB line, gzip": lambda: (_compressed("gzip", _repeat(HEAD, b"a", GIB)), "text/html", "gzip"),
        "CSS bomb (1 GiB of url())": lambda: (
            _compressed("gzip", _repeat(b"", b"a{background:url(/after)}\n", GIB)),
            "text/css",
            "gzip",
        ),
        "image bomb (1 GiB, image/png)": lambda: (
            _compressed("gzip", _repeat(b"\x89PNG\r\n\x1a\n", b"\0", GIB)),
            "image/png",
            "gzip",
        ),
        "plain HTML sent as gzip": lambda: (HEAD + b"plain</body></html>", "text/html", "gzip"),
        "unknown encoding (zstd)": lambda: (HEAD + b"</body></html>", "text/html", "zstd"),
        "5,000 codings named (gzip, gzip, ...)": lambda: (
            HEAD + b"</body></html>",
            "text/html",
            ", ".join(["gzip"] * 5000),
        ),
        "90 MB identity page, one line": lambda: (
            b"".join(_repeat(HEAD, b"a", 90 * MIB)),
            "text/html",
            None,
        ),
    }


def serve(body: Body) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 with / linking to /x (the body) and /after."""
    data, content_type, encoding = body

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            if self.path == "/x":
                payload, headers = data, {"Content-Type": content_type}
                if encoding:
                    headers["Content-Encoding"] = encoding
            elif self.path in ("/", "/after"):
                payload = b"<html><head><title>home</title></head><body><a href='/x'>x</a></body></html>"
                headers = {"Content-Type": "text/html"}
            else:
                payload, headers = b"no", {"Content-Type": "text/plain"}
                self.send_response(404)
            if self.path in ("/", "/after", "/x"):
                self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def timed(command: list[str]) -> tuple[int, float, float]:
    """(exit code, peak RSS MB, wall seconds) of ``command`` under /usr/bin/time -v."""
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr).group(1)
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall.split(":"))))
    return done.returncode, rss / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated substrings of the names to run")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--table", choices=("bodies", "runs"), default="bodies")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="hostile-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.table == "runs":
        hostile_runs.main(work, args.only)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
        return
    archiver = [sys.executable, "-m", "archiver"]
    print(
        "| input | stored | crawl RSS / wall | mirror RSS / wall | mirror file "
        "| verify RSS / wall, exit | note |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, make in bodies().items():
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        body = make()
        server = serve(body)
        out = work / "snap"
        shutil.rmtree(out, ignore_errors=True)
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        try:
            crawl = timed([*archiver, "crawl", url, "-o", str(out), "--quiet", "--no-mirror"])
            mirror = timed([*archiver, "mirror", str(out)])
            verify = timed([*archiver, "verify", str(out)])
        finally:
            server.shutdown()
        db = sqlite3.connect(out / "manifest.sqlite3")
        found = db.execute(
            "SELECT m.size, m.note FROM urls JOIN mirror_files m ON m.path = urls.local_path "
            "WHERE urls.url = ?",
            (url + "x",),
        ).fetchone()
        db.close()
        size, note = found if found else (None, "not mirrored")
        print(
            f"| {name} | {len(body[0]) / MIB:.1f} MB | {crawl[1]:.0f} MB / {crawl[2]:.1f} s "
            f"| {mirror[1]:.0f} MB / {mirror[2]:.1f} s | {(size or 0) / MIB:.1f} MB "
            f"| {verify[1]:.0f} MB / {verify[2]:.1f} s, {verify[0]} | {note or ''} |",
            flush=True,
        )
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
