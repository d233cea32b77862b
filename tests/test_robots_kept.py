"""Every robots.txt fetched is kept: a request/response pair in the WARC and a manifest row found
by ``robots`` (its 404, each redirect and where they lead), which verify takes for what it is."""

from __future__ import annotations

import asyncio
import gzip

import pytest
from aiohttp import web
from conftest import manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.robots import RobotsRules
from archiver.scope import ROBOTS
from archiver.verify.verifier import verify_snapshot


def warc_records(root) -> list[tuple[str, str]]:
    """(type, target URI) of every request, response and revisit record of a snapshot."""
    found = []
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in ("request", "response", "revisit"):
                    found.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI")))
    return found


async def test_a_robots_txt_is_in_the_warc_and_the_manifest(site, run_crawl):
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    site.page("/", links=["/private", "/a"])
    site.page("/a")
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False)
    root = result.snapshot.root
    robots = manifest_rows(root, for_crawlers=True)[site.url("/robots.txt")]
    assert (robots.found_by, robots.depth, robots.outcome, robots.status) == ("robots", 0, "fetched", 200)
    assert robots.warc_file and robots.for_crawlers
    records = warc_records(root)
    assert records.count(("request", site.url("/robots.txt"))) == 1
    assert records.count(("response", site.url("/robots.txt"))) == 1
    assert site.url("/robots.txt") not in manifest_rows(root)  # not one of the site's pages
    assert result.totals["fetched"] == 2 and result.totals["for_crawlers"]["robots.txt"] == 1
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_missing_robots_txt_is_kept_with_its_404(site, run_crawl):
    site.page("/")
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False)
    row = manifest_rows(result.snapshot.root, for_crawlers=True)[site.url("/robots.txt")]
    assert (row.outcome, row.status, row.found_by) == ("fetched", 404, "robots")
    assert ("response", site.url("/robots.txt")) in warc_records(result.snapshot.root)
    assert 404 not in {int(status) for status in result.totals["by_status"]}  # not a page's error
    assert verify_snapshot(result.snapshot.root).ok


async def test_each_redirect_of_a_robots_txt_is_kept_and_resolved_as_browsers_do(site, run_crawl):
    # A backslash is a slash to a browser (yarl's join made it %5C, and missed the rules).
    site.redirect("/robots.txt", "\\moved/robots.txt")
    site.redirect("/moved/robots.txt", "/final-robots.txt", status=302)
    site.file("/final-robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    site.page("/", links=["/private"])
    site.page("/private")
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False)
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    first, second = rows[site.url("/robots.txt")], rows[site.url("/moved/robots.txt")]
    assert (first.outcome, first.redirect_to, first.final_url) == (
        "redirected",
        site.url("/moved/robots.txt"),
        site.url("/final-robots.txt"),
    )
    assert (second.outcome, second.found_by, second.parent) == ("redirected", "robots", first.url)
    final = rows[site.url("/final-robots.txt")]
    assert (final.outcome, final.status, final.found_by, final.depth) == ("fetched", 200, "robots", 0)
    assert (rows[site.url("/private")].outcome, rows[site.url("/private")].reason) == ("skipped", "robots")
    assert site.hits["/private"] == 0
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_robots_txt_redirect_loop_is_recorded_as_a_failure_and_allows_all(site, run_crawl):
    site.redirect("/robots.txt", "/r2")
    site.redirect("/r2", "/robots.txt")
    site.page("/")
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False)
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    assert (rows[site.url("/r2")].outcome, rows[site.url("/r2")].reason) == ("failed", "redirect loop")
    assert rows[site.url("/robots.txt")].outcome == "redirected"
    assert rows[site.url("/")].outcome == "fetched"
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")


async def test_a_robots_txt_linked_from_a_page_has_one_record(site, run_crawl):
    site.file("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    site.page("/", links=["/robots.txt"])
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False)
    assert site.hits["/robots.txt"] == 1
    assert warc_records(result.snapshot.root).count(("response", site.url("/robots.txt"))) == 1
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_gzip_bomb_robots_txt_is_decoded_no_further_than_its_limit(site, run_crawl):
    bomb = gzip.compress(b"User-agent: *\nDisallow: /private\n" + b"#" * (64 * 1024 * 1024))

    async def robots(request: web.Request) -> web.Response:
        return web.Response(body=bomb, headers={"Content-Type": "text/plain", "Content-Encoding": "gzip"})

    site.handler("/robots.txt", robots)
    site.page("/", links=["/private"])
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False)
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    assert rows[site.url("/private")].reason == "robots"  # its rules were read all the same
    assert rows[site.url("/robots.txt")].length == len(bomb)  # kept as sent


async def test_with_ignore_robots_and_no_sitemaps_no_robots_txt_is_fetched(site, run_crawl):
    site.page("/")
    await site.start()
    result = await run_crawl(site.url("/"), obey_robots=False, sitemaps=False)
    assert site.robots_hits == 0
    assert not any(
        row.for_crawlers for row in manifest_rows(result.snapshot.root, for_crawlers=True).values()
    )


async def test_a_robots_txt_and_sitemap_answered_with_an_html_page_are_no_pages_to_verify(site, run_crawl):
    """A soft 404: the server answers /robots.txt and /sitemap.xml with its home page. The crawl
    takes no links from them, and verify does not ask for those links either."""
    home = "<title>Home</title><a href='/only-linked-from-home'>x</a>"
    site.file("/robots.txt", home)
    site.file("/sitemap.xml", home)
    site.page("/")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    assert rows[site.url("/robots.txt")].content_type == "text/html"
    assert site.url("/only-linked-from-home") not in rows and site.hits["/only-linked-from-home"] == 0
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")
    assert report.stats["robots.txt and sitemaps kept"] == 2


async def test_a_robots_txt_linked_before_the_crawl_asks_for_it_keeps_its_row_when_asked_again(
    site, other_site, run_crawl
):
    """A page links another host's robots.txt before the crawl asks that host's rules: its row
    says it was a link of that page. Asked again (past its age here), its new answer is kept
    in that row, which still says how the crawl first found it, not found_by robots."""
    other_site.file("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    other_site.file("/img.png", b"\x89PNG", "image/png")
    other_site.file("/late.png", b"\x89PNG", "image/png")
    await other_site.start()

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)  # longer than the age limit
        return web.Response(text=f'<img src="{other_site.url("/late.png")}">', content_type="text/html")

    site.page(
        "/", links=[other_site.url("/robots.txt"), "/slow"], body=f'<img src="{other_site.url("/img.png")}">'
    )
    site.handler("/slow", slow)
    await site.start()
    result = await run_crawl(site.url("/"), scope="any", robots_max_age=0.2, sitemaps=False)
    root = result.snapshot.root
    assert other_site.hits["/robots.txt"] >= 2 and other_site.hits["/late.png"] == 1
    row = manifest_rows(root, for_crawlers=True)[other_site.url("/robots.txt")]
    assert (row.found_by, row.parent, row.depth, row.outcome) == ("link", site.url("/"), 1, "fetched")
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_resumed_crawl_uses_a_robots_txt_a_page_linked(site, other_site, run_crawl):
    """A robots.txt fetched as a page's link (found_by link) is the answer the crawl read rules
    from: a resumed crawl uses it for its day, as one found by robots, rather than ask again."""
    other_site.file("/robots.txt", "User-agent: *\nAllow: /\n", "text/plain")
    other_site.page("/page")
    await other_site.start()
    site.page("/", links=[other_site.url("/robots.txt"), other_site.url("/page")])
    await site.start()
    options = {"scope": "any", "sitemaps": False, "concurrency": 1}
    first = await run_crawl(site.url("/"), max_pages=2, **options)
    root = first.snapshot.root
    assert manifest_rows(root, for_crawlers=True)[other_site.url("/robots.txt")].found_by == "link"
    asked = other_site.hits["/robots.txt"]
    await run_crawl(site.url("/"), output=root, resume=True, **options)
    assert manifest_rows(root)[other_site.url("/page")].outcome == "fetched"
    assert other_site.hits["/robots.txt"] == asked


async def test_a_resumed_crawl_waits_longer_for_a_robots_txt_still_out_of_reach(
    site, other_site, run_crawl, caplog
):
    """A robots.txt out of reach is asked again after robots_retry, doubled each time in a row it
    still is. A resumed crawl asks it again at once, and, still out of reach, waits twice as long
    as before: the streak goes on (it began again at one, as if never out of reach before)."""
    other_site.file("/robots.txt", "busy", "text/plain", status=503)
    other_site.file("/img.png", b"\x89PNG", "image/png")
    await other_site.start()
    site.page("/", body=f'<img src="{other_site.url("/img.png")}">')
    await site.start()
    options = {"sitemaps": False, "max_tries": 1}
    first = await run_crawl(site.url("/"), **options)
    assert "asked again in 60 s" in caplog.text
    caplog.clear()
    await run_crawl(site.url("/"), output=first.snapshot.root, resume=True, **options)
    assert other_site.hits["/robots.txt"] == 2
    assert "asked again in 120 s" in caplog.text


async def test_a_resumed_crawl_parses_the_robots_txt_it_kept_off_the_event_loop(site, run_crawl, monkeypatch):
    """A resumed crawl read and parsed each host's robots.txt kept from the run before on its
    event loop (a few tenths of a second for half a megabyte of rules, for each of thousands of
    hosts), where a fresh crawl parses them in a thread. Both do now; the rules are obeyed and
    the robots.txt is not asked again."""
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\n" + "Allow: /x\n" * 1000, "text/plain")
    site.page("/", links=["/a", "/b", "/private"])
    site.page("/a")
    site.page("/b")
    site.page("/private")
    await site.start()
    options = {"sitemaps": False, "concurrency": 1}
    first = await run_crawl(site.url("/"), max_pages=1, **options)
    root = first.snapshot.root
    asked = site.hits["/robots.txt"]
    parsed_on_loop: list[bool] = []
    parse = RobotsRules.parse.__func__

    def watched(cls: type[RobotsRules], text: str, agent: str) -> RobotsRules:
        parsed_on_loop.append(_on_event_loop())
        return parse(cls, text, agent)

    monkeypatch.setattr(RobotsRules, "parse", classmethod(watched))
    await run_crawl(site.url("/"), output=root, resume=True, **options)
    rows = manifest_rows(root)
    assert parsed_on_loop == [False]
    assert site.hits["/robots.txt"] == asked
    assert (rows[site.url("/b")].outcome, rows[site.url("/private")].reason) == ("fetched", ROBOTS)


def _on_event_loop() -> bool:
    """True when called on a thread running an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("status", [500, 401, 403])
async def test_a_resumed_crawl_records_the_robots_txt_it_asks_again(status, site, run_crawl):
    """A resumed crawl asked again a robots.txt the run before could not use (out of reach, or
    failed), obeyed its new answer and recorded none of it: the WARC held the old answer alone,
    and its row still named it. The new answer is recorded now, as the crawl never interrupted
    records a robots.txt asked again: the snapshot holds every answer rules were read from."""
    answer = {"status": status, "text": "no"}

    async def robots(request: web.Request) -> web.Response:
        return web.Response(status=answer["status"], text=answer["text"], content_type="text/plain")

    site.handler("/robots.txt", robots)
    site.page("/", links=["/a", "/private"])
    site.page("/a")
    site.page("/private")
    await site.start()
    options = {"sitemaps": False, "max_tries": 1, "concurrency": 1}
    first = await run_crawl(site.url("/"), max_pages=1, **options)
    root = first.snapshot.root
    answer.update(status=200, text="User-agent: *\nDisallow: /private\n")
    await run_crawl(site.url("/"), output=root, resume=True, **options)
    rows = manifest_rows(root, for_crawlers=True)
    assert rows[site.url("/robots.txt")].status == 200
    assert rows[site.url("/private")].reason == ROBOTS
    assert warc_records(root).count(("response", site.url("/robots.txt"))) == 2
    assert site.hits["/robots.txt"] == 2
    assert verify_snapshot(root).ok
