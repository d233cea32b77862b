"""Hybrid capture: pages scripts build are rendered in Debian's Chromium, every request through the crawl.

The site of tests/script_site.py builds its text, links and images with
scripts. Crawled with --browser auto, everything its scripts load must be in
the WARC and the manifest, requested once from the server with our
User-Agent, and every request the browser made must have gone through the
crawl's route handler. The mirror, opened from file:// in Chromium with no
network, must show what the scripts built; pywb must replay the live page.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import lxml.html
import pytest
from aiohttp import web
from conftest import manifest_rows
from script_site import ITEMS, build_script_site, item_text, png
from test_browser import CHROMIUM, CHROMIUM_ARGS, Recorder, async_playwright
from test_interop import _wait_for, free_port, interop_venv
from warcio.archiveiterator import ArchiveIterator

from archiver.cli import main
from archiver.config import DEFAULT_USER_AGENT
from archiver.crawling import browser_pool as pool_module
from archiver.crawling import page_network as network_module
from archiver.crawling.chromium import find_chromium
from archiver.mirror.build import build_mirror
from archiver.verify.verifier import verify_snapshot
from archiver.warc.dom import DOM_PREFIX

SCRIPT_LOADED = [
    "/api/items.json",
    *(f"/api/item/{n}.json" for n in range(1, ITEMS + 1)),
    *(f"/img/pic{n}.png" for n in range(1, ITEMS + 1)),
    *(f"/app/item/{n}" for n in range(1, ITEMS + 1)),
    "/app/home",
    "/about.html",
]
LOADED_IMAGES = "images => images.map(image => image.complete && image.naturalWidth > 0)"
REFUSED = ["/tracking.gif", "/api/log", "/live", "/sw.js"]
"""What the page tries that the crawl must refuse: an excluded pixel, a POST, a WebSocket,
a service worker."""


class BrowserWatch:
    """Every request the browser made (from its own events) and every one routed to the crawl."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[str] = []
        self.routed: list[str] = []
        self.pools: list[pool_module.BrowserPool] = []
        self.tabs: list[pool_module.Tab] = []
        self.tabs_opened = 0
        open_tab = pool_module.BrowserPool._open_tab
        handle = network_module.PageNetwork.handle
        watch = self

        async def watched_tab(pool: pool_module.BrowserPool) -> pool_module.Tab:
            if pool not in watch.pools:
                watch.pools.append(pool)
            tab = await open_tab(pool)
            watch.tabs.append(tab)
            watch.tabs_opened += 1
            tab.context.on("request", lambda request: watch.made.append(request.url))
            return tab

        async def watched_handle(network: network_module.PageNetwork, route: Any) -> None:
            watch.routed.append(route.request.url)
            await handle(network, route)

        monkeypatch.setattr(pool_module.BrowserPool, "_open_tab", watched_tab)
        monkeypatch.setattr(network_module.PageNetwork, "handle", watched_handle)


async def test_scripted_site_with_browser_auto(site, run_crawl, monkeypatch, tmp_path):
    watch = BrowserWatch(monkeypatch)
    build_script_site(site)
    await site.start()
    result = await run_crawl(site.url("/"), browser="auto", exclude=("tracking",), chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)

    # Everything the scripts loaded is archived, requested once, by the crawl.
    for path in SCRIPT_LOADED:
        assert rows[site.url(path)].outcome == "fetched", path
        assert rows[site.url(path)].warc_file, path
    assert all(count == 1 for count in site.hits.values()), site.hits
    assert set(site.agents) == {DEFAULT_USER_AGENT}
    for path in REFUSED:
        assert not any(hit.startswith(path) for hit in site.hits), path
    pixel = next(row for url, row in rows.items() if "/tracking.gif" in url)
    assert (pixel.outcome, pixel.reason) == ("skipped", "excluded")

    # Every request the server saw is one the crawl made and recorded (counted at the server)...
    recorded: Counter[str] = Counter()
    for warc in (result.snapshot.root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "request":
                    target = urlsplit(record.rec_headers.get_header("WARC-Target-URI"))
                    recorded[target.path + (f"?{target.query}" if target.query else "")] += 1
    # The site counts robots.txt and sitemap.xml apart.
    assert recorded.pop("/robots.txt", 0) == site.robots_hits
    assert recorded.pop("/sitemap.xml", 0) == site.sitemap_hits
    assert recorded == site.hits

    # ...and every request the browser made went through the crawl (counted at the browser).
    made = [url for url in watch.made if url.startswith("http")]
    assert made and sorted(made) == sorted(watch.routed)

    # Which pages were rendered, and why.
    assert rows[site.url("/")].render_reason == 'trial 1 of 2: empty app root <div id="root">'
    assert "rendering found more on this host" in (rows[site.url("/app/item/1")].render_reason or "")
    log = (result.snapshot.root / "logs" / "crawl.log").read_text()
    assert f"pages of {site.host}: rendering finds more there, they are all rendered" in log
    assert rows[site.url("/about.html")].render_reason is None  # no script: nothing to render
    rendered = [row for row in rows.values() if row.dom_warc_file]
    routes = ("/", "/app/home", *(f"/app/item/{n}" for n in range(1, ITEMS + 1)))
    assert {row.url for row in rendered} == {site.url(path) for path in routes}
    assert all(row.render_error is None for row in rendered)
    assert result.stats.rendered == len(rendered)
    # The titles its script set, not the shell's, name the pages in the manifest and the index.
    assert rows[site.url("/")].title == "Built by a script - Script app"
    assert [rows[site.url(f"/app/item/{n}")].title for n in range(1, ITEMS + 1)] == [
        f"Item {n}" for n in range(1, ITEMS + 1)
    ]
    assert rows[site.url("/about.html")].title == "About"

    # The snapshot verifies, DOM records and the links found in them included.
    build_mirror(result.snapshot.root)
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")
    assert report.stats["rendered pages parsed"] == len(rendered)
    cdxj = (result.snapshot.root / "indexes" / "index.cdxj").read_text()
    assert sum(line.startswith(DOM_PREFIX) for line in cdxj.splitlines()) == len(rendered)
    index = (result.snapshot.root / "index.html").read_text()
    assert ">Built by a script - Script app</a>" in index and ">Script app</a>" not in index

    # The mirror, from file:// with the origin gone, shows what the scripts built.
    host = site.host.replace(":", "+")
    await site.close()
    mirror = result.snapshot.root / "mirror" / host
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await chromium.new_page()
        recorder = Recorder(page)
        await page.goto((mirror / "index.html").as_uri(), wait_until="load")
        await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        await page.wait_for_load_state("networkidle")
        assert await page.text_content("h1") == "Built by a script"
        assert await page.eval_on_selector_all("h1", "hs => hs.length") == 1  # not built twice
        assert await page.eval_on_selector_all("img", LOADED_IMAGES) == [True] * ITEMS
        await page.click("text=Item 2")
        await page.wait_for_load_state("load")
        assert item_text(2) in (await page.text_content("p") or "")
        assert recorder.failed == []
        assert recorder.requests and all(url.startswith("file://") for url in recorder.requests)
        await chromium.close()


async def test_a_rendered_page_asks_as_its_browser_asked(site, run_crawl):
    """The browser's Accept (and X-Requested-With) choose what a server answers: its requests went
    out with the crawl's Accept for HTML, so a URL that serves JSON to a script asking for JSON
    answered HTML (the script failed on it), an image asked for as an image was asked for as a
    page, and the WARC's request records showed no request the browser made. Its requests name
    the language and ask for https where a navigation asks, as the crawl's own do."""
    seen: dict[str, dict[str, str | None]] = {}

    def noted(request: web.Request) -> str:
        seen[request.path] = {
            name: request.headers.get(name)
            for name in (
                "Accept",
                "X-Requested-With",
                "User-Agent",
                "Accept-Language",
                "Upgrade-Insecure-Requests",
            )
        }
        return request.headers.get("Accept", "")

    async def items(request: web.Request) -> web.StreamResponse:
        if "application/json" in noted(request):
            return web.json_response({"text": "items as JSON"}, headers={"Vary": "Accept"})
        return web.Response(
            text="<p>items as a page</p>", content_type="text/html", headers={"Vary": "Accept"}
        )

    async def picture(request: web.Request) -> web.StreamResponse:
        noted(request)
        return web.Response(body=png(1, 2, 3), content_type="image/png")

    async def fragment(request: web.Request) -> web.StreamResponse:
        noted(request)
        xhr = request.headers.get("X-Requested-With") == "XMLHttpRequest"
        return web.Response(text="a fragment" if xhr else "<html>a page</html>", content_type="text/html")

    site.page(
        "/",
        body="<p id=t>waiting</p><p id=f></p><img id=i>"
        "<script>fetch('/old-items', {headers: {Accept: 'application/json'}}).then(r => r.json())"
        ".then(d => { document.getElementById('t').textContent = d.text; });"
        "document.getElementById('i').src = '/pic' + 'ture';"
        "const x = new XMLHttpRequest(); x.open('GET', '/fragment');"
        "x.setRequestHeader('X-Requested-With', 'XMLHttpRequest');"
        "x.onload = () => { document.getElementById('f').textContent = x.responseText; }; x.send();"
        "const f = document.createElement('iframe'); f.src = '/fr' + 'ame';"
        "document.body.append(f);</script>",
    )
    site.redirect("/old-items", "/items")
    site.handler("/items", items)
    site.handler("/picture", picture)
    site.handler("/fragment", fragment)
    site.handler("/frame", fragment)
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    # As the crawl asks over HTTP: Chromium's language, https asked for by a navigation alone.
    assert {path: seen[path]["Upgrade-Insecure-Requests"] for path in seen} == {
        "/items": None,
        "/picture": None,
        "/fragment": None,
        "/frame": "1",
    }
    assert {seen[path]["Accept-Language"] for path in seen} == {"en-US,en;q=0.9"}
    assert seen["/items"]["Accept"] == "application/json"  # both hops of the redirect
    assert "image/webp" in (seen["/picture"]["Accept"] or "")
    assert seen["/fragment"]["X-Requested-With"] == "XMLHttpRequest"
    assert seen["/fragment"]["User-Agent"] == DEFAULT_USER_AGENT  # the crawl's own headers stay
    sent: dict[str, list[tuple[str, str]]] = {}
    dom = ""
    for warc in (result.snapshot.root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                target = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type == "request":
                    sent[urlsplit(target).path] = [(k.lower(), v) for k, v in record.http_headers.headers]
                elif target == DOM_PREFIX + site.url("/"):
                    dom = record.content_stream().read().decode()
    assert "items as JSON" in dom and "a fragment" in dom  # what the scripts asked for came
    assert ("accept", "application/json") in sent["/old-items"]
    assert ("accept", "application/json") in sent["/items"]
    assert ("accept", seen["/picture"]["Accept"]) in sent["/picture"]
    assert ("x-requested-with", "XMLHttpRequest") in sent["/fragment"]
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_rendered_page_sends_its_scripts_cookies_and_its_referrer_policy(site, other_site, run_crawl):
    """A cookie a page's script sets goes with the requests the page then makes, through each
    hop of a redirect, as the browser sends it: they went with the crawl's jar alone, so a
    server needing it refused them (403) and the data was missing. One the script deletes
    (max-age=0, or an expiry past) is no longer sent: the jar kept it. The Referer of each is the
    one the browser chose under the page's <meta name="referrer">, not the default's. A cookie
    its script sets after its last request goes with the pages the crawl asks for next: only
    those a request carried were taken in. A script's fetch() of another origin goes without
    cookies, as its credentials are for its own origin, and with Origin: null through a redirect
    from there back home: the crawl sent its jar's and the page's Origin."""
    seen: dict[str, tuple[str | None, dict[str, str]]] = {}

    origins: dict[str, str | None] = {}

    def noted(request: web.Request) -> dict[str, str]:
        seen[request.path] = (request.headers.get("Referer"), dict(request.cookies))
        origins[request.path] = request.headers.get("Origin")
        return dict(request.cookies)

    async def home(request: web.Request) -> web.StreamResponse:
        noted(request)
        body = (
            '<!doctype html><meta name="referrer" content="same-origin"><p id=t>waiting</p><p id=c></p>'
            "<script>"
            'document.cookie = "consent=yes; path=/api";'
            'document.cookie = "gone=; max-age=0";'  # deleted: no longer sent
            'document.cookie = "dropped=; expires=Thu, 01 Jan 1970 00:00:00 GMT";'
            "document.getElementById('c').textContent = 'cookies: ' + document.cookie;"
            "fetch('/api/old').then(r => r.text()).then(t => {"
            " document.getElementById('t').textContent = t; });"
            f"const i = new Image(); i.src = '{other_site.url('/pixel.png')}'; document.body.append(i);"
            f"fetch('{other_site.url('/shared.json')}').then(r => r.text()).then(t => {{"
            " document.getElementById('t').after(t); });"
            f"fetch('{other_site.url('/hop.json')}').catch(() => null);"
            "setTimeout(() => { document.cookie = 'late=1; path=/';"
            " const a = document.createElement('a'); a.href = '/next'; document.body.append(a); }, 600);"
            "</script>"
        )
        response = web.Response(text=body, content_type="text/html")
        response.set_cookie("sid", "s1", httponly=True)
        response.set_cookie("gone", "1")
        return response

    async def data(request: web.Request) -> web.StreamResponse:
        cookies = noted(request)
        if cookies.get("consent") != "yes" or cookies.get("sid") != "s1":
            return web.Response(status=403, text="no consent")
        return web.Response(text="the data", content_type="text/plain")

    async def pixel(request: web.Request) -> web.StreamResponse:
        noted(request)
        return web.Response(body=png(1, 2, 3), content_type="image/png")

    async def shared(request: web.Request) -> web.StreamResponse:
        noted(request)
        origin = request.headers.get("Origin")
        if origin is None:  # a server that answers scripts of the origins it allows alone
            return web.Response(status=403, text="no origin")
        headers = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
        return web.json_response({"shared": "across origins"}, headers=headers)

    other_site.handler("/pixel.png", pixel)
    other_site.handler("/shared.json", shared)
    await other_site.start()
    site.handler("/", home)
    site.redirect("/api/old", "/api/data")
    site.handler("/api/data", data)
    site.handler("/next", data)
    site.handler("/back.json", shared)
    await site.start()
    other_site.redirect("/hop.json", site.url("/back.json"))
    # The crawl's cookies (--cookie): the page's scripts see them too, and delete one.
    given = (("given", "g1"), ("dropped", "d1"))
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, cookies=given)
    assert result.stats.rendered == 1
    page = site.url("/")
    assert seen["/api/data"] == (page, {"consent": "yes", "sid": "s1", "given": "g1"})
    assert seen["/next"][1] == {"sid": "s1", "given": "g1", "late": "1"}
    assert manifest_rows(result.snapshot.root)[site.url("/api/data")].status == 200
    assert seen["/pixel.png"][0] is None  # same-origin: no Referer to another origin
    dom = ""
    for warc in (result.snapshot.root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_headers.get_header("WARC-Target-URI") == DOM_PREFIX + page:
                    dom = record.content_stream().read().decode()
    assert "the data" in dom
    # The crawl's cookie is the page's too; sid is HttpOnly and consent for /api: not seen.
    assert "cookies: given=g1<" in dom
    # A script's request to another origin carried its Origin, as the browser sent it.
    assert origins["/shared.json"] == site.url("/").rstrip("/")
    assert seen["/shared.json"][1] == {}  # credentials for its own origin alone
    assert (origins["/back.json"], seen["/back.json"][1]) == ("null", {})
    assert "across origins" in dom


async def test_static_pages_cost_a_few_trials_per_host(site, run_crawl, monkeypatch):
    """Pages whose scripts add nothing: a few trials, then the host is crawled over HTTP only."""
    watch = BrowserWatch(monkeypatch)
    script = "<script>document.documentElement.className = 'js';</script>"
    pages = [f"/p{n}" for n in range(12)]
    for path in pages:
        site.page(path, links=["/"], body="<p>" + "Static text. " * 20 + "</p>" + script)
    site.page("/plain", body="<p>no script at all</p>")
    site.page("/", links=[*pages, "/plain"], body="<p>" + "Words of a static page. " * 10 + "</p>" + script)
    await site.start()
    result = await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, concurrency=2)
    rows = manifest_rows(result.snapshot.root)
    rendered = [row for row in rows.values() if row.render_reason]
    assert 1 <= len(rendered) <= 3
    assert all(row.render_reason.startswith("trial") for row in rendered)
    assert rows[site.url("/plain")].render_reason is None
    assert all(count == 1 for count in site.hits.values())
    assert len(watch.pools) == 1
    log = (result.snapshot.root / "logs" / "crawl.log").read_text()
    assert f"scripted pages of {site.host}: 2 trial renders found nothing more" in log


async def test_a_trial_reads_a_stylesheet_in_its_pages_encoding(site, run_crawl, monkeypatch):
    """What a windows-1252 page's stylesheet (no charset of its own) links is static: read as
    UTF-8, it named a U+FFFD, and the image the browser asked for looked like a gain of rendering."""
    BrowserWatch(monkeypatch)
    site.file("/s.css", b".x{background:url(/caf\xe9.png)}", "text/css")
    await trials_find_nothing_more(site, run_crawl)


async def test_a_trial_reads_an_imported_stylesheet_in_its_importers_encoding(site, run_crawl, monkeypatch):
    """A stylesheet that names no encoding and is @imported is read in the encoding of the one that
    imports it, as the crawl reads it: the trials read every stylesheet in the page's encoding, so a
    UTF-8 stylesheet's import on a windows-1252 page named another image than the browser asked for,
    which looked like a gain of rendering."""
    BrowserWatch(monkeypatch)
    site.file("/s.css", b'@charset "utf-8";@import "/t.css";', "text/css")
    site.file("/t.css", ".x{background:url(/caf\u00e9.png)}".encode(), "text/css")
    await trials_find_nothing_more(site, run_crawl)


async def trials_find_nothing_more(site, run_crawl) -> None:
    """Crawl with --browser auto a site of two windows-1252 pages styled by /s.css (the test
    serves it), whose background is /café.png: the image is asked for once, and the two trial
    renders find nothing the static parse did not."""
    script = b"<script>document.documentElement.className = 'js';</script>"
    pages = [f"/p{n}" for n in range(2)]
    for path in pages:
        body = b'<link rel=stylesheet href="/s.css"><p class=x>' + b"Static text. " * 20 + b"</p>" + script
        site.file(path, body, "text/html; charset=windows-1252")
    site.file("/caf\u00e9.png", png(200, 0, 0), "image/png")
    links = "".join(f'<a href="{path}">p</a>' for path in pages)
    site.file("/", f"<p>{'Words of a static page. ' * 10}</p>{links}".encode() + script)
    await site.start()
    result = await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, concurrency=2)
    assert site.hits["/caf%C3%A9.png"] == 1
    log = (result.snapshot.root / "logs" / "crawl.log").read_text()
    assert f"scripted pages of {site.host}: 2 trial renders found nothing more" in log


@pytest.mark.parametrize("how", ["Browser.crash", "kill -9"])
async def test_crashed_browser_is_restarted_and_its_page_retried(site, run_crawl, monkeypatch, tmp_path, how):
    watch = BrowserWatch(monkeypatch)
    crashed: list[bool] = []
    pids = tmp_path / "chromium.pids"

    async def crash_the_browser(request: web.Request) -> web.StreamResponse:
        if not crashed:  # the first render asks for it: the whole browser dies meanwhile
            crashed.append(True)
            if how == "kill -9":
                os.kill(int(pids.read_text().split()[-1]), signal.SIGKILL)
            else:
                browser = watch.pools[0].browser
                assert browser is not None
                session = await browser.new_browser_cdp_session()
                asyncio.ensure_future(session.send("Browser.crash"))
            await asyncio.sleep(0.5)
        return web.json_response({"text": "after the crash"})

    site.page(
        "/",
        body="<div id='root'></div><script>fetch('/data.json').then(r => r.json())"
        ".then(d => { document.getElementById('root').textContent = d.text; });</script>",
    )
    site.handler("/data.json", crash_the_browser)
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=pid_noting_chromium(tmp_path, pids))
    rows = manifest_rows(result.snapshot.root)
    page = rows[site.url("/")]
    assert crashed and watch.pools[0].restarts == 1
    assert len(pids.read_text().split()) == 2
    assert page.dom_warc_file and page.render_error is None
    assert site.hits["/data.json"] == 1  # the retry was answered from the snapshot
    build_mirror(result.snapshot.root)
    html = (result.snapshot.root / "mirror" / site.host.replace(":", "+") / "index.html").read_text()
    assert "after the crash" in html


async def test_a_crashed_tab_is_tried_again_and_the_browser_kept(site, run_crawl, monkeypatch):
    """One tab's renderer crashed (a page's memory, a bug of the browser): that was taken for a
    crash of the whole browser, which was replaced, and the render of the other tab cut with it."""
    watch = BrowserWatch(monkeypatch)
    crashed = asyncio.Event()

    async def crash_its_tab(request: web.Request) -> web.StreamResponse:
        if not crashed.is_set():  # the first render asks for it: its tab's renderer dies meanwhile
            page = next(tab.page for tab in watch.tabs if tab.page.url == site.url("/crash"))
            devtools = await page.context.new_cdp_session(page)
            asyncio.ensure_future(devtools.send("Page.crash"))
            crashed.set()
            await asyncio.sleep(0.5)
        return web.json_response({"text": "after the crash"})

    async def after_the_crash(request: web.Request) -> web.StreamResponse:
        with contextlib.suppress(TimeoutError):  # the other tab renders meanwhile
            await asyncio.wait_for(crashed.wait(), 20)
        await asyncio.sleep(1.0)
        return web.json_response({"text": "rendered beside the crash"})

    script = (
        "<div id='root'></div><script>fetch('{data}').then(r => r.json())"
        ".then(d => {{ document.getElementById('root').textContent = d.text; }});</script>"
    )
    site.page("/crash", body=script.format(data="/crash.json"))
    site.handler("/crash.json", crash_its_tab)
    site.page("/other", body=script.format(data="/other.json"))
    site.handler("/other.json", after_the_crash)
    site.page("/", links=["/crash", "/other"], body="<p>Index</p>")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_tabs=2, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    routed = Counter(watch.routed)
    assert crashed.is_set() and watch.pools[0].restarts == 0
    assert routed[site.url("/crash")] == 2 and routed[site.url("/other")] == 1
    build_mirror(result.snapshot.root)
    for path, text in (("/crash", "after the crash"), ("/other", "rendered beside the crash")):
        assert rows[site.url(path)].render_error is None, path
        assert text in (result.snapshot.root / "mirror" / str(rows[site.url(path)].local_path)).read_text()


async def test_browser_pool_recycles_its_browser(tmp_path):
    """Memory does not grow with the crawl: the browser is replaced every ``recycle_after`` pages."""
    async with pool_module.BrowserPool(CHROMIUM, tabs=1, user_agent="t", recycle_after=2) as pool:
        generations = []
        for _ in range(3):
            async with pool.tab() as tab:
                await tab.page.set_content("<p>x</p>")
                generations.append(tab.generation)
        assert generations == [1, 1, 2]
    assert pool.browser is None


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as children:
            found += [int(child) for child in children.read().split()]
    return found


def _subtree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            todo += _children(current)
            found.append(current)
    return found


async def test_the_browser_runs_only_on_cpu_the_crawl_leaves_idle():
    """Every thread of Playwright's driver and of every Chromium process is SCHED_IDLE, so renders
    never slow the HTTP crawl; this process keeps its own class."""
    async with pool_module.BrowserPool(CHROMIUM, tabs=1, user_agent="t") as pool:
        async with pool.tab() as tab:
            await tab.page.set_content("<p>x</p><script>document.title = 'ran'</script>")
            assert await tab.page.title() == "ran"
        drivers = []
        for child in _children(os.getpid()):
            with open(f"/proc/{child}/cmdline", "rb") as command:
                if b"run-driver" in command.read():
                    drivers.append(child)
        assert len(drivers) == 1
        browser_threads = {}
        for pid in _subtree(drivers[0]):
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                for thread in os.listdir(f"/proc/{pid}/task"):
                    browser_threads[int(thread)] = os.sched_getscheduler(int(thread))
        assert len(browser_threads) > 10  # the driver's threads and Chromium's processes'
        assert set(browser_threads.values()) == {os.SCHED_IDLE}
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


STARTING_DRIVER = (
    "import os, sys, time\n"
    "end = time.process_time() + 0.3\n"
    "while time.process_time() < end: pass\n"  # a start that compiles: busy for 0.3 CPU s
    "print(os.sched_getscheduler(0), flush=True)\n"
    "sys.stdin.read()\n"
)
"""A stand-in for Playwright's driver (its command line names run-driver): busy as a start is,
then says its scheduling class, then waits."""


async def test_the_driver_is_lowered_as_soon_as_it_exists_not_once_it_has_started():
    """The driver spent its start (0.57 CPU s of compiling) at the crawl's own priority, taking that
    CPU from the crawl: it was lowered only once Playwright's start returned. It is lowered while
    it starts now (a real process standing in for it, which reports its class from within its start)."""
    from archiver.crawling.chromium import started_at_idle_priority

    async def start() -> tuple[asyncio.subprocess.Process, bytes]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            STARTING_DRIVER,
            "run-driver",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None
        return process, await asyncio.wait_for(process.stdout.readline(), 60)

    process, said = await started_at_idle_priority(start())
    try:
        assert int(said) == os.SCHED_IDLE
        assert os.sched_getscheduler(process.pid) == os.SCHED_IDLE
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
    finally:
        process.kill()
        await process.wait()


def _driver_environment() -> dict[str, str]:
    """The environment Playwright's driver (this process's child running run-driver) started with."""
    for child in _children(os.getpid()):
        with open(f"/proc/{child}/cmdline", "rb") as command:
            if b"run-driver" not in command.read():
                continue
        with open(f"/proc/{child}/environ", "rb") as environ:
            pairs = [entry.partition(b"=") for entry in environ.read().split(b"\0") if entry]
        return {name.decode(): value.decode() for name, _, value in pairs}
    raise AssertionError("no driver process")


async def _render_once() -> dict[str, str]:
    async with pool_module.BrowserPool(CHROMIUM, tabs=1, user_agent="t") as pool:
        async with pool.tab() as tab:
            await tab.page.set_content("<p>x</p>")
        return _driver_environment()


@pytest.mark.parametrize("given", ["", "cache", "disabled"])
async def test_the_driver_keeps_its_compiled_code_in_nodes_compile_cache(tmp_path, monkeypatch, given):
    """Playwright's driver compiles 12 MB of JavaScript at each start: it is given Node's compile
    cache (in the temporary folder, where Node's module.enableCompileCache() puts it), and fills
    it; a user's own NODE_COMPILE_CACHE, or NODE_DISABLE_COMPILE_CACHE, is kept."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    for name in ("NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE"):
        monkeypatch.setenv(name, "x")  # so that the test's end takes away what the crawl set
        monkeypatch.delenv(name)
    if given == "cache":
        monkeypatch.setenv("NODE_COMPILE_CACHE", str(tmp_path / "mine"))
    if given == "disabled":
        monkeypatch.setenv("NODE_DISABLE_COMPILE_CACHE", "1")
    environment = await _render_once()
    expected = {"": tmp_path / "node-compile-cache", "cache": tmp_path / "mine", "disabled": None}[given]
    if expected is None:
        assert "NODE_COMPILE_CACHE" not in environment
        assert not (tmp_path / "node-compile-cache").exists()
        return
    assert environment["NODE_COMPILE_CACHE"] == str(expected)
    cached = [path for path in expected.rglob("*") if path.is_file()]
    assert cached and sum(path.stat().st_size for path in cached) > 1_000_000  # the bundles' code


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--browser", "auto", "--chromium", "/no/such/chromium"], "no Chromium at /no/such/chromium"),
        (["--browser", "fancy"], "invalid choice"),
        (["--browser", "always", "--browser-tabs", "0"], "--browser-tabs must be from 1"),
    ],
)
def test_browser_options_fail_at_start_in_one_line(tmp_path, capsys, args, words):
    try:
        code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"), *args])
    except SystemExit as exit:  # argparse's own usage error
        code = exit.code
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "snap").exists()


def test_missing_playwright_names_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import fails as when not installed
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"), "--browser", "auto"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "pip install 'archiver[browser]'" in err


@pytest.mark.parametrize(
    ("stop", "group"),
    [(signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGTERM, True)],
    ids=["SIGTERM", "Ctrl-C", "SIGTERM-to-the-group"],
)
async def test_a_signal_stops_renders_cleanly_and_resume_finishes_them(site, tmp_path, stop, group):
    """SIGTERM or Ctrl-C mid-render: the browser is gone, the snapshot resumable, one line said;
    --resume renders what was left. A terminal's Ctrl-C, timeout(1) and systemd signal the
    whole process group: Playwright's driver too, which ends at once."""
    started = asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        started.set()
        await asyncio.sleep(3)
        return web.json_response({"text": "slow data"})

    site.page(
        "/slow",
        body="<div id='root'></div><script>fetch('/slow.json').then(r => r.json())"
        ".then(d => { document.getElementById('root').textContent = d.text; });</script>",
    )
    # The home page's script asks for nothing: when /slow.json is asked, no other fetch is under
    # way, so every repeat on --resume is a capture the first crawl lost.
    site.page("/", links=["/slow"], body="<div id='root'></div><script>root.textContent = 'home';</script>")
    site.handler("/slow.json", slow)
    await site.start()
    pids = tmp_path / "chromium.pids"
    wrapper = pid_noting_chromium(tmp_path, pids)
    output = tmp_path / "snap"
    command = [sys.executable, "-m", "archiver", "crawl", site.url("/"), "-o", str(output), "--quiet"]
    command += ["--browser", "always", "--chromium", wrapper]
    process = await asyncio.create_subprocess_exec(
        *command, stderr=asyncio.subprocess.PIPE, start_new_session=True
    )
    await asyncio.wait_for(started.wait(), 60)
    if group:
        os.killpg(process.pid, stop)
    else:
        process.send_signal(stop)
    _out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 128 + stop, err.decode()  # 143 for SIGTERM, 130 for Ctrl-C
    assert len(err.splitlines()) == 1 and b"--resume" in err, err.decode()
    for pid in pids.read_text().split():
        assert not _alive(int(pid)), f"Chromium {pid} outlived the crawl"
    rows = manifest_rows(output)
    assert rows[site.url("/slow")].render_pending
    resumed = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "archiver", "crawl", "--resume", "-o", str(output), "--quiet"],
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(resumed.communicate(), 120)
    assert resumed.returncode == 0, err.decode()
    rows = manifest_rows(output)
    assert not any(row.render_pending for row in rows.values())
    assert rows[site.url("/slow")].dom_warc_file
    # The fetch in flight at SIGTERM was abandoned (left queued), so it is made again: the only repeat.
    assert site.hits["/slow.json"] == 2
    repeated = {path: count for path, count in site.hits.items() if count != 1 and path != "/slow.json"}
    assert not repeated
    assert verify_snapshot(output).ok


def pid_noting_chromium(folder: Path, pids: Path) -> str:
    """A Chromium that notes its process id in ``pids`` (the same process: it execs Chromium)."""
    wrapper = folder / "chromium"
    wrapper.write_text(f'#!/bin/sh\necho $$ >> {pids}\nexec {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


@pytest.mark.interop
async def test_pywb_replays_the_live_page_with_its_scripts(site, run_crawl, tmp_path):
    """The WARC keeps every exchange: pywb replays the page, its scripts run, nothing they ask is missing."""
    tools = interop_venv() / "bin"
    build_script_site(site)
    await site.start()
    result = await run_crawl(site.url("/"), browser="auto", exclude=("tracking",), chromium=CHROMIUM)
    origin = site.url("/")
    await site.close()
    collection = tmp_path / "pywb" / "collections" / "snap"
    (collection / "archive").mkdir(parents=True)
    (collection / "indexes").mkdir()
    for warc in (result.snapshot.root / "warc").glob("*.warc.gz"):
        shutil.copy(warc, collection / "archive")
    shutil.copy(result.snapshot.root / "indexes" / "index.cdxj", collection / "indexes")
    (tmp_path / "pywb" / "config.yaml").write_text("framed_replay: false\n")  # the page itself, no frame
    port = free_port()
    log = open(tmp_path / "pywb" / "wayback.log", "w")  # noqa: SIM115
    wayback = subprocess.Popen(
        [str(tools / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=tmp_path / "pywb",
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}/snap"
        await asyncio.to_thread(_wait_for, f"{base}/", wayback)
        async with async_playwright() as playwright:
            chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await chromium.new_page()
            missing: list[str] = []

            def note_missing(response: Any) -> None:
                if response.status >= 400:
                    missing.append(f"{response.status} {response.url}")

            page.on("response", note_missing)
            page.on("requestfailed", lambda r: missing.append(f"failed {r.url}"))
            await page.goto(f"{base}/2026mp_/{origin}", wait_until="load")
            await page.wait_for_selector("h1")
            await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            await page.wait_for_load_state("networkidle")
            assert await page.text_content("h1") == "Built by a script"
            # Lazy images start once scrolled to: on a busy machine, after the network went idle.
            with contextlib.suppress(Exception):
                await page.wait_for_function(
                    f"() => document.images.length === {ITEMS}"
                    " && [...document.images].every(image => image.complete)",
                    timeout=30_000,
                )
            assert await page.eval_on_selector_all("img", LOADED_IMAGES) == [True] * ITEMS
            await chromium.close()
        # Only what the crawl refused by design is missing: the excluded pixel, the POST, the WebSocket,
        # the service worker.
        unexpected = [line for line in missing if not any(path in line for path in REFUSED)]
        assert unexpected == []
    finally:
        wayback.terminate()
        wayback.wait(timeout=10)
        log.close()


def test_the_headless_shell_is_preferred_on_path(tmp_path, monkeypatch):
    for name in ("chromium", "chromium-headless-shell"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() == str(tmp_path / "chromium-headless-shell")
    (tmp_path / "chromium-headless-shell").unlink()
    assert find_chromium() == str(tmp_path / "chromium")


LEGACY_PAGE = (
    "<!doctype html><html><head><title>Caf\u00e9</title></head><body><div id='root'></div><script>"
    "var a = document.createElement('a'); a.href = '/s?q=caf\\u00e9'; a.textContent = 'search';"
    "document.getElementById('root').appendChild(a);</script></body></html>"
)


@pytest.mark.parametrize(
    ("encoding", "label", "query"),
    [("cp1252", "iso-8859-1", "caf%E9"), ("shift_jis", "Shift_JIS", "caf%26%23233%3B")],
)
async def test_a_link_a_script_writes_keeps_its_query_in_the_pages_encoding(
    site, run_crawl, encoding, label, query
):
    """The rendered DOM is kept as UTF-8, but the browser writes a link's query in its page's
    encoding (é is byte E9 in windows-1252, and its character reference in Shift_JIS, which
    lacks it): the crawl follows, the mirror links and verify finds the URL it asks for."""
    site.file("/", LEGACY_PAGE.encode(encoding, "xmlcharrefreplace"), f"text/html; charset={label}")
    site.page("/s", title="found")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/")].dom_warc_file is not None
    found = rows[site.url(f"/s?q={query}")]
    assert (found.outcome, found.found_by) == ("fetched", "link")
    assert [url for url in rows if "/s?" in url] == [site.url(f"/s?q={query}")]
    build_mirror(result.snapshot.root)
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")
    mirror = result.snapshot.root / "mirror"
    page = mirror / str(rows[site.url("/")].local_path)
    (href,) = lxml.html.parse(str(page)).getroot().xpath("//a[text()='search']/@href")
    assert (page.parent / unquote(href)).resolve() == (mirror / str(found.local_path)).resolve()


async def test_a_frames_stylesheet_is_its_documents_and_a_sandboxed_frame_has_no_origin(
    site, other_site, run_crawl
):
    """A stylesheet a frame of the rendered page asks for is the frame's document's: the fonts it
    names (used or not, the crawl asks for them) carry the frame's origin, which a server
    answering the origins it allows alone needs, and a frame sandboxed without allow-same-origin
    has none (Origin: null, as Chromium sends it). They carried the page's origin. An image a
    script asks for with crossorigin=use-credentials, before any cookie exists, is asked for
    with credentials (its host's HTTP authentication), as a browser holding some would send
    them; an anonymous one without: the browser's request showed no Cookie for either, and both
    were asked for without. An image the sandboxed frame's script asks for is of no site: of the
    page's cookies, its SameSite=None one goes and its SameSite=Lax one stays home, as in
    Chromium (both went, the page's site judged); the other frame's goes with both."""
    origins: dict[str, str | None] = {}
    authorized: dict[str, bool] = {}
    cookies: dict[str, dict[str, str]] = {}

    async def cookied(request: web.Request) -> web.Response:
        cookies[request.path] = dict(request.cookies)
        return web.Response(body=b"x", content_type="image/png")

    def font(request: web.Request) -> web.Response:
        origins[request.path] = request.headers.get("Origin")
        authorized[request.path] = "Authorization" in request.headers
        return web.Response(body=b"wOF2", content_type="font/woff2")

    async def noted(request: web.Request) -> web.Response:
        return font(request)

    await site.start()
    home = site.url("/").rstrip("/")
    for path in ("/ff.woff2", "/bf.woff2", "/fu.woff2", "/bu.woff2"):
        site.handler(path, noted)
    for path in ("/fp.png", "/bp.png"):
        site.handler(path, cookied)
    # The frames and their stylesheets come from scripts: only the browser meets them (a URL a
    # script names whole would be found in it). A font each frame names and uses not is asked
    # for by the crawl alone, from the frame's document as it parses it: of no origin when the
    # browser met the frame sandboxed (it went with the frame's origin).
    styled = "<script>const l = document.createElement('link'); l.rel = 'stylesheet';"
    styled += "l.href = '/{}' + '.css'; document.head.append(l);</script><p>frame</p>"
    unused = f"<style>@font-face {{{{ font-family: u; src: url({home}/{{}}.woff2) }}}}</style>"
    picture = f"<script>new Image().src = '{home}/' + '{{}}' + '.png';</script>"
    other_site.file("/frame", styled.format("fs") + unused.format("fu") + picture.format("fp"))
    other_site.file("/boxed", styled.format("bs") + unused.format("bu") + picture.format("bp"))
    other_site.file("/fs.css", f"@font-face {{ font-family: g; src: url({home}/ff.woff2) }}", "text/css")
    other_site.file("/bs.css", f"@font-face {{ font-family: h; src: url({home}/bf.woff2) }}", "text/css")
    await other_site.start()
    cdn = other_site.url("/").rstrip("/")
    for path in ("/cred.png", "/anon.png"):
        other_site.handler(path, noted)
    framing = (
        f"<script>for (const [src, box] of [['{cdn}/frame', null], ['{cdn}/boxed', 'allow-scripts']]) {{"
        " const f = document.createElement('iframe'); if (box) f.setAttribute('sandbox', box);"
        " f.src = src; document.body.append(f); }"
        f"for (const [mode, name] of [['use-credentials', 'cred'], ['anonymous', 'anon']]) {{"
        f" const i = document.createElement('img'); i.crossOrigin = mode; i.src = '{cdn}/' + name + '.png';"
        " document.body.append(i); }</script>"
    )

    async def setting(request: web.Request) -> web.Response:
        response = web.Response(text=f"<body>{framing}</body>", content_type="text/html")
        response.headers.add("Set-Cookie", "lax=1; SameSite=Lax; Path=/")
        response.headers.add("Set-Cookie", "none=1; SameSite=None; Secure; Path=/")
        return response

    site.handler("/", setting)
    await run_crawl(
        site.url("/"),
        browser="always",
        chromium=CHROMIUM,
        scope="any",
        http_user="alice",
        http_password="pw",
        credentials_hosts=(f"127.0.0.1:{other_site.server.port}",),
    )
    assert cookies == {"/fp.png": {"lax": "1", "none": "1"}, "/bp.png": {"none": "1"}}
    assert origins == {
        "/ff.woff2": cdn,
        "/bf.woff2": "null",
        "/fu.woff2": cdn,
        "/bu.woff2": "null",
        "/cred.png": home,
        "/anon.png": home,
    }
    assert (authorized["/cred.png"], authorized["/anon.png"]) == (True, False)


async def test_a_rendered_page_its_policy_sandboxes_asks_for_what_its_dom_names_with_no_origin(
    site, other_site, run_crawl
):
    """A page its Content-Security-Policy sandboxes has no origin, its rendered DOM too: a font its
    script names and no text uses (the crawl alone asks for it, from the DOM) goes with Origin:
    null, as one its HTML names. It went with the page's origin. What its browser asks for first
    (an image, a fetch() with credentials, of its own site) is of no site: its SameSite=Lax
    cookie stays home, as Chromium keeps it (the crawl's request sent it, the page's site
    judged)."""
    origins: dict[str, str | None] = {}
    cookies: dict[str, dict[str, str]] = {}

    async def font(request: web.Request) -> web.Response:
        origins[request.path] = request.headers.get("Origin")
        return web.Response(body=b"wOF2", content_type="font/woff2")

    async def cookied(request: web.Request) -> web.Response:
        cookies[request.path] = dict(request.cookies)
        return web.Response(body=b"x", content_type="image/png")

    for path in ("/static.woff2", "/dom.woff2"):
        other_site.handler(path, font)
    for path in ("/pic.png", "/api"):
        site.handler(path, cookied)
    await other_site.start()
    cdn = other_site.url("").rstrip("/")
    face = "@font-face {{ font-family: {}; src: url(" + cdn + "/{}.woff2) }}"
    body = f"<style>{face.format('s', 'static')}</style><script>const s = document.createElement('style');"
    body += f"s.textContent = '{face.format('d', 'do')}'.replace('do.', 'dom.');"
    body += "document.head.append(s); const i = new Image(); i.src = '/p' + 'ic.png';"
    body += "fetch('/a' + 'pi', {credentials: 'include'}).catch(() => {});</script>"
    site.file("/", body, headers={"Content-Security-Policy": "sandbox allow-scripts"})
    await site.start()
    await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, scope="any", cookies=(("lax", "1"),))
    assert origins == {"/static.woff2": "null", "/dom.woff2": "null"}
    assert cookies == {"/pic.png": {}, "/api": {}}


URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
"""What RFC 3986 lets a URI hold (brackets only around an IPv6 host)."""


async def test_a_url_with_characters_no_uri_holds_is_one_fetch_and_a_valid_target_uri(site, run_crawl):
    """Chromium asks for /i%7C.png where the page says /i|.png, and the WHATWG parser leaves |, [,
    ] in a path and |, [, ], {, }, ^, ` in a query, which no URI holds (RFC 3986), though a
    WARC-Target-URI must be one: escaped, the page's link and the browser's request are one URL,
    fetched once, recorded once, under a Target-URI that is a URI."""
    site.page("/", body='<img src="/i|[1].png?v=|[]{}^`"><a href="/p|[q]?v={}^`">p</a>')
    site.file("/i%7C%5B1%5D.png?v=%7C%5B%5D%7B%7D%5E%60", png(1, 2, 3), "image/png")
    site.page("/p%7C%5Bq%5D?v=%7B%7D%5E%60")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    assert site.hits["/i%7C%5B1%5D.png?v=%7C%5B%5D%7B%7D%5E%60"] == 1, site.hits
    assert site.hits["/p%7C%5Bq%5D?v=%7B%7D%5E%60"] == 1, site.hits
    assert sum(site.hits.values()) == 3, site.hits
    targets: Counter[str] = Counter()
    for warc in (result.snapshot.root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    target = record.rec_headers.get_header("WARC-Target-URI")
                    targets[target] += 1
                    host_end = target.index("/", len("http://"))
                    assert URI_CHARACTERS.fullmatch(target[host_end:]), target
    assert max(targets.values()) == 1, targets
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_rendered_pages_srcdoc_stylesheet_is_read_in_utf8(site, run_crawl):
    """A stylesheet naming no charset that an iframe's srcdoc document of a windows-1252 page
    links is read in UTF-8 when the crawl's browser renders the page, as by HTTP and as Chromium
    reads it: its café.png is the one fetched, and verify finds the snapshot complete. It was
    read in the page's encoding, and another, garbled URL fetched."""
    site.file(
        "/",
        b'<iframe srcdoc="&lt;link rel=stylesheet href=sd.css&gt;&lt;p&gt;x"></iframe>',
        "text/html; charset=windows-1252",
    )
    site.file("/sd.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert sorted(manifest_rows(root)) == sorted(
        site.url(path) for path in ("/", "/sd.css", "/caf%C3%A9.png")
    )
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
