"""The browser pool's bounds, with real Chromium: --browser-tabs pages at once, and a time limit a page.

A page's scripts may ask for data that comes late, or never give the browser
back (a loop): the render is cut at --browser-timeout, the page keeps the DOM
it had (or its HTTP capture, with the error in its row), and the crawl goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web
from browser_watch import BrowserWatch, children
from conftest import manifest_rows
from script_site import png, wide_font
from test_browser import CHROMIUM, CHROMIUM_ARGS, Recorder, async_playwright
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling import browser as browser_module
from archiver.crawling import browser_pool as pool_module
from archiver.crawling import render_attempts
from archiver.crawling import renderer as renderer_module
from archiver.crawling.stored_answers import Answer
from archiver.mirror import live as mirror_live
from archiver.store.rows import ManifestRow
from archiver.verify.verifier import verify_snapshot
from archiver.warc.dom import DOM_PREFIX

FETCHING_PAGE = (
    "<p id='t'>before</p><script>fetch('/data/' + '{name}' + '.json').then(r => r.json())"
    ".then(d => {{ document.getElementById('t').textContent = d.text; }});</script>"
)
"""A page whose text a script replaces with what it fetches (the URL assembled at run time)."""


def doms(snapshot) -> dict[str, str]:
    """The rendered DOM records of a snapshot, by page URL."""
    found = {}
    for warc in sorted((snapshot / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                target = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type == "resource" and target.startswith(DOM_PREFIX):
                    found[target.removeprefix(DOM_PREFIX)] = record.content_stream().read().decode()
    return found


async def test_no_more_pages_render_at_once_than_browser_tabs(site, run_crawl, monkeypatch):
    watch = BrowserWatch(monkeypatch)
    in_flight, most = [0], [0]
    paired = asyncio.Event()

    async def slow_data(request: web.Request) -> web.StreamResponse:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        if in_flight[0] >= 2:
            paired.set()
        try:
            # The first waits for a second to come (however slow the machine), then each
            # holds on a while: any third would come meanwhile if more tabs rendered.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(paired.wait(), 20)
            await asyncio.sleep(1.0)
        finally:
            in_flight[0] -= 1
        return web.json_response({"text": f"data of {request.match_info['tail']}"})

    pages = [f"/p{n}" for n in range(6)]
    for n, path in enumerate(pages):
        site.page(path, body=FETCHING_PAGE.format(name=n))
        site.handler(f"/data/{n}.json", slow_data)
    site.page("/", links=pages, body="<p>Index</p>")
    await site.start()
    result = await run_crawl(
        site.url("/"), browser="always", browser_tabs=2, concurrency=8, chromium=CHROMIUM
    )
    # Each render waits a second for its data, fetched by the crawl while its page waits:
    # with 8 fetch workers, only the two tabs bound how many wait at once.
    assert most[0] == 2
    assert watch.tabs_opened == 2  # tabs are reused from page to page
    rendered = doms(result.snapshot.root)
    for n, path in enumerate(pages):
        assert f"data of data/{n}.json" in rendered[site.url(path)]


async def test_a_page_is_cut_at_its_time_limit_and_the_crawl_goes_on(site, run_crawl, monkeypatch):
    """Late data: the DOM as it was at the limit. A script that never yields: its tab is closed,
    and the page left with its HTTP capture and the error."""
    watch = BrowserWatch(monkeypatch)
    asked = asyncio.Event()

    async def late_data(request: web.Request) -> web.StreamResponse:
        asked.set()
        await asyncio.sleep(12)
        return web.json_response({"text": "late data"})

    site.page("/late", body=FETCHING_PAGE.format(name="late"))
    site.handler("/data/late.json", late_data)
    site.page(
        "/loop",
        body="<p>looping</p><script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 0));"
        "</script>",
    )
    site.page("/after", body=FETCHING_PAGE.format(name="after"))
    site.file("/data/after.json", '{"text": "rendered after the others"}', "application/json")
    site.page("/", links=["/late", "/loop", "/after"], body="<p>Index</p>")
    await site.start()
    result = await run_crawl(
        site.url("/"), browser="always", browser_tabs=1, browser_timeout=6, chromium=CHROMIUM
    )
    rows = manifest_rows(result.snapshot.root)
    rendered = doms(result.snapshot.root)

    assert asked.is_set()
    assert "before" in rendered[site.url("/late")] and "late data" not in rendered[site.url("/late")]
    assert rows[site.url("/data/late.json")].outcome == "fetched"  # the crawl still archived it

    loop = rows[site.url("/loop")]
    assert loop.outcome == "fetched" and loop.warc_file  # its HTTP capture is kept
    assert loop.dom_warc_file is None and site.url("/loop") not in rendered
    assert "time limit" in (loop.render_error or "")
    assert watch.pools[0].restarts == 0

    assert "rendered after the others" in rendered[site.url("/after")]
    assert rows[site.url("/after")].render_error is None
    assert result.stats.render_failed == 1
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_page_whose_script_never_yields_is_given_up_alone(site, run_crawl, monkeypatch):
    """A loop after load, a loop in a timer: nothing bounded the calls that take the DOM, so each
    render waited out its limit and a slack, was taken for a crash of the browser, which was
    replaced (the renders of the other tab with it), the page tried again and the browser
    replaced once more. Now its tab alone is closed, the page is not tried again, and the pages
    of the other tab render once each."""
    watch = BrowserWatch(monkeypatch)

    async def data(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.5)  # each render of the other tab holds on a while
        return web.json_response({"text": f"data of {request.match_info['tail']}"})

    loops = {
        "/loop-on-load": "addEventListener('load', () => { for (;;) {} });",
        "/loop-in-timer": "setTimeout(() => { while (true) {} }, 200);",
    }
    for path, script in loops.items():
        site.page(path, body=f"<p>looping</p><script>{script}</script>")
    pages = [f"/p{n}" for n in range(6)]
    for n, path in enumerate(pages):
        site.page(path, body=FETCHING_PAGE.format(name=n))
        site.handler(f"/data/{n}.json", data)
    site.page("/", links=[*loops, *pages], body="<p>Index</p>")
    await site.start()
    result = await run_crawl(
        site.url("/"), browser="always", browser_tabs=2, browser_timeout=8, chromium=CHROMIUM
    )
    rows = manifest_rows(result.snapshot.root)
    rendered = doms(result.snapshot.root)
    routed = Counter(watch.routed)
    for path in loops:
        row = rows[site.url(path)]
        assert row.outcome == "fetched" and row.warc_file, path  # its HTTP capture is kept
        assert row.dom_warc_file is None and site.url(path) not in rendered, path
        assert "did not give the browser back" in (row.render_error or ""), path
        assert routed[site.url(path)] == 1, path  # not tried again
    for n, path in enumerate(pages):
        assert f"data of data/{n}.json" in rendered[site.url(path)], path
        assert rows[site.url(path)].render_error is None, path
        assert routed[site.url(path)] == 1, path  # its render was never cut
    assert watch.pools[0].restarts == 0
    assert result.stats.render_failed == len(loops)
    assert verify_snapshot(result.snapshot.root).ok


async def test_launching_the_browser_is_not_the_pages_time(site, run_crawl, monkeypatch):
    """A browser slow to start (a loaded machine) must not cost the first page its render. The
    launch lasts longer than the page's time limit and the slack past it together, so a render
    whose limit counted it would fail; the limit leaves the page's own render (the first of a
    new browser, which starts its renderer process) the seconds a busy machine takes. Counted,
    the launch timed the render out, and the browser was replaced for nothing before the page
    was tried again."""
    watch = BrowserWatch(monkeypatch)
    slack, limit = 1.0, 8
    monkeypatch.setattr(render_attempts, "HANG_SLACK", slack)
    replace = pool_module.BrowserPool._replace

    async def slow_launch(pool: pool_module.BrowserPool) -> None:
        await asyncio.sleep(limit + slack + 1)
        await replace(pool)

    monkeypatch.setattr(pool_module.BrowserPool, "_replace", slow_launch)
    site.page("/", body=FETCHING_PAGE.format(name="first"))
    site.file("/data/first.json", '{"text": "the first page, rendered"}', "application/json")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_timeout=limit, chromium=CHROMIUM)
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None
    assert "the first page, rendered" in doms(result.snapshot.root)[site.url("/")]
    assert watch.pools[0].restarts == 0


async def test_the_browser_shuts_down_while_the_mirror_is_finished(site, run_crawl, monkeypatch):
    """The browser and Playwright's driver take a second or two to shut down, mostly waiting: the
    crawl finishes its mirror meanwhile, and returns once both are done."""
    events: list[str] = []
    close, finish = pool_module.BrowserPool.close, mirror_live.LiveMirror.finish

    async def closing(pool: pool_module.BrowserPool) -> None:
        events.append("browser closing")
        await asyncio.sleep(1)  # a close waiting on Chromium (its own takes 0.1 to 1 s)
        await close(pool)
        events.append("browser closed")

    def finishing(mirror: mirror_live.LiveMirror, *args: Any, **kwargs: Any) -> Any:
        events.append("mirror finishing")
        return finish(mirror, *args, **kwargs)

    monkeypatch.setattr(pool_module.BrowserPool, "close", closing)
    monkeypatch.setattr(mirror_live.LiveMirror, "finish", finishing)
    site.page("/", body=FETCHING_PAGE.format(name="first"))
    site.file("/data/first.json", '{"text": "the first page, rendered"}', "application/json")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    assert "the first page, rendered" in doms(result.snapshot.root)[site.url("/")]
    assert events == ["browser closing", "mirror finishing", "browser closed"]
    drivers = [
        pid for pid in children(os.getpid()) if b"run-driver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert drivers == []


async def test_a_page_whose_script_navigates_away_is_rendered_without_waiting_out_its_limit(site, run_crawl):
    """Chromium stops loading a page whose script sets location.href, so its load event never
    comes once that navigation is refused: the render waited out its whole time limit, and
    kept an error. The page is taken as it stands; where it went is a link of it."""
    site.page("/away", body="<p>leaving</p><script>location.href = '/landed'</script>")
    site.page("/landed", body="<p>landed</p>")
    site.page("/", links=["/away"], body="<p>Index</p>")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_timeout=20, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    away = rows[site.url("/away")]
    assert away.render_error is None and "leaving" in doms(result.snapshot.root)[site.url("/away")]
    assert rows[site.url("/landed")].outcome == "fetched"
    assert rows[site.url("/landed")].parent == site.url("/away")


async def test_a_page_that_would_replace_itself_is_kept_as_it_stood(site, run_crawl):
    """A form its script posts, a reload, a refresh to itself: each navigation of the main frame
    after the page's own document is refused. The posted form put the browser's error page in
    the tab, whose empty DOM became the page's mirror file; the reload looped to the time limit
    and kept no DOM."""
    site.page(
        "/posts",
        body="<p>the article</p><form method=post action='/submit'><input name=q value=1></form>"
        "<script>document.forms[0].submit()</script>",
    )
    site.page("/reloads", body="<p>reloading</p><script>setTimeout(() => location.reload(), 50)</script>")
    site.page("/refreshes", head="<meta http-equiv=refresh content=0>", body="<p>refreshing</p>")
    site.page("/", links=["/posts", "/reloads", "/refreshes"], body="<p>Index</p>")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_timeout=20, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    rendered = doms(result.snapshot.root)
    for path, text in (("/posts", "the article"), ("/reloads", "reloading"), ("/refreshes", "refreshing")):
        assert rows[site.url(path)].render_error is None, (path, rows[site.url(path)].render_error)
        assert text in rendered[site.url(path)], path
        mirrored = result.snapshot.root / "mirror" / str(rows[site.url(path)].local_path)
        assert text in mirrored.read_text(), path
    assert site.url("/submit") not in rows  # a form's answer is no link
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_page_whose_parser_still_waits_keeps_its_http_capture(site, run_crawl, monkeypatch):
    """A script of its head that never comes: at the limit the DOM is a head without a body.
    It replaced the page as the mirror file, so a reader saw a blank page.

    The script comes once the render is over, not after a fixed time: the crawl's own fetch of
    it answers the browser's request too, and a browser slow to start (a busy machine) rendered
    the page after that fetch had failed, when nothing held its parser any more. The page's
    limit leaves such a machine the seconds it takes to start loading the page."""
    stalled = asyncio.Event()
    render_page = render_attempts.render_page

    async def rendered_then_answered(*args: Any, **kwargs: Any) -> Any:
        try:
            return await render_page(*args, **kwargs)
        finally:
            stalled.set()

    async def never(request: web.Request) -> web.StreamResponse:
        await stalled.wait()
        return web.Response(text="", content_type="text/javascript")

    monkeypatch.setattr(render_attempts, "render_page", rendered_then_answered)
    site.page("/", head="<script src='/tag.js'></script>", body="<p>the article text</p>")
    site.handler("/tag.js", never)
    await site.start()
    try:
        result = await run_crawl(
            site.url("/"), browser="always", browser_timeout=8, timeout=120, max_tries=1, chromium=CHROMIUM
        )
    finally:
        stalled.set()
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    # The DOM is refused as a parse cut short; on a loaded machine the page may instead be given
    # up whole when its time runs out while the DOM is taken: either way no DOM replaces it.
    error = row.render_error or ""
    assert row.dom_warc_file is None and ("still being parsed" in error or "time limit" in error)
    assert "the article text" in (result.snapshot.root / "mirror" / str(row.local_path)).read_text()


async def test_a_page_that_never_starts_loading_keeps_no_dom_of_another(site, run_crawl, monkeypatch):
    """A page whose document does not reach its tab in time (here its stored answer is read
    late): its DOM was still asked for, of a tab whose navigation was pending, and the call waited
    on it: the render failed as a page that hung (or, the document come meanwhile, as "execution
    context was destroyed"), and the browser was replaced when it waited past the slack."""
    answer = renderer_module.StoredAnswers.answer

    async def late(answers: renderer_module.StoredAnswers, row: ManifestRow) -> Answer | None:
        if row.url == site.url("/second"):
            await asyncio.sleep(6)
        return await answer(answers, row)

    monkeypatch.setattr(renderer_module.StoredAnswers, "answer", late)
    site.page("/second", links=["/third"], body="<p>second text</p>")
    site.page("/third", body="<p>third text</p>")
    site.page("/", links=["/first"], body="<p>Index</p><script>document.title = 'index'</script>")
    site.page("/first", links=["/second"], body="<p>first text</p><script>1</script>")
    await site.start()
    result = await run_crawl(
        site.url("/"), browser="always", browser_tabs=1, browser_timeout=4, chromium=CHROMIUM
    )
    rows = manifest_rows(result.snapshot.root)
    rendered = doms(result.snapshot.root)
    second = rows[site.url("/second")]
    assert second.dom_warc_file is None and "did not start loading" in (second.render_error or "")
    assert site.url("/second") not in rendered
    assert "second text" in (result.snapshot.root / "mirror" / str(second.local_path)).read_text()
    assert "third text" in rendered[site.url("/third")]  # the tab renders on


async def test_a_page_a_script_opened_again_and_wrote_is_kept(site, run_crawl):
    """document.open() and write() after load, never closed: its readyState stays "loading", so it
    was taken for a page whose parser still waits, and what the script wrote was not kept."""
    site.page(
        "/",
        body="<p>as served</p><script>addEventListener('load', () => { document.open();"
        " document.write('<p>written over</p><a href=/from-written>w</a>'); });</script>",
    )
    site.page("/from-written", body="<p>w</p>")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/")].render_error is None
    assert "written over" in doms(result.snapshot.root)[site.url("/")]
    assert rows[site.url("/from-written")].outcome == "fetched"


async def test_a_capture_a_render_began_is_finished_after_the_render(site, run_crawl):
    """The page's time ran out while the crawl fetched what its script asked for: the crawl
    ended at once, called itself finished, and left that URL queued (verify: unfinished)."""

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(8)
        return web.json_response({"text": "late"})

    site.page("/", body=FETCHING_PAGE.format(name="slow"))
    site.handler("/data/slow.json", slow)
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_timeout=3, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert not result.interrupted
    assert rows[site.url("/data/slow.json")].outcome == "fetched"
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")


async def test_shadow_roots_are_kept_in_the_dom_and_their_links_crawled(site, run_crawl):
    """A custom element's shadow root, one a script attached, and a declarative one in the HTML
    as served: the kept DOM left all three out, so rendering made the mirror lose text that the
    HTTP capture showed, and their links were never crawled."""
    site.page(
        "/",
        body="<my-el></my-el><div id=host></div>"
        "<div><template shadowrootmode=open><p>declarative text</p></template></div>"
        "<script>customElements.define('my-el', class extends HTMLElement { connectedCallback() {"
        " this.attachShadow({mode: 'open'}).innerHTML ="
        " \"<p>custom element text</p><a href='/from-element'>e</a><img src='/in-shadow.png'>\" } });"
        "document.getElementById('host').attachShadow({mode: 'open'}).innerHTML ="
        " \"<p>attached text</p><a href='/from-host'>h</a>\";</script>",
    )
    site.page("/from-element", body="<p>e</p>")
    site.page("/from-host", body="<p>h</p>")
    site.file("/in-shadow.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    dom = doms(result.snapshot.root)[site.url("/")]
    for text in ("declarative text", "custom element text", "attached text"):
        assert text in dom, text
    assert dom.count('shadowrootmode="open"') == 3
    for path in ("/from-element", "/from-host", "/in-shadow.png"):
        assert rows[site.url(path)].outcome == "fetched", path
    mirrored = (result.snapshot.root / "mirror" / str(rows[site.url("/")].local_path)).read_text()
    assert "custom element text" in mirrored and 'href="from-element.html"' in mirrored
    assert verify_snapshot(result.snapshot.root).ok


async def test_frames_scripts_wrote_are_kept_in_the_dom_and_their_links_crawled(site, run_crawl):
    """Frames whose document scripts wrote (document.write into an <iframe> with no src, DOM calls
    into one of about:blank and into a frame nested in it, one in a shadow root, a srcdoc whose own
    script changed it): the kept DOM had each <iframe> empty (or its srcdoc as served), so their
    text was not in the mirror and their links were never crawled."""
    site.page(
        "/",
        body="<iframe id=w></iframe><iframe id=b src='about:blank'></iframe><div id=host></div>"
        "<iframe id=s srcdoc=\"<ul id=list></ul><script>document.getElementById('list').innerHTML"
        " += '<li>srcdoc item</li>';</script>\"></iframe>"
        "<script>const w = document.getElementById('w').contentDocument; w.open();"
        " w.write('<p>written text</p><a href=/from-written>w</a><img src=/in-written.png>'); w.close();"
        " const b = document.getElementById('b').contentDocument; const p = b.createElement('p');"
        " p.textContent = 'built text'; b.body.append(p); const n = b.createElement('iframe');"
        " b.body.append(n);"
        " n.contentDocument.body.innerHTML = '<p>nested text</p><a href=/from-nested>n</a>';"
        " const r = document.getElementById('host').attachShadow({mode: 'open'});"
        " r.innerHTML = '<iframe></iframe>';"
        " r.querySelector('iframe').contentDocument.body.innerHTML = '<a href=/from-shadow>s</a>';</script>",
    )
    for path in ("/from-written", "/from-nested", "/from-shadow"):
        site.page(path, body="<p>linked from a frame</p>")
    site.file("/in-written.png", png(10, 20, 30), "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    for path in ("/from-written", "/from-nested", "/from-shadow", "/in-written.png"):
        assert rows[site.url(path)].outcome == "fetched", path
        assert rows[site.url(path)].parent == site.url("/"), path
    assert doms(result.snapshot.root)[site.url("/")].count("srcdoc=") == 5
    assert verify_snapshot(result.snapshot.root).ok

    # The mirror, from file:// with the origin gone, shows each frame as it was, built once.
    mirrored = result.snapshot.root / "mirror" / str(rows[site.url("/")].local_path)
    await site.close()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page()
        await page.goto(mirrored.as_uri(), wait_until="load")
        texts = [
            await frame.evaluate("document.body ? document.body.innerText : ''") for frame in page.frames
        ]
        for text in ("written text", "built text", "nested text", "srcdoc item"):
            assert "\n".join(texts).count(text) == 1, (text, texts)
        written = next(frame for frame, text in zip(page.frames, texts, strict=True) if "written" in text)
        assert await written.eval_on_selector("img", "i => i.complete && i.naturalWidth > 0")
        assert await written.eval_on_selector("a", "a => a.getAttribute('href')") == "from-written.html"
        await chromium.close()


SHOWN_STATE = """() => {
  const shown = (selector) => getComputedStyle(document.querySelector(selector));
  const shadowed = document.getElementById('host').shadowRoot.querySelector('span');
  return {
    inserted: shown('.x').color, adopted: shown('.x').fontWeight,
    shadow: shadowed ? getComputedStyle(shadowed).color : null,
    input: document.getElementById('i').value, checked: document.getElementById('c').checked,
    chosen: document.getElementById('sel').value, text: document.getElementById('t').value,
    drawn: shown('canvas').backgroundImage.slice(0, 27),
    blob: [document.getElementById('b').src.slice(0, 22), document.getElementById('b').naturalWidth],
    registered: document.getElementById('w').offsetWidth, off: shown('.off').color,
    animated: [document.getElementById('grown').offsetWidth, shown('#faded').opacity],
    linked: ['.themed', '.gone', '.added'].map((selector) => shown(selector).color),
    linkedImage: ((image) => [image.startsWith('url("file:'), image.endsWith('/css/dot.png")')])(
      shown('.dotted').backgroundImage),
  };
}"""


DRAWN_PIXEL = """async (id) => {
  const image = new Image();
  image.src = getComputedStyle(document.getElementById(id)).backgroundImage.slice(5, -2);
  await image.decode();
  const pen = document.createElement('canvas').getContext('2d');
  pen.drawImage(image, 0, 0);
  return Array.from(pen.getImageData(0, 0, 1, 1).data);
}"""
"""The first pixel of the drawing kept as the background image of the canvas of ``id``."""


async def test_what_scripts_set_outside_the_markup_is_kept(site, run_crawl):
    """Rules added through the CSSOM (as CSS-in-JS libraries add them, their <style> left empty),
    stylesheets a document and a shadow root adopted, values scripts gave form fields, a drawing
    on a canvas: the kept DOM said none of them, so the mirror showed the page unstyled, its
    fields empty and its chart blank. Nor did it say a custom property a script registered
    (CSS.registerProperty: its initial value lost, the box it sized full width), a stylesheet
    a script turned off (sheet.disabled: on again in the mirror), the last frame a script's
    animation holds (element.animate, fill forwards: a faded-in box invisible in the mirror), or
    the rules a script inserted into and deleted from a linked stylesheet (the mirror had its file's).
    A WebGL canvas's drawing was kept blank (its buffer cleared once shown)."""
    site.page(
        "/",
        body="<style id=s></style><p class=x>styled</p><div id=host></div><input id=i>"
        "<input type=checkbox id=c><select id=sel><option>a<option>b</select><textarea id=t></textarea>"
        "<canvas width=20 height=20></canvas><canvas id=gl width=4 height=4></canvas><img id=b>"
        "<div id=w style='width: var(--side); height: 4px'></div>"
        "<style id=off>.off { color: rgb(9, 9, 9); }</style><p class=off>off</p>"
        "<div id=grown style='width: 10px; height: 2px'></div><p id=faded style='opacity: 0'>faded in</p>"
        "<link id=theme rel=stylesheet href=/css/theme.css><p class=themed>t</p><p class=gone>g</p>"
        "<p class=added>a</p><p class=dotted>d</p>"
        "<script>CSS.registerProperty({name: '--side', syntax: '<length>', inherits: false,"
        " initialValue: '50px'}); document.getElementById('off').sheet.disabled = true;"
        " document.getElementById('grown').animate({width: ['10px', '80px']},"
        " {duration: 1, fill: 'forwards'});"
        " document.getElementById('faded').animate({opacity: [0, 1]}, {duration: 1, fill: 'both'});"
        " const theme = document.getElementById('theme').sheet; theme.deleteRule(1);"
        " theme.insertRule('.added { color: rgb(2, 2, 2); }', theme.cssRules.length);"
        " document.getElementById('s').sheet.insertRule('.x { color: rgb(255, 0, 0); }');"
        " const page = new CSSStyleSheet(); page.replaceSync('p { font-weight: 700; }');"
        " document.adoptedStyleSheets = [page];"
        " const root = document.getElementById('host').attachShadow({mode: 'open'});"
        " root.innerHTML = '<span>in shadow</span>'; const own = new CSSStyleSheet();"
        " own.replaceSync('span { color: rgb(0, 0, 255); }'); root.adoptedStyleSheets = [own];"
        " document.getElementById('i').value = 'typed'; document.getElementById('c').checked = true;"
        " document.getElementById('sel').value = 'b'; document.getElementById('t').value = 'written';"
        " const pen = document.querySelector('canvas').getContext('2d'); pen.fillStyle = 'red';"
        " pen.fillRect(0, 0, 20, 20); const gl = document.getElementById('gl').getContext('webgl');"
        " gl.clearColor(1, 0, 0, 1); gl.clear(gl.COLOR_BUFFER_BIT); fetch('/picture.png').then(r => r.blob())"
        ".then(b => { document.getElementById('b').src = URL.createObjectURL(b); });</script>",
    )
    site.file("/picture.png", png(10, 200, 30), "image/png")
    site.file(
        "/css/theme.css",
        ".themed { color: rgb(1, 1, 1); } .gone { color: rgb(3, 3, 3); }"
        " .dotted { background: url(dot.png); }",
        "text/css",
    )
    site.file("/css/dot.png", png(1, 2, 3), "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None
    assert verify_snapshot(result.snapshot.root).ok
    mirrored = result.snapshot.root / "mirror" / str(row.local_path)
    await site.close()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page()
        await page.goto(mirrored.as_uri(), wait_until="load")
        assert await page.evaluate(SHOWN_STATE) == {
            "inserted": "rgb(255, 0, 0)",
            "adopted": "700",
            "shadow": "rgb(0, 0, 255)",
            "input": "typed",
            "checked": True,
            "chosen": "b",
            "text": "written",
            "drawn": 'url("data:image/png;base64,',
            "blob": ["data:image/png;base64,", 4],
            "registered": 50,
            "off": "rgb(0, 0, 0)",
            "animated": [80, "1"],
            "linked": ["rgb(1, 1, 1)", "rgb(0, 0, 0)", "rgb(2, 2, 2)"],
            "linkedImage": [True, True],  # the file the mirror holds, found from the stylesheet's URL
        }
        assert await page.evaluate(DRAWN_PIXEL, "gl") == [255, 0, 0, 255]  # WebGL's, not a blank
        await chromium.close()


CLOSED_CARD = (
    "customElements.define('my-card', class extends HTMLElement { constructor() { super();"
    " const root = this.attachShadow({mode: 'closed'}); root.innerHTML = \"<style>p { margin: 0 }</style>"
    "<p>closed card text</p><a href='/from-closed'>c</a><img src='/in-closed.png'>\";"
    " const sheet = new CSSStyleSheet(); sheet.replaceSync(':host { display: block; height: 37px }');"
    " root.adoptedStyleSheets = [sheet]; } });"
)
IN_A_CLOSED_ROOT = """function () {
  const text = this.querySelector('p'), image = this.querySelector('img'), link = this.querySelector('a');
  if (!text) return null;  // the root that holds the second card
  return [text.textContent, this.host.offsetHeight, link.getAttribute('href'),
          image.complete && image.naturalWidth > 0];
}"""


async def in_closed_roots(page, function: str) -> list:
    """``function`` called on each closed shadow root of ``page`` (no script of the page can
    reach one: DevTools can)."""
    devtools = await page.context.new_cdp_session(page)
    tree = await devtools.send("DOM.getDocument", {"depth": -1, "pierce": True})
    closed, todo = [], [tree["root"]]
    while todo:
        node = todo.pop()
        roots = node.get("shadowRoots", [])
        closed += [root["backendNodeId"] for root in roots if root.get("shadowRootType") == "closed"]
        todo += roots + node.get("children", [])
    results = []
    for backend_id in closed:
        target = await devtools.send("DOM.resolveNode", {"backendNodeId": backend_id})
        called = await devtools.send(
            "Runtime.callFunctionOn",
            {
                "objectId": target["object"]["objectId"],
                "functionDeclaration": function,
                "returnByValue": True,
            },
        )
        results.append(called["result"]["value"])
    return results


DECLARED_CARD = (
    "<section><template shadowrootmode=closed><style>:host { display: block; height: 37px }"
    " p { margin: 0 }</style><p>closed card text</p><a href='/from-closed'>c</a>"
    "<img src='/in-closed.png'></template></section>"
)


async def test_closed_shadow_roots_are_kept_with_their_styles_and_links(site, run_crawl):
    """A shadow root attached closed (attachShadow({mode: 'closed'}): no property of its host leads
    to it) was left out of the kept DOM: the mirror lost its text and styles, and its links and
    images were never crawled. So was one the HTML declared closed, which the page as served
    showed: no script can reach it."""
    site.page(
        "/",
        body=DECLARED_CARD
        + "<my-card></my-card><div id=host></div><script>"
        + CLOSED_CARD
        + " document.getElementById('host').attachShadow({mode: 'closed'}).innerHTML = '<my-card></my-card>';"
        "</script>",
    )
    site.page("/from-closed", body="<p>linked from a closed shadow root</p>")
    site.file("/in-closed.png", png(10, 20, 30), "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert doms(result.snapshot.root)[site.url("/")].count('shadowrootmode="closed"') == 4
    for path in ("/from-closed", "/in-closed.png"):
        assert rows[site.url(path)].outcome == "fetched", path
        assert rows[site.url(path)].parent == site.url("/"), path
    assert verify_snapshot(result.snapshot.root).ok

    # The mirror, from file:// with the origin gone, builds both cards again, styled, linked.
    mirrored = result.snapshot.root / "mirror" / str(rows[site.url("/")].local_path)
    await site.close()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page()
        await page.goto(mirrored.as_uri(), wait_until="load")
        cards = [found for found in await in_closed_roots(page, IN_A_CLOSED_ROOT) if found]
        assert cards == [["closed card text", 37, "from-closed.html", True]] * 3
        await chromium.close()


async def test_fonts_scripts_load_are_kept_as_font_faces(site, run_crawl):
    """Fonts a script loads with the FontFace API (from a URL, and from bytes it fetched) and adds
    to document.fonts: no stylesheet says them, so the mirror set the text in a fallback font."""
    site.page(
        "/",
        body="<span id=u style='font: 20px Loaded, monospace'>WWWW</span>"
        "<span id=b style='font: 20px FromBytes, monospace'>WWWW</span>"
        "<script>const loaded = new FontFace('Loaded', 'url(fonts/wide.ttf)'); document.fonts.add(loaded);"
        " loaded.load(); fetch('/fonts/bytes.ttf').then(r => r.arrayBuffer())"
        ".then(b => document.fonts.add(new FontFace('FromBytes', b)));"
        " history.pushState({}, '', '/elsewhere/route');</script>",
    )
    site.file("/fonts/wide.ttf", wide_font(), "font/ttf")
    site.file("/fonts/bytes.ttf", wide_font(), "font/ttf")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/fonts/wide.ttf")].outcome == "fetched"
    assert verify_snapshot(result.snapshot.root).ok
    mirrored = result.snapshot.root / "mirror" / str(rows[site.url("/")].local_path)
    # Resolved where the page was when the font was made, not at the route it moved to since.
    assert 'src: url("fonts/wide.ttf")' in mirrored.read_text()
    await site.close()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page()
        await page.goto(mirrored.as_uri(), wait_until="load")
        widths = await page.evaluate(
            "() => Promise.all([document.fonts.load('20px Loaded'), document.fonts.load('20px FromBytes')])"
            ".then(() => ['u', 'b'].map(id => document.getElementById(id).getBoundingClientRect().width))"
        )
        assert widths == [160, 160]  # four glyphs two ems wide: the font itself, not a fallback
        await chromium.close()


async def test_a_dom_past_its_limit_is_not_kept(site, run_crawl, monkeypatch):
    monkeypatch.setattr(browser_module, "DOM_LIMIT", 4096)
    site.page("/", body="<p>as served</p><script>document.body.append('x'.repeat(10000))</script>")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.dom_warc_file is None and row.render_error == "the DOM is larger than 4.0 KiB"
    assert "as served" in (result.snapshot.root / "mirror" / str(row.local_path)).read_text()


async def test_a_popup_loads_nothing_and_where_it_goes_is_a_link(site, run_crawl):
    """window.open and a target=_blank link followed by script: the popups loaded in the tab's
    context, outlived their page's render, and their requests were taken for those of the pages
    rendered after."""
    site.page(
        "/",
        body="<p>opener</p><a id=new target=_blank href='/blank'>b</a>"
        "<script>window.open('/popped'); document.getElementById('new').click();</script>",
    )
    site.page("/popped", body="<p>popped</p><img src='/only-popped.png'>")
    site.page("/blank", body="<p>blank</p>")
    site.file("/only-popped.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_tabs=1, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/")].render_error is None
    for path in ("/popped", "/blank"):
        assert (rows[site.url(path)].found_by, rows[site.url(path)].parent) == ("link", site.url("/")), path
    # Asked for by the render of /popped, its own page, not by the opener's.
    assert rows[site.url("/only-popped.png")].parent == site.url("/popped")
    assert verify_snapshot(result.snapshot.root).ok


MIRRORED_STATE = """() => {
  const element = (id) => document.getElementById(id);
  return {
    undefinedHidden: element('hidden-el').offsetHeight,
    defined: [element('card').offsetHeight, getComputedStyle(element('toggle')).color],
    popover: element('menu').matches(':popover-open'),
    dialog: [element('ask').matches(':modal'), element('ask').open],
    indeterminate: [element('some').indeterminate, element('some').checked],
    scrolled: [element('carousel').scrollLeft, element('list').scrollTop],
    page: document.scrollingElement.scrollTop,
  };
}"""


async def test_state_no_markup_says_is_shown_in_the_mirror(site, run_crawl):
    """What scripts left a page in that no attribute says: custom elements defined (a page hides
    them with :not(:defined) until their script runs, and the mirror runs none, so it showed
    nothing), an element's custom state (:state()), a popover shown (hidden in the mirror), a
    dialog opened modal (shown in place, with no backdrop), a checkbox indeterminate, a carousel
    scrolled (back at its start). A frame's custom elements are defined in its own window."""
    site.page(
        "/",
        body="<style>my-card:not(:defined), x-toggle:not(:defined), never-defined:not(:defined)"
        " { display: none }"
        " my-card { display: block; height: 20px } x-toggle:state(on) { color: rgb(0, 128, 0) }"
        " #carousel { width: 100px; overflow-x: scroll; white-space: nowrap }"
        " #carousel span { display: inline-block; width: 100px; height: 10px }"
        " #list { height: 50px; overflow-y: auto } #list p { height: 40px; margin: 0 }</style>"
        "<my-card id=card>card</my-card><x-toggle id=toggle>toggle</x-toggle>"
        "<never-defined id=hidden-el>never</never-defined>"
        "<div id=menu popover>menu</div><dialog id=ask>sure?</dialog><input type=checkbox id=some>"
        "<div id=carousel><span>1</span><span>2</span><span>3</span></div>"
        "<div id=list><p>a</p><p>b</p><p>c</p></div><div style='height: 3000px'></div>"
        '<iframe srcdoc="<style>f-el:not(:defined) { display: none } f-el { display: block }</style>'
        "<f-el>in a frame</f-el><script>customElements.define('f-el', class extends HTMLElement {})"
        '</script>"></iframe>'
        "<script>customElements.define('my-card', class extends HTMLElement {});"
        " customElements.define('x-toggle', class extends HTMLElement { constructor() { super();"
        " this.attachInternals().states.add('on'); } });"
        " document.getElementById('ask').showModal(); document.getElementById('menu').showPopover();"
        " document.getElementById('some').indeterminate = true;"
        " document.getElementById('carousel').scrollLeft = 200;"
        " document.getElementById('list').scrollTop = 30;</script>",
    )
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    row = manifest_rows(result.snapshot.root)[site.url("/")]
    assert row.render_error is None
    assert verify_snapshot(result.snapshot.root).ok
    mirrored = result.snapshot.root / "mirror" / str(row.local_path)
    await site.close()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page()
        recorder = Recorder(page)
        await page.goto(mirrored.as_uri(), wait_until="load")
        assert await page.evaluate(MIRRORED_STATE) == {
            "undefinedHidden": 0,  # never defined in the page: hidden as the reader had it
            "defined": [20, "rgb(0, 128, 0)"],
            "popover": True,
            "dialog": [True, True],
            "indeterminate": [True, False],
            "scrolled": [200, 30],
            "page": 0,  # the render scrolled the page to its end; its reader saw its top
        }
        # A frame's elements are defined in its own window, and set again there.
        inner = page.frames[1]
        assert await inner.eval_on_selector("f-el", "e => e.offsetHeight") > 0
        assert recorder.failed == []
        await chromium.close()
