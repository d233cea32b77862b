"""What a crawl tells its user: the snapshot's totals from its manifest, the final report
and the progress line, as text (the CLI prints them)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from archiver.crawling.stats import CrawlStats
from archiver.store.manifest import FAILED, FETCHED, FOR_CRAWLERS, QUEUED, REDIRECTED, SKIPPED, Manifest

MAX_ERRORS_SHOWN = 20
HTTP_ERROR = "COALESCE(status, 0) >= 400 AND NOT truncated"
"""A whole answer the server gave with a 4xx or 5xx status (the row may be fetched or failed)."""
NO_ANSWER = f"outcome = 'failed' AND NOT ({HTTP_ERROR})"
"""A fetch that failed otherwise: no response at all, a body cut short, a redirect loop."""


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
    # Two kinds of trouble, told apart: the server answered with an error status (a dead
    # link, a 500), or the fetch got no whole answer (no response, a body cut short).
    errors = [
        (row.url, row.reason or "")
        for row in manifest.rows(FAILED, where=f"{pages} AND ({NO_ANSWER})", limit=MAX_ERRORS_SHOWN)
    ]
    http_errors = [
        (row.url, row.status or 0)
        for row in manifest.rows(where=f"{pages} AND {HTTP_ERROR}", limit=MAX_ERRORS_SHOWN)
    ]
    http_by_status = manifest.count_by("status", where=f"{pages} AND {HTTP_ERROR}")
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
        "no_answer": sum(manifest.count_by("outcome", where=f"{pages} AND ({NO_ANSWER})").values()),
        "http_errors": http_errors,
        "http_error_count": sum(http_by_status.values()),
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
    if stats.stop_reason:
        lines.append(f"stopped:   {stats.stop_reason} (resumable)")
    shown = totals.get("http_errors", [])
    if shown:
        lines.append(f"HTTP errors: {totals['http_error_count']} answers with a 4xx or 5xx status:")
        lines.extend(f"  {status}  {url}" for url, status in shown)
        if totals["http_error_count"] > len(shown):
            lines.append(f"  ... and {totals['http_error_count'] - len(shown)} more (see manifest)")
    if totals["errors"]:
        count = totals.get("no_answer", len(totals["errors"]))
        lines.append(
            f"failed:    {count} fetches got no whole answer (no response, a body cut short, a loop):"
        )
        lines.extend(f"  {url}  {why}" for url, why in totals["errors"])
        if count > len(totals["errors"]):
            lines.append(f"  ... and {count - len(totals['errors'])} more (see manifest)")
    return "\n".join(lines)


def has_errors(totals: dict[str, Any]) -> bool:
    """True if a page got an answer with an error status, or no whole answer (the crawl is
    complete, with errors: its own exit code)."""
    return bool(totals.get("http_error_count") or totals.get("no_answer"))


def progress_line(stats: CrawlStats, queued: int) -> str:
    """One line for a terminal: done, queued, failed, bytes, rate."""
    elapsed = max(stats.elapsed(), 1e-6)
    return (
        f"{stats.fetched} done, {queued + stats.in_flight + stats.waiting} queued, {stats.failed} failed, "
        f"{human_bytes(stats.bytes)}, {stats.fetched / elapsed:.1f} pages/s"
    )
