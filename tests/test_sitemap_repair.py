"""Sitemaps anywhere on a host, behind redirects, found again in a manifest written from the WARC
files alone (crawl --resume --repair), as the crawl recorded them."""

from __future__ import annotations

import asyncio

from aiohttp import web
from conftest import manifest_rows
from repairs import found, lose_and_repair, lose_manifest, run_archiver

from archiver.robots_answer import ROBOTS_MAX_BYTES

ROW_FACTS = (
    "found_by",
    "parent",
    "depth",
    "outcome",
    "reason",
    "status",
    "redirect_to",
    "warc_file",
    "warc_offset",
)


def _urlset(*urls: str) -> str:
    return "<urlset>" + "".join(f"<url><loc>{url}</loc></url>" for url in urls) + "</urlset>"


def _index(*urls: str) -> str:
    return (
        "<sitemapindex>" + "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls) + "</sitemapindex>"
    )


async def test_the_redirects_of_sitemaps_off_the_root_are_found_again_by_a_repair(site, run_crawl):
    """robots.txt names /maps/a.xml, which redirects to /maps/b.xml; /sitemap.xml, an index, lists
    /maps/c.xml, which redirects twice, to /maps/e.xml. A repair met only the robots.txt and
    sitemaps at the root: the other hops came back as links found nowhere, and the pages those
    sitemaps list, met by nothing, without their titles, so verify failed the snapshot the crawl
    had left complete. Each hop and page now gets the row the crawl wrote, and verify passes."""
    site.page("/")
    site.page("/from-b")
    site.page("/from-e")
    site.redirect("/maps/a.xml", "/maps/b.xml")
    site.redirect("/maps/c.xml", "/maps/d.xml")
    site.redirect("/maps/d.xml", "/maps/e.xml", status=302)
    await site.start()
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\nSitemap: /maps/a.xml\n", "text/plain")
    site.file("/sitemap.xml", _index(site.url("/maps/c.xml")), "application/xml")
    site.file("/maps/b.xml", _urlset(site.url("/from-b")), "application/xml")
    site.file("/maps/e.xml", _urlset(site.url("/from-e")), "application/xml")
    result = await run_crawl(site.url("/"), max_tries=1)
    root = result.snapshot.root
    before = manifest_rows(root, for_crawlers=True)
    assert before[site.url("/maps/d.xml")].found_by == "sitemap"
    assert before[site.url("/from-e")].found_by == "sitemap"
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout

    lose_manifest(root)
    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
    after = manifest_rows(root, for_crawlers=True)
    sitemaps = [site.url(f"/maps/{name}.xml") for name in "abcde"] + [site.url("/sitemap.xml")]
    for url in [*sitemaps, site.url("/from-b"), site.url("/from-e"), site.url("/robots.txt")]:
        assert [getattr(after[url], fact) for fact in ROW_FACTS] == [
            getattr(before[url], fact) for fact in ROW_FACTS
        ], url


async def test_a_sitemap_line_cut_at_the_robots_size_limit_is_read_by_the_repair_as_by_the_crawl(
    site, run_crawl
):
    """A robots.txt past ROBOTS_MAX_BYTES whose ``Sitemap: /maps/long.xml`` the limit cuts to
    ``Sitemap: /maps/l``: the crawl reads whole lines alone and names no such sitemap, but a repair
    decoded the stored robots.txt whole and took the cut line for one, so /maps/l, a page the home
    page links to, came back as a sitemap of robots.txt. Both read the robots.txt by one rule now:
    the repair gives /maps/l the row the crawl wrote. The resume after it asked that robots.txt
    again, its rules taken from the stored copy only when it was not cut: it reads the whole lines
    of that copy now, as the crawl read them, and fetches nothing."""
    site.page("/", links=["/maps/l"])
    site.page("/maps/l")
    rules = b"User-agent: *\nDisallow: /private\n"
    line = b"Sitemap: /maps/long.xml\n"
    cut_at = len(b"Sitemap: /maps/l")
    padding = b"# " + b"x" * (ROBOTS_MAX_BYTES - len(rules) - cut_at - 3) + b"\n"
    body = rules + padding + line + b"# more\n" * 100
    assert body.index(line) + cut_at == ROBOTS_MAX_BYTES
    site.file("/robots.txt", body, "text/plain")
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1)
    root = result.snapshot.root
    assert manifest_rows(root, for_crawlers=True)[site.url("/robots.txt")].truncated

    repaired = await lose_and_repair(root, site)
    assert [found(repaired.after)[url] for url in (site.url("/maps/l"), site.url("/robots.txt"))] == [
        found(repaired.before)[url] for url in (site.url("/maps/l"), site.url("/robots.txt"))
    ]
    assert repaired.after[site.url("/maps/l")].found_by == "link"


async def test_the_sitemaps_of_a_robots_txt_answered_with_any_2xx_are_found_again_by_a_repair(
    site, run_crawl
):
    """The crawl reads the rules and Sitemap: lines of a robots.txt answered with any 2xx (RFC
    9309), a 203 here, but a repair read those of a 200 alone: the sitemap it names, and the page
    that sitemap lists, came back as met by nothing. Both judge the answer by one rule now. The
    resume after it fetched that sitemap again, as every resume read the sitemaps: it reads back
    the one the snapshot holds now, and fetches nothing."""

    async def robots(request: web.Request) -> web.Response:
        return web.Response(
            text="User-agent: *\nSitemap: /maps/a.xml\n", status=203, content_type="text/plain"
        )

    site.page("/")
    site.page("/from-a")
    site.handler("/robots.txt", robots)
    await site.start()
    site.file("/maps/a.xml", _urlset(site.url("/from-a")), "application/xml")
    root = (await run_crawl(site.url("/"), max_tries=1)).snapshot.root

    repaired = await lose_and_repair(root, site)
    for url in (site.url("/maps/a.xml"), site.url("/from-a")):
        assert found(repaired.after)[url] == found(repaired.before)[url], url
    assert repaired.after[site.url("/from-a")].found_by == "sitemap"


async def test_a_sitemap_answered_with_any_2xx_is_found_again_by_a_repair(site, run_crawl):
    """The crawl reads a sitemap answered with any 2xx (a 203 here), as it reads a page, but a
    repair read those answered 200 alone: the page the sitemap lists came back as met by
    nothing. Both read the answer by one rule now."""

    async def sitemap(request: web.Request) -> web.Response:
        return web.Response(text=_urlset(site.url("/from-a")), status=203, content_type="application/xml")

    site.page("/")
    site.page("/from-a")
    site.handler("/sitemap.xml", sitemap)
    await site.start()
    root = (await run_crawl(site.url("/"), max_tries=1)).snapshot.root

    repaired = await lose_and_repair(root, site)
    assert found(repaired.after)[site.url("/from-a")] == found(repaired.before)[site.url("/from-a")]
    assert repaired.after[site.url("/from-a")].found_by == "sitemap"


async def test_a_relative_sitemap_line_resolves_against_where_a_robots_txt_redirect_led(
    site, other_site, run_crawl
):
    """A robots.txt that redirects to another host's, which names ``Sitemap: /sm.xml``: the line
    was resolved against the first robots.txt's URL (the seed host's /sm.xml, a 404), so the
    sitemap was never read. It resolves against the URL the answer came from now (RFC 3986
    5.1.3), in the crawl and in the manifest a repair writes again."""
    site.page("/")
    site.page("/listed")
    await site.start()
    other_site.file("/robots.txt", "User-agent: *\nAllow: /\nSitemap: /sm.xml\n", "text/plain")
    other_site.file("/sm.xml", _urlset(site.url("/listed")), "application/xml")
    await other_site.start()
    site.redirect("/robots.txt", other_site.url("/robots.txt"))  # routes are read at each request
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root, for_crawlers=True)
    assert other_site.hits["/sm.xml"] == 1 and site.hits.get("/sm.xml", 0) == 0
    assert (rows[site.url("/listed")].outcome, rows[site.url("/listed")].found_by) == ("fetched", "sitemap")
    assert rows[site.url("/listed")].parent == other_site.url("/sm.xml")

    repaired = await lose_and_repair(root, site)
    assert found(repaired.after) == found(repaired.before)
