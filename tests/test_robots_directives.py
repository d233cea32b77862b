"""A page's robots directives (meta robots, X-Robots-Tag) saying nofollow are honoured: its links
are recorded as skipped, its requisites still fetched so it renders; --ignore-robots ignores them."""

from __future__ import annotations

import pytest
from conftest import manifest_rows

from archiver.mirror.build import build_mirror
from archiver.verify.verifier import verify_snapshot

IMAGE = '<img src="/i.png">'


def build(site, head: str = "", headers: dict[str, str] | None = None) -> None:
    site.file(
        "/",
        f"<html><head><title>t</title>{head}</head><body>{IMAGE}<a href='/a'>a</a></body></html>",
        "text/html",
        headers=headers,
    )
    site.page("/a")
    site.file("/i.png", b"\x89PNG", "image/png")


@pytest.mark.parametrize(
    ("head", "headers"),
    [
        ('<meta name="robots" content="nofollow">', None),
        ('<META NAME="Robots" CONTENT="noindex, NoFollow">', None),
        ('<meta name="robots" content="none">', None),
        ('<meta name="robots" content="noindex"><meta name="robots" content="nofollow">', None),
        ("", {"X-Robots-Tag": "nofollow"}),
        ("", {"X-Robots-Tag": "noindex, nofollow"}),
        ("", {"X-Robots-Tag": "archiver: nofollow"}),
    ],
)
async def test_nofollow_links_are_skipped_and_requisites_fetched(head, headers, site, run_crawl):
    build(site, head, headers)
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert (rows[site.url("/a")].outcome, rows[site.url("/a")].reason) == ("skipped", "nofollow")
    assert site.hits["/a"] == 0
    assert rows[site.url("/i.png")].outcome == "fetched"
    build_mirror(result.snapshot.root)
    assert verify_snapshot(result.snapshot.root).ok


@pytest.mark.parametrize(
    ("head", "headers", "options"),
    [
        ('<meta name="robots" content="noindex">', None, {}),
        ('<meta name="description" content="nofollow">', None, {}),
        ("", {"X-Robots-Tag": "otherbot: nofollow"}, {}),
        ("", {"X-Robots-Tag": "unavailable_after: 25 Jun 2010 15:00:00 PST"}, {}),
        ('<meta name="robots" content="nofollow">', {"X-Robots-Tag": "nofollow"}, {"obey_robots": False}),
    ],
)
async def test_links_are_followed_unless_nofollow_is_said_to_us(head, headers, options, site, run_crawl):
    build(site, head, headers)
    await site.start()
    result = await run_crawl(site.url("/"), **options)
    assert manifest_rows(result.snapshot.root)[site.url("/a")].outcome == "fetched"


PADDING = "<p>" + "x" * (300 * 1024) + "</p>"
"""Past the size from which a page is read for its links as a stream (findings.STREAMED_BYTES)."""


@pytest.mark.parametrize("padding", ["", PADDING], ids=["page", "streamed page"])
@pytest.mark.parametrize(
    ("head", "user_agent", "followed"),
    [
        ('<meta name="archiver" content="nofollow">', None, False),
        ('<meta name="Archiver" content="none">', None, False),
        ('<meta name="otherbot" content="nofollow">', None, True),
        ('<meta name="mybot" content="nofollow">', "mybot/2.0 (+https://example.org)", False),
        ('<meta name="archiver" content="nofollow">', "mybot/2.0", True),
    ],
)
async def test_a_robots_meta_named_for_our_robot_is_obeyed(
    head, user_agent, followed, padding, site, run_crawl
):
    """``<meta name="archiver" content="nofollow">``, a robots meta for our robot by its name (as
    ``<meta name="googlebot">`` is for Google's), was ignored, where ``X-Robots-Tag: archiver:
    nofollow`` was obeyed. A meta named for our product token (that of --user-agent) is obeyed
    now, in a page read whole or as a stream; one named for another robot is not."""
    build(site, head + padding)
    await site.start()
    options = {"user_agent": user_agent} if user_agent else {}
    result = await run_crawl(site.url("/"), sitemaps=False, **options)
    row = manifest_rows(result.snapshot.root)[site.url("/a")]
    assert (row.outcome, row.reason) == (("fetched", None) if followed else ("skipped", "nofollow"))


async def test_a_link_also_found_on_a_followed_page_is_fetched(site, run_crawl):
    site.page("/", links=["/closed", "/open"])
    site.page("/closed", links=["/shared"], head='<meta name="robots" content="nofollow">')
    site.page("/open", links=["/shared"])
    site.page("/shared")
    await site.start()
    result = await run_crawl(site.url("/"), concurrency=1)
    assert manifest_rows(result.snapshot.root)[site.url("/shared")].outcome == "fetched"
    assert site.hits["/shared"] == 1


def test_a_url_skipped_then_queued_reads_queued_so_a_resume_fetches_it():
    from archiver.store.manifest import Manifest
    from archiver.store.rows import ManifestRow

    with Manifest.open(":memory:") as manifest:
        skipped = ManifestRow("http://h/x", "link", 1, "skipped", parent="http://h/closed", reason="nofollow")
        manifest.insert_new([skipped])
        manifest.insert_new([ManifestRow("http://h/x", "link", 1, "queued", parent="http://h/open")])
        row = manifest.get("http://h/x")
        assert (row.outcome, row.reason, row.parent) == ("queued", None, "http://h/open")
        fetched = ManifestRow("http://h/y", "link", 1, "fetched", status=200)
        manifest.upsert(fetched)
        manifest.insert_new([ManifestRow("http://h/y", "link", 2, "queued")])
        assert manifest.get("http://h/y") == fetched  # any other row is kept as it is
