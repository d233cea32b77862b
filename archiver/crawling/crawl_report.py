"""What a crawl tells its user: the snapshot's totals from its manifest, the final report
and the progress line, as text (the CLI prints them)."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from archiver.crawling.stats import CrawlStats
from archiver.store.manifest import FAILED, FETCHED, FOR_CRAWLERS, QUEUED, REDIRECTED, SKIPPED, Manifest

MAX_ERRORS_SHOWN = 20


def human_bytes(count: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def summary(manifest: Manifest) -> dict[str, Any]:
    """Counts of the whole snapshot, read from its manifest (so resumed runs add up).

    robots.txt and sitemaps (their 404s and redirects too) are counted apart, under
    ``for_crawlers``: they are kept in the WARC, but they are not the site's pages.
    """
    pages = f"NOT {FOR_CRAWLERS}"
    by_outcome = manifest.count_by("outcome", where=pages)
    errors = [
        (row.url, row.reason or "")
        for row in itertools.islice(manifest.rows(FAILED, where=pages), MAX_ERRORS_SHOWN)
    ]
    by_status = Counter(manifest.count_by("status", captured=True, where=pages))
    by_type = Counter(
        {
            ("unknown" if kind in ("None", "") else kind): count
            for kind, count in manifest.count_by("content_type", captured=True, where=pages).items()
        }
    )
    kept = manifest.count_by("found_by", captured=True, where=FOR_CRAWLERS)
    return {
        "urls": sum(by_outcome.values()),
        "fetched": by_outcome.get(FETCHED, 0),
        "redirected": by_outcome.get(REDIRECTED, 0),
        "failed": by_outcome.get(FAILED, 0),
        "skipped": by_outcome.get(SKIPPED, 0),
        "queued": by_outcome.get(QUEUED, 0),
        "bytes": manifest.captured_bytes(),
        "by_status": dict(sorted(by_status.items())),
        "by_content_type": dict(by_type.most_common()),
        "skip_reasons": dict(Counter(row.reason or "" for row in manifest.rows(SKIPPED)).most_common()),
        "errors": errors,
        "for_crawlers": {"robots.txt": kept.get("robots", 0), "sitemaps": kept.get("sitemap", 0)},
    }


def render_report(totals: dict[str, Any], stats: CrawlStats) -> str:
    """The final report, in the spirit of the seed crawler's."""
    elapsed = stats.elapsed()
    lines = [
        f"{totals['urls']} URLs met: {totals['fetched']} fetched, {totals['redirected']} "
        f"redirected, {totals['failed']} failed, {totals['skipped']} skipped"
        + (f", {totals['queued']} still queued" if totals["queued"] else ""),
        f"{human_bytes(totals['bytes'])} stored in {elapsed:.1f} s "
        f"({stats.fetched / max(elapsed, 1e-6):.1f} pages/s this run)",
        "by status: " + ", ".join(f"{k}: {v}" for k, v in totals["by_status"].items()),
        "by type:   " + ", ".join(f"{k}: {v}" for k, v in list(totals["by_content_type"].items())[:8]),
    ]
    if stats.rendered or stats.render_failed:
        lines.append(
            f"rendered:  {stats.rendered} pages in a browser this run"
            + (f", {stats.render_failed} failed (see manifest)" if stats.render_failed else "")
        )
    kept = {name: count for name, count in totals.get("for_crawlers", {}).items() if count}
    if kept:
        lines.append("also kept: " + ", ".join(f"{k}: {v}" for k, v in kept.items()))
    if totals["skip_reasons"]:
        lines.append("skipped:   " + ", ".join(f"{k}: {v}" for k, v in totals["skip_reasons"].items()))
    if totals["errors"]:
        lines.append("errors:")
        lines.extend(f"  {url}  {why}" for url, why in totals["errors"])
        if totals["failed"] > len(totals["errors"]):
            lines.append(f"  ... and {totals['failed'] - len(totals['errors'])} more (see manifest)")
    return "\n".join(lines)


def progress_line(stats: CrawlStats, queued: int) -> str:
    """One line for a terminal: done, queued, failed, bytes, rate."""
    elapsed = max(stats.elapsed(), 1e-6)
    return (
        f"{stats.fetched} done, {queued + stats.in_flight + stats.waiting} queued, {stats.failed} failed, "
        f"{human_bytes(stats.bytes)}, {stats.fetched / elapsed:.1f} pages/s"
    )
