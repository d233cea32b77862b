"""Each request of a page, as the crawl sends it and as Chromium sends it for the same page.

A server records every request as it arrives (its headers in the order they came); Chromium
loads the page, then the crawl archives it (by HTTP, and through its own browser), and the
headers that choose an answer must agree: Origin, Referer, Accept, Accept-Encoding,
Accept-Language, Upgrade-Insecure-Requests, Sec-Purpose, Range and Cookie, with their order. Two differences
are the crawl's choice, told in the README: it asks for no zstd, and no signed exchange.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import manifest_rows

try:
    from playwright.async_api import async_playwright
except ImportError:  # pragma: no cover - CI installs it
    async_playwright = None  # type: ignore[assignment]

CHROMIUM = os.environ.get("ARCHIVER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if os.environ.get("CI") != "true" and (async_playwright is None or not os.path.exists(CHROMIUM)):
    pytest.skip("Chromium or Playwright is not installed (CI=true runs this)", allow_module_level=True)

COMPARED = (
    "origin",
    "x-requested-with",
    "upgrade-insecure-requests",
    "sec-purpose",
    "accept",
    "referer",
    "accept-encoding",
    "accept-language",
    "range",
    "cookie",
)
"""The request headers compared (lowercased), each where it came among them."""
NOT_ASKED_FOR = re.compile(r",application/signed-exchange;v=b3;q=0\.7$|, zstd$")
"""What Chromium asks for that the crawl leaves out on purpose: a signed exchange, zstd."""

Served = tuple[bytes, str, int, dict[str, str]]
"""A body, its Content-Type, its status and its other headers."""


class RecordingSite:
    """A site whose pages are given by path, each request it answers recorded as it arrived;
    ``other`` names the same server by another host (localhost), another site."""

    def __init__(self) -> None:
        self.files: dict[str, Served] = {}
        self.asked: dict[str, list[tuple[str, str]]] = {}
        self.server: TestServer | None = None

    def file(
        self, path: str, body: bytes | str, content_type: str = "text/html", status: int = 200, **headers: str
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        named = {name.replace("_", "-"): value for name, value in headers.items()}
        self.files[path] = (data, content_type, status, named)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        if request.path in ("/robots.txt", "/sitemap.xml", "/favicon.ico"):
            return web.Response(status=404)
        sent = [(name.decode().lower(), value.decode()) for name, value in request.raw_headers]
        self.asked.setdefault(f"{request.host.split(':')[0]} {request.path}", sent)
        body, content_type, status, headers = self.files.get(
            request.path, (b"x", "application/octet-stream", 200, {})
        )
        return web.Response(body=body, status=status, headers={"Content-Type": content_type, **headers})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._answer)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        assert self.server is not None
        return f"http://{host}:{self.server.port}{path}"

    def other(self, path: str = "/") -> str:
        assert self.server is not None
        return f"http://localhost:{self.server.port}{path}"

    def compared(self, by_chromium: bool = False) -> dict[str, list[tuple[str, str]]]:
        """What each request carried of COMPARED, in order, with the server's port made ``PORT``;
        ``by_chromium``: without what the crawl leaves out on purpose (NOT_ASKED_FOR)."""
        assert self.server is not None and self.server.port is not None
        port = self.server.port
        return {
            path: [
                (name, (NOT_ASKED_FOR.sub("", value) if by_chromium else value).replace(str(port), "PORT"))
                for name, value in headers
                if name in COMPARED
            ]
            for path, headers in self.asked.items()
        }


@pytest.fixture
async def recording() -> AsyncIterator[RecordingSite]:
    site = RecordingSite()
    await site.start()
    yield site
    assert site.server is not None
    await site.server.close()


async def chromium_asks(site: RecordingSite, *paths: str, follow: str = "", host: str = "127.0.0.1") -> Any:
    """What Chromium sent for ``paths`` (``/`` by default), each opened in turn, and what they load
    (its language the crawl's), compared; ``follow``: a link of the last one to click then;
    ``host``: a name (of site.test) the site is asked by."""
    assert async_playwright is not None and site.server is not None
    site.asked.clear()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--accept-lang=en-US,en;q=0.9",
                "--host-resolver-rules=MAP *.site.test 127.0.0.1",
            ],
        )
        page = await browser.new_page()
        for path in paths or ("/",):
            await page.goto(site.url(path, host), wait_until="networkidle")
        if follow:
            async with page.expect_navigation(wait_until="networkidle"):
                await page.click(f"a[href='{follow}']")
        await browser.close()
    return site.compared(by_chromium=True)


async def crawl_asks(
    site: RecordingSite, run_crawl: Any, output: Path, *paths: str, host: str = "127.0.0.1", **options: Any
) -> Any:
    """What a crawl into ``output`` of ``paths`` (``/`` by default), its seeds in that order, sent
    for them and what they load, compared as chromium_asks() does (``host`` as it says)."""
    site.asked.clear()
    options.setdefault("max_depth", 1)
    if host != "127.0.0.1":
        options.setdefault("resolve", ((host, "127.0.0.1"),))
    seeds = (site.url(path, host) for path in paths or ("/",))
    await run_crawl(*seeds, scope="any", output=output, **options)
    return site.compared()


def only(asked: dict[str, list[tuple[str, str]]], paths: Iterable[str]) -> dict[str, Any]:
    return {path: asked.get(path) for path in paths}


async def test_each_request_of_a_page_goes_as_chromium_sends_it(recording, run_crawl, tmp_path):
    """A navigation, a frame, an image, a script, a stylesheet and the image it names, a font of
    another site, a preloaded fetch(), a script's fetch() and XMLHttpRequest (met by the crawl's
    browser) carry
    the headers Chromium sends, in its order: the crawl sent Accept-Encoding before Accept and
    Accept-Language, and Origin and Referer last."""
    other = recording.other
    recording.file(
        "/",
        f"<style>@font-face {{ font-family: f; src: url({other('/f.woff2')}) }}</style>"
        "<p style=font-family:f>text</p>"
        "<link rel=stylesheet href=/s.css><script src=/j.js></script><img src=/i.png>"
        f"<link rel=preload as=fetch crossorigin href={other('/d.json')}>"
        f"<script>fetch('{other('/e.json')}'); let x = new XMLHttpRequest(); x.open('GET', '/x.json');"
        "x.setRequestHeader('X-Requested-With', 'XMLHttpRequest'); x.send()</script>"
        "<iframe src=/frame></iframe>",
    )
    recording.file("/s.css", "body { background: url(/bg.png) }", "text/css")
    recording.file("/j.js", "", "text/javascript")
    recording.file("/frame", "<p>frame</p>")
    for path in ("/d.json", "/e.json", "/x.json"):
        recording.file(path, "{}", "application/json", Access_Control_Allow_Origin="*")
    paths = [
        f"127.0.0.1 {path}" for path in ("/", "/s.css", "/j.js", "/i.png", "/frame", "/bg.png", "/x.json")
    ]
    paths += [f"localhost {path}" for path in ("/f.woff2", "/d.json", "/e.json")]
    chromium = only(await chromium_asks(recording), paths)
    assert all(chromium.values()), chromium  # Chromium asked for each
    by_http = only(await crawl_asks(recording, run_crawl, tmp_path / "http"), paths)
    assert by_http == {
        **chromium,
        "localhost /e.json": None,
        "127.0.0.1 /x.json": None,
    }  # scripts': a browser's
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium


async def test_media_is_asked_for_as_chromium_asks_it_and_kept_whole(recording, run_crawl, tmp_path):
    """A video's, an audio's and a <source>'s requests ask for no content coding, as Chromium's
    do (the crawl asked for gzip, and a server that compresses what a client accepts sent it a
    coding Chromium never gets); a <track>'s asks for the codings other requests ask for. The
    crawl sends no Range (request_headers.MEDIA_ENCODING says why): its record holds the whole body."""
    recording.file(
        "/",
        "<video src=/v.mp4 preload=auto></video><audio src=/a.mp3 preload=auto></audio>"
        "<video preload=auto><source src=/s.webm type=video/webm>"
        "<track default kind=captions srclang=en src=/t.vtt></video>",
    )
    recording.file("/t.vtt", "WEBVTT\n", "text/vtt")
    recording.file("/v.mp4", b"\0\0\0\x18ftypmp42" + bytes(range(256)) * 64, "video/mp4")
    paths = [f"127.0.0.1 {path}" for path in ("/v.mp4", "/a.mp3", "/s.webm", "/t.vtt")]
    chromium = only(await chromium_asks(recording), paths)
    assert all(chromium.values()), chromium
    for path in ("/v.mp4", "/a.mp3", "/s.webm"):
        assert chromium[f"127.0.0.1 {path}"][-1] == ("range", "bytes=0-")
        chromium[f"127.0.0.1 {path}"].pop()  # the crawl asks for the whole body
    assert only(await crawl_asks(recording, run_crawl, tmp_path / "http"), paths) == chromium
    rows = manifest_rows(tmp_path / "http")
    assert rows[recording.url("/v.mp4")].status == 200
    assert rows[recording.url("/v.mp4")].length == len(recording.files["/v.mp4"][0])


async def test_what_a_document_of_no_origin_loads_goes_as_chromium_sends_it(recording, run_crawl, tmp_path):
    """A page its Content-Security-Policy sandboxes, and a frame its iframe's sandbox leaves no
    origin, load images and stylesheets whose own images name no Origin, as in Chromium: the
    crawl sent Origin: null with each image a stylesheet of theirs names, and with every image
    of the sandboxed frame, as though Chromium named the null origin on no-cors requests."""
    other = recording.other
    recording.file(
        "/",
        f"<link rel=stylesheet href=/s.css><img src=/i.png><iframe sandbox src={other('/boxed')}></iframe>",
        Content_Security_Policy="sandbox allow-scripts",
    )
    recording.file("/s.css", "body { background: url(/bg.png) }", "text/css")
    recording.file("/boxed", f"<link rel=stylesheet href={recording.url('/b.css')}><img src=/b.png>")
    recording.file("/b.css", "body { background: url(/bbg.png) }", "text/css")
    paths = [f"127.0.0.1 {path}" for path in ("/s.css", "/i.png", "/bg.png", "/b.css", "/bbg.png")]
    paths.append("localhost /b.png")
    chromium = only(await chromium_asks(recording), paths)
    assert all(chromium.values()), chromium
    assert only(await crawl_asks(recording, run_crawl, tmp_path / "http"), paths) == chromium


async def test_a_link_of_a_document_of_no_origin_is_followed_as_chromium_follows_it(
    recording, run_crawl, tmp_path
):
    """A link of a page its Content-Security-Policy sandboxes is followed as a cross-site one,
    as Chromium follows it: its SameSite=Lax cookie goes, its Strict one stays home. The crawl
    judged it by the page's own site, and sent the Strict one."""
    recording.file("/setup", "cookies", Set_Cookie="s=1; SameSite=Strict; Path=/")
    recording.file("/setup2", "cookies", Set_Cookie="l=1; SameSite=Lax; Path=/")
    recording.file("/", "<a href=/next>next</a>", Content_Security_Policy="sandbox")
    recording.file("/next", "<p>next</p>")
    chromium = await chromium_asks(recording, "/setup", "/setup2", "/", follow="/next")
    assert ("cookie", "s=1; l=1") in chromium["127.0.0.1 /"]
    crawl = await crawl_asks(recording, run_crawl, tmp_path / "http", "/setup", "/setup2", "/", concurrency=1)
    assert only(crawl, ["127.0.0.1 /next"]) == only(chromium, ["127.0.0.1 /next"])


async def test_a_frame_a_script_adds_is_asked_for_as_a_frame_the_crawl_met(recording, run_crawl, tmp_path):
    """A frame the crawl's browser asks for first (a script adds it) goes as one the crawl met in
    the page: with Chromium's Accept of a navigation but its signed exchange, by one rule
    (request_headers.ACCEPT_DOCUMENT). It went with the signed exchange Chromium asked for."""
    recording.file(
        "/",
        "<iframe src=/met></iframe><script>let f = document.createElement('iframe');"
        "f.src = '/added'; document.body.append(f)</script>",
    )
    for path in ("/met", "/added"):
        recording.file(path, "<p>frame</p>")
    paths = ["127.0.0.1 /met", "127.0.0.1 /added"]
    chromium = only(await chromium_asks(recording), paths)
    assert chromium["127.0.0.1 /met"] == chromium["127.0.0.1 /added"]
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium


async def test_cookies_go_in_the_order_chromium_sends_them(recording, run_crawl, tmp_path):
    """A request's cookies go in Chromium's order (RFC 6265's): those of a longer path first, then
    the one set earlier first. The crawl sent them sorted by name, as Python's cookies print."""
    recording.file("/setup", "", Set_Cookie="b=1; Path=/", Location="/setup2", status=302)
    recording.file("/setup2", "", Set_Cookie="a=1; Path=/", Location="/setup3", status=302)
    recording.file("/setup3", "", Set_Cookie="z=1; Path=/dir", Location="/dir/page", status=302)
    recording.file("/dir/page", "<img src=/dir/i.png>")
    paths = ["127.0.0.1 /dir/page", "127.0.0.1 /dir/i.png"]
    chromium = only(await chromium_asks(recording, "/setup"), paths)
    assert chromium["127.0.0.1 /dir/page"][-1] == ("cookie", "z=1; b=1; a=1")
    crawl = await crawl_asks(recording, run_crawl, tmp_path / "http", "/setup")
    assert only(crawl, paths) == chromium


async def test_two_cookies_of_one_name_both_go_as_chromium_sends_them(recording, run_crawl, tmp_path):
    """Two cookies of one name, one set for / and one for /dir, both go to /dir/page and what it
    loads, the one of the longer path first, as Chromium sends them, by HTTP and through the
    crawl's browser: the crawl sent the one of /dir alone (aiohttp's jar gives one of a name)."""
    recording.file("/setup", "", Set_Cookie="a=1; Path=/", Location="/setup2", status=302)
    recording.file("/setup2", "", Set_Cookie="a=2; Path=/dir", Location="/dir/page", status=302)
    recording.file("/dir/page", "<img src=/dir/i.png><img src=/i.png>")
    paths = ["127.0.0.1 /dir/page", "127.0.0.1 /dir/i.png", "127.0.0.1 /i.png"]
    chromium = only(await chromium_asks(recording, "/setup"), paths)
    assert chromium["127.0.0.1 /dir/i.png"][-1] == ("cookie", "a=2; a=1")
    assert chromium["127.0.0.1 /i.png"][-1] == ("cookie", "a=1")
    assert only(await crawl_asks(recording, run_crawl, tmp_path / "http", "/setup"), paths) == chromium
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", "/setup", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium


HOST_ONLY = "c=host; Path=/"
FOR_THE_DOMAIN = "c=domain; Domain=site.test; Path=/"


@pytest.mark.parametrize(
    "set_cookies",
    [
        (HOST_ONLY, FOR_THE_DOMAIN),
        (FOR_THE_DOMAIN, HOST_ONLY),
        (HOST_ONLY, FOR_THE_DOMAIN, HOST_ONLY),  # set again as it was: created when first set
        (HOST_ONLY, FOR_THE_DOMAIN, "c=new; Path=/"),  # another value: created anew
    ],
    ids=["host-first", "domain-first", "host-again", "host-anew"],
)
async def test_a_hosts_cookie_and_its_domains_of_one_name_and_path_go_as_chromium_sends_them(
    recording, run_crawl, tmp_path, set_cookies
):
    """Two cookies of one name and path, one host-only and one set for the host's domain, both go,
    as Chromium 156 sends them: the one created first first, whatever domain it is set for (set
    again with the value it has, a cookie keeps its creation; with another, it is created anew),
    by HTTP and through the crawl's browser. The crawl sent the domain's first, always."""
    hops = [f"/setup{n}" for n in range(len(set_cookies))] + ["/page"]
    for hop, cookie, then in zip(hops, set_cookies, hops[1:], strict=False):
        recording.file(hop, "", Set_Cookie=cookie, Location=then, status=302)
    recording.file("/page", "<img src=/i.png>")
    host = "www.site.test"
    paths = [f"{host} /page", f"{host} /i.png"]

    def cookies(asked: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
        # The Cookie headers alone: over http to a name, not loopback, Chromium asks for no br.
        return {path: [value for name, value in asked[path] if name == "cookie"] for path in paths}

    chromium = cookies(await chromium_asks(recording, "/setup0", host=host))
    assert len(chromium[f"{host} /page"][0].split("; ")) == 2, chromium
    crawled = await crawl_asks(recording, run_crawl, tmp_path / "http", "/setup0", host=host)
    assert cookies(crawled) == chromium
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", "/setup0", host=host, browser="always", chromium=CHROMIUM
    )
    assert cookies(rendered) == chromium


async def test_a_prefetch_is_asked_for_as_chromium_asks_it(recording, run_crawl, tmp_path):
    """A <link rel=prefetch> (of a page, and one ``as=image``) is asked for as Chromium asks it,
    by HTTP and through the crawl's browser: with Sec-Purpose: prefetch and a navigation's
    Accept, but no Upgrade-Insecure-Requests. The crawl asked for it as a link followed, with
    no Sec-Purpose, and a server that answers a prefetch otherwise answered it otherwise."""
    recording.file("/", "<link rel=prefetch href=/next.html><link rel=prefetch as=image href=/p.png>")
    recording.file("/next.html", "<p>next</p>")
    paths = ["127.0.0.1 /next.html", "127.0.0.1 /p.png"]
    chromium = only(await chromium_asks(recording), paths)
    assert all(("sec-purpose", "prefetch") in asked for asked in chromium.values()), chromium
    assert only(await crawl_asks(recording, run_crawl, tmp_path / "http"), paths) == chromium
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium


async def test_a_preload_chromium_does_not_make_is_not_fetched_for_the_page(recording, run_crawl, tmp_path):
    """Of preloads as=audio, video, worker, document, json, an unknown ``as``, none and track,
    Chromium 156 asks for the track's alone; the crawl fetches that one as the page's requisite
    and keeps the others' URLs as links (skipped here past --max-depth), by HTTP and through its
    browser. It fetched each as a requisite the page needs, asking for what Chromium never does."""
    ignored = ("/a.mp3", "/v.mp4", "/w.js", "/d.html", "/j.json", "/u.bin", "/n.bin")
    kinds = ("audio", "video", "worker", "document", "json", "bogus")  # the last of ignored has none
    recording.file(
        "/",
        "".join(
            f"<link rel=preload as={kind} href={path}>" for kind, path in zip(kinds, ignored, strict=False)
        )
        + f"<link rel=preload href={ignored[-1]}><link rel=preload as=track href=/t.vtt>",
    )
    recording.file("/t.vtt", "WEBVTT\n", "text/vtt")
    chromium = await chromium_asks(recording)
    assert "127.0.0.1 /t.vtt" in chromium
    assert not [path for path in ignored if f"127.0.0.1 {path}" in chromium], chromium
    for way, options in (("http", {}), ("browser", {"browser": "always", "chromium": CHROMIUM})):
        crawl = await crawl_asks(recording, run_crawl, tmp_path / way, max_depth=0, **options)
        assert only(crawl, ["127.0.0.1 /t.vtt"]) == only(chromium, ["127.0.0.1 /t.vtt"])
        assert not [path for path in ignored if f"127.0.0.1 {path}" in crawl], crawl
        rows = manifest_rows(tmp_path / way)
        assert {rows[recording.url(path)].found_by for path in ignored} == {"link"}


async def test_a_later_body_tags_background_is_asked_for_as_chromium_asks_it(recording, run_crawl, tmp_path):
    """A <body> tag met after the body began (a second one, or the first after text) gives the
    body its background, which Chromium asks for; the crawl, by HTTP and through its browser,
    asks for it alike, and its mirror's page shows the archived image. The crawl dropped it."""
    recording.file("/", "<p>text</p><body background=/bg.png>")
    recording.file("/bg.png", b"\x89PNG\r\n\x1a\n", "image/png")
    paths = ["127.0.0.1 /bg.png"]
    chromium = only(await chromium_asks(recording), paths)
    assert all(chromium.values()), chromium
    assert only(await crawl_asks(recording, run_crawl, tmp_path / "http"), paths) == chromium
    rows = manifest_rows(tmp_path / "http")
    page, image = rows[recording.url("/")].local_path, rows[recording.url("/bg.png")].local_path
    assert page and image
    mirrored = (tmp_path / "http" / "mirror" / page).read_text()
    assert f"background={os.path.relpath(image, os.path.dirname(page))}" in mirrored.replace('"', "")
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium


async def test_a_disabled_stylesheet_and_an_image_set_chromium_ignores_are_not_fetched(
    recording, run_crawl, tmp_path
):
    """Chromium asks for no disabled stylesheet, and reads a <link>'s imagesrcset for a preload
    as=image alone; the crawl, by HTTP and through its browser, fetches none of them as a
    requisite (the stylesheet's URL is kept as a link, skipped here past --max-depth). It
    fetched each as a file the page needs."""
    recording.file(
        "/",
        "<link rel=stylesheet disabled href=/dis.css><link rel=icon imagesrcset='/icon.png 1x'>"
        "<link rel=preload as=style imagesrcset='/style.png 1x' href=/s.css>"
        "<link rel=preload as=image imagesrcset='/pre.png 1x'>",
    )
    recording.file("/s.css", "p { color: red }", "text/css")
    ignored = ["/dis.css", "/icon.png", "/style.png"]
    chromium = await chromium_asks(recording)
    assert {"127.0.0.1 /s.css", "127.0.0.1 /pre.png"} <= set(chromium)
    assert not [path for path in ignored if f"127.0.0.1 {path}" in chromium], chromium
    for way, options in (("http", {}), ("browser", {"browser": "always", "chromium": CHROMIUM})):
        crawl = await crawl_asks(recording, run_crawl, tmp_path / way, max_depth=0, **options)
        assert only(crawl, ["127.0.0.1 /s.css", "127.0.0.1 /pre.png"]) == only(
            chromium, ["127.0.0.1 /s.css", "127.0.0.1 /pre.png"]
        )
        assert not [path for path in ignored if f"127.0.0.1 {path}" in crawl], crawl
        assert manifest_rows(tmp_path / way)[recording.url("/dis.css")].found_by == "link"
