"""Requests as users need them: headers, cookies, HTTPS with a CA bundle or --insecure, proxies."""

from __future__ import annotations

import asyncio
import base64
import gzip
import ssl

import aiohttp
import brotli
import pytest
import trustme
from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import Handler, manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.fetch import HEAD_CUT_SHORT
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
    compressed = brotli.compress(b"<title>br</title><a href='/from-br'>b</a>")

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


async def test_a_cookie_goes_to_a_url_with_an_empty_query_as_a_browser_sends_it(site, run_crawl):
    """``/p?`` is requested as written, and its path is still /p: a cookie set for Path=/p goes
    to it (RFC 6265, 5.1.4 matches the path alone), as a browser sends it."""
    seen: dict[str, dict[str, str]] = {}

    async def setting(request: web.Request) -> web.Response:
        links = "".join(f"<a href='{path}'>{path}</a>" for path in ("/p?", "/p", "/px", "/dir/q?"))
        response = web.Response(text=links, content_type="text/html")
        response.set_cookie("p_only", "1", path="/p")
        response.set_cookie("dir_q", "1", path="/dir/q")
        response.set_cookie("everywhere", "1", path="/")
        return response

    async def checking(request: web.Request) -> web.Response:
        seen[request.raw_path] = dict(request.cookies)
        return web.Response(text="<title>checked</title>", content_type="text/html")

    site.handler("/", setting)
    for path in ("/p", "/px", "/dir/q"):
        site.handler(path, checking)
    await site.start()
    await run_crawl(site.url("/"), concurrency=1)
    assert seen == {
        "/p?": {"p_only": "1", "everywhere": "1"},
        "/p": {"p_only": "1", "everywhere": "1"},
        "/px": {"everywhere": "1"},
        "/dir/q?": {"dir_q": "1", "everywhere": "1"},
    }


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


async def test_cookies_a_browser_sent_go_where_a_browser_sends_them():
    """Cookies a rendered page's browser held (Playwright's form) join the jar with their
    domain, path, Secure flag and expiry: a host-only cookie stays on its host, a domain
    cookie reaches its subdomains, a Secure one goes over https alone, an expired one goes."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.adopt(
        [
            {"name": "host", "value": "1", "domain": "site.test", "path": "/", "expires": -1},
            {"name": "dom", "value": "2", "domain": ".site.test", "path": "/api", "expires": -1},
            {"name": "sec", "value": "1", "domain": "site.test", "path": "/", "secure": True},
            {"name": "old", "value": "1", "domain": "site.test", "path": "/", "expires": 1.0},
            {"name": "bad name", "value": "1", "domain": "site.test", "path": "/"},
        ]
    )

    def sent(url: str) -> dict[str, str]:
        return {name: morsel.coded_value for name, morsel in jar.filter_cookies(URL(url)).items()}

    assert sent("http://site.test/api/x") == {"host": "1", "dom": "2"}
    assert sent("https://site.test/") == {"host": "1", "sec": "1"}
    assert sent("http://www.site.test/api") == {"dom": "2"}
    assert sent("http://other.test/api") == {}


async def test_cookies_go_back_as_a_browser_sends_them(site, run_crawl, tmp_path):
    """A cookie a browser refuses is not kept (a Secure one set over http, a __Secure- or
    __Host- name whose rules are broken), and one kept goes back as it was set: the jar kept
    them all, quoted a value holding a comma (``a,b`` went back as ``"a\\054b"``), and sent a
    cookies.txt line marked secure over http (site.test: 127.0.0.1 is a secure origin)."""
    sent: dict[str, list[str]] = {}

    async def setting(request: web.Request) -> web.Response:
        response = web.Response(text="<a href='/b'>b</a>", content_type="text/html")
        for value in (
            "sec=1; Secure; Path=/",
            "__Secure-a=1; Path=/",
            "__Host-b=1; Path=/",
            "plain=a,b; Path=/",
            'quoted="q"; Path=/',
        ):
            response.headers.add("Set-Cookie", value)
        return response

    async def checking(request: web.Request) -> web.Response:
        sent[request.path] = sorted(request.headers.get("Cookie", "").split("; "))
        return web.Response(text="<title>b</title>", content_type="text/html")

    site.handler("/", setting)
    site.handler("/b", checking)
    await site.start()
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        "site.test\tFALSE\t/\tTRUE\t0\tsecret\tx\n"
        "site.test\tFALSE\t/\tFALSE\t0\tfromfile\ta,b\n"
    )
    await run_crawl(
        f"http://site.test:{site.server.port}/",
        cookies_file=str(cookies),
        concurrency=1,
        resolve=(("site.test", "127.0.0.1"),),
    )
    assert sent["/b"] == ["fromfile=a,b", "plain=a,b", 'quoted="q"']


@pytest.mark.parametrize(
    ("header", "kept"),
    [
        ("__Host-ok=1; Secure; Path=/", True),
        ("__host-lower=1; Path=/", False),  # the prefix in any case
        ("__Host-p=1; Secure; Path=/x", False),
        ("__Host-d=1; Secure; Path=/; Domain=site.test", False),
        ("__Host-n=1; Secure", False),  # no Path: not /
        ("__Secure-ok=1; Secure", True),
        ("__Secure-no=1", False),
        ("sec=1; Secure", True),
    ],
)
async def test_prefixed_cookies_follow_their_rules(header, kept):
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers([header], URL("https://site.test/x/y"))
    name = header.partition("=")[0]
    assert (name in jar.filter_cookies(URL("https://site.test/x/z"))) == kept


async def test_a_cookies_file_line_keeps_its_domain_and_secure_flag(tmp_path):
    """A line marked for subdomains reaches them (it reached its host alone), one marked
    secure goes over https alone, and a name no cookie may have is a one-line error."""
    from yarl import URL

    from archiver.config import CrawlConfig
    from archiver.crawling.cookies import load_cookies

    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        ".site.test\tTRUE\t/\tFALSE\t0\twide\t1\n"
        "site.test\tFALSE\t/\tTRUE\t0\tsafe\t1\n"
    )
    config = CrawlConfig(seeds=("http://site.test/",), output=tmp_path / "o", cookies_file=str(cookies))
    jar = load_cookies(config, ())
    assert set(jar.filter_cookies(URL("http://www.site.test/"))) == {"wide"}
    assert set(jar.filter_cookies(URL("http://site.test/"))) == {"wide"}
    assert set(jar.filter_cookies(URL("https://site.test/"))) == {"wide", "safe"}
    cookies.write_text("# Netscape HTTP Cookie File\nsite.test\tFALSE\t/\tFALSE\t0\ta b\t1\n")
    with pytest.raises(ConfigError, match="bad cookie name 'a b'"):
        load_cookies(config, ())


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


async def test_the_jar_gives_a_browser_its_cookies_as_they_were_set():
    """A rendered page's browser gets the crawl's cookies, each for the hosts the jar sends it
    to: a host-only one for its host, one set with a Domain for its subdomains too."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers(
        ["own=a,b; Path=/", "wide=1; Domain=site.test; Path=/app; HttpOnly", "safe=1; Secure"],
        URL("https://www.site.test/"),
    )
    given = {cookie["name"]: cookie for cookie in jar.for_browser()}
    assert given["own"] == {
        "name": "own",
        "value": "a,b",
        "domain": "www.site.test",
        "path": "/",
        "secure": False,
        "httpOnly": False,
        "sameSite": "Lax",  # none said: Lax, as Chromium takes it
    }
    assert (given["wide"]["domain"], given["wide"]["path"], given["wide"]["httpOnly"]) == (
        ".site.test",
        "/app",
        True,
    )
    assert given["safe"]["secure"] is True


async def test_samesite_cookies_go_only_where_a_browser_sends_them(site, other_site, run_crawl):
    """A request another site's page makes sends no SameSite=Strict cookie, and a Lax one (a
    cookie without SameSite is Lax) only if it follows a link, not for an image the page shows;
    the answer to such an image sets no Lax cookie, and SameSite=None needs Secure. The crawl
    sent every cookie the jar held for the URL, whoever asked."""
    seen: dict[str, dict[str, str]] = {}

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>cdn</title>", content_type="text/html")
        for value in ("strict=1; SameSite=Strict", "lax=1; SameSite=Lax", "plain=1", "none=1; SameSite=None"):
            response.headers.add("Set-Cookie", value + "; Path=/")
        return response

    async def noted(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.cookies)
        response = web.Response(text="<title>x</title>", content_type="text/html")
        if request.path == "/img.png":
            response.headers.add("Set-Cookie", "fromimg=1; Path=/")  # Lax: refused there
        return response

    other_site.handler("/setup", setup)
    for path in ("/img.png", "/page", "/same"):
        other_site.handler(path, noted)
    await other_site.start()
    cdn = f"http://cdn.test:{other_site.server.port}"
    site.page("/", links=[f"{cdn}/page"], body=f'<img src="{cdn}/img.png">')
    await site.start()
    other_site.page("/", links=["/same"])
    home = f"http://site.test:{site.server.port}/"
    resolve = (("site.test", "127.0.0.1"), ("cdn.test", "127.0.0.1"))
    await run_crawl(f"{cdn}/setup", home, f"{cdn}/", resolve=resolve, concurrency=1, scope="host")
    assert seen["/img.png"] == {}  # an image site.test shows: cross-site, not a navigation
    assert seen["/page"] == {"lax": "1", "plain": "1"}  # a link from site.test: Lax ones go
    assert seen["/same"] == {"strict": "1", "lax": "1", "plain": "1"}  # cdn.test's own link


async def test_secure_cookies_go_to_loopback_over_http_as_chromium_sends_them(site, run_crawl):
    """http://127.0.0.1 and http://localhost are potentially trustworthy origins: Chromium keeps a
    Secure cookie they set over http and sends it back to them; the jar refused it there. Secure
    still means https for any other host."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    seen: dict[str, dict[str, str]] = {}

    async def setting(request: web.Request) -> web.Response:
        response = web.Response(text="<a href='/b'>b</a>", content_type="text/html")
        response.headers.add("Set-Cookie", "sec=1; Secure; Path=/")
        response.headers.add("Set-Cookie", "__Host-id=2; Secure; Path=/")
        return response

    async def checking(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.cookies)
        return web.Response(text="<title>b</title>", content_type="text/html")

    site.handler("/", setting)
    site.handler("/b", checking)
    await site.start()
    await run_crawl(site.url("/"))
    assert seen["/b"] == {"sec": "1", "__Host-id": "2"}

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers(["s=1; Secure; Path=/"], URL("http://site.test/"))
    jar.update_cookies_from_headers(["l=1; Secure; Path=/"], URL("http://localhost:8080/"))
    jar.update_cookies_from_headers(["t=1; Secure; Path=/"], URL("https://site.test/"))
    assert set(jar.filter_cookies(URL("http://site.test/"))) == set()
    assert set(jar.filter_cookies(URL("https://site.test/"))) == {"t"}
    assert set(jar.filter_cookies(URL("http://localhost:9/"))) == {"l"}


async def test_what_a_page_loads_carries_the_origin_and_cookies_a_browser_sends(site, other_site, run_crawl):
    """A font (in a stylesheet of another origin too), a module script and an element with a
    crossorigin attribute are CORS-mode requests: they carry the page's Origin, which a server
    answering the origins it allows alone needs; they went without. What a stylesheet or a frame
    of another site loads is judged by SameSite against the page shown (Chromium's site for
    cookies), not the stylesheet's or frame's site: cdn.test's Lax cookie went with them. A
    frame's requests are its document's: a font its stylesheets name (through an @import too)
    carries the frame's Origin; it carried the page shown's."""
    seen: dict[str, tuple[str | None, dict[str, str]]] = {}

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>cdn</title>", content_type="text/html")
        response.headers.add("Set-Cookie", "lax=1; SameSite=Lax; Path=/")
        return response

    def noted(content_type: str, body: str = "x", cors: bool = False):
        async def serve(request: web.Request) -> web.Response:
            origin = request.headers.get("Origin")
            seen[request.path] = (origin, dict(request.cookies))
            if cors and origin is None:  # fonts for the origins it allows alone
                return web.Response(status=403, text="no origin")
            headers = {"Access-Control-Allow-Origin": origin} if origin else {}
            return web.Response(text=body, content_type=content_type, headers=headers)

        return serve

    await site.start()
    home = f"http://site.test:{site.server.port}"
    css = "body { background: url(bg.png) } @font-face { font-family: f; src: url(f.woff2) }"
    frame = (
        f"<title>frame</title><img src='/frame.png'><link rel=stylesheet href='/fs.css'>"
        f"<script type=module src='{home}/fm.js'></script>"
    )
    other_site.handler("/setup", setup)
    other_site.handler("/s.css", noted("text/css", css))
    other_site.handler("/frame", noted("text/html", frame))
    frame_css = f"@import url(fs2.css); @font-face {{ font-family: g; src: url({home}/ff.woff2) }}"
    other_site.handler("/fs.css", noted("text/css", frame_css))
    other_site.handler("/fs2.css", noted("text/css", f"@font-face {{ src: url({home}/ff2.woff2) }}"))
    for path in ("/bg.png", "/plain.png", "/c.png", "/frame.png"):
        other_site.handler(path, noted("image/png"))
    for path in ("/f.woff2", "/m.js"):
        other_site.handler(path, noted("font/woff2", cors=True))
    await other_site.start()
    cdn = f"http://cdn.test:{other_site.server.port}"
    site.page(
        "/",
        head=f'<link rel=stylesheet href="{cdn}/s.css"><style>@font-face {{ src: url(/own.woff2) }}</style>',
        body=(
            f'<script type=module src="{cdn}/m.js"></script><img crossorigin src="{cdn}/c.png">'
            f'<img src="{cdn}/plain.png"><iframe src="{cdn}/frame"></iframe>'
        ),
    )
    site.handler("/own.woff2", noted("font/woff2"))
    for path in ("/ff.woff2", "/ff2.woff2", "/fm.js"):
        site.handler(path, noted("font/woff2", cors=True))
    resolve = (("site.test", "127.0.0.1"), ("cdn.test", "127.0.0.1"))
    result = await run_crawl(f"{cdn}/setup", f"{home}/", resolve=resolve, concurrency=1, scope="host")
    for path in ("/f.woff2", "/m.js", "/c.png"):
        assert seen[path][0] == home, path
    assert seen["/plain.png"][0] is None and seen["/bg.png"][0] is None
    assert seen["/own.woff2"][0] == home  # same-origin: Chromium names it all the same
    for path in ("/ff.woff2", "/ff2.woff2", "/fm.js"):
        assert seen[path][0] == cdn, path  # the frame's requests: its origin
    assert manifest_rows(result.snapshot.root)[f"{cdn}/f.woff2"].status == 200
    for path in ("/s.css", "/bg.png", "/f.woff2", "/frame", "/frame.png", "/fs.css"):
        assert seen[path][1] == {}, path  # all loaded for site.test's page: cross-site


async def test_cors_requests_send_cookies_and_origin_as_their_credentials_mode_says(
    site, other_site, run_crawl
):
    """A font, a module script, a <link rel=preload as=fetch crossorigin> and an element with
    crossorigin (or crossorigin=anonymous) are CORS-mode requests whose credentials go to the
    page's own origin alone; crossorigin=use-credentials sends them anywhere; a web app
    manifest's go nowhere. One that sends none keeps none its answer sets. Through a redirect
    from another origin back to the page's, the Origin is null (Fetch's tainted origin) and the
    credentials stay home. The crawl sent the jar's cookies with every one, the page's Origin
    after a redirect, and asked for a preload as=fetch without its Origin. A preload without
    crossorigin is no-cors, and a font of the page's own origin goes with its Origin, as
    Chromium asks for them (the crawl asked for the one in CORS mode, the other without an
    Origin), also after a redirect to that origin (the hop went without)."""
    seen: dict[str, tuple[str | None, dict[str, str]]] = {}

    def noted(set_cookie: str | None = None):
        async def serve(request: web.Request) -> web.Response:
            seen[request.path] = (request.headers.get("Origin"), dict(request.cookies))
            response = web.Response(text="<title>x</title>", content_type="text/html")
            if set_cookie:
                response.headers.add("Set-Cookie", set_cookie)
            return response

        return serve

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>set</title>", content_type="text/html")
        response.headers.add("Set-Cookie", "c=1; Path=/")
        return response

    other_site.handler("/setup", setup)
    paths = (
        "/f.woff2",
        "/m.js",
        "/anon.png",
        "/any.png",
        "/cred.png",
        "/plain.png",
        "/data.json",
        "/plain.json",
    )
    for path in (*paths, "/app.webmanifest", "/landed.js", "/after"):
        other_site.handler(path, noted("leak=1; Path=/" if path == "/anon.png" else None))
    await other_site.start()
    cdn = f"http://cdn.site.test:{other_site.server.port}"
    site.handler("/", noted("w=1; Path=/"))
    await site.start()
    home = f"http://www.site.test:{site.server.port}"
    site.page(
        "/page",
        head=(
            f"<style>@font-face {{ src: url({cdn}/f.woff2) }} @font-face {{ src: url(/own.woff2) }}"
            "@font-face { src: url(/own-moved.woff2) }</style>"
            f'<link rel=preload as=fetch crossorigin href="{cdn}/data.json">'
            f'<link rel=preload as=fetch href="{cdn}/plain.json">'
            f'<link rel=manifest href="{cdn}/app.webmanifest">'
            '<link rel=manifest href="/own.webmanifest">'
        ),
        body=(
            f'<script type=module src="{cdn}/m.js"></script><img crossorigin src="{cdn}/anon.png">'
            f'<img crossorigin=anonymous src="{cdn}/any.png">'
            f'<img crossorigin=use-credentials src="{cdn}/cred.png">'
            f'<img src="{cdn}/plain.png"><img crossorigin src="{cdn}/hop.png">'
            f'<script type=module src="/own-hop.js"></script><a href="{cdn}/after">after</a>'
        ),
    )
    other_site.redirect("/hop.png", f"{home}/back.png")
    site.redirect("/own-hop.js", f"{cdn}/landed.js")
    site.redirect("/own-moved.woff2", "/own-landed.woff2")
    for path in ("/own.woff2", "/own.webmanifest", "/back.png", "/own-landed.woff2"):
        site.handler(path, noted())
    resolve = (("www.site.test", "127.0.0.1"), ("cdn.site.test", "127.0.0.1"))
    await run_crawl(f"{cdn}/setup", f"{home}/", f"{home}/page", resolve=resolve, concurrency=1)
    for path in ("/f.woff2", "/m.js", "/anon.png", "/any.png", "/data.json", "/app.webmanifest"):
        assert seen[path] == (home, {}), path  # same-origin credentials, or none: not to cdn
    assert seen["/cred.png"] == (home, {"c": "1"})
    assert seen["/plain.png"] == seen["/plain.json"] == (None, {"c": "1"})  # no-cors: the cookies go
    assert seen["/own.woff2"] == (home, {"w": "1"})  # the page's own origin: they go too
    assert seen["/own-landed.woff2"] == (home, {"w": "1"})  # its Origin kept through a redirect
    assert seen["/own.webmanifest"] == (None, {})  # a manifest's never go
    assert seen["/back.png"] == ("null", {})  # tainted by its hop through cdn
    assert seen["/landed.js"] == (home, {})  # from its own origin to another: not tainted
    assert seen["/after"][1] == {"c": "1"}  # /anon.png's answer set no cookie


async def test_a_sandboxed_frames_requests_carry_origin_null(site, other_site, run_crawl):
    """A frame an iframe sandboxes without allow-same-origin has no origin: its CORS-mode requests
    (a font, a crossorigin image), those of a sandboxed srcdoc document and those of the frames
    it holds in turn go with Origin: null and no credentials, as Chromium sends them. They
    carried the frame's own origin (or the page's). So do the fonts of a crossorigin stylesheet
    it loads through a redirect (they carried the page's origin), and what it loads is of no
    site: the page's SameSite=Lax cookie stays home, as Chromium keeps it (it went, the page's
    site judged). Its no-cors requests (an image) name no origin, as in Chromium 156."""
    origins: dict[str, str | None] = {}
    cookies: dict[str, tuple[str | None, dict[str, str]]] = {}

    async def noted(request: web.Request) -> web.Response:
        origins[request.path] = request.headers.get("Origin")
        return web.Response(body=b"x", content_type="application/octet-stream")

    async def cookied(request: web.Request) -> web.Response:
        cookies[request.path] = (request.headers.get("Origin"), dict(request.cookies))
        return web.Response(body=b"x", content_type="image/png")

    await site.start()
    home = site.url("/").rstrip("/")
    for path in (
        "/s.woff2",
        "/b.woff2",
        "/n.png",
        "/o.woff2",
        "/p.woff2",
        "/pn.png",
        "/q.woff2",
        "/r.woff2",
        "/m.woff2",
    ):
        site.handler(path, noted)
    for path in ("/boxed.png", "/open.png"):
        site.handler(path, cookied)
    # A document its own Content-Security-Policy sandboxes has no origin either, and its frames
    # none; allow-same-origin keeps it, and a policy only reported sandboxes nothing.
    for path, name, policy, font in (
        ("/csp", "Content-Security-Policy", "img-src *, sandbox allow-scripts", "p"),
        ("/csp-origin", "Content-Security-Policy", "sandbox allow-same-origin", "q"),
        ("/csp-report", "Content-Security-Policy-Report-Only", "sandbox", "r"),
    ):
        style = f"<style>@font-face {{ src: url({home}/{font}.woff2) }}</style>"
        other_site.file(
            path, style + "<iframe src=/csp-nested></iframe>" * (font == "p"), headers={name: policy}
        )
    other_site.page("/csp-nested", body=f"<img crossorigin src='{home}/pn.png'>")
    other_site.page(
        "/boxed",
        head=f"<style>@font-face {{ src: url({home}/b.woff2) }}</style>"
        "<link rel=stylesheet crossorigin href=/moved.css>",
        body=f"<iframe src=/nested></iframe><img src='{home}/boxed.png'>",
    )
    other_site.redirect("/moved.css", "/real.css")
    other_site.file("/real.css", f"@font-face {{ src: url({home}/m.woff2) }}", "text/css")
    other_site.page("/nested", body=f"<img crossorigin src='{home}/n.png'>")
    other_site.page(
        "/open",
        head=f"<style>@font-face {{ src: url({home}/o.woff2) }}</style>",
        body=f"<img src='{home}/open.png'>",
    )
    await other_site.start()
    cdn = other_site.url("/").rstrip("/")
    srcdoc = f"<style>@font-face {{ src: url({cdn}/s.woff2) }}</style>".replace('"', "&quot;")
    site.file(
        "/",
        f'<iframe sandbox="allow-scripts" src="{cdn}/boxed"></iframe>'
        f'<iframe sandbox srcdoc="{srcdoc}"></iframe>'
        f'<iframe sandbox="allow-scripts Allow-Same-Origin" src="{cdn}/open"></iframe>'
        + "".join(f'<iframe src="{cdn}/{path}"></iframe>' for path in ("csp", "csp-origin", "csp-report")),
        headers={"Set-Cookie": "lax=1; SameSite=Lax; Path=/"},
    )
    other_site.handler("/s.woff2", noted)
    await run_crawl(site.url("/"), scope="any")
    assert origins == {
        "/s.woff2": "null",
        "/b.woff2": "null",
        "/n.png": "null",
        "/o.woff2": cdn,
        "/p.woff2": "null",
        "/pn.png": "null",
        "/q.woff2": cdn,
        "/r.woff2": cdn,
        "/m.woff2": "null",
    }
    # Its image, no-cors, names no origin, as in Chromium (test_as_chromium_asks compares them).
    assert cookies == {"/boxed.png": (None, {}), "/open.png": (None, {"lax": "1"})}


async def test_what_a_page_its_policy_sandboxes_loads_goes_as_chromium_sends_it(site, run_crawl):
    """A page its Content-Security-Policy sandboxes has no origin: Chromium sends no Referer with
    what it loads (an image, a frame, a font), no cookie its SameSite keeps home, and names the
    null origin only where the request is CORS-mode (a font), not on an image or a frame, as it
    does in a sandboxed frame. The crawl sent the page's URL as Referer, and Origin: null on
    the image. What its stylesheet loads names the stylesheet as Referer, and no origin (it named
    the null one), as in Chromium."""
    seen: dict[str, tuple[str | None, str | None, dict[str, str]]] = {}

    async def noted(request: web.Request) -> web.Response:
        headers = request.headers
        seen[request.path] = (headers.get("Origin"), headers.get("Referer"), dict(request.cookies))
        return web.Response(body=b"x", content_type="application/octet-stream")

    for path in ("/i.png", "/f.woff2", "/frame", "/bg.png"):
        site.handler(path, noted)
    site.file("/s.css", "body { background: url(/bg.png) }", "text/css")
    site.file(
        "/",
        "<style>@font-face { font-family: f; src: url(/f.woff2) }</style><link rel=stylesheet href=/s.css>"
        "<img src=/i.png><iframe src=/frame></iframe>",
        headers={"Content-Security-Policy": "sandbox allow-scripts", "Set-Cookie": "lax=1; SameSite=Lax"},
    )
    await site.start()
    await run_crawl(site.url("/"))
    assert seen == {
        "/i.png": (None, None, {}),
        "/f.woff2": ("null", None, {}),
        "/frame": (None, None, {}),
        "/bg.png": (None, site.url("/s.css"), {}),  # a stylesheet's requests name it, as Chromium's do
    }
