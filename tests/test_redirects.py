"""One walk of redirect chains: the rule itself, table-driven, and the manifest, the mirror and
verify agreeing on where a long chain ends."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from conftest import manifest_rows
from demo_site import png
from repairs import run_archiver
from snapshot_builder import SnapshotBuilder

from archiver.mirror.build import build_mirror
from archiver.redirects import ENDS, LOOP, MAX_CHAIN_HOPS, TOO_LONG, follow_chain
from archiver.report import DANGLING_REDIRECT
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED
from archiver.verify.verifier import verify_snapshot


def line(length: int) -> dict[str, str]:
    """u0 -> u1 -> ... -> u<length>."""
    return {f"u{n}": f"u{n + 1}" for n in range(length)}


@pytest.mark.parametrize(
    ("hops", "start", "urls", "ending", "final"),
    [
        ({}, "a", ("a",), ENDS, "a"),
        ({"a": "b"}, "a", ("a", "b"), ENDS, "b"),
        ({"a": "b", "b": "c"}, "b", ("b", "c"), ENDS, "c"),
        ({"a": "a"}, "a", ("a", "a"), LOOP, None),
        ({"a": "b", "b": "c", "c": "b"}, "a", ("a", "b", "c", "b"), LOOP, None),
        (line(MAX_CHAIN_HOPS), "u0", tuple(f"u{n}" for n in range(MAX_CHAIN_HOPS + 1)), ENDS, "u100"),
        (line(MAX_CHAIN_HOPS + 1), "u0", tuple(f"u{n}" for n in range(MAX_CHAIN_HOPS + 1)), TOO_LONG, None),
    ],
)
def test_follow_chain(
    hops: dict[str, str], start: str, urls: tuple[str, ...], ending: str, final: str | None
):
    chain = follow_chain(start, hops.get)
    assert (chain.urls, chain.ending, chain.final) == (urls, ending, final)


def test_a_long_chain_ends_alike_in_the_manifest_the_mirror_and_verify(tmp_path: Path) -> None:
    site = "http://site.test"
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{site}/", f'<a href="{site}/r0">start of a long chain</a>')
    hops = 60  # more than the mirror and the manifest used to follow, fewer than verify did
    for n in range(hops):
        target = f"{site}/r{n + 1}" if n + 1 < hops else f"{site}/end"
        snap.redirect(f"{site}/r{n}", target)
    snap.page(f"{site}/end", "<p>the end</p>")
    root = snap.close()
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        assert manifest.get(f"{site}/r0").final_url == f"{site}/end"
    stats = build_mirror(root)
    assert stats.redirects == hops
    page = (root / "mirror" / "site.test" / "index.html").read_text()
    assert 'href="end.html"' in page
    report = verify_snapshot(root)
    assert report.stats["redirects followed"] == hops
    assert DANGLING_REDIRECT not in report.counts


async def test_a_redirects_fragment_leads_the_mirrors_links_as_browsers_follow_it(site, run_crawl) -> None:
    # RFC 9110 section 10.2.2: a Location with a fragment gives it to where the chain lands; one
    # without keeps the fragment the link had (or an earlier hop gave).
    links = ["/a#x", "/a", "/r", "/r#x", "/s#x", "/a#x", "/r#y", "/r"]
    site.page("/", links=links)
    site.redirect("/a", "/b")
    site.redirect("/r", "/b#sec", status=302)
    site.redirect("/s", "/u#s1")
    site.redirect("/u", "/b", status=307)
    site.page("/b", body='<h2 id="x">x</h2><h2 id="sec">sec</h2><h2 id="s1">s1</h2>')
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    home = site.host.replace(":", "+") + "/index.html"

    def hrefs() -> list[str]:
        page = lxml.html.fromstring((root / "mirror" / home).read_bytes())
        return [anchor.get("href") for anchor in page.iter("a")]

    expected = [
        "b.html#x",
        "b.html",
        "b.html#sec",
        "b.html#sec",
        "b.html#s1",
        "b.html#x",
        "b.html#sec",
        "b.html#sec",
    ]
    assert hrefs() == expected  # as the crawl wrote the mirror
    build_mirror(root)
    assert hrefs() == expected  # as archiver mirror builds it again
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def assert_found_again_and_missed(root: Path, rows: dict[str, Any], linked: str) -> None:
    """The manifest of ``root`` (whose rows were ``rows``), rebuilt from its WARC files alone,
    takes the same links from the same pages; verify misses ``linked``, a link the crawl took,
    once its row is gone."""
    facts = ("outcome", "reason", "found_by", "depth", "parent", "status")
    before = {url: [getattr(row, name) for name in facts] for url, row in rows.items()}
    for path in root.glob("manifest.sqlite3*"):
        path.unlink()
    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    after = {url: [getattr(row, name) for name in facts] for url, row in manifest_rows(root).items()}
    assert after == before
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        db.execute("DELETE FROM urls WHERE url = ?", (linked,))
    report = verify_snapshot(root)
    assert not report.ok
    assert linked in report.render_text(str(root))


async def test_a_refresh_header_is_followed_and_kept_in_the_mirror_as_chromium_follows_it(
    site, run_crawl
) -> None:
    """A page answered with a Refresh header naming a URL takes Chromium there, as a
    <meta http-equiv=refresh> does, and before any such element of the page. The crawl never
    fetched that URL (verify said the snapshot complete), and the mirror's file stayed on the
    interim page. Now the URL is a link of the page for the crawl, verify and the manifest rebuilt
    from the WARC files alike, and the page's file holds the refresh, its URL made local, first
    in the page (after its doctype); one to a page not archived is kept under a name no browser
    acts on."""
    interim = "<!DOCTYPE html><title>interim</title><p>interim page</p>"
    site.file(
        "/", interim + '<a href="/away">a</a><a href="/again">b</a>', headers={"Refresh": "0; url=/dest.html"}
    )
    site.file("/away", interim, headers={"Refresh": "1;URL='http://other.invalid/x'"})
    site.file("/again", interim + "<p>again</p>", headers={"Refresh": "5"})
    site.page("/dest.html", body="<p>DESTINATION</p>", links=["/beyond"])
    site.page("/beyond")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url("/dest.html")].outcome == FETCHED
    assert rows[site.url("/dest.html")].parent == site.url("/")
    assert rows[site.url("/beyond")].outcome == FETCHED
    assert site.url("/x") not in rows and "http://other.invalid/x" in rows  # met, out of scope

    def mirror_text(path: str) -> str:
        return (root / "mirror" / rows[site.url(path)].local_path).read_text()

    home = mirror_text("/")
    assert home.startswith('<!DOCTYPE html><meta http-equiv="refresh" content="0; url=dest.html">')
    assert mirror_text("/away").startswith(
        '<!DOCTYPE html><meta data-archived-http-equiv="refresh" content="1;URL=&#x27;http://other.invalid/x&#x27;">'
    )
    assert "refresh" not in mirror_text("/again")
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    # The mirror the crawl wrote is the one built again from the WARC files.
    assert (await asyncio.to_thread(run_archiver, "mirror", str(root))).returncode == 0
    assert mirror_text("/") == home

    await assert_found_again_and_missed(root, rows, site.url("/dest.html"))


async def test_a_redirect_status_a_browser_shows_is_a_page_whose_links_are_followed(site, run_crawl) -> None:
    """Chromium takes a 301, 302, 303, 307 or 308 for a redirect only with a Location that is not
    empty; without one, and for any other 3xx (305, 399), it shows the body, as wget takes it for
    a page. Such pages were archived but their links never followed, by the crawl, the manifest
    rebuilt from the WARC files, and verify alike. A Location it cannot follow is an error, no page."""
    site.page("/", links=["/moved", "/blank", "/proxy", "/odd", "/to-script"])
    site.page("/moved", links=["/from-moved"], body='<img src="/moved.png">', status=301)
    site.file("/blank", '<a href="/from-blank">b</a>', status=302, headers={"Location": " "})
    site.file("/proxy", '<a href="/from-proxy">p</a>', status=305, headers={"Location": "/elsewhere"})
    site.page("/odd", links=["/from-odd"], status=399)
    site.file(
        "/to-script", '<a href="/from-script">s</a>', status=302, headers={"Location": "javascript:void(0)"}
    )
    for path in ("/from-moved", "/from-blank", "/from-proxy", "/from-odd", "/from-script", "/elsewhere"):
        site.page(path)
    site.file("/moved.png", png(), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    rows = manifest_rows(root)
    for path in ("/from-moved", "/moved.png", "/from-blank", "/from-proxy", "/from-odd"):
        assert rows[site.url(path)].outcome == FETCHED, path
    assert site.hits["/from-script"] == site.hits["/elsewhere"] == 0
    assert site.url("/from-script") not in rows
    assert rows[site.url("/moved")].reason == "a 301 without a Location: a page, as browsers show it"
    moved = lxml.html.fromstring((root / "mirror" / rows[site.url("/moved")].local_path).read_bytes())
    assert [a.get("href") for a in moved.iter("a")] == ["from-moved.html"]
    assert [img.get("src") for img in moved.iter("img")] == ["moved.png"]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))

    await assert_found_again_and_missed(root, rows, site.url("/from-blank"))
