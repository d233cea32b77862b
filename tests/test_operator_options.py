"""What operators expect from wget and Browsertrix: --max-time stops a run cleanly and
resumably, --log-format json writes crawl.log as JSON lines, and the report tells answers
with an error status apart from fetches that got no whole answer."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from aiohttp import web
from conftest import manifest_rows
from raw_server import RawRequest, RawServer, reset

from archiver.crawling.crawl_report import render_report
from archiver.crawling.stopping import MAX_TIME_STOP
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
            f'<a href="{p}">{p}</a>'
            for p in ("/ok", "/missing", "/broken", "/dropped", "/cut", "/loop", "/garbled", "/far")
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
    elif request.path == "/garbled":  # refused, as Chromium does; the HTTP parser's message spans lines
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi")
    elif request.path == "/far":
        answer(writer, "302 Found", b"", "Location: /" + "f" * 20_000)
    elif request.path.startswith("/fff"):
        answer(writer, "404 Not Found", b"not here")


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

    far = url("/" + "f" * 20_000)
    answered = dict(totals["http_errors"])
    assert answered == {url("/missing"): 404, url("/broken"): 500, far: 404}
    assert totals["http_error_count"] == 3
    failed = dict(totals["errors"])
    assert set(failed) == {url(p) for p in ("/dropped", "/cut", "/loop", "/garbled")}, failed
    assert totals["no_answer"] == 4
    assert "body cut short" in failed[url("/cut")]
    # Each failure is one line, in the manifest as in the report.
    assert failed[url("/garbled")] == "bad response: Duplicate Content-Length: b'Content-Length: 3'"
    report = render_report(totals, result.stats)
    assert "HTTP errors: 3 answers with a 4xx or 5xx status:" in report
    assert f"  404  {url('/missing')}" in report and f"  500  {url('/broken')}" in report
    assert "failed:    4 fetches got no whole answer" in report
    assert f"  {url('/garbled')}  {failed[url('/garbled')]}\n" in report
    # A URL of 20,000 characters is shown by its two ends.
    assert (
        far not in report and f"  404  {far[:100]}" in report and f"f ({len(far):,} characters)\n" in report
    )
    assert max(len(line) for line in report.splitlines()) < 300
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


async def archiver(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run ``python -m archiver`` (the site keeps serving meanwhile): exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(stdin)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def one_line_error(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archiver: error: "), err
    assert all(word in lines[0] for word in words), lines[0]


async def test_input_file_lists_seeds_with_comments_and_blank_lines(site, tmp_path):
    site.page("/", links=[]).page("/a", links=[]).page("/b", links=[])
    await site.start()
    seeds = tmp_path / "seeds.txt"
    # As Windows' editors save it: a byte order mark first, CRLF line ends.
    seeds.write_text(
        f"\ufeff# our seeds\r\n{site.url('/a')}\r\n\r\n"
        f"   {site.url('/b')}   # the b page\r\n#{site.url('/')}\r\n",
        encoding="utf-8",
    )
    code, _, err = await archiver("crawl", "-i", str(seeds), "-o", str(tmp_path / "snap"), "--quiet")
    assert code == 0, err
    rows = manifest_rows(tmp_path / "snap")
    assert {url for url, row in rows.items() if row.found_by == "seed"} == {site.url("/a"), site.url("/b")}
    # "-" reads standard input, and URLs given as arguments join them.
    code, _, err = await archiver(
        "crawl",
        site.url("/"),
        "-i",
        "-",
        "-o",
        str(tmp_path / "snap2"),
        "--quiet",
        stdin=b"\xef\xbb\xbf" + site.url("/a").encode(),
    )
    assert code == 0, err
    rows = manifest_rows(tmp_path / "snap2")
    assert {url for url, row in rows.items() if row.found_by == "seed"} == {site.url("/"), site.url("/a")}


async def test_input_file_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("http://ok.test/\nftp://nope.test/\n")
    code, _, err = await archiver("crawl", "-i", str(bad), "-o", str(tmp_path / "s"))
    assert code == 2
    one_line_error(err, "bad.txt, line 2", "ftp://nope.test/")
    code, _, err = await archiver("crawl", "-i", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "s"))
    assert code == 2
    one_line_error(err, "missing.txt", "cannot read")
    (tmp_path / "empty.txt").write_text("# nothing yet\n")
    code, _, err = await archiver("crawl", "-i", str(tmp_path / "empty.txt"), "-o", str(tmp_path / "s"))
    assert code == 2
    one_line_error(err, "at least one URL")
    assert not (tmp_path / "s").exists(), "no snapshot made for bad input"


async def test_config_file_options_and_the_command_line_wins(site, tmp_path):
    site.page("/", links=[f"/p{n}" for n in range(6)])
    for n in range(6):
        site.page(f"/p{n}")
    await site.start()
    config = tmp_path / "crawl.toml"
    config.write_text(
        f'input-file = "{tmp_path / "seeds.txt"}"\n'
        "max_pages = 2\n"  # underscores as well as dashes
        'exclude = ["/p0$", "/p1$"]\n'
        'log-format = "json"\n'
        "no-sitemaps = true\n"
        "quiet = true\n"
    )
    (tmp_path / "seeds.txt").write_text(site.url("/") + "\n")
    code, out, err = await archiver("crawl", "--config", str(config), "-o", str(tmp_path / "a"))
    assert code == 0, err
    assert out == "", "quiet = true"
    rows = manifest_rows(tmp_path / "a")
    assert sum(row.outcome == "fetched" for row in rows.values()) == 2
    settings = json.loads((tmp_path / "a" / "crawl.json").read_text())["settings"]
    assert settings["exclude"] == ["/p0$", "/p1$"] and settings["log_format"] == "json"
    assert settings["sitemaps"] is False and site.sitemap_hits == 0
    json.loads((tmp_path / "a" / "logs" / "crawl.log").read_text().splitlines()[0])
    # The command line wins: its --max-pages over the file's, its --exclude list instead of the file's.
    code, _, err = await archiver(
        "crawl", "--max-pages", "4", "--exclude", "/p5$", "--config", str(config), "-o", str(tmp_path / "b")
    )
    assert code == 0, err
    settings = json.loads((tmp_path / "b" / "crawl.json").read_text())["settings"]
    assert settings["max_pages"] == 4 and settings["exclude"] == ["/p5$"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("max-pagez = 3\n", ["unknown key 'max-pagez'"]),
        ("max-pages = [1, 2]\n", ["max-pages takes one value"]),
        ("quiet = 1\n", ["quiet is a flag"]),
        ("max-pages = 'many'\n", ["--max-pages", "many"]),
        ("max-pages = \n", ["is not TOML"]),
        ("config = 'other.toml'\n", ["unknown key 'config'"]),
    ],
)
async def test_config_file_errors_are_one_line_naming_the_key(tmp_path, text, words):
    config = tmp_path / "crawl.toml"
    config.write_text(text)
    code, _, err = await archiver(
        "crawl", "http://127.0.0.1:9/", "--config", str(config), "-o", str(tmp_path / "s")
    )
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and all(word in err for word in words), err
    assert not (tmp_path / "s").exists()


async def test_exit_codes_tell_complete_complete_with_errors_and_stopped(site, tmp_path):
    slow_site(site, 0.02)
    site.page("/fine", links=[]).page("/dead-end", links=["/missing"])
    await site.start()
    code, _, err = await archiver("crawl", site.url("/fine"), "-o", str(tmp_path / "ok"), "--quiet")
    assert code == 0, err  # complete
    code, out, err = await archiver("crawl", site.url("/dead-end"), "-o", str(tmp_path / "errors"))
    assert code == 4, err  # complete, with an error answer
    assert f"  404  {site.url('/missing')}" in out
    code, out, err = await archiver(
        "crawl", site.url("/"), "-o", str(tmp_path / "stopped"), "--max-time", "0.5s", "--concurrency", "1"
    )
    assert code == 15, err  # stopped by --max-time, resumable
    assert f"stopped:   {MAX_TIME_STOP}" in out and "--resume" in err
    # The saved --max-time applies to each run; one given with --resume replaces it.
    code, _, err = await archiver(
        "crawl", "--resume", str(tmp_path / "stopped"), "--quiet", "--max-time", "10m"
    )
    assert code == 0, err
    code, _, err = await archiver("crawl", site.url("/"), "-o", str(tmp_path / "x"), "--max-time", "soon")
    assert code == 2 and "not a duration: 'soon'" in err
