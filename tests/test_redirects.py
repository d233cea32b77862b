"""One walk of redirect chains: the rule itself, table-driven, and the manifest, the mirror and
verify agreeing on where a long chain ends."""

from __future__ import annotations

from pathlib import Path

import lxml.html
import pytest
from snapshot_builder import SnapshotBuilder

from archiver.mirror.build import build_mirror
from archiver.redirects import ENDS, LOOP, MAX_CHAIN_HOPS, TOO_LONG, follow_chain
from archiver.report import DANGLING_REDIRECT
from archiver.store.manifest import Manifest
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
