"""Trailers a server sends after a chunked body's last chunk (a checksum, Server-Timing): the WARC
record keeps them, each line under X-Archiver-Trailer in the answer's head, so what was sent is
all in the record though the body is stored de-chunked, and no tool takes them for the head's
own fields."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from conftest import manifest_rows
from raw_server import RawRequest, RawServer
from warcio.archiveiterator import ArchiveIterator

from archiver.store.rows import FETCHED
from archiver.verify.verifier import verify_snapshot

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
TRAILED = {
    "/checksum": (HEAD, b"5\r\nhello\r\n0\r\nX-Checksum: 5d41402a\r\nServer-Timing: db;dur=53\r\n\r\n"),
    "/bare-lf": (HEAD, b"5\nhello\n0\nX-Checksum: 5d41402a\n\n"),
    "/lone-cr": (HEAD, b"5\r\nhello\r\n0\r\nX-T: a\rb\x00c\r\n\r\n"),
    "/no-colon": (HEAD, b"5\r\nhello\r\n0\r\na trailer with no colon\r\n\r\n"),
    "/dechunked-here": (
        HEAD.replace(b"chunked", b"chunked, identity"),
        b"5\r\nhello\r\n0\r\nX-Checksum: 5d41402a\r\n\r\n",
    ),
}
"""Chunked bodies of "hello" and the trailers after them; /dechunked-here's body is one the
client reads to the close and Chromium de-chunks (answer_parser.py)."""
KEPT = {
    "/checksum": [
        ("X-Archiver-Trailer", "X-Checksum: 5d41402a"),
        ("X-Archiver-Trailer", "Server-Timing: db;dur=53"),
    ],
    "/bare-lf": [("X-Archiver-Trailer", "X-Checksum: 5d41402a")],
    "/lone-cr": [("X-Archiver-Trailer", "X-T: a"), ("X-Archiver-Trailer", "bc")],
    "/no-colon": [("X-Archiver-Trailer", "a trailer with no colon")],
    "/dechunked-here": [("X-Archiver-Trailer", "X-Checksum: 5d41402a")],
}
"""What each answer's WARC head ends with: its trailers, a line each (a lone CR ends a line and a
NUL is dropped, as in a head: no record holds a line break inside a field)."""


async def _trailed(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/":
        links = "".join(f'<a href="{path}">{path}</a>' for path in [*TRAILED, "/plain"]).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(links))
        writer.write(links)
    elif request.path in TRAILED:
        head, body = TRAILED[request.path]
        writer.write(head)
        for at in range(0, len(body), 5):  # in pieces: a trailer may come in several reads
            writer.write(body[at : at + 5])
            await writer.drain()
    else:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nplain")
    return True  # kept alive: the next request's answer has none of them


def _heads(root: Path) -> dict[str, list[tuple[str, str]]]:
    """The HTTP head of each response and revisit record in the snapshot at ``root``, by URL."""
    heads = {}
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as warc:
            for record in ArchiveIterator(warc, check_digests=True):
                if record.rec_type in ("response", "revisit"):
                    heads[record.rec_headers.get_header("WARC-Target-URI")] = record.http_headers.headers
    return heads


async def test_trailers_after_a_chunked_body_are_kept_in_its_record(run_crawl):
    server = await RawServer(_trailed).start()
    base = server.url("")
    try:
        result = await run_crawl(base + "/", max_tries=1, sitemaps=False, concurrency=1)
    finally:
        await server.close()
    root = result.snapshot.root
    rows, heads = manifest_rows(root), _heads(root)
    for path, kept in KEPT.items():
        row = rows[base + path]
        assert (row.outcome, row.status, row.length, row.truncated) == (FETCHED, 200, 5, False), row
        assert heads[base + path][-len(kept) :] == kept, heads[base + path]
    assert not any(name == "X-Archiver-Trailer" for name, _ in heads[base + "/plain"]), heads[base + "/plain"]
    assert not any(name == "X-Archiver-Trailer" for name, _ in heads[base + "/"]), heads[base + "/"]
    checked = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", *map(str, sorted((root / "warc").glob("*.warc.gz")))],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
