"""Browse a snapshot's mirror as a person does: every page from file:// in headless Chromium.

    python3 benchmarks/mirror_check.py SNAPSHOT [--live] [--limit N] [--every N] [--chromium PATH] [--json]

The snapshot's index.html and each HTML page of ``SNAPSHOT/mirror`` is opened
from file:// with the network blocked (every request that is not file: or data:
is refused and counted as a leak), and the sweep records, page by page:

- ``missing``: a file:// request that failed (a file the mirror lacks);
- ``blocked``: a file:// request Chromium refused though the file is there (a module
  script, which file:// pages may not load, or an SVG ``<use>`` of another file);
- ``leak``: a request that left file:// (a link or requisite not rewritten);
- ``console``: an error the page printed or threw;
- ``font``: a font face that failed to load (``document.fonts``);
- ``image``: an image that finished loading with nothing to show (``naturalWidth`` 0);
  (with ``--live``, a font or image that fails on the live page too is not counted);
- ``stylesheet``: a ``<link rel=stylesheet>`` or ``@import`` that applied no sheet;
- ``link``: an ``<a href>`` or ``<area href>`` to a file:// file that does not exist;
- ``look`` (with ``--live``, while the original site is still served): the live page,
  opened at its URL from the manifest, loaded fonts, images or stylesheets the mirror
  page does not, or differs from it in the computed style of its elements.

It prints one line per failure and a summary, and exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PAGE_SUFFIXES = (".html", ".htm", ".xhtml")

# What a page shows, read once it has loaded: the same script on the mirror and live.
PAGE_STATE = """async () => {
  // Lazy images below the fold load when scrolled to: load them all now, live and in the mirror.
  const lazy = Array.from(document.images).filter(i => i.loading === 'lazy' && !i.complete);
  lazy.forEach(i => { i.loading = 'eager'; });
  const decoded = Promise.all(lazy.map(i => i.decode().catch(() => null)));
  await Promise.race([Promise.all([decoded, document.fonts.ready]), new Promise(r => setTimeout(r, 3000))]);
  const fonts = Array.from(document.fonts).map(f => [f.family.replace(/["']/g, ''), f.status]);
  const images = Array.from(document.images)
    .filter(i => i.complete && (i.currentSrc || i.getAttribute('src')))
    .map(i => [i.currentSrc || i.src, i.naturalWidth > 0]);
  const sheets = [];
  for (const link of document.querySelectorAll('link[rel~="stylesheet" i]')) {
    if (link.disabled || !link.getAttribute('href')) continue;
    if (link.media && !matchMedia(link.media).matches) continue;
    sheets.push([link.href, link.sheet !== null]);
  }
  const visit = (sheet, depth) => {
    let rules;
    try { rules = sheet.cssRules; } catch (e) { return; }
    for (const rule of rules) {
      if (rule instanceof CSSImportRule && depth < 8) {
        if (rule.media.length && !matchMedia(rule.media.mediaText).matches) continue;
        sheets.push([rule.href, rule.styleSheet !== null]);
        if (rule.styleSheet) visit(rule.styleSheet, depth + 1);
      }
    }
  };
  for (const sheet of document.styleSheets) visit(sheet, 0);
  const links = Array.from(document.querySelectorAll('a[href], area[href]'))
    .map(a => a.href).filter(h => h.startsWith('file:'));
  const look = [];
  const elements = document.body ? document.body.querySelectorAll('*') : [];
  for (const el of Array.from(elements).slice(0, 400)) {
    const s = getComputedStyle(el);
    look.push([el.tagName.toLowerCase() + (el.id ? '#' + el.id : ''), s.display, s.color,
               s.backgroundColor, s.fontFamily, s.fontSize, s.backgroundImage !== 'none']);
  }
  return {fonts, images, sheets, links, look};
}"""


@dataclass
class PageReport:
    path: str
    failures: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, detail: str) -> None:
        if (kind, detail) not in self.failures:
            self.failures.append((kind, detail))


def mirror_pages(snapshot: Path) -> list[tuple[Path, str | None]]:
    """Every HTML file of the mirror, with the URL the manifest gives it (None if none)."""
    mirror = snapshot / "mirror"
    urls: dict[str, str] = {}
    manifest = snapshot / "manifest.sqlite3"
    if manifest.exists():
        connection = sqlite3.connect(f"file:{manifest}?mode=ro", uri=True)
        query = "SELECT local_path, COALESCE(final_url, url) FROM urls WHERE local_path IS NOT NULL"
        for local_path, url in connection.execute(query):
            urls.setdefault(local_path, url)
        connection.close()
    pages: list[tuple[Path, str | None]] = []
    if (snapshot / "index.html").is_file():  # the snapshot's own index, opened first
        pages.append((snapshot / "index.html", None))
    for path in sorted(mirror.rglob("*")):
        if path.is_file() and path.suffix.lower() in PAGE_SUFFIXES:
            pages.append((path, urls.get(path.relative_to(mirror).as_posix())))
    return pages


class Browser:
    """One headless Chromium; opens pages from file:// with the network blocked, or live."""

    def __init__(self, chromium: str) -> None:
        self.chromium = chromium
        self.playwright: Any = None
        self.browser: Any = None

    async def __aenter__(self) -> Browser:
        from playwright.async_api import async_playwright

        self.playwright = await async_playwright().start()
        self.browser = await self.playwright.chromium.launch(
            executable_path=self.chromium, args=CHROMIUM_ARGS
        )
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.browser.close()
        await self.playwright.stop()

    async def open(self, url: str, report: PageReport | None, live: bool = False) -> dict[str, Any] | None:
        """Open url and return its state; with a report, record what failed on it. ``live``: the
        network is open (the live page, its requisites on any host)."""
        context = await self.browser.new_context()
        page = await context.new_page()
        leaks: list[str] = []

        async def route(route: Any) -> None:
            request_url = route.request.url
            if live or request_url.startswith(("file:", "data:", "blob:")):
                await route.continue_()
            else:
                leaks.append(request_url)
                await route.abort("blockedbyclient")

        await context.route("**/*", route)
        # Every stylesheet the page applies, @import-ed ones too (from file:// a page may not
        # read the rules of another file, so the DevTools protocol counts them).
        loaded_sheets: list[str] = []
        devtools = await context.new_cdp_session(page)
        devtools.on("CSS.styleSheetAdded", lambda event: loaded_sheets.append(event["header"]["sourceURL"]))
        await devtools.send("DOM.enable")
        await devtools.send("CSS.enable")
        closing: list[bool] = []
        """Set once the page is read: a load its closing cuts short (a meta refresh that moves on
        after the page was read) failed because of this checker, not of the mirror."""
        if report is not None:

            def failed(request: Any, report: PageReport = report) -> None:
                if not closing:
                    on_failed(report, request, leaks)

            page.on("requestfailed", failed)
            page.on("console", lambda message: on_console(report, message))
            page.on("pageerror", lambda error: report.add("console", f"uncaught: {error}"))
        state = None
        try:
            await page.goto(url, wait_until="load", timeout=60_000)
            if not url.startswith("file:"):
                with contextlib.suppress(Exception):  # a page that keeps polling is read as it is
                    await page.wait_for_load_state("networkidle", timeout=5_000)
            for _try in range(3):  # a page that moves on (meta refresh, a script) is read where it lands
                try:
                    state = await page.evaluate(PAGE_STATE)
                    break
                except Exception as error:
                    if "navigation" not in str(error):
                        raise
                    await page.wait_for_load_state("load", timeout=60_000)
            if state is not None:
                state["sheet_count"] = len(loaded_sheets)
        except Exception as error:  # a page that does not open is a failure of its own
            if report is not None:
                report.add("open", str(error).splitlines()[0])
        finally:
            closing.append(True)
            await context.close()
        if report is not None:
            for leak in leaks:
                report.add("leak", leak)
        return state


def on_failed(report: PageReport, request: Any, leaks: list[str]) -> None:
    if request.url in leaks:
        return
    if request.url.startswith("file:"):
        # A file that is there but was refused (a module script, a cross-file <use>) is blocked.
        there = Path(unquote(urlsplit(request.url).path)).is_file()
        report.add("blocked" if there else "missing", f"{unquote(request.url)} ({request.failure})")
    elif not request.url.startswith("data:"):
        report.add("failed", f"{request.url} ({request.failure})")


def on_console(report: PageReport, message: Any) -> None:
    if message.type == "error":
        text = message.text
        # A refused request is reported as a leak or missing file already.
        if "net::ERR_" in text and text.startswith("Failed to load resource"):
            return
        report.add("console", text.splitlines()[0][:300])


def judge_state(report: PageReport, state: dict[str, Any], live: dict[str, Any] | None = None) -> None:
    """Record what failed on the page; with its live state, not what fails live as well."""
    failing_live = {family for family, status in live["fonts"] if status == "error"} if live else set()
    for family, status in state["fonts"]:
        if status == "error" and family not in failing_live:
            report.add("font", family)
    live_images = live["images"] if live and len(live["images"]) == len(state["images"]) else None
    for number, (src, shown) in enumerate(state["images"]):
        if shown or (live_images and not live_images[number][1]):
            continue
        # A file missing, or a request leaving file://, is reported as such already.
        if src.startswith("file:") and Path(unquote(urlsplit(src).path)).is_file():
            report.add("image", unquote(src))
    for href, applied in state["sheets"]:
        if not applied and href and href.startswith("file:") and Path(unquote(urlsplit(href).path)).is_file():
            report.add("stylesheet", unquote(href))  # there, but not applied (not read as CSS)
    for href in state["links"]:
        target = Path(unquote(urlsplit(href).path))
        if not target.is_file():  # a folder shows a listing from file://, not the page
            report.add("link", unquote(href))


def compare_look(report: PageReport, mirror: dict[str, Any], live: dict[str, Any]) -> None:
    mirror_fonts = {family for family, status in mirror["fonts"] if status == "loaded"}
    for family in sorted({family for family, status in live["fonts"] if status == "loaded"} - mirror_fonts):
        report.add("look", f"font {family} loads live, not in the mirror")
    live_images = sum(1 for _src, shown in live["images"] if shown)
    mirror_images = sum(1 for _src, shown in mirror["images"] if shown)
    if mirror_images < live_images:
        report.add("look", f"{live_images} images shown live, {mirror_images} in the mirror")
    live_sheets, mirror_sheets = live["sheet_count"], mirror["sheet_count"]
    if mirror_sheets < live_sheets:
        report.add("look", f"{live_sheets} stylesheets applied live, {mirror_sheets} in the mirror")
    differing = [
        (live_style, mirror_style)
        for live_style, mirror_style in zip(live["look"], mirror["look"], strict=False)
        if live_style != mirror_style
    ]
    if len(live["look"]) != len(mirror["look"]):
        report.add("look", f"{len(live['look'])} elements live, {len(mirror['look'])} in the mirror")
    elif differing:
        live_style, mirror_style = differing[0]
        report.add(
            "look",
            f"{len(differing)} elements styled otherwise, first: live {live_style} mirror {mirror_style}",
        )


async def sweep(
    snapshot: Path, chromium: str, live: bool, limit: int | None, every: int = 1
) -> list[PageReport]:
    pages = mirror_pages(snapshot)[::every][:limit]
    reports = []
    async with Browser(chromium) as browser:
        for number, (path, url) in enumerate(pages, 1):
            report = PageReport(path.relative_to(snapshot).as_posix())
            state = await browser.open(path.as_uri(), report)
            if state is not None:
                live_state = None
                if live and url and url.startswith(("http:", "https:")):
                    live_state = await browser.open(url, None, live=True)
                judge_state(report, state, live_state)
                if live_state is not None:
                    compare_look(report, state, live_state)
            reports.append(report)
            if number % 50 == 0:
                failing = sum(1 for done in reports if done.failures)
                print(f"{number}/{len(pages)} pages, {failing} with failures", file=sys.stderr, flush=True)
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", type=Path)
    parser.add_argument(
        "--live", action="store_true", help="compare each page with its live URL (site still served)"
    )
    parser.add_argument("--limit", type=int, help="check only the first N pages")
    parser.add_argument("--every", type=int, default=1, help="check one page in N (a sample of a big mirror)")
    parser.add_argument("--chromium", default=os.environ.get("ARCHIVER_CHROMIUM") or shutil.which("chromium"))
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if not (args.snapshot / "mirror").is_dir():
        print(f"error: {args.snapshot} has no mirror/ folder", file=sys.stderr)
        return 2
    if not args.chromium or not os.path.exists(args.chromium):
        print("error: no Chromium found (give --chromium PATH)", file=sys.stderr)
        return 2
    # Pages are opened by file:// URL, which only an absolute path makes.
    reports = asyncio.run(
        sweep(args.snapshot.resolve(), args.chromium, args.live, args.limit, max(1, args.every))
    )
    kinds = Counter(kind for report in reports for kind, _detail in report.failures)
    failing = [report for report in reports if report.failures]
    if args.json:
        print(
            json.dumps(
                {
                    "pages": len(reports),
                    "failing_pages": len(failing),
                    "failures": dict(kinds),
                    "reports": [{"page": r.path, "failures": r.failures} for r in failing],
                },
                indent=1,
            )
        )
    else:
        for report in failing:
            for kind, detail in report.failures:
                print(f"{report.path}: {kind}: {detail}")
        summary = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())) or "no failure"
        print(f"{len(reports)} pages checked, {len(failing)} with failures: {summary}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
