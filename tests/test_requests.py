"""Requests as users need them: headers, content codings, HTTPS with a CA bundle or --insecure,
proxies, the Accept of each requisite."""

from __future__ import annotations

import asyncio
import base64
import gzip
import ssl

import aiohttp
import brotlicffi
import pytest
import trustme
from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import Handler, manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.failures import HEAD_CUT_SHORT
from archiver.errors import ConfigError
from archiver.mirror.build import build_mirror
from archiver.scope import ROBOTS_UNREACHABLE
from archiver.verify.verifier import verify_snapshot


async def test_headers_and_cookies_are_sent(site, run_crawl, tmp_path):
    seen = {}

    async def echo(request: web.Request) -> web.Response:
        seen[request.path] = (request.headers.get("X-Token"), dict(request.cookies))
        return web.Response(text="<a href='/b'>b</a>", content_type="text/html")

    site.handler("/", echo)
    site.handler("/b", echo)
    await site.start()
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tfromfile\tyes\n")
    await run_crawl(
        site.url("/"), headers=(("X-Token", "t0k"),), cookies=(("session", "abc"),), cookies_file=str(cookies)
    )
    for path in ("/", "/b"):
        assert seen[path][0] == "t0k"
        assert seen[path][1] == {"session": "abc", "fromfile": "yes"}


async def test_a_page_sent_as_brotli_only_to_a_client_that_asks_is_archived_as_sent(site, run_crawl):
    """A server that sends br only to a client asking for it (Chromium does) sends the crawl br:
    the WARC keeps the body as sent, its links are followed and the mirror rewrites them. The
    crawl asked for gzip and deflate alone, and got the server's plain page, another than a
    browser's. zstd, which no replay tool reads back, is not asked for (request_headers)."""
    asked: list[str] = []
    compressed = brotlicffi.compress(b"<title>br</title><a href='/from-br'>b</a>")

    async def negotiating(request: web.Request) -> web.Response:
        codings = [coding.strip() for coding in request.headers.get("Accept-Encoding", "").split(",")]
        asked.append(request.headers.get("Accept-Encoding", ""))
        if "br" not in codings:
            return web.Response(text="<title>plain</title>", content_type="text/html")
        headers = {"Content-Encoding": "br", "Vary": "Accept-Encoding"}
        return web.Response(body=compressed, content_type="text/html", headers=headers)

    site.handler("/", negotiating)
    site.page("/from-br")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    assert asked == ["gzip, deflate, br"]
    rows = manifest_rows(root)
    assert (rows[site.url("/")].title, rows[site.url("/")].length) == ("br", len(compressed))
    assert rows[site.url("/from-br")].outcome == "fetched"
    assert not build_mirror(root).errors
    assert b"from-br.html" in (root / "mirror" / rows[site.url("/")].local_path).read_bytes()
    stored = {}
    for warc in (root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response" and record.http_headers is not None:
                    encoding = record.http_headers.get_header("Content-Encoding")
                    stored[record.rec_headers.get_header("WARC-Target-URI")] = (
                        encoding,
                        record.raw_stream.read(),
                    )
    assert stored[site.url("/")] == ("br", compressed)
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    authority = trustme.CA()
    server_cert = authority.issue_cert("127.0.0.1", "localhost")
    folder = tmp_path_factory.mktemp("tls")
    authority.cert_pem.write_to_path(str(folder / "ca.pem"))
    return authority, server_cert, folder / "ca.pem"


@pytest.fixture
async def https_site(certificates):
    _, server_cert, _ = certificates
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(context)

    async def home(request: web.Request) -> web.Response:
        return web.Response(text="<title>secure</title>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", home)
    server = TestServer(app, host="127.0.0.1", scheme="https")
    await server.start_server(ssl=context)
    yield f"https://127.0.0.1:{server.port}/"
    await server.close()


async def test_https_with_ca_bundle(https_site, certificates, run_crawl, tmp_path):
    _, _, ca_file = certificates
    result = await run_crawl(https_site, ca_bundle=str(ca_file), output=tmp_path / "ca")
    assert manifest_rows(result.snapshot.root)[https_site].title == "secure"
    result = await run_crawl(https_site, max_tries=1, output=tmp_path / "untrusted")
    robots = manifest_rows(result.snapshot.root, for_crawlers=True)[https_site + "robots.txt"]
    assert robots.outcome == "failed" and "certificate" in robots.reason.lower()
    # Its robots.txt out of reach keeps the host out; the seed's failure says why.
    row = manifest_rows(result.snapshot.root)[https_site]
    assert (row.outcome, row.reason) == ("skipped", ROBOTS_UNREACHABLE)
    assert "certificate" in dict(result.seeds_failed)[https_site].lower()
    result = await run_crawl(https_site, insecure=True, output=tmp_path / "insecure")
    assert manifest_rows(result.snapshot.root)[https_site].outcome == "fetched"


async def test_a_certificate_that_does_not_verify_fails_at_once(https_site, run_crawl, tmp_path):
    """Asked again, the server shows the same certificate: one try, not --max-tries."""
    result = await run_crawl(https_site, max_tries=3, output=tmp_path / "untrusted")
    robots = manifest_rows(result.snapshot.root, for_crawlers=True)[https_site + "robots.txt"]
    assert (robots.outcome, robots.tries) == ("failed", 1), robots
    assert "certificate" in robots.reason.lower() and "tries" not in robots.reason, robots


async def test_an_https_head_the_close_cuts_short_fails_in_a_plain_line(certificates, run_crawl, tmp_path):
    """Over https Chromium takes no head the close cuts short (ERR_RESPONSE_HEADERS_TRUNCATED:
    one truncated on the way would pass for whole). The fetch fails, tried again as a connection
    lost is, and its reason says what happened, not the client's dump of the half-read head."""
    _, server_cert, _ = certificates
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(context)

    async def cut_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Cut: b")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(cut_head, "127.0.0.1", 0, ssl=context)
    seed = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    try:
        result = await run_crawl(seed, insecure=True, max_tries=2, obey_robots=False, sitemaps=False)
    finally:
        server.close()
        await server.wait_closed()
    row = manifest_rows(result.snapshot.root)[seed]
    assert (row.outcome, row.tries, row.reason) == ("failed", 2, f"{HEAD_CUT_SHORT} after 2 tries"), row


def test_ca_bundle_and_insecure_conflict(tmp_path, certificates):
    from archiver.config import CrawlConfig

    with pytest.raises(ConfigError, match="contradict"):
        CrawlConfig(seeds=("http://h/",), output=tmp_path, ca_bundle=str(certificates[2]), insecure=True)


async def test_http_proxy_from_the_environment(site, run_crawl, monkeypatch):
    proxied: list[str] = []
    credentials: list[str | None] = []

    async def proxy(request: web.Request) -> web.StreamResponse:
        proxied.append(str(request.url))
        credentials.append(request.headers.get("Proxy-Authorization"))
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.get(request.raw_path) as upstream,
        ):
            body = await upstream.read()
            return web.Response(
                body=body, status=upstream.status, headers={"Content-Type": upstream.headers["Content-Type"]}
            )

    site.page("/", links=["/a"])
    site.page("/a")
    await site.start()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy)
    proxy_server = TestServer(app, host="127.0.0.1")
    await proxy_server.start_server()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:secret@127.0.0.1:{proxy_server.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        result = await run_crawl(site.url("/"))
    finally:
        await proxy_server.close()
    assert manifest_rows(result.snapshot.root)[site.url("/a")].outcome == "fetched"
    assert site.url("/a") in proxied
    assert set(credentials) == {"Basic " + base64.b64encode(b"user:secret").decode()}
    warcs = b"".join(
        gzip.decompress(path.read_bytes()) for path in (result.snapshot.root / "warc").glob("*.warc.gz")
    )
    assert b"secret" not in warcs and b"dXNlcjpzZWNyZXQ" not in warcs


async def test_each_requisite_is_asked_with_the_accept_of_its_destination(site, run_crawl):
    """An image, a stylesheet, a script, a preloaded font or fetch(), a web app manifest and the
    URLs a stylesheet names are
    asked with the Accept a browser sends for them: every request went with a page's Accept, so
    a server that negotiates answered an image host's page where the page shows the image."""
    accepts: dict[str, str] = {}
    others: dict[str, tuple[str | None, str | None]] = {}  # Accept-Language, Upgrade-Insecure-Requests

    def noted(request: web.Request) -> None:
        headers = request.headers
        others[request.path] = (headers.get("Accept-Language"), headers.get("Upgrade-Insecure-Requests"))

    async def negotiating(request: web.Request) -> web.StreamResponse:
        noted(request)
        accept = accepts[request.path] = request.headers.get("Accept", "")
        if accept.startswith("text/html"):  # an image host: its page of the photo, to a reader
            return web.Response(text="<title>photo page</title>", content_type="text/html")
        return web.Response(body=b"GIF89a", content_type="image/gif")

    files = {
        "/s.css": ("@import url('/more.css'); b { background: url(/tile.png) }", "text/css"),
        "/more.css": ("", "text/css"),
        "/tile.png": ("", "image/png"),
        "/inline.png": ("", "image/png"),
        "/app.js": ("", "text/javascript"),
        "/f.woff2": ("", "font/woff2"),
        "/data.json": ("{}", "application/json"),
        "/app.webmanifest": ("{}", "application/manifest+json"),
    }

    async def served(request: web.Request) -> web.StreamResponse:
        noted(request)
        accepts[request.path] = request.headers.get("Accept", "")
        body, content_type = files[request.path]
        return web.Response(text=body, content_type=content_type)

    site.page(
        "/",
        links=["/next"],
        head='<link rel="stylesheet" href="/s.css"><link rel="preload" as="font" href="/f.woff2">'
        '<script src="/app.js"></script><link rel="preload" as="fetch" href="/data.json">'
        '<link rel="manifest" href="/app.webmanifest">',
        body='<img src="/photo"><p style="background: url(/inline.png)"><iframe src="/frame"></iframe>',
    )
    site.page("/next")
    site.page("/frame")

    def recording(handler: Handler) -> Handler:
        async def serve(request: web.Request) -> web.StreamResponse:
            noted(request)
            accepts[request.path] = request.headers.get("Accept", "")
            return await handler(request)

        return serve

    for page in ("/next", "/frame"):
        site.handler(page, recording(site.routes[page]))
    site.handler("/photo", negotiating)
    for path in files:
        site.handler(path, served)
    await site.start()
    result = await run_crawl(site.url("/"))
    image = "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"  # Chromium 156's
    # Chromium's for a navigation but its signed exchange: a link to an image gets the WebP a
    # browser following it gets (navigations went with text/html,application/xhtml+xml,*/*;q=0.8).
    document = "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,"
    document += "image/apng,*/*;q=0.8"
    assert accepts == {
        "/next": document,
        "/frame": document,
        "/photo": image,
        "/s.css": "text/css,*/*;q=0.1",
        "/more.css": "text/css,*/*;q=0.1",  # @import
        "/tile.png": image,  # url() in a stylesheet
        "/inline.png": image,
        "/app.js": "*/*",
        "/f.woff2": "*/*",
        "/data.json": "*/*",  # a script's fetch(), preloaded: a page's Accept got a page
        "/app.webmanifest": "*/*",
    }
    assert manifest_rows(result.snapshot.root)[site.url("/photo")].content_type == "image/gif"
    # Every request names Chromium's language; a navigation (a link, a frame) asks for https as
    # Chromium's does, what a page loads does not.
    navigations = {"/next", "/frame"}
    assert others == {path: ("en-US,en;q=0.9", "1" if path in navigations else None) for path in others}
    assert set(others) == set(accepts)
