"""The mirror in Chromium never reaches the live web by itself, with real Chromium: speculation
rules, resource hints, pings and refreshes that name the live site are kept for the reader but
no longer acted on, from file:// and through serve alike.

The live site here is a server of the test's own that counts every connection made to it (a
preconnect opens one without sending any request); the crawled site links to it as real pages
link to theirs, and it is still running while the mirror is browsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from demo_site import png
from mirror_cases import PNG
from test_browser import CHROMIUM, CHROMIUM_ARGS, async_playwright

from archiver.mirror.build import build_mirror
from archiver.mirror.serve import make_app

pytestmark = pytest.mark.skipif(async_playwright is None, reason="Playwright is not installed")


class LiveSite:
    """A server on 127.0.0.1 that notes every connection made to it, and the request line of each."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(Exception):
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            self.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\nlive")
            await writer.drain()
        writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def reaching_out(live: str) -> str:
    """A page's head that has a browser reach ``live`` by itself, each way a page can."""
    rules = (
        f'{{"prefetch": [{{"source": "list", "urls": ["{live}/rules-prefetch"]}}],'
        f' "prerender": [{{"source": "list", "urls": ["{live}/rules-prerender"]}}]}}'
    )
    return (
        f'<script type="speculationrules">{rules}</script>'
        f'<link rel="prefetch" href="{live}/link-prefetch">'
        f'<link rel="prerender" href="{live}/link-prerender">'
        f'<link rel="preconnect" href="{live}/">'
        f'<link rel="dns-prefetch" href="{live}/">'
    )


async def browse(url: str, click: str | None = None) -> list[str]:
    """Open ``url`` in a fresh Chromium, wait for it to settle (and click ``click``); the requests
    it saw fail."""
    assert async_playwright is not None
    failed: list[str] = []
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await chromium.new_page()
            page.on("requestfailed", lambda request: failed.append(request.url))
            await page.goto(url, wait_until="load")
            await page.wait_for_timeout(1500)  # what speculation rules start, they start at once
            if click is not None:
                await page.click(click)
                await page.wait_for_load_state("load")
                await page.wait_for_timeout(500)
        finally:
            await chromium.close()
    return failed


async def test_the_mirror_reaches_no_live_url_by_itself(site, run_crawl):
    """A page's speculation rules, its prefetch, prerender, preconnect and dns-prefetch hints, the
    ping of its links and a refresh to a page not archived were kept in the mirror as written:
    opened from file:// (or through serve), Chromium fetched the live URLs they name, so the
    offline copy went on the network. Now the mirror keeps them under names no browser acts on;
    the WARC keeps the page as it was served."""
    live = LiveSite()
    live_url = await live.start()
    try:
        site.page(
            "/",
            links=["/next"],
            body=f'<head>{reaching_out(live_url)}</head><p>Index</p><a id="next" href="/next" '
            f'ping="{live_url}/ping">next</a><a href="/refresh">refresh</a>',
        )
        site.page("/next", body="<p>Next</p>")
        refresh = f'<meta http-equiv="refresh" content="0; url={live_url}/away">'
        site.page("/refresh", body=f"{refresh}<p>Moved</p>")
        await site.start()
        result = await run_crawl(site.url("/"))
        host = site.host.replace(":", "+")
        await site.close()
        root = result.snapshot.root
        build_mirror(root)
        assert live.connections == 0  # the crawl itself did not go there (out of scope)
        mirror = root / "mirror" / host
        index = (mirror / "index.html").read_text()
        assert 'type="speculationrules"' in index and f'{live_url}/link-prefetch"' in index  # kept to read

        failed = await browse((mirror / "index.html").as_uri(), click="#next")
        failed += await browse((mirror / "refresh.html").as_uri())
        server = TestServer(make_app(root), host="127.0.0.1")
        await server.start_server()
        try:
            served = f"http://127.0.0.1:{server.port}/mirror/{host}/index.html"
            failed += await browse(served, click="#next")
        finally:
            await server.close()
        assert live.requests == [] and live.connections == 0
        assert failed == []
        assert f'ping="{live_url}/ping"'.encode() in warc_bodies(root)  # the WARC: the page as sent
    finally:
        await live.close()


def warc_bodies(root: Path) -> bytes:
    """Every WARC file of a snapshot, decompressed, end to end."""
    return b"".join(gzip.decompress(path.read_bytes()) for path in sorted((root / "warc").iterdir()))


async def test_a_frame_of_a_data_url_shows_what_the_crawl_archived_from_the_mirror(site, run_crawl):
    """The document of an <iframe src="data:text/html,..."> loads what it links (Chromium asked for
    its image, the render captured it), but the mirror kept the frame's URL as it was: opened from
    file://, the frame fetched the image from the live site. The mirror now gives the frame a
    srcdoc of that document, its links rewritten, a relative one (which resolves to nothing at a
    data: URL) renamed; the src stays, for the record."""
    await site.start()  # its address goes into the frame's document
    frame = f'<img id="df" src="{site.url("/img/df.png")}"><img src="rel.png"><p>in the frame</p>'
    site.page("/", body=f'<iframe src="data:text/html,{frame.replace(chr(34), "&quot;")}"></iframe>')
    site.file("/img/df.png", PNG, "image/png")
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    index = result.snapshot.root / "mirror" / site.host.replace(":", "+") / "index.html"
    await site.close()  # what the mirror asks of the live site fails from now on
    assert 'srcdoc="&lt;img id=&quot;df&quot; src=&quot;img/df.png&quot;&gt;' in index.read_text()
    assert await browse(index.as_uri()) == []


_REFUSED_PAGE = """<link rel="stylesheet" href="/e/sheet.css"><link rel="stylesheet" href="/ok.css">
<style>@import "/e/imported.css"; @font-face { font-family: F; src: url(/e/font.ttf) }</style>
<script src="/e/script.js"></script><script src="/moved.js"></script></head><body>
<p id="sheet">a</p><p id="imported">b</p><p id="ok">c</p>
<span id="font" style="font-family: F, serif">iiiiiiii</span><span id="serif" style="font-family: serif">iiiiiiii</span>
<img id="img" src="/e/img.png"><object data="/e/object.png" type="image/png"><b id="fallback">fallback</b></object>"""
_SEEN = """() => ({
  ran: window.RAN || 0,
  sheet: getComputedStyle(document.getElementById('sheet')).color,
  imported: getComputedStyle(document.getElementById('imported')).color,
  ok: getComputedStyle(document.getElementById('ok')).color,
  font: document.getElementById('font').offsetWidth === document.getElementById('serif').offsetWidth,
  img: document.getElementById('img').naturalWidth,
  fallback: document.getElementById('fallback').offsetWidth > 0,
})"""


async def seen_in_chromium(url: str) -> dict[str, object]:
    """What Chromium shows of the _REFUSED_PAGE at ``url``, once loaded."""
    assert async_playwright is not None
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await chromium.new_page()
            await page.goto(url, wait_until="load")
            await page.wait_for_timeout(300)
            seen: dict[str, object] = await page.evaluate(_SEEN)
            return seen
        finally:
            await chromium.close()


async def test_what_chromium_refuses_of_an_error_answer_the_mirror_does_not_use(site, run_crawl):
    """A script, a stylesheet, an @import, a font and an object's data answered 404 (or 500, or
    through a redirect) with a body of their kind: Chromium runs, applies and uses none of them
    (the object shows its fallback), and shows an image so answered. The mirror linked their
    files, and from file:// ran the script, applied the stylesheets and showed the object's data.
    Now such a link is renamed (in CSS, made about:invalid); the error's file stays, for a link to
    it as a page; the crawl's mirror (written before those answers came) and a rebuild agree."""
    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
    if not font.exists():
        pytest.skip("no DejaVu Sans Mono to serve as a font")
    site.page("/", head=_REFUSED_PAGE, links=["/e/script.js"])
    site.file("/e/sheet.css", "#sheet { color: rgb(1, 2, 3) }", "text/css", status=404)
    site.file("/e/imported.css", "#imported { color: rgb(4, 5, 6) }", "text/css", status=500)
    site.file("/ok.css", "#ok { color: rgb(7, 8, 9) }", "text/css")
    site.file("/e/font.ttf", font.read_bytes(), "font/ttf", status=404)
    site.file("/e/script.js", "window.RAN = (window.RAN || 0) + 1", "text/javascript", status=404)
    site.redirect("/moved.js", "/e/moved.js", status=302)
    site.file("/e/moved.js", "window.RAN = (window.RAN || 0) + 10", "text/javascript", status=410)
    site.file("/e/img.png", png(), "image/png", status=404)
    site.file("/e/object.png", png(), "image/png", status=404)
    await site.start()
    live = await seen_in_chromium(site.url("/"))
    assert live == {
        "ran": 0,
        "sheet": "rgb(0, 0, 0)",
        "imported": "rgb(0, 0, 0)",
        "ok": "rgb(7, 8, 9)",
        "font": True,
        "img": 2,
        "fallback": True,
    }
    result = await run_crawl(site.url("/"))
    index = result.snapshot.root / "mirror" / site.host.replace(":", "+") / "index.html"
    await site.close()
    crawled = index.read_bytes()
    assert await seen_in_chromium(index.as_uri()) == live
    assert b'data-archived-src="/e/script.js"' in crawled and b"url(about:invalid)" in crawled
    assert b'<a href="e/script.js">' in crawled  # a link to it leads to its file, as to any page
    build_mirror(result.snapshot.root)
    assert index.read_bytes() == crawled
