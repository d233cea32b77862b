"""However a render ends, the crawl lets go of what it held for it.

A page found loaded as a frame of a rendered page is noted so, and the writer holds the note until
the rendered page's DOM record is written (it lists the page's frames). A note that comes once the
record is written, or for a render that stored nothing, was held until the crawl ended: over a
long crawl of framed pages, memory without bound.
"""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import manifest_rows
from script_site import png
from test_browser import CHROMIUM

from archiver.crawling import render_pages, renderer
from archiver.crawling.writer import Writer
from archiver.verify.verifier import verify_snapshot

FRAMED = """<!doctype html><html><head><title>Framed</title></head>
<body onload="const image = new Image(); image.src = '/in-frame.png'; document.body.append(image)">
<p>No script: not rendered of its own.</p></body></html>"""


class HeldFrames:
    """The frames each writer of the crawl still held for renders when it closed."""

    def __init__(self, monkeypatch: Any) -> None:
        self.held: list[dict[str, list[str]]] = []
        close = Writer.close
        watch = self

        async def closing(writer: Writer) -> None:
            watch.held.append(dict(writer._frames))
            await close(writer)

        monkeypatch.setattr(Writer, "close", closing)


def framing_site(site: Any) -> None:
    """The home page links f.html (no script: not rendered) and p.html, a rendered page that frames
    it; f.html's onload handler loads an image, asked for by its frame in p.html's render."""
    site.page("/", links=["/f.html", "/p.html"])
    site.page("/p.html", body='<iframe src="f.html"></iframe><script>var x = 1;</script>')
    site.file("/f.html", FRAMED)
    site.file("/in-frame.png", png(0, 100, 200), "image/png")


async def test_a_frame_noted_once_its_page_is_stored_is_not_held(site, run_crawl, monkeypatch):
    """A request of the frame that the render left in flight when its time ran out comes to the
    crawl once the page's DOM record is written (here it is held until then): it is asked as the
    page's, and the frame is not noted as the page's."""
    held = HeldFrames(monkeypatch)
    stored = asyncio.Event()
    rendered = render_pages.CrawlPages.rendered
    asking_page = render_pages.CrawlPages._asking_page

    async def rendered_then_told(pages: Any, page: Any, *args: Any, **kwargs: Any) -> None:
        await rendered(pages, page, *args, **kwargs)
        if page.url == site.url("/p.html"):
            stored.set()

    async def asked_once_stored(pages: Any, page: Any, how: Any) -> Any:
        if page.url == site.url("/p.html") and how.frame == site.url("/f.html"):
            await stored.wait()
        return await asking_page(pages, page, how)

    monkeypatch.setattr(render_pages.CrawlPages, "rendered", rendered_then_told)
    monkeypatch.setattr(render_pages.CrawlPages, "_asking_page", asked_once_stored)
    framing_site(site)
    await site.start()
    result = await run_crawl(
        site.url("/"), browser="auto", browser_timeout=8, browser_tabs=1, max_tries=1, chromium=CHROMIUM
    )
    rows = manifest_rows(result.snapshot.root)

    assert stored.is_set()
    assert held.held == [{}]
    assert rows[site.url("/in-frame.png")].outcome == "fetched"
    assert rows[site.url("/f.html")].framed_by is None
    assert rows[site.url("/p.html")].dom_warc_file is not None
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_render_that_fails_on_the_way_lets_its_frames_go(site, run_crawl, monkeypatch):
    """A render that fails once its frames are noted (here reading its DOM for links fails)
    stores its error in the page's row, in one line (Playwright's errors carry their logs in
    the lines after), and the writer holds nothing of it."""
    held = HeldFrames(monkeypatch)
    findings = renderer.findings

    def failing(body: bytes, url: str, *args: Any, **kwargs: Any) -> Any:
        if url == site.url("/p.html") and b"<iframe" in body:
            raise ValueError("no links read\n  - its log: many lines")
        return findings(body, url, *args, **kwargs)

    monkeypatch.setattr(renderer, "findings", failing)
    framing_site(site)
    await site.start()
    result = await run_crawl(site.url("/"), browser="auto", browser_tabs=1, max_tries=1, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)

    assert held.held == [{}]
    assert rows[site.url("/f.html")].framed_by == site.url("/p.html")
    assert rows[site.url("/p.html")].render_error == "the render failed: no links read"
    assert rows[site.url("/p.html")].dom_warc_file is None
