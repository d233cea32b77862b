"""The retry policy: which answers are transient, and a URL waiting out a backoff holds
nothing the rest of the crawl needs."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from conftest import manifest_rows

from archiver.config import DEFAULT_RETRY_ON, CrawlConfig
from archiver.crawling.fetch import Fetcher
from archiver.crawling.fetch_request import FetchRequest
from archiver.errors import ConfigError


@pytest.mark.parametrize(
    ("status", "retry_on", "outcome", "tries"),
    [
        (500, DEFAULT_RETRY_ON, "fetched", 1),  # the server's answer, recorded as sent (as wget does)
        (502, DEFAULT_RETRY_ON, "failed", 3),
        (503, DEFAULT_RETRY_ON, "failed", 3),
        (504, DEFAULT_RETRY_ON, "failed", 3),
        (429, DEFAULT_RETRY_ON, "failed", 3),
        (404, DEFAULT_RETRY_ON, "fetched", 1),
        (500, (500, 503), "failed", 3),  # --retry-on 500,503
        (503, (500,), "fetched", 1),
    ],
)
async def test_which_answers_are_tried_again(status, retry_on, outcome, tries, site, run_crawl):
    site.page("/", links=["/x"])
    site.file("/x", "answer", "text/plain", status=status)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=3, retry_on=retry_on)
    row = manifest_rows(result.snapshot.root)[site.url("/x")]
    assert (row.outcome, row.tries, row.status, site.hits["/x"]) == (outcome, tries, status, tries)
    assert row.warc_file, "the last answer is archived either way"
    if outcome == "failed":
        assert row.reason == f"HTTP {status} after 3 tries"


def test_retry_on_takes_statuses_only(tmp_path):
    with pytest.raises(ConfigError, match="--retry-on"):
        CrawlConfig(seeds=("http://h/",), output=tmp_path, retry_on=(5000,))


async def test_a_url_waiting_out_retry_after_holds_neither_a_worker_nor_its_hosts_slot(site, run_crawl):
    """One URL answers 503 with Retry-After: 2, twice; 50 pages of the same host (one slot)
    are fetched while it waits, and the crawl ends with its last try."""
    requested: dict[str, list[float]] = {}
    others = [f"/p{i}" for i in range(50)]

    async def flaky(request: web.Request) -> web.Response:
        requested.setdefault(request.path, []).append(time.monotonic())
        if len(requested[request.path]) <= 2:
            return web.Response(status=503, headers={"Retry-After": "2"})
        return web.Response(text="back", content_type="text/plain")

    async def other(request: web.Request) -> web.Response:
        requested.setdefault(request.path, []).append(time.monotonic())
        return web.Response(text="other", content_type="text/plain")

    site.page("/", links=["/flaky", *others])
    site.handler("/flaky", flaky)
    for path in others:
        site.handler(path, other)
    await site.start()
    result = await run_crawl(site.url("/"), host_concurrency=1, concurrency=2, max_tries=3)
    finished = time.monotonic()
    flaky_tries = requested["/flaky"]
    assert len(flaky_tries) == 3 and flaky_tries[1] - flaky_tries[0] >= 1.9
    last_other = max(requested[path][0] for path in others)
    assert last_other < flaky_tries[1], "the other pages waited for the URL in backoff"
    assert finished - flaky_tries[2] < 2.0, "the crawl's end waited past the last try"
    rows = manifest_rows(result.snapshot.root)
    assert (rows[site.url("/flaky")].outcome, rows[site.url("/flaky")].tries) == ("fetched", 3)
    assert all(rows[site.url(path)].outcome == "fetched" for path in others)


async def test_a_url_waiting_to_be_tried_again_counts_as_queued(site, tmp_path):
    from archiver.crawling.crawl_report import progress_line
    from archiver.crawling.run import crawl

    calls = {"n": 0}

    async def flaky(request: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=503, headers={"Retry-After": "2"})
        return web.Response(text="back", content_type="text/plain")

    site.page("/", links=["/flaky"])
    site.handler("/flaky", flaky)
    await site.start()
    lines: list[str] = []
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", concurrency=2)
    result = await crawl(config, progress=lambda stats, queued: lines.append(progress_line(stats, queued)))
    assert any(line.startswith("1 done, 1 queued") for line in lines), lines
    assert result.stats.waiting == 0


UNREQUESTABLE = "http://" + "a" * 64 + ".example/"
"""A URL of a host no request can name: a label of 64 letters is past DNS's 63, so its host
encodes to no name (the same at every try)."""


async def test_a_url_no_request_can_name_fails_at_once(site, run_crawl):
    """A URL the HTTP client cannot send a request for (its host encodes to no DNS name) fails the
    same way however often it is tried: one try, a one-line reason, whether it came as a page's
    requisite or as where a redirect leads."""
    site.page("/", body=f'<img src="{UNREQUESTABLE}logo.png"><img src="/moved.png">')
    site.redirect("/moved.png", UNREQUESTABLE + "moved.png", status=302)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=3, sitemaps=False, obey_robots=False)
    rows = manifest_rows(result.snapshot.root)
    for url in (UNREQUESTABLE + "logo.png", UNREQUESTABLE + "moved.png"):
        row = rows[url]
        assert (row.outcome, row.tries) == ("failed", 1), row
        assert row.reason and "\n" not in row.reason and "idna" in row.reason, row
    assert rows[site.url("/moved.png")].redirect_to == UNREQUESTABLE + "moved.png"


async def test_an_https_url_of_a_server_that_speaks_no_tls_fails_at_once(site, run_crawl):
    """A server that answers a TLS handshake with plain HTTP (an https URL of an http port) does
    so at every try: one connection, a one-line reason. A port that refuses the connection may
    take it next time: it is tried again."""
    connections = []

    async def plain_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.read(1))  # a ClientHello's first byte, as the request
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    plain = await asyncio.start_server(plain_http, "127.0.0.1", 0)
    closed = await asyncio.start_server(plain_http, "127.0.0.1", 0)
    no_tls_url = f"https://127.0.0.1:{plain.sockets[0].getsockname()[1]}/logo.png"
    refused_url = f"https://127.0.0.1:{closed.sockets[0].getsockname()[1]}/gone.png"
    closed.close()  # its port now refuses every connection
    await closed.wait_closed()
    site.page("/", body=f'<img src="{no_tls_url}"><img src="{refused_url}">')
    await site.start()
    try:
        result = await run_crawl(site.url("/"), max_tries=3, sitemaps=False, obey_robots=False)
    finally:
        plain.close()
        await plain.wait_closed()
    rows = manifest_rows(result.snapshot.root)
    no_tls = rows[no_tls_url]
    assert (no_tls.outcome, no_tls.tries, len(connections)) == ("failed", 1, 1), no_tls
    assert no_tls.reason and "\n" not in no_tls.reason and "WRONG_VERSION_NUMBER" in no_tls.reason, no_tls
    refused = rows[refused_url]
    assert (refused.outcome, refused.tries) == ("failed", 3), refused


class GivenNames(AbstractResolver):
    """A resolver of the names it is given: each to an address, or to the error getaddrinfo gives
    for it. Records each name it is asked."""

    def __init__(self, names: dict[str, str | socket.gaierror]) -> None:
        self.names = names
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        answer = self.names[host]
        if isinstance(answer, socket.gaierror):
            raise answer
        numeric = socket.AI_NUMERICHOST
        return [ResolveResult(hostname=host, host=answer, port=port, family=family, proto=0, flags=numeric)]

    async def close(self) -> None:
        pass


async def test_a_name_that_does_not_exist_fails_at_once_while_a_resolver_failure_is_tried_again(
    site, tmp_path
):
    """A host name the resolver says does not exist (NXDOMAIN: EAI_NONAME), or has no address
    (EAI_NODATA), is said so at every try: one try, a one-line reason, as Chromium fails it
    (ERR_NAME_NOT_RESOLVED). A resolver that could not answer for now (EAI_AGAIN) may next time:
    the fetch is tried again. Only the first says no server is there (no_such_host): a
    robots.txt of such a host has no rules to keep."""
    site.page("/", body="<p>here</p>")
    await site.start()
    port = site.url("/").rsplit(":", 1)[1].split("/")[0]
    names = GivenNames(
        {
            "site.test": "127.0.0.1",
            "gone.test": socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "bare.test": socket.gaierror(socket.EAI_NODATA, "No address associated with hostname"),
            "busy.test": socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
        }
    )
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=3)
    async with Fetcher(config, resolver=names) as fetcher:
        here = await fetcher.fetch(FetchRequest(f"http://site.test:{port}/"))
        assert here.capture is not None and here.capture.status == 200, here
        here.capture.body.close()
        for name in ("gone.test", "bare.test"):
            gone = await fetcher.fetch(FetchRequest(f"http://{name}:{port}/"))
            assert (gone.capture, gone.tries, gone.retry_in, gone.no_such_host) == (None, 1, None, True), gone
            assert gone.error and "\n" not in gone.error and name in gone.error, gone
        busy = await fetcher.fetch(FetchRequest(f"http://busy.test:{port}/"))
        assert (busy.capture, busy.tries, busy.no_such_host) == (None, 1, False), busy
        assert busy.retry_in is not None, busy
        last = await fetcher.fetch(FetchRequest(f"http://busy.test:{port}/"), tries=2)
        assert (last.tries, last.retry_in) == (3, None), last
        assert last.error and last.error.endswith("after 3 tries"), last
    assert names.asked == ["site.test", "gone.test", "bare.test", "busy.test", "busy.test"]


async def test_a_name_under_localhost_is_this_machine_as_chromium_resolves_it(site, tmp_path):
    """``localhost`` and every name under it (``shop.localhost``) are this machine's loopback
    address to Chromium, which asks no resolver for them (RFC 6761, section 6.3): the crawl
    reaches the server there, whatever the resolver would say of the name (here: that it does
    not exist), and asks it nothing."""
    site.page("/", body="<p>here</p>")
    await site.start()
    port = site.url("/").rsplit(":", 1)[1].split("/")[0]
    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    names = GivenNames({"shop.localhost": unknown, "a.b.localhost": unknown, "localhost": unknown})
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=1)
    async with Fetcher(config, resolver=names) as fetcher:
        for host in ("shop.localhost", "a.b.localhost", "localhost"):
            here = await fetcher.fetch(FetchRequest(f"http://{host}:{port}/"))
            assert here.capture is not None and here.capture.status == 200, (host, here)
            assert here.capture.ip_address == "127.0.0.1", here.capture
            here.capture.body.close()
    assert names.asked == []
