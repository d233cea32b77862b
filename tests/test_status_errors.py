"""An answer's status read as an error or not, whatever digits its status line gives: a 4xx, a
5xx and a status outside 100-599 (RFC 9110 has a client read one as a 5xx) are errors in the
crawl's report, its exit and a seed's failure, however the crawl reads them (as Chromium does)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import manifest_rows
from raw_server import RawRequest, RawServer

STATUS_LINES = {
    # the status line the seed is answered with: (the status the crawl reads, whether an error)
    b"HTTP/1.1 200 OK": (200, False),
    b"HTTP/1.1 0200 OK": (200, False),
    b"HTTP/1.1 404 Not Found": (404, True),
    b"HTTP/1.1 0404 Not Found": (404, True),
    b"HTTP/1.1 0 Zero": (0, True),
    b"HTTP/1.1 020 Odd": (20, True),
    b"HTTP/1.1 99 Odd": (99, True),
    b"HTTP/1.1 600 Odd": (600, True),
    b"HTTP/1.1 2000 OK": (2000, True),
}


@pytest.mark.parametrize("status_line", STATUS_LINES, ids=[line.decode() for line in STATUS_LINES])
async def test_a_seed_answered_with_a_status_outside_100_599_failed_as_a_4xx_fails(status_line, run_crawl):
    """A seed answered ``HTTP/1.1 020`` or ``HTTP/1.1 0`` was archived as a page without error,
    the crawl complete, where one answered ``2000`` failed: statuses were errors from 400 up."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/":
            writer.write(status_line + b"\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\n<p>x")
        else:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        return False

    server = await RawServer(handler).start()
    seed = server.url("/")
    try:
        result = await run_crawl(seed, max_tries=1, sitemaps=False)
    finally:
        await server.close()
    status, error = STATUS_LINES[status_line]
    assert result.totals["by_status"] == {str(status): 1}
    assert result.totals["http_error_count"] == int(error)
    assert result.totals["http_errors"] == ([(seed, status)] if error else [])
    assert result.seeds_failed == ([(seed, f"HTTP {status}")] if error else [])


@pytest.mark.parametrize(
    ("status_line", "shared"),
    [(b"HTTP/1.1 200 OK", True), (b"HTTP/1.1 404 Not Found", False), (b"HTTP/1.1 020 Odd", False)],
    ids=["200", "404", "020"],
)
async def test_error_pages_of_one_body_keep_a_mirror_file_each_whatever_their_status(
    status_line, shared, run_crawl
):
    """A site answering its dead links with one page: each keeps a file of its own in the mirror,
    so a link drafted before the fetch points where it stays (test_live_mirror). An error status
    outside 100-599 (``020``) shared one file, as a 200 page does."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/":
            body = b'<a href="/dead/1">1</a><a href="/dead/2">2</a>'
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body)
            )
        elif request.path == "/robots.txt":
            body = b""
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        else:
            body = b"<h1>Not here</h1>"
            writer.write(
                status_line + b"\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body)
            )
        writer.write(body)
        return False

    server = await RawServer(handler).start()
    base = server.url("")
    try:
        result = await run_crawl(base + "/", max_tries=1, sitemaps=False)
    finally:
        await server.close()
    rows = manifest_rows(result.snapshot.root)
    first, second = rows[base + "/dead/1"], rows[base + "/dead/2"]
    assert first.local_path and second.local_path, (first, second)
    assert (first.local_path == second.local_path) is shared, (first.local_path, second.local_path)
