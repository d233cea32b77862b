"""What operators expect from wget and Browsertrix: --max-time stops a run cleanly and
resumably, --log-format json writes crawl.log as JSON lines, and the report tells answers
with an error status apart from fetches that got no whole answer."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from conftest import manifest_rows
from raw_server import RawRequest, RawServer, reset

from archiver.crawling.crawl_report import render_report
from archiver.crawling.run import MAX_TIME_STOP
from archiver.store.totals import has_errors

PAGES = 40


def html(body: str) -> bytes:
    return f"<!doctype html><html><head><title>t</title></head><body>{body}</body></html>".encode()


def answer(writer: asyncio.StreamWriter, status: str, body: bytes, *extra: str) -> None:
    head = [
        f"HTTP/1.1 {status}",
        "Connection: close",
        "Content-Type: text/html",
        f"Content-Length: {len(body)}",
    ]
    writer.write(("\r\n".join([*head, *extra]) + "\r\n\r\n").encode() + body)


async def troubled_site(request: RawRequest, writer: asyncio.StreamWriter) -> None:
    """A home page linking to a page, a dead link, a server error, a dropped connection,
    a body cut short and a redirect loop."""
    if request.path == "/":
        links = "".join(
            f'<a href="{p}">{p}</a>' for p in ("/ok", "/missing", "/broken", "/dropped", "/cut", "/loop")
        )
        answer(writer, "200 OK", html(links))
    elif request.path == "/ok":
        answer(writer, "200 OK", html("fine"))
    elif request.path in ("/missing", "/robots.txt", "/sitemap.xml"):
        answer(writer, "404 Not Found", b"not here")
    elif request.path == "/broken":
        answer(writer, "500 Internal Server Error", b"oops")
    elif request.path == "/dropped":
        reset(writer)
    elif request.path == "/cut":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 9000\r\n\r\n" + b"x" * 100
        )
        await writer.drain()
        reset(writer)
    elif request.path == "/loop":
        answer(writer, "302 Found", b"", "Location: /loop")


async def test_the_report_tells_error_answers_from_failed_fetches(run_crawl):
    server = await RawServer(troubled_site).start()
    try:
        result = await run_crawl(server.url("/"), max_tries=2, timeout=2.0)
        base = server.url("")
    finally:
        await server.close()
    totals = result.totals

    def url(path: str) -> str:
        return base + path

    answered = dict(totals["http_errors"])
    assert answered == {url("/missing"): 404, url("/broken"): 500}
    assert totals["http_error_count"] == 2
    failed = dict(totals["errors"])
    assert set(failed) == {url(p) for p in ("/dropped", "/cut", "/loop")}, failed
    assert totals["no_answer"] == 3
    assert "body cut short" in failed[url("/cut")]
    report = render_report(totals, result.stats)
    assert "HTTP errors: 2 answers with a 4xx or 5xx status:" in report
    assert f"  404  {url('/missing')}" in report and f"  500  {url('/broken')}" in report
    assert "failed:    3 fetches got no whole answer" in report
    assert has_errors(totals)
    # robots.txt's and the sitemap's 404s are the crawl's own business, not the site's errors.
    assert url("/robots.txt") not in answered


async def test_a_site_without_errors_has_none(site, run_crawl):
    site.page("/", links=["/a"]).page("/a")
    result = await run_crawl(await site.start())
    assert result.totals["http_errors"] == [] and result.totals["errors"] == []
    assert not has_errors(result.totals)
    report = render_report(result.totals, result.stats)
    assert "HTTP errors" not in report and "failed:" not in report


def slow_site(site, delay: float):
    """A chain of PAGES pages, each answered after ``delay`` seconds."""

    def page(n: int):
        async def serve(request: web.Request) -> web.StreamResponse:
            await asyncio.sleep(delay)
            link = f'<a href="/p{n + 1}">next</a>' if n + 1 < PAGES else ""
            return web.Response(body=html(f"page {n} {link}"), content_type="text/html")

        return serve

    site.handler("/", page(0))
    for n in range(1, PAGES):
        site.handler(f"/p{n}", page(n))


async def test_max_time_stops_the_run_cleanly_and_resume_finishes_it(site, run_crawl):
    slow_site(site, 0.05)
    seed = await site.start()
    first = await run_crawl(seed, max_time=0.6, concurrency=1)
    assert first.interrupted and first.stats.stop_reason.startswith(MAX_TIME_STOP)
    assert 0 < first.totals["fetched"] < PAGES
    assert f"stopped:   {MAX_TIME_STOP}" in render_report(first.totals, first.stats)
    record = json.loads((first.snapshot.root / "crawl.json").read_text())
    assert record["status"] == "interrupted"
    assert record["runs"][-1]["stop_reason"].startswith(MAX_TIME_STOP)
    # Each run gets its own --max-time: this one has room to finish.
    second = await run_crawl(seed, resume=True, output=first.snapshot.root, max_time=60)
    assert not second.interrupted
    rows = manifest_rows(second.snapshot.root)
    assert sum(row.outcome == "fetched" for row in rows.values()) == PAGES
    # The one fetch in flight at the stop was abandoned (it stayed queued): only it is asked again.
    assert sum(site.hits.values()) <= PAGES + 1


async def test_log_format_json_writes_one_object_a_line(site, run_crawl):
    site.page("/", links=["/a", "/gone"]).page("/a")
    result = await run_crawl(await site.start(), log_format="json")
    lines = (result.snapshot.root / "logs" / "crawl.log").read_text().splitlines()
    objects = [json.loads(line) for line in lines]
    assert all({"time", "level", "message"} <= set(o) for o in objects)
    fetched = {o["url"]: o for o in objects if o.get("event") == "fetched"}
    assert fetched[site.url("/a")]["status"] == 200 and fetched[site.url("/gone")]["status"] == 404
    assert fetched[site.url("/a")]["content_type"] == "text/html" and fetched[site.url("/a")]["bytes"] > 0
    assert objects[0]["time"].endswith("+00:00")


async def test_log_format_text_stays_lines_of_text(site, run_crawl):
    site.page("/")
    result = await run_crawl(await site.start())
    line = (result.snapshot.root / "logs" / "crawl.log").read_text().splitlines()[0]
    assert " INFO " in line and not line.startswith("{")
