"""--browser auto keeps a host's yes under review: a site of static pages with one script-built
corner is not rendered page after page (real Chromium)."""

from __future__ import annotations

from browser_watch import BrowserWatch
from conftest import manifest_rows
from script_site import png
from test_browser import CHROMIUM

from archiver.crawling.render_policy import DRY_RENDERS

PAGES = DRY_RENDERS + 20


async def test_a_yes_for_one_script_built_page_is_taken_back_when_the_others_add_nothing(
    site, run_crawl, monkeypatch
):
    """The home page builds a sponsor's logo with a script (its trial finds more: a yes), and
    every other page's script only sets a class, as a documentation site's template does: every
    page of the site was rendered for that one logo."""
    BrowserWatch(monkeypatch)
    plain_script = "<script>document.documentElement.className = 'js';</script>"
    pages = [f"/p{n}" for n in range(PAGES)]
    for path in pages:
        site.page(path, links=["/"], body="<p>" + "Static text. " * 20 + "</p>" + plain_script)
    site.file("/logo.png", png(200, 0, 0), "image/png")
    logo = "<div id=s></div><script>document.getElementById('s').innerHTML = '<img src=/logo.png>';</script>"
    site.page("/", links=pages, body="<p>" + "Words of a static page. " * 10 + "</p>" + logo)
    await site.start()
    result = await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, concurrency=2)

    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/logo.png")].outcome == "fetched"  # what the script built is archived
    assert rows[site.url("/")].render_reason == "trial 1 of 2: scripts"
    rendered = [row for row in rows.values() if row.dom_warc_file]
    assert all(row.render_error is None for row in rendered)
    log = (result.snapshot.root / "logs" / "crawl.log").read_text()
    assert f"scripted pages of {site.host}: rendering finds more there, they are all rendered" in log
    dry = f"scripted pages of {site.host}: {DRY_RENDERS} renders in a row found nothing more"
    assert dry in log
    # The trials, the renders that found nothing, and at most those under way or queued then.
    assert 2 + DRY_RENDERS <= len(rendered) <= 2 + DRY_RENDERS + 8, len(rendered)
    unrendered = [path for path in pages if rows[site.url(path)].dom_warc_file is None]
    assert len(unrendered) >= PAGES - DRY_RENDERS - 8
    assert all(rows[site.url(path)].render_reason is None for path in unrendered)
    assert all(count == 1 for count in site.hits.values()), site.hits
