"""What a page's links may cost the crawl: no more than --max-links-per-page are followed, the
rest recorded on the page's row in one reason, and verify takes that reason for what it is."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from conftest import Site, crawled_rows
from repairs import repair_cuts_where_the_crawl_cut

from archiver.report import UNRECORDED_LINK
from archiver.scope import LINK_LIMIT
from archiver.store.rows import SKIPPED, ManifestRow
from archiver.verify.verifier import verify_snapshot

LINKS = 1000
KEPT = 50


async def test_links_past_the_limit_of_a_page_are_recorded_once_on_its_row(site, run_crawl, tmp_path):
    """A page of 100,000 links gave 100,000 rows and as many fetches, however little it was worth.
    Its first --max-links-per-page links are followed (a cap crawlers have: Heritrix's is 6,000);
    the rest are counted in the page's row, logged once, and verify accepts them unrecorded."""
    site.page("/", links=[f"/p{n}" for n in range(LINKS)])
    for n in range(LINKS):
        site.page(f"/p{n}")
    pages, _ = await crawled_rows(site, run_crawl, max_links_per_page=KEPT)
    assert_first_links_followed(site, pages, tmp_path / "snap", KEPT, LINKS)


def assert_first_links_followed(
    site: Site, pages: dict[str, ManifestRow], root: Path, kept: int, links: int
) -> None:
    """The page / of ``site`` (crawled into ``root``, its rows ``pages`` by path), which had
    ``links`` links /p0, /p1..., had its first ``kept`` followed alone, and said so in its row
    and once in the log."""
    linked = sorted(path for path, row in pages.items() if row.parent == site.url("/"))
    assert linked == sorted(f"/p{n}" for n in range(kept))
    assert pages["/"].reason == f"{LINK_LIMIT}: the first {kept} of its {links} links followed"
    assert site.hits.get(f"/p{kept}", 0) == 0
    log = (root / "logs" / "crawl.log").read_text()
    assert log.count(f"the first {kept} of its {links} links followed") == 1, log[-2000:]


async def test_verify_accepts_unrecorded_only_the_links_the_page_says_were_cut(site, run_crawl, tmp_path):
    """The page's reason vouches for the links after the first it followed, not for any: the row
    of a link the crawl followed, lost from the manifest, is still reported."""
    site.page("/", links=[f"/p{n}" for n in range(LINKS)])
    for n in range(LINKS):
        site.page(f"/p{n}")
    pages, _ = await crawled_rows(site, run_crawl, max_links_per_page=KEPT)
    assert pages["/p1"].outcome != SKIPPED
    root = tmp_path / "snap"
    with contextlib.closing(sqlite3.connect(root / "manifest.sqlite3")) as db, db:
        db.execute("DELETE FROM urls WHERE url = ?", (site.url("/p1"),))
    report = verify_snapshot(root)
    assert not report.ok
    assert report.counts[UNRECORDED_LINK] == 1
    assert [problem.where for problem in report.examples[UNRECORDED_LINK]] == [site.url("/p1")]


async def test_a_repair_cuts_the_links_of_a_page_where_the_crawl_cut_them(site, run_crawl, tmp_path):
    """A manifest written again from the WARC files meets a page's links as the crawl met them:
    the first --max-links-per-page alone, the page's row saying so, and the resume after it
    fetches none of the others."""
    site.page("/", links=[f"/p{n}" for n in range(LINKS)])
    for n in range(LINKS):
        site.page(f"/p{n}")
    before, _ = await crawled_rows(site, run_crawl, max_links_per_page=KEPT)
    await repair_cuts_where_the_crawl_cut(site, tmp_path / "snap", before, KEPT)
