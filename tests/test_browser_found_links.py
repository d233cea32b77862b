"""Links found only in a rendered DOM (a page whose script adds them) obey every rule the links of
a static parse obey: --max-links-per-page, with the reason on the page's row, verify and the repair
cutting where the crawl cut. Real Chromium, crawling a site served on 127.0.0.1."""

from __future__ import annotations

import contextlib
import html
import json
import sqlite3

import pytest
from aiohttp import web
from conftest import crawled_rows, manifest_rows
from repairs import repair_cuts_where_the_crawl_cut
from script_site import png
from test_browser import CHROMIUM
from test_discovery_limits import assert_first_links_followed

from archiver.report import UNRECORDED_LINK
from archiver.verify.verifier import verify_snapshot

LINKS = 120
KEPT = 15
PNG = png(0, 0, 0)


def scripted(markup: str) -> str:
    """A body whose script, and nothing else, writes ``markup`` in it (an empty app root: --browser
    auto renders the page as a trial)."""
    script = f"document.getElementById('root').innerHTML = {json.dumps(markup)};"
    return f"<div id='root'></div><script>{script}</script>"


def anchors(paths: list[str]) -> str:
    """Links to ``paths``, in their order."""
    return "".join(f'<a href="{html.escape(path)}">{html.escape(path)}</a>' for path in paths)


def site_of_many_scripted_links(site) -> None:
    """A home page whose script builds LINKS links to plain files (no page to render)."""
    site.page("/", body=scripted(anchors([f"/p{n}" for n in range(LINKS)])))
    for n in range(LINKS):
        site.file(f"/p{n}", f"file {n}", "text/plain")


@pytest.mark.parametrize("browser", ["always", "auto"])
async def test_a_rendered_page_follows_no_more_links_than_the_limit(site, run_crawl, tmp_path, browser):
    """A script that built 200,000 links gave 200,000 rows and fetches: the render's links were not
    capped. The first --max-links-per-page of the DOM's are followed, the page's row says how many
    it had, and verify accepts unrecorded only those the crawl cut."""
    site_of_many_scripted_links(site)
    pages, _ = await crawled_rows(
        site, run_crawl, browser=browser, chromium=CHROMIUM, max_links_per_page=KEPT
    )
    assert pages["/"].dom_warc_file is not None
    assert_first_links_followed(site, pages, tmp_path / "snap", KEPT, LINKS)
    # The reason vouches for the links cut, not for a link followed whose row is lost.
    root = tmp_path / "snap"
    with contextlib.closing(sqlite3.connect(root / "manifest.sqlite3")) as db, db:
        db.execute("DELETE FROM urls WHERE url = ?", (site.url("/p1"),))
    report = verify_snapshot(root)
    assert [problem.where for problem in report.examples[UNRECORDED_LINK]] == [site.url("/p1")]


async def test_a_repair_cuts_the_links_of_a_rendered_page_where_the_crawl_cut_them(site, run_crawl, tmp_path):
    """A manifest written again from the WARC files met every link of a rendered DOM, whatever
    the limit: the resume after it fetched them all. It meets the first --max-links-per-page, as
    the crawl did, and the page's row says so again."""
    site_of_many_scripted_links(site)
    before, _ = await crawled_rows(
        site, run_crawl, browser="always", chromium=CHROMIUM, max_links_per_page=KEPT
    )
    await repair_cuts_where_the_crawl_cut(site, tmp_path / "snap", before, KEPT)


TWINS = ("/static", "/scripted")
"""Two pages alike but for where their links are: in the HTML served, or added by a script."""


def twin_links(twin: str, other: str) -> list[str]:
    """What each twin page of twin_site() links to (``other``: another host's home URL)."""
    return [
        f"{other}{twin}/elsewhere",  # out of scope
        f"{twin}/private/page",  # --exclude
        f"{twin}/kept-out/page",  # robots.txt
        f"{twin}/a/a/a/a/",  # path repeats
        f"{twin}/long?{'x' * 70_000}",  # URL too long
        f"http://xn--a.example{twin}",  # invalid punycode
        f"{twin}/big.txt",  # --max-file-size
        f"{twin}/part#section",  # its fragment dropped
        f"{twin}/next",  # a page one deeper, whose own links are past --max-depth
        f"{twin}/nofollowed",  # a page whose X-Robots-Tag says nofollow
        "data:text/plain,nothing",
        "javascript:void(0)",
        "mailto:someone@example.com",
    ]


def twin_site(site, other_site) -> None:
    """A home page linking to a twin of each TWINS, and their pages: the static twin's links are
    in its HTML, the scripted twin's written by a script alone (an empty app root: --browser auto
    renders it)."""
    kept_out = "".join(f"Disallow: {twin}/kept-out/\n" for twin in TWINS)
    site.file("/robots.txt", "User-agent: *\n" + kept_out, "text/plain")
    site.page("/", links=[f"{twin}/" for twin in TWINS])
    other = other_site.url("")
    for twin in TWINS:
        markup = {
            "/": anchors(twin_links(twin, other)),
            "/next": anchors([f"{twin}/deeper"]) + f'<img src="{twin}/deeper.png">',
            "/nofollowed": anchors([f"{twin}/held-back"]),
        }
        for path, body in markup.items():
            page = page_of(body if twin == "/static" else scripted(body))
            headers = {"X-Robots-Tag": "nofollow"} if path == "/nofollowed" else {}
            site.file(f"{twin}{path}", page, "text/html; charset=utf-8", headers=headers)
        for path in ("/part", "/deeper", "/held-back", "/private/page", "/kept-out/page", "/a/a/a/a/"):
            site.file(f"{twin}{path}", "a file", "text/plain")
        site.file(f"{twin}/deeper.png", PNG, "image/png")
        site.file(f"{twin}/big.txt", "b" * 300_000, "text/plain")
        other_site.file(f"{twin}/elsewhere", "elsewhere", "text/plain")


def page_of(body: str) -> str:
    """An HTML page of ``body``."""
    return f"<!doctype html><html><head><title>A page</title></head><body>{body}</body></html>"


def twin_facts(rows, base: str, twin: str) -> dict[str, tuple[object, ...]]:
    """What the rows of the URLs under ``twin`` say, by their path past it (the other host's too)."""
    facts: dict[str, tuple[object, ...]] = {}
    for url, row in rows.items():
        path = url.partition("://")[2].partition("/")[2]
        if not f"/{path}".startswith(f"{twin}/") and f"/{path}" != twin:
            continue
        where = "other host " if not url.startswith(base) else ""
        key = where + f"/{path}".removeprefix(twin)
        parent = row.parent.removeprefix(base).removeprefix(twin) if row.parent else None
        facts[key] = (row.found_by, parent, row.depth, row.outcome, row.reason, row.status, row.truncated)
    return facts


@pytest.mark.parametrize("browser", ["always", "auto"])
async def test_links_a_script_adds_obey_the_rules_of_links_in_the_html(
    site, other_site, run_crawl, tmp_path, browser
):
    """Each rule a link of the static parse obeys (scope, --exclude, robots.txt, path repeats, URL
    length, punycode, --max-file-size, --max-depth, nofollow, fragments, schemes that are no URL
    to fetch) gives the same row to the same link added by a script, found in the rendered DOM."""
    await other_site.start()
    twin_site(site, other_site)
    pages, _ = await crawled_rows(
        site,
        run_crawl,
        browser=browser,
        chromium=CHROMIUM,
        exclude=("/private/",),
        max_depth=2,
        max_file_size=200_000,
    )
    rows = manifest_rows(tmp_path / "snap")
    static, scripted = (twin_facts(rows, site.url(""), twin) for twin in TWINS)
    assert scripted == static
    assert pages["/scripted/"].dom_warc_file is not None
    assert {key: facts[3:5] for key, facts in static.items() if facts[3] != "fetched"} == {
        "other host /elsewhere": ("skipped", "out of scope"),
        "other host ": ("skipped", "invalid punycode host"),
        "/private/page": ("skipped", "excluded"),
        "/kept-out/page": ("skipped", "robots"),
        "/a/a/a/a/": ("skipped", "path repeats"),
        f"/long?{'x' * 70_000}": ("skipped", "URL too long"),
        "/deeper": ("skipped", "depth"),
        "/held-back": ("skipped", "nofollow"),
    }


@pytest.mark.parametrize("browser", ["always", "auto"])
async def test_links_a_script_adds_are_requested_under_the_pages_referrer_policy(site, run_crawl, browser):
    """A page whose Referrer-Policy header says no-referrer: the links of its HTML were requested
    with no Referer, those its script added with the page's URL as Referer. Both go without."""
    sent: dict[str, str | None] = {}

    async def referred(request: web.Request) -> web.StreamResponse:
        sent[request.path] = request.headers.get("Referer")
        return web.Response(text="referred")

    for twin in TWINS:
        body = anchors([f"{twin}/referred"])
        page = page_of(body if twin == "/static" else scripted(body))
        site.file(f"{twin}/", page, "text/html; charset=utf-8", headers={"Referrer-Policy": "no-referrer"})
        site.handler(f"{twin}/referred", referred)
    site.page("/", links=[f"{twin}/" for twin in TWINS])
    await crawled_rows(site, run_crawl, browser=browser, chromium=CHROMIUM)
    assert sent == {"/static/referred": None, "/scripted/referred": None}


ROBOTS_META_REMOVED = (
    "<meta name='robots' content='nofollow'>"
    "<script>document.querySelector('meta[name=robots]').remove();</script>"
)
"""A robots meta that says nofollow, which a script then removes from the page."""


@pytest.mark.parametrize(
    ("headers", "head"),
    [({"X-Robots-Tag": "nofollow"}, ""), ({}, ROBOTS_META_REMOVED)],
    ids=["X-Robots-Tag", "robots meta a script removes"],
)
async def test_a_resumed_render_follows_the_links_of_its_page_as_its_capture_said(
    site, run_crawl, tmp_path, headers, head
):
    """A page whose X-Robots-Tag (or robots meta, which its script removes) says nofollow, and whose
    render an interrupted crawl left to do (here: its browser could not start): the resumed render
    followed the links its script added. They are recorded as not followed, as they are in a crawl
    never interrupted."""
    page = page_of(scripted(anchors(["/held-back"]))).replace("</title>", "</title>" + head)
    site.file("/", page, "text/html; charset=utf-8", headers=headers)
    site.file("/held-back", "a file", "text/plain")
    await site.start()
    broken = tmp_path / "chromium"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    stopped = await run_crawl(site.url("/"), browser="always", chromium=str(broken), max_tries=1)
    assert stopped.stats.stop_reason is not None
    assert manifest_rows(tmp_path / "snap")[site.url("/")].render_pending
    pages, _ = await crawled_rows(site, run_crawl, resume=True, browser="always", chromium=CHROMIUM)
    assert pages["/"].dom_warc_file is not None
    assert (pages["/held-back"].outcome, pages["/held-back"].reason) == ("skipped", "nofollow")
    assert site.hits.get("/held-back", 0) == 0


async def test_a_limit_first_reached_by_a_link_a_script_adds_is_said_in_the_log(site, run_crawl, tmp_path):
    """The log says when a limit of the crawl is first reached (what stops a trap is seen as it
    happens): it said nothing when the first link past --max-depth was one a script added."""
    site.page("/", body=scripted(anchors(["/deeper"])))
    site.file("/deeper", "a file", "text/plain")
    pages, _ = await crawled_rows(site, run_crawl, browser="always", chromium=CHROMIUM, max_depth=0)
    assert (pages["/deeper"].outcome, pages["/deeper"].reason) == ("skipped", "depth")
    log = (tmp_path / "snap" / "logs" / "crawl.log").read_text()
    assert "--max-depth 0 reached" in log, log[-2000:]
