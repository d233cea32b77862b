"""An answer's status read as an error or not, whatever digits its status line gives: a 4xx, a
5xx and a status outside 100-599 (RFC 9110 has a client read one as a 5xx) are errors in the
crawl's report, its exit and a seed's failure, however the crawl reads them (as Chromium does)."""

from __future__ import annotations

import asyncio

import pytest
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
