"""A resumed crawl asks for each URL, and reads each answer, as the crawl never interrupted would
have: the same headers, cookies and encodings, the tries it made, what its renders taught it."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import logging
import os
import random
import signal

import pytest
from aiohttp import web
from conftest import manifest_rows
from crawl_processes import CONCURRENCY, start_crawl, wait_for_hits
from test_verify_tamper import edit_in_place, server_blanked

from archiver.crawling.frontier import QueueItem, request_facts, requeued
from archiver.request_headers import destination_negotiation
from archiver.store.manifest import Manifest
from archiver.verify.verifier import verify_snapshot


async def test_a_resumed_crawl_reads_a_stylesheet_in_its_pages_encoding(site, run_crawl):
    # The page that links it was read by the crawl before: its encoding is read back from the
    # snapshot, so the resumed crawl fetches what verify and the mirror read in it.
    site.file("/", b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>', "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    first = await run_crawl(site.url("/"), max_pages=1)
    root = first.snapshot.root
    assert manifest_rows(root)[site.url("/l.css")].reason == "page limit"  # left for the resumed crawl
    await run_crawl(site.url("/"), output=root, resume=True, max_pages=10)
    rows = manifest_rows(root)
    assert rows[site.url("/caf%C3%A9.png")].status == 200
    assert not [url for url in rows if "%EF%BF%BD" in url]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_resumed_crawl_and_verify_say_when_a_referrers_encoding_cannot_be_read_back(
    site, run_crawl, caplog
):
    # The page's record was damaged since its crawl: the encoding it was read in is not known.
    # The resumed crawl says so once (not once a stylesheet), verify names each stylesheet
    # whose links it cannot check, and neither reads them silently as UTF-8.
    page = b'<link rel=stylesheet href="l.css"><link rel=stylesheet href="m.css"><p>caf\xe9</p>'
    site.file("/", page, "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/m.css", b"b{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), max_pages=1)).snapshot.root
    seed = manifest_rows(root)[site.url("/")]
    assert seed.warc_file is not None and seed.warc_offset is not None and seed.warc_length is not None
    edit_in_place(
        root / "warc" / seed.warc_file,
        seed.warc_offset,
        seed.warc_length,
        # Another letter in the page; its Server header blanked, so it compresses no longer.
        server_blanked(b"\xe9<", b"\xe8<"),
    )
    with caplog.at_level(logging.WARNING, logger="archiver"):
        await run_crawl(site.url("/"), output=root, resume=True, max_pages=10)
    unknown = [r.getMessage() for r in caplog.records if "cannot be read back" in r.getMessage()]
    assert len(unknown) == 1, unknown
    assert unknown[0].startswith(f"the encoding the crawl read {site.url('/')} in cannot be read back: ")
    report = verify_snapshot(root)
    assert report.counts["digest_mismatch"] == 1
    assert {problem.where for problem in report.examples["unknown_encoding"]} == {
        site.url("/l.css"),
        site.url("/m.css"),
    }
    assert "unrecorded_link" not in report.counts


async def test_a_resumed_crawl_reads_no_referrers_encoding_from_a_large_record_whose_head_changed(
    site, run_crawl, caplog
):
    # The page decodes past the 32 MiB read of it to learn its encoding, so the rest of its
    # record, where its digests are settled, was never read: its head's charset changed since
    # (only the digests tell) was taken, and the stylesheet read in it, without a word.
    page = b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>' + b"<p>filler</p>" * (3 << 20)
    body = gzip.compress(page + b"<!--" + random.Random(0).randbytes(1 << 20) + b"-->", mtime=0)
    site.file("/", body, "text/html; charset=windows-1252", headers={"Content-Encoding": "gzip"})
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), max_pages=1, sitemaps=False)).snapshot.root
    seed = manifest_rows(root)[site.url("/")]
    assert seed.warc_file is not None and seed.warc_offset is not None and seed.warc_length is not None
    edit_in_place(
        root / "warc" / seed.warc_file,
        seed.warc_offset,
        seed.warc_length,
        lambda record: record.replace(b"charset=windows-1252", b"charset=windows-1251", 1),
    )
    with caplog.at_level(logging.WARNING, logger="archiver"):
        await run_crawl(site.url("/"), output=root, resume=True, max_pages=10, sitemaps=False)
    unknown = [r.getMessage() for r in caplog.records if "cannot be read back" in r.getMessage()]
    assert len(unknown) == 1, unknown
    assert not [url for url in manifest_rows(root) if "%D0%B2" in url]  # é read as windows-1251's в


async def test_a_resumed_crawl_asks_for_each_url_as_the_crawl_that_met_it_would_have(
    site, run_crawl, tmp_path
):
    # A page's <meta name="referrer"> and its elements' destinations and CORS modes chose how its
    # links are asked for: a URL left by a page limit is asked for the same way after --resume
    # (a crossorigin image of another origin with no cookies: the resumed crawl sent them).
    seen: dict[str, list[tuple[str | None, ...]]] = {}

    async def record(request: web.Request) -> web.Response:
        seen.setdefault(request.path, []).append(
            (
                request.headers.get("Referer"),
                request.headers.get("Accept"),
                request.headers.get("Origin"),
                request.headers.get("Cookie"),
            )
        )
        return web.Response(text="x", content_type="text/plain")

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>set</title>", content_type="text/html")
        # For any site's requests (127.0.0.1 and localhost are two): loopback counts as secure.
        response.headers.add("Set-Cookie", "c=1; Path=/; SameSite=None; Secure")
        return response

    site.page("/", links=["/meta"])
    meta = '<meta name="referrer" content="no-referrer"><a href="/same">s</a><img src="/pic.png">'
    site.file("/meta", meta.encode(), "text/html")
    site.handler("/setup", setup)
    await site.start()
    other = f"http://localhost:{site.server.port}"
    site.file(
        "/open",
        b'<a href="/wide" referrerpolicy="unsafe-url">w</a><link rel=stylesheet href="/s.css">'
        + f'<img crossorigin src="{other}/anon.png"><img src="{other}/plain.png">'.encode(),
    )
    site.page("/more", links=["/open"])
    for path in ("/same", "/pic.png", "/wide", "/s.css", "/anon.png", "/plain.png"):
        site.handler(path, record)
    seeds = (f"{other}/setup", site.url("/"), site.url("/more"))
    await run_crawl(*seeds, output=tmp_path / "straight", concurrency=1)
    straight, seen = seen, {}
    assert straight["/same"][0][0] is None and (straight["/pic.png"][0][1] or "").startswith("image/")
    assert straight["/anon.png"][0][2:] == (site.url("/")[:-1], None)
    assert straight["/plain.png"][0][2:] == (None, "c=1")

    first = await run_crawl(*seeds, max_pages=5, concurrency=1)
    assert "page limit" in first.totals["skip_reasons"]
    assert not seen
    await run_crawl(site.url("/"), output=first.snapshot.root, resume=True, max_pages=100, concurrency=1)
    assert seen == straight


IMAGE = destination_negotiation("image")
REDIRECTED_HOP = {
    "found_by": "redirect",
    "requisite": True,
    "chain": ("http://h/a", "http://h/b"),
    "redirects_left": 3,
    "referrer": "http://h/page",
    "tries": 2,
    "referrer_policy": "unsafe-url",
}

GUESSED_REQUISITE = {
    "found_by": "requisite",
    "requisite": True,
    "site_for_cookies": "http://h/",
    "client": "http://h",
}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"referrer_policy": "no-referrer", "negotiation": IMAGE},
        {"negotiation": (("Accept", "application/json"), ("X-Requested-With", "XMLHttpRequest"))},
        REDIRECTED_HOP,
        {"found_by": "seed", "parent": None, "referrer": None},
        GUESSED_REQUISITE,
        # A stylesheet's font: CORS-mode, for its page's origin (not the stylesheet's).
        {**GUESSED_REQUISITE, "cors": "same-origin", "client": "http://site.test"},
        {**REDIRECTED_HOP, "cors": "include", "client": "null"},
    ],
)
def test_a_queued_rows_request_facts_give_back_its_queue_item(changes):
    item = QueueItem("http://h/x", 2, 5, found_by="link", parent="http://h/", referrer="http://h/")
    item = dataclasses.replace(item, **changes)
    facts = request_facts(item, 5)
    guessed: tuple[dict[str, object], ...] = (
        {},
        {"found_by": "seed", "parent": None, "referrer": None},
        GUESSED_REQUISITE,
    )
    assert (facts is None) == (changes in guessed)
    assert requeued(item.url, item.depth, item.found_by, item.parent, 5, facts) == item
    # A later --max-redirects counts the hops made already.
    assert (
        requeued(item.url, item.depth, item.found_by, item.parent, 7, facts).redirects_left
        == item.redirects_left + 2
    )


async def test_a_url_waiting_out_a_failed_try_keeps_its_tries_when_the_crawl_is_killed(
    site, run_crawl, tmp_path
):
    # Killed while it waits out a Retry-After, the crawl resumed tries it no more often than
    # --max-tries in all, as the crawl never interrupted would have.
    site.page("/", links=["/busy"])
    site.file("/busy", b"busy", "text/plain", status=503, headers={"Retry-After": "2"})
    await site.start()
    output = tmp_path / "snap"
    process = start_crawl(site.url("/"), output, "--max-tries", "2")
    waiting = ""
    for _ in range(1500):  # until the row of the URL waiting is committed (a hang guard: 30 s)
        await asyncio.sleep(0.02)
        if site.hits["/busy"] and (output / "manifest.sqlite3").exists():
            with Manifest.open(output / "manifest.sqlite3", readonly=True) as manifest:
                row = manifest.get(site.url("/busy"))
                waiting = (row.request or "") if row is not None else ""
            if '"tries":1' in waiting:
                break
    assert '"due":' in waiting and site.hits["/busy"] == 1
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.communicate, timeout=60)
    await run_crawl(site.url("/"), output=output, resume=True, max_tries=2)
    assert site.hits["/busy"] == 2
    row = manifest_rows(output)[site.url("/busy")]
    assert (row.outcome, row.status, row.tries, row.request) == ("failed", 503, 2, None)


async def test_a_resumed_crawl_sends_the_cookies_the_interrupted_one_held(site, run_crawl):
    # A session cookie a server set before the interruption goes with the requests after it, as
    # in the crawl never interrupted; a --cookie given with --resume replaces the one saved.
    sent: dict[str, str] = {}

    async def record(request: web.Request) -> web.Response:
        sent[request.path] = "; ".join(sorted(request.headers.get("Cookie", "").split("; ")))
        return web.Response(text="x", content_type="text/plain")

    site.file("/", b'<a href="/a">a</a><a href="/b">b</a>', headers={"Set-Cookie": "sid=s1; Path=/"})
    site.file("/b", b'<a href="/c">c</a>', headers={"Set-Cookie": "late=2; Max-Age=600"})
    site.handler("/a", record).handler("/c", record)
    await site.start()
    first = await run_crawl(site.url("/"), max_pages=3, concurrency=1, cookies=(("pref", "old"),))
    assert sent == {"/a": "pref=old; sid=s1"}
    await run_crawl(
        site.url("/"), output=first.snapshot.root, resume=True, max_pages=10, cookies=(("pref", "new"),)
    )
    assert sent == {"/a": "pref=old; sid=s1", "/c": "late=2; pref=new; sid=s1"}


async def test_a_resumed_crawl_keeps_what_trial_renders_taught_about_a_host(site, run_crawl):
    """--browser auto renders a host's first pages of a kind as trials; two that find nothing more
    settle it, and its other pages go unrendered. A resumed crawl forgot that verdict, and
    rendered trials on the host all over again."""
    from test_browser import CHROMIUM

    script = "<script>document.documentElement.className = 'js';</script>"
    pages = [f"/p{n}" for n in range(8)]
    for path in pages:
        site.page(path, body="<p>" + "Static text. " * 20 + "</p>" + script)
    site.page("/", links=pages, body="<p>" + "Words of a static page. " * 10 + "</p>" + script)
    await site.start()
    options = dict(browser="auto", chromium=CHROMIUM, concurrency=1, sitemaps=False)
    first = await run_crawl(site.url("/"), max_pages=4, **options)
    root = first.snapshot.root
    assert first.stats.rendered == 2  # the trials, which settled it
    resumed = await run_crawl(site.url("/"), output=root, resume=True, **options)
    assert resumed.stats.rendered == 0
    rows = manifest_rows(root)
    assert [url for url, row in rows.items() if row.render_reason] == [site.url("/"), site.url("/p0")]
    assert all(rows[site.url(path)].outcome == "fetched" for path in pages)


TREE = 24
"""Pages of the site test_a_crawl_killed_and_resumed_asks_what_the_straight_crawl_asks crawls."""
Asked = tuple[str, str, str | None, str | None, str | None, str | None]
"""A request as the server saw it: method, path and query, Referer, Accept, Cookie, Origin."""


async def tree_site(site, fonts) -> dict[str, set[Asked]]:
    """A tree of TREE pages (each URL found by one page alone, so each request is the same in
    every crawl): each page an image and a stylesheet of its own, the stylesheet a background
    and a font on ``fonts``'s origin (a CORS request); every fourth page asks for no Referer,
    the first sets a cookie. Returns the requests each server saw, by URL."""
    asked: dict[str, set[Asked]] = {}

    def note(request: web.Request) -> None:
        headers = request.headers
        seen = (
            request.method,
            request.path_qs,
            *(headers.get(h) for h in ("Referer", "Accept", "Cookie", "Origin")),
        )
        asked.setdefault(str(request.url), set()).add(seen)  # type: ignore[arg-type]

    async def serve(request: web.Request) -> web.Response:
        note(request)
        await asyncio.sleep(0.02)
        name = request.path.strip("/")
        if name.endswith(".css"):
            own = name[1:-4]
            font = fonts.url(f"/f{own}.woff")
            css = f".x{{background:url(/b{own}.png)}}@font-face{{font-family:f;src:url({font})}}"
            return web.Response(text=css, content_type="text/css")
        if name.endswith((".png", ".woff")):
            return web.Response(
                body=b"\x89PNG" if name.endswith(".png") else b"wOFF", content_type="image/png"
            )
        n = int(name[1:] or -1) if name else -1
        children = [k for k in (2 * n + 1, 2 * n + 2) if 0 <= k < TREE] if n >= 0 else [0]
        body = "".join(f'<a href="/p{k}">{k}</a>' for k in children)
        if n >= 0:
            body += f'<img src="/i{n}.png"><link rel=stylesheet href="/s{n}.css">'
        if n % 4 == 0:
            body = '<meta name="referrer" content="no-referrer">' + body
        headers = {"Set-Cookie": "sid=1; Path=/"} if n < 0 else {}
        return web.Response(text=body, content_type="text/html", headers=headers)

    async def font(request: web.Request) -> web.Response:
        note(request)
        return web.Response(
            body=b"wOFF", content_type="font/woff", headers={"Access-Control-Allow-Origin": "*"}
        )

    for n in range(-1, TREE):
        for path in (f"/p{n}", f"/i{n}.png", f"/s{n}.css", f"/b{n}.png") if n >= 0 else ("/",):
            site.handler(path, serve)
        fonts.handler(f"/f{n}.woff", font)
    await fonts.start()
    await site.start()
    return asked


async def test_a_crawl_killed_and_resumed_asks_what_the_straight_crawl_asks(
    site, other_site, run_crawl, tmp_path
):
    # Killed (SIGKILL) mid-crawl and resumed, the crawl sends each URL the requests the crawl
    # never interrupted sends (Referer, Accept, Cookie, Origin alike), and ends with the same rows.
    asked = await tree_site(site, other_site)
    straight = await run_crawl(site.url("/"), output=tmp_path / "straight", concurrency=CONCURRENCY)
    asked_straight = {url: set(requests) for url, requests in asked.items()}
    asked.clear()
    site.hits.clear()
    output = tmp_path / "killed"
    process = start_crawl(site.url("/"), output)
    await wait_for_hits(site, 40)
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.communicate, timeout=60)
    assert len(asked) < len(asked_straight), "the crawl finished before it was killed"
    await run_crawl(site.url("/"), output=output, resume=True, concurrency=CONCURRENCY)
    assert asked == asked_straight
    rows = {url: (row.outcome, row.status) for url, row in manifest_rows(output, for_crawlers=True).items()}
    expected = manifest_rows(straight.snapshot.root, for_crawlers=True)
    assert rows == {url: (row.outcome, row.status) for url, row in expected.items()}
