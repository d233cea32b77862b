"""Crawler traps a crawl ends by default, with no limit given: paths that repeat themselves."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import manifest_rows

from archiver.verify.verifier import verify_snapshot


async def test_paths_that_repeat_themselves_end_by_default_with_a_recorded_reason(run_crawl):
    """Pages that every path answers, with a relative link ``a/`` (or ``b/c/``) and a stylesheet
    that imports ``css/s.css``, made /a/a/a/... and /css/css/css/... without end: the crawl went on until
    the URLs were 65,536 characters long, some 30,000 pages. A path that says the same segments
    more than three times in a row is recorded as skipped, and verify accepts the reason."""

    async def any_path(request: web.Request) -> web.Response:
        if request.path in ("/robots.txt", "/sitemap.xml"):
            return web.Response(status=404)
        if request.path.endswith(".css"):
            return web.Response(text='@import "css/s.css";', content_type="text/css")
        relative = {"/": "a/ b/c/", "/a": "a/", "/b": "b/c/"}[request.path[:2].rstrip("/") or "/"]
        links = "".join(f'<a href="{link}">x</a>' for link in relative.split())
        return web.Response(text=f'{links}<link rel=stylesheet href="css/s.css">', content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", any_path)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    base = f"http://127.0.0.1:{server.port}"
    try:
        # --max-pages only keeps the crawl short should the trap not end.
        root = (await run_crawl(f"{base}/", max_pages=400)).snapshot.root
    finally:
        await server.close()
    rows = manifest_rows(root)
    skipped = {url[len(base) :]: row.reason for url, row in rows.items() if row.outcome == "skipped"}
    assert set(skipped.values()) == {"path repeats"}, skipped
    for path in ("/a/a/a/", "/b/c/b/c/b/c/", "/css/css/css/s.css", "/a/a/a/css/css/css/s.css"):
        assert rows[base + path].outcome == "fetched", path
    for path in ("/a/a/a/a/", "/b/c/b/c/b/c/b/c/", "/css/css/css/css/s.css", "/a/a/css/css/css/css/s.css"):
        assert skipped[path] == "path repeats", path
    log = (root / "logs" / "crawl.log").read_text()
    assert log.count("(path repeats)") == 1, log[-2000:]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))[:2000]
