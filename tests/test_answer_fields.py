"""Fields of an answer a server should not send, in its head or in a chunked body's trailers: a
line Chromium reads as no field is kept in the WARC under another name, not made a reason to
refuse the answer, and fields without end cost the bytes a head may take, no more."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
from pathlib import Path
from typing import Any

from conftest import manifest_rows
from raw_server import RawRequest, RawServer
from warcio.archiveiterator import ArchiveIterator

from archiver.store.rows import FAILED, FETCHED, REDIRECTED
from archiver.verify.verifier import verify_snapshot

ODD_LINES = {
    "/no-colon": b"a line with no colon",
    "/name-with-space": b"Bad Name: v",
    "/no-name": b": v",
    "/control-in-name": b"X\x01Name: v",
    "/nul-in-value": b"X-Value: a\x00b",
    "/leading-fold": b"  folded before any field",
    "/bare-cr": b"X-Value: a\rb",
}
"""Each is a line of a 200's head; Chromium takes the answer and reads past the line."""


async def _odd_fields(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    path = request.path
    if path == "/":
        links = [*ODD_LINES, "/cr-in-location", "/location-after-cr"]
        body = "".join(f'<a href="{link}">{link}</a>' for link in links).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )
    elif path in ODD_LINES:
        writer.write(b"HTTP/1.1 200 OK\r\n" + ODD_LINES[path] + b"\r\nContent-Length: 2\r\n\r\nok")
    elif path == "/cr-in-location":  # a lone CR ends a line, to Chromium: the Location is /first
        writer.write(b"HTTP/1.1 302 Found\r\nLocation: /first\rsecond\r\nContent-Length: 0\r\n\r\n")
    elif path == "/location-after-cr":  # and what follows it is a field of its own
        writer.write(b"HTTP/1.1 302 Found\r\nX-Value: a\rLocation: /landed\r\nContent-Length: 0\r\n\r\n")
    else:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nland")
    return False


def _heads(root: Path) -> dict[str, list[tuple[str, str]]]:
    """The HTTP head of each response and revisit record in the snapshot at ``root``, by URL."""
    heads = {}
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as warc:
            for record in ArchiveIterator(warc):
                if record.rec_type in ("response", "revisit"):
                    heads[record.rec_headers.get_header("WARC-Target-URI")] = record.http_headers.headers
    return heads


async def _crawl(handler: Any, run_crawl: Any, **options: Any) -> tuple[Any, str]:
    """Crawl a RawServer serving ``handler``; (the crawl's result, the server's base URL)."""
    server = await RawServer(handler).start()
    base = server.url("")
    try:
        return await run_crawl(base + "/", max_tries=1, sitemaps=False, **options), base
    finally:
        await server.close()


async def test_lines_chromium_reads_as_no_field_are_kept_and_the_answer_taken(run_crawl):
    result, base = await _crawl(_odd_fields, run_crawl)
    rows = manifest_rows(result.snapshot.root)
    heads = _heads(result.snapshot.root)
    for path in ODD_LINES:
        row = rows[base + path]
        assert (row.outcome, row.status, row.length) == (FETCHED, 200, 2), row
        assert ("Content-Length", "2") in heads[base + path], heads[base + path]
    for path in ("/no-colon", "/name-with-space", "/no-name", "/leading-fold"):
        line = ODD_LINES[path].decode().strip()
        assert ("X-Archiver-Unread", line) in heads[base + path], heads[base + path]
    assert ("X-Value", "ab") in heads[base + "/nul-in-value"]  # Chromium drops each NUL of a head
    assert ("X-Value", "a") in heads[base + "/bare-cr"]

    moved = rows[base + "/cr-in-location"]
    assert (moved.outcome, moved.redirect_to) == (REDIRECTED, base + "/first"), moved
    moved = rows[base + "/location-after-cr"]
    assert (moved.outcome, moved.redirect_to) == (REDIRECTED, base + "/landed"), moved
    assert rows[base + "/landed"].status == 200
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text(str(result.snapshot.root))


TRAILER = b"X-Trailer: " + b"t" * 60_000 + b"\r\n"


async def test_trailers_without_end_cut_the_body_they_follow_at_a_bound_of_bytes(run_crawl):
    """Trailers after a chunked body are bounded as a head is, by their bytes: a server that
    sends them without end costs a few hundred KiB, not one field after another until --timeout."""
    sent = 0

    async def endless_trailers(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        nonlocal sent
        if request.path != "/":
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return False
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"5\r\nhello\r\n0\r\n")
        with contextlib.suppress(ConnectionError):
            while not writer.transport.is_closing() and sent < 1 << 30:
                writer.write(TRAILER * 16)
                sent += len(TRAILER) * 16
                await writer.drain()
        return False

    result, base = await _crawl(endless_trailers, run_crawl, timeout=60)
    row = manifest_rows(result.snapshot.root)[base + "/"]
    assert (row.outcome, row.length, row.truncated) == (FAILED, 5, True), row
    assert row.reason.startswith("body cut short after 5 bytes where the answer broke HTTP's framing"), row
    assert sent < 16 << 20, sent  # what the peer got out before the crawl stopped reading


CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
TAKEN_FRAMINGS = {
    "/trailer-no-field": b"5\r\nhello\r\n0\r\na trailer with no colon\r\n\r\n",
    "/trailer-lone-cr": b"5\r\nhello\r\n0\r\nX-T: a\rb\r\n\r\n",
    "/trailer-fold": b"5\r\nhello\r\n0\r\n folded\r\n\r\n",
    "/lf-alone": b"3\nhel\n2\nlo\n0\n\n",
    "/extension-and-spaces": b"3  ;name=value;other\r\nhel\r\n2;" + b"e" * 15_000 + b"\r\nlo\r\n0\r\n\r\n",
}
"""Chunked bodies whose framing Chromium reads (HttpChunkedDecoder): each is "hello" whole."""
BROKEN_FRAMINGS = {
    "/size-0x": b"3\r\nhel\r\n0x2\r\nlo\r\n0\r\n\r\n",
    "/size-signed": b"3\r\nhel\r\n+2\r\nlo\r\n0\r\n\r\n",
    "/size-space-before": b"3\r\nhel\r\n 2\r\nlo\r\n0\r\n\r\n",
    "/data-too-long": b"3\r\nhello\r\n0\r\n\r\n",
    "/size-line-past-16-kib": b"3\r\nhel\r\n2;" + b"e" * 17_000 + b"\r\nlo\r\n0\r\n\r\n",
}
"""Chunked bodies whose framing Chromium finds broken after "hel": cut short there."""


async def _framings(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    path = request.path
    if path == "/":
        links = "".join(f'<a href="{link}">{link}</a>' for link in [*TAKEN_FRAMINGS, *BROKEN_FRAMINGS])
        writer.write(
            CHUNKED.replace(b"text/plain", b"text/html")
            + b"%x\r\n%s\r\n0\r\n\r\n" % (len(links), links.encode())
        )
    elif path in TAKEN_FRAMINGS or path in BROKEN_FRAMINGS:
        body = CHUNKED + (TAKEN_FRAMINGS.get(path) or BROKEN_FRAMINGS[path])
        for at in range(0, len(body), 7):  # in pieces, as a slow network brings them
            writer.write(body[at : at + 7])
            await writer.drain()
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


async def test_a_chunked_body_is_whole_or_cut_where_chromium_finds_its_framing_whole_or_broken(run_crawl):
    result, base = await _crawl(_framings, run_crawl)
    rows = manifest_rows(result.snapshot.root)
    for path in TAKEN_FRAMINGS:
        row = rows[base + path]
        assert (row.outcome, row.length, row.truncated, row.reason) == (FETCHED, 5, False, None), row
    for path in BROKEN_FRAMINGS:
        row = rows[base + path]
        assert (row.outcome, row.length, row.truncated) == (FAILED, 3, True), row
        assert row.reason.startswith("body cut short after 3 bytes where the answer broke HTTP's framing"), (
            row
        )
    assert {rows[base + path].payload_digest for path in TAKEN_FRAMINGS} == {_digest(b"hello")}
    assert {rows[base + path].payload_digest for path in BROKEN_FRAMINGS} == {_digest(b"hel")}


def _digest(payload: bytes) -> str:
    """The WARC-Payload-Digest of ``payload``."""
    return "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode()


LONG = 100_000
"""Bytes of a field longer than aiohttp's bound of a line (8 KiB by default), in a head short of
the 256 KiB browsers bound a head at."""


async def _long_fields(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    path, long = request.path, b"v" * LONG
    if path == "/":
        links = ("/long-value", "/long-cookie", "/long-reason", "/long-location")
        body = "".join(f'<a href="{link}">{link}</a>' for link in links).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )
    elif path == "/long-value":  # a policy or a list of links as long as some sites send
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Security-Policy: " + long + b"\r\nContent-Length: 2\r\n\r\nok"
        )
    elif path == "/long-cookie":
        head = b"HTTP/1.1 200 OK\r\nSet-Cookie: long=" + long + b"\r\nContent-Type: text/html\r\n"
        writer.write(head + b'Content-Length: 21\r\n\r\n<a href="/echo">e</a>')
    elif path == "/long-reason":
        writer.write(b"HTTP/1.1 200 " + long + b"\r\nContent-Length: 2\r\n\r\nok")
    elif path == "/long-location":
        writer.write(b"HTTP/1.1 302 Found\r\nLocation: /landed?" + long + b"\r\nContent-Length: 0\r\n\r\n")
    else:
        cookie = request.headers.get("cookie", "")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(cookie), cookie.encode()))
    return False


async def test_a_field_of_100_kb_in_a_head_under_256_kib_is_taken(run_crawl):
    """Chromium bounds a head at 256 KiB, not each of its lines: a page whose head holds one long
    field is archived; a cookie that long is one Chromium drops (past 4096 bytes), so it is never
    sent back."""
    result, base = await _crawl(_long_fields, run_crawl)
    rows = manifest_rows(result.snapshot.root)
    for path in ("/long-value", "/long-cookie", "/long-reason"):
        assert (rows[base + path].outcome, rows[base + path].status) == (FETCHED, 200), rows[base + path]
    moved = rows[base + "/long-location"]
    assert (moved.outcome, moved.status) == (REDIRECTED, 302), moved
    assert rows[base + "/echo"].length == 0
