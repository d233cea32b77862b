"""index.html as a reader meets it: counts in a natural order, sizes in human units, charts
of statuses and content types with no stray rows, and a page that opens from file:// in
headless Chromium with nothing failing to load."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from aiohttp import web
from test_browser import CHROMIUM, CHROMIUM_ARGS, Recorder

from archiver.mirror.index_page import TYPES_CHARTED, _type_bars

try:
    from playwright.async_api import async_playwright
except ImportError:  # pragma: no cover - CI installs it
    async_playwright = None  # type: ignore[assignment]


def troubled_site(site: Any) -> None:
    """Pages, a dead link, a server error, a redirect loop (a fetch with no answer), a link
    out of scope (skipped), a file sent with no Content-Type, and a page of 3,000 bytes."""
    links = ["/a", "/missing", "/error", "/loop", "/raw", "http://elsewhere.test/"]
    site.page("/", links=links, title="Home").page("/a", body="x" * 3000, title="A")
    site.page("/error", status=500, title="Oops")
    site.redirect("/loop", "/loop", status=302)

    async def raw(request: web.Request) -> web.StreamResponse:
        response = web.Response(body=b"\x00\x01 no type")
        response.headers.popall("Content-Type", None)
        return response

    site.handler("/raw", raw)


def texts(tree: Any, xpath: str) -> list[str]:
    return [" ".join(element.text_content().split()) for element in tree.xpath(xpath)]


def chart(tree: Any, number: int) -> dict[str, str]:
    """The bars of the ``number``th chart: label -> count, as shown."""
    rows = tree.xpath(f"//figure[{number}]//tr")
    return {row.xpath("string(th)").strip(): row.xpath("string(td[@class='num'])").strip() for row in rows}


async def test_index_counts_sizes_and_charts(site, run_crawl):
    troubled_site(site)
    result = await run_crawl(await site.start(), max_tries=1)
    tree = lxml.html.document_fromstring((result.snapshot.root / "index.html").read_bytes())
    cards = texts(tree, "//div[@class='cards']/div")
    numbers = texts(tree, "//div[@class='cards']/div/b")
    labels = [card.removeprefix(number).strip() for card, number in zip(cards, numbers, strict=True)]
    # What was fetched comes first, then the rest, then what the crawl kept for itself.
    assert labels == ["fetched", "failed", "skipped", "stored", "robots.txt kept", "sitemaps kept"], labels
    assert numbers[:3] == ["5", "1", "1"], numbers  # the loop failed, elsewhere.test skipped
    assert numbers[3].endswith(" KiB"), "sizes in human units, not a count of bytes"
    statuses = chart(tree, 1)
    assert statuses == {"200": "3", "302": "1", "404": "1", "500": "1"}, statuses
    kinds = chart(tree, 2)
    # The 302 of the loop was sent with no Content-Type; aiohttp labels /raw octet-stream.
    assert kinds == {"text/html": "3", "application/octet-stream": "1", "text/plain": "1", "unknown": "1"}
    charts = " ".join(texts(tree, "//div[@class='charts']")) + " ".join(cards)
    # Rows met but never answered (skipped, queued, failed without a response) are no status
    # and no content type: they made the stray 'None: 4' of the old index.
    assert "None" not in charts
    sizes = texts(tree, "//table[@id='pages']//td[4]")
    assert "3.0 KiB" in sizes and all(size.endswith((" B", " KiB")) for size in sizes), sizes
    # No table of headers alone: the mirror made no partial file here.
    assert not tree.xpath("//table[@id='mirror-notes']")


def test_the_type_chart_folds_the_rare_types_into_one_bar():
    by_type = {f"type/{n}": 100 - n for n in range(TYPES_CHARTED + 3)}
    bars = _type_bars(by_type)
    assert [bar["label"] for bar in bars[:TYPES_CHARTED]] == [f"type/{n}" for n in range(TYPES_CHARTED)]
    assert bars[-1]["label"] == "3 other types" and bars[-1]["count"] == sum(100 - n for n in range(7, 10))
    assert max(bar["width"] for bar in bars) == 100.0 and len(bars) == TYPES_CHARTED + 1
    assert len(_type_bars({"a/b": 1, "c/d": 2})) == 2


needs_browser = pytest.mark.skipif(
    os.environ.get("CI") != "true" and (async_playwright is None or not os.path.exists(CHROMIUM)),
    reason="Chromium or Playwright is not installed (CI=true runs this)",
)


@needs_browser
async def test_index_opens_from_file_with_nothing_failing(site, run_crawl, tmp_path: Path):
    troubled_site(site)
    result = await run_crawl(await site.start(), max_tries=1)
    await site.close()
    assert async_playwright is not None
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1100, "height": 800})
        recorder = Recorder(page)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto((result.snapshot.root / "index.html").as_uri(), wait_until="load")
        shown = await page.inner_text("body")
        bars = await page.eval_on_selector_all(
            ".chart .bar", "bars => bars.map(b => b.getBoundingClientRect().width)"
        )
        statuses = await page.eval_on_selector_all(
            ".chart:first-child tr",
            "rows => rows.map(r => [r.cells[0].innerText, r.querySelector('.bar').clientWidth])",
        )
        await browser.close()
    assert recorder.failed == [] and errors == []
    assert recorder.requests == [(result.snapshot.root / "index.html").as_uri()], (
        "the page loads nothing else"
    )
    assert f"{result.totals['fetched']}\nfetched" in shown
    assert "Answers by status" in shown and "Answers by content type" in shown
    assert "KiB\nstored" in shown
    assert len(bars) == 8 and all(width > 0 for width in bars), "every bar is drawn"
    widths = dict(statuses)
    assert set(widths) == {"200", "302", "404", "500"}
    assert widths["200"] == pytest.approx(3 * widths["404"], rel=0.05), "bars as long as their counts"
