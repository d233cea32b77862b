"""What a rendered page's scripts start beside the page (workers, sessions of their own) asks for
nothing past the crawl.

The crawl's Chromium has two last stops for a request that escapes the routing: a proxy that
refuses connections and a resolver that knows no name. Here the resolver's rule is dropped and
the proxy is a server of the test that counts what comes to it: every request it sees escaped
the crawl (with the crawl's own stops in place it fails, and what the page asked for is not
archived). Those of the site's host are the page's (the full Chromium asks Google's hosts for
its own updates and accounts too, which the crawl's stops refuse as well). The site counts
what the crawl asked of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from conftest import manifest_rows
from test_browser import CHROMIUM
from test_browser_limits import doms

from archiver.crawling import browser_pool
from archiver.verify.verifier import verify_snapshot


@dataclass
class EscapeProxy:
    """A proxy server that answers nothing and keeps the first line of every request sent to it."""

    port: int = 0
    seen: list[str] = field(default_factory=list)

    def asked_of(self, host: str) -> list[str]:
        """The requests sent to it for ``host`` (a CONNECT names the host, a GET its URL)."""
        return [line for line in self.seen if host in line]

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            self.seen.append(line.decode("latin-1").strip())
        finally:
            writer.close()

    def getsockname(self) -> tuple[str, int]:
        """Stands for the crawl's refusing socket (chromium.refusing_port), whose port it gives."""
        return ("127.0.0.1", self.port)

    def close(self) -> None:
        """The crawl closes its refusing socket when its browser goes; the test closes the server."""


@pytest.fixture
async def escape_proxy(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[EscapeProxy]:
    proxy = EscapeProxy()
    server = await asyncio.start_server(proxy._connected, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(browser_pool, "refusing_port", lambda: proxy)
    kept = tuple(arg for arg in browser_pool.CHROMIUM_ARGS if not arg.startswith("--host-resolver-rules"))
    monkeypatch.setattr(browser_pool, "CHROMIUM_ARGS", kept)
    yield proxy
    server.close()
    await server.wait_closed()


WORKERS_PAGE = """<!doctype html><html><head><title>Workers</title></head><body>
<script>
fetch('/hold');
const worker = new Worker('/worker.js');
worker.onmessage = event => fetch(event.data);
if (window.SharedWorker) {
  const shared = new SharedWorker('/shared.js');
  shared.port.onmessage = event => fetch(event.data);
}
if (navigator.serviceWorker) navigator.serviceWorker.register('/sw.js').catch(() => {});
</script></body></html>"""
WORKER = """importScripts('/imported.js');
fetch('/from-worker.json').then(() => postMessage('/after-fetch.json'));
fetch('/moved.json').then(answer => answer.json()).then(moved => postMessage(moved.next));
const request = new XMLHttpRequest();
request.open('GET', '/xhr.txt');
request.onload = () => postMessage('/after-xhr.json');
request.send();
"""
HOLD_LIMIT = 20.0
"""Longest the page's request of /hold waits for the worker's answers to lead it on (a test that
fails then says which)."""
SHARED = """onconnect = event => {
  fetch('/from-shared.json');
  event.ports[0].postMessage('/after-shared.json');
};"""


async def test_workers_ask_for_nothing_past_the_crawl(site, run_crawl, escape_proxy):
    """A dedicated worker's importScripts(), fetch() and XMLHttpRequest go through the crawl, its
    redirect answered hop by hop; a shared worker (whose requests no routing sees) and a service
    worker are not started."""
    site.file("/", WORKERS_PAGE)
    site.file("/worker.js", WORKER, "text/javascript")
    site.file("/imported.js", "const imported = true;", "text/javascript")
    site.file("/shared.js", SHARED, "text/javascript")
    site.file("/sw.js", "", "text/javascript")
    site.redirect("/moved.json", "/moved/here.json")
    site.file("/moved/here.json", '{"next": "/after-redirect.json"}', "application/json")
    site.file("/from-worker.json", "{}", "application/json")
    # The page's request of /hold is answered once the worker's answers have led the page to ask
    # for each /after-...: until then the page's network is not quiet, and its render goes on.
    after = {"/after-fetch.json", "/after-redirect.json", "/after-xhr.json"}
    all_asked = asyncio.Event()

    async def noted(request: web.Request) -> web.StreamResponse:
        after.discard(request.path)
        if not after:
            all_asked.set()
        return web.json_response({})

    async def hold(request: web.Request) -> web.StreamResponse:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_asked.wait(), HOLD_LIMIT)
        return web.json_response({})

    for path in after:
        site.handler(path, noted)
    site.handler("/hold", hold)
    site.file("/xhr.txt", "text", "text/plain")
    site.file("/from-shared.json", "{}", "application/json")
    site.file("/after-shared.json", "{}", "application/json")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, max_tries=1)
    rows = manifest_rows(result.snapshot.root)

    assert escape_proxy.asked_of(site.host) == []
    asked = ("/worker.js", "/imported.js", "/from-worker.json", "/xhr.txt", "/moved/here.json")
    assert all_asked.is_set(), after
    for path in (*asked, "/after-fetch.json", "/after-redirect.json", "/after-xhr.json"):
        assert rows[site.url(path)].outcome == "fetched", path
        assert rows[site.url(path)].warc_file, path
    assert rows[site.url("/moved.json")].outcome == "redirected"
    assert all(count == 1 for count in site.hits.values()), site.hits
    for path in ("/shared.js", "/from-shared.json", "/after-shared.json", "/sw.js"):
        assert path not in site.hits, path
    assert rows[site.url("/")].render_error is None
    assert verify_snapshot(result.snapshot.root).ok


WEB_TRANSPORT_PAGE = """<!doctype html><html><head><title>WebTransport</title></head><body>
<script>
const transport = window.WebTransport ? new WebTransport('https://' + location.host + '/session') : null;
if (transport) transport.ready.catch(() => {});
fetch('/after.json');
</script></body></html>"""


async def test_web_transport_is_not_opened(site, run_crawl, escape_proxy):
    """A WebTransport session (a CONNECT through any proxy, past the routing) is not opened: a WARC
    keeps none of its traffic, as for a WebSocket."""
    site.file("/", WEB_TRANSPORT_PAGE)
    site.file("/after.json", "{}", "application/json")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, max_tries=1)
    rows = manifest_rows(result.snapshot.root)

    assert escape_proxy.asked_of(site.host) == []
    assert rows[site.url("/after.json")].outcome == "fetched"
    assert "/session" not in site.hits


SPECULATION_RULES = """{"prefetch": [{"source": "list", "urls": ["/prefetch-listed.html"]}],
 "prerender": [{"source": "list", "urls": ["/prerender-listed.html"]}]}"""
DOCUMENT_RULES = """{"prefetch": [{"source": "document", "eagerness": "immediate",
   "where": {"href_matches": "/prefetch-linked*"}}],
 "prerender": [{"source": "document", "eagerness": "immediate",
   "where": {"href_matches": "/prerender-linked*"}}]}"""
HEADER_RULES = """{"prefetch": [{"source": "list", "urls": ["/prefetch-by-header.html"]}],
 "prerender": [{"source": "list", "urls": ["/prerender-by-header.html"]}]}"""
SPECULATING_PAGE = f"""<!doctype html><html><head><title>Speculation</title>
<script type="speculationrules">{SPECULATION_RULES}</script>
<script type="speculationrules">{DOCUMENT_RULES}</script>
<script>
const inserted = document.createElement('script');
inserted.type = 'speculationrules';
inserted.textContent = '{{"prefetch": [{{"source": "list", "urls": ["/prefetch-by-script.html"]}}]}}';
document.head.append(inserted);
const filled = document.createElement('script');
filled.type = 'speculationrules';
document.head.append(filled);
filled.textContent = '{{"prerender": [{{"source": "list", "urls": ["/prerender-by-script.html"]}}]}}';
</script></head><body>
<a href="/prefetch-linked.html">prefetch</a> <a href="/prerender-linked.html">prerender</a>
</body></html>"""
GUESSED = (
    "/prefetch-listed.html",
    "/prerender-listed.html",
    "/prefetch-by-header.html",
    "/prerender-by-header.html",
    "/prefetch-by-script.html",
    "/prerender-by-script.html",
)
"""Pages only the speculation rules name: a guess of the browser at the next navigation, not a
link of the page, so the crawl neither fetches nor archives them."""


async def test_speculation_rules_fetch_nothing_past_the_crawl(site, run_crawl, escape_proxy):
    """Prefetch and prerender rules, listed in the page, matched against its links with immediate
    eagerness, inserted by its script or named by a Speculation-Rules header, make Chromium load
    nothing: the pages the page links to are fetched once, by the crawl, those only the rules
    name are not fetched, and the DOM kept holds the rules as the page wrote them."""
    site.file("/", SPECULATING_PAGE, headers={"Speculation-Rules": '"/rules.json"'})
    site.file("/rules.json", HEADER_RULES, "application/speculationrules+json")
    for path in (*GUESSED, "/prefetch-linked.html", "/prerender-linked.html"):
        site.page(path)
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, max_tries=1)
    rows = manifest_rows(result.snapshot.root)

    assert escape_proxy.asked_of(site.host) == []
    for path in GUESSED:
        assert path not in site.hits, path
        assert site.url(path) not in rows, path
    for path in ("/", "/prefetch-linked.html", "/prerender-linked.html"):
        assert rows[site.url(path)].outcome == "fetched", path
    assert all(count == 1 for count in site.hits.values()), site.hits
    assert rows[site.url("/")].render_error is None
    assert doms(result.snapshot.root)[site.url("/")].count('type="speculationrules"') == 4
    assert verify_snapshot(result.snapshot.root).ok
