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
import shutil
import subprocess
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from browser_watch import BrowserWatch
from conftest import manifest_rows
from script_site import ITEMS, build_script_site, item_text, png
from test_browser import CHROMIUM, CHROMIUM_ARGS, Recorder, async_playwright
from test_interop import _wait_for, free_port, interop_venv
from warcio.archiveiterator import ArchiveIterator

from archiver.config import DEFAULT_USER_AGENT
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
