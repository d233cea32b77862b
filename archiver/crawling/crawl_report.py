"""What a crawl tells its user: the final report and the progress line, as text (the CLI
prints them); the totals they show are store/totals.py's."""

from __future__ import annotations

from typing import Any

from archiver.crawling.stats import CrawlStats
from archiver.sizes import human_bytes

SHOWN_URL = 200
"""Characters of a URL the report shows; a longer one (a server can send a redirect to one of
megabytes) is cut in the middle. The manifest and the log keep it whole."""


def shown_url(url: str) -> str:
    """``url`` as the report shows it: whole up to SHOWN_URL characters, else its two ends.

    >>> shown = shown_url("http://h/" + "a" * 1000)
    >>> "..." in shown, shown.endswith("a (1,009 characters)"), len(shown)
    (True, True, 212)
    """
    if len(url) <= SHOWN_URL:
        return url
    return f"{url[: SHOWN_URL * 3 // 4]}...{url[-SHOWN_URL // 5 :]} ({len(url):,} characters)"


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
    if totals.get("changes"):
        lines.append(
            "changes since the previous snapshot: "
            + ", ".join(f"{count} {kind}" for kind, count in totals["changes"].items())
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
        lines.extend(f"  {status}  {shown_url(url)}" for url, status in shown)
        if totals["http_error_count"] > len(shown):
            lines.append(f"  ... and {totals['http_error_count'] - len(shown)} more (see manifest)")
    if totals["errors"]:
        count = totals.get("no_answer", len(totals["errors"]))
        lines.append(
            f"failed:    {count} fetches got no whole answer (no response, a body cut short, a loop,"
            " a robots.txt out of reach):"
        )
        lines.extend(f"  {shown_url(url)}  {why}" for url, why in totals["errors"])
        if count > len(totals["errors"]):
            lines.append(f"  ... and {count - len(totals['errors'])} more (see manifest)")
    return "\n".join(lines)


def progress_line(stats: CrawlStats, queued: int) -> str:
    """One line for a terminal: done, queued, failed, bytes, rate."""
    elapsed = max(stats.elapsed(), 1e-6)
    return (
        f"{stats.fetched} done, {queued + stats.in_flight + stats.waiting} queued, {stats.failed} failed, "
        f"{human_bytes(stats.bytes)}, {stats.fetched / elapsed:.1f} pages/s"
        + (f" ({stats.note})" if stats.note else "")
    )
