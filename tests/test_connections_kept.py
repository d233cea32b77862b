"""Connections kept after a body the crawl de-chunks itself (``Transfer-Encoding: chunked, gzip``,
which the HTTP client would read to the close), counted at a raw server: kept where nothing came
after its last chunk and its head asks no close, as Chromium keeps them; closed otherwise."""

from __future__ import annotations

import asyncio

from conftest import manifest_rows
from raw_server import RawRequest, RawServer

from archiver.store.rows import FETCHED


def _dechunked_here(body: bytes, *fields: bytes) -> bytes:
    """An answer of ``body`` in one chunk, its coding ``chunked, gzip`` (read to the close by the
    HTTP client, de-chunked by Chromium), with ``fields`` in its head."""
    head = b"\r\n".join(
        (b"HTTP/1.1 200 OK", b"Content-Type: text/plain", b"Transfer-Encoding: chunked, gzip", *fields)
    )
    return head + b"\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


UNASKED = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nextra"
"""Bytes a server sends after an answer, in the same write: they answer nothing."""


class _Site:
    """A raw server of a home page linking to ``answers`` (path: the whole answer, sent on a
    connection the server keeps open), noting which connection served each request."""

    def __init__(self, answers: dict[str, bytes]) -> None:
        self.answers = answers
        self.served: dict[asyncio.StreamWriter, list[str]] = {}
        """The paths each connection (its writer) served, in order."""
        self.server = RawServer(self._handle)

    async def _handle(self, request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        self.served.setdefault(writer, []).append(request.path)
        if request.path in self.answers:
            writer.write(self.answers[request.path])
        elif request.path == "/":
            links = "".join(f'<a href="{path}">{path}</a>' for path in self.answers).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(links)
            )
            writer.write(links)
        else:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        return True

    def last_on_its_connection(self, path: str) -> bool:
        return any(paths[-1] == path for paths in self.served.values())


async def _crawl(site: _Site, run_crawl) -> tuple[str, dict]:
    """The base URL of ``site`` and the rows of its crawl, one fetch at a time (so a connection
    kept is reused)."""
    await site.server.start()
    base = site.server.url("")
    try:
        result = await run_crawl(site.server.url("/"), concurrency=1, max_tries=1, sitemaps=False)
    finally:
        await site.server.close()
    return base, manifest_rows(result.snapshot.root)


async def test_a_connection_is_kept_after_a_body_dechunked_here(run_crawl):
    """Such a body closed its connection after it, so a server sending them costs a new TCP
    connection for each URL: it carries the next request once the body ends at its last chunk's
    trailers with nothing after them, as after any chunked body."""
    site = _Site({f"/{name}": _dechunked_here(name.encode()) for name in ("a", "b", "c", "d")})
    base, rows = await _crawl(site, run_crawl)
    for name in ("a", "b", "c", "d"):
        row = rows[base + f"/{name}"]
        assert (row.outcome, row.length) == (FETCHED, 1), row
    assert site.server.connections == 1, list(site.served.values())


async def test_a_connection_is_closed_after_a_body_dechunked_here_when_it_cannot_be_kept(run_crawl):
    """Closed, as before, where bytes came after the last chunk (they answer nothing, and must
    not answer the next request), or where the head asks for it (``Connection: close``)."""
    site = _Site(
        {
            "/unasked-after": _dechunked_here(b"one") + UNASKED,
            "/trailer-then-unasked": _dechunked_here(b"two").replace(
                b"0\r\n\r\n", b"0\r\nT: t\r\n\r\n" + UNASKED
            ),
            "/close": _dechunked_here(b"three", b"Connection: close"),
            "/proxy-close": _dechunked_here(b"four", b"Proxy-Connection: Close"),
            "/kept": _dechunked_here(b"kept"),
            "/after": _dechunked_here(b"after"),
        }
    )
    base, rows = await _crawl(site, run_crawl)
    assert all(rows[base + path].outcome == FETCHED for path in site.answers), rows
    for path in ("/unasked-after", "/trailer-then-unasked", "/close", "/proxy-close"):
        assert site.last_on_its_connection(path), (path, list(site.served.values()))
    assert not site.last_on_its_connection("/kept"), list(site.served.values())
    assert site.server.connections == 5, list(
        site.served.values()
    )  # each closed answer's, and the last one's
