"""A 300 Multiple Choices answer is a page of links to choose from: browsers show it, and follow
none of them themselves (Chromium follows no 300's Location), so the crawl takes its links as a
page's, the mirror leads from it to the choices archived, and verify holds it to that."""

from __future__ import annotations

from conftest import crawled_rows

from archiver.store.rows import FETCHED

CHOICES = '<!doctype html><title>Choose</title><a href="/en">English</a> <a href="/fr">Français</a>'


async def test_the_links_of_a_300_page_are_followed_and_mirrored_to_the_choices(site, run_crawl, tmp_path):
    site.page("/", links=["/doc", "/doc-no-location"])
    site.file("/doc", CHOICES, "text/html; charset=utf-8", status=300, headers={"Location": "/en"})
    site.file("/doc-no-location", CHOICES.replace("/fr", "/de"), "text/html; charset=utf-8", status=300)
    for path in ("/en", "/fr", "/de"):
        site.page(path)
    pages, _ = await crawled_rows(site, run_crawl)  # verify passes on the snapshot
    for path in ("/doc", "/doc-no-location"):
        assert (pages[path].outcome, pages[path].status, pages[path].title) == (FETCHED, 300, "Choose")
    for path in ("/en", "/fr", "/de"):
        assert (pages[path].outcome, pages[path].status, pages[path].found_by) == (FETCHED, 200, "link")
        assert pages[path].parent is not None and pages[path].parent.startswith(site.url("/doc"))
    page = (tmp_path / "snap" / "mirror" / pages["/doc"].local_path).read_text()
    for path in ("/en", "/fr"):
        local = pages[path].local_path.rsplit("/", 1)[-1]
        assert f'href="{local}"' in page, page  # beside the 300's own file, in the same folder
