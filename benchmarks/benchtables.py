"""Turn benchmark runs into markdown tables: medians per crawler, then archiver against its peers."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from crawlcounts import CrawlCounts
from measure import RunResult
from sitegen import SiteInfo

WGET = "wget"
SCRAPY = "scrapy"


@dataclass(frozen=True)
class RunRecord:
    """One timed crawl: which crawler, the measurements, what it fetched (None when it failed)."""

    crawler: str
    """'archiver c=<concurrency>', 'wget', 'wget2' or 'scrapy'."""
    run: int
    result: RunResult
    counts: CrawlCounts | None
    server_cpu_seconds: float

    @property
    def succeeded(self) -> bool:
        """True if the crawl exited normally and its output could be counted."""
        return self.counts is not None


@dataclass(frozen=True)
class CrawlerSummary:
    """Medians over a crawler's successful runs on one site."""

    crawler: str
    runs: int
    failed: int
    wall_seconds: float
    pages_per_second: float
    requests_per_second: float
    cpu_seconds: float
    cpu_ms_per_page: float
    peak_rss_mb: float
    """Peak RSS of all the crawler's processes together (worker processes included)."""
    peak_pss_mb: float
    """Peak PSS of the same processes: pages they share counted once."""
    server_cpu_seconds: float
    pages: int
    distinct_ok: int


def _median(records: Sequence[RunRecord], value: Callable[[RunRecord], float]) -> float:
    return statistics.median(value(record) for record in records)


def _counts(record: RunRecord) -> CrawlCounts:
    assert record.counts is not None, "only successful runs are summarized"
    return record.counts


def summarize(records: Sequence[RunRecord], site: SiteInfo) -> list[CrawlerSummary]:
    """One summary per crawler, in order of first appearance; a crawler that never succeeded is left out."""
    summaries = []
    for crawler in dict.fromkeys(record.crawler for record in records):
        mine = [record for record in records if record.crawler == crawler]
        good = [record for record in mine if record.succeeded]
        if not good:
            continue
        summaries.append(
            CrawlerSummary(
                crawler=crawler,
                runs=len(good),
                failed=len(mine) - len(good),
                wall_seconds=_median(good, lambda r: r.result.wall_seconds),
                pages_per_second=_median(good, lambda r: site.pages / r.result.wall_seconds),
                requests_per_second=_median(good, lambda r: _counts(r).responses / r.result.wall_seconds),
                cpu_seconds=_median(good, lambda r: r.result.cpu_seconds),
                cpu_ms_per_page=_median(good, lambda r: r.result.cpu_seconds * 1000 / site.pages),
                peak_rss_mb=_median(good, lambda r: r.result.peak_tree_rss_mb),
                peak_pss_mb=_median(good, lambda r: r.result.peak_tree_pss_mb),
                server_cpu_seconds=_median(good, lambda r: r.server_cpu_seconds),
                pages=int(_median(good, lambda r: _counts(r).pages)),
                distinct_ok=int(_median(good, lambda r: _counts(r).distinct_ok)),
            )
        )
    return summaries


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def crawler_table(summaries: Sequence[CrawlerSummary], site: SiteInfo) -> str:
    """Medians per crawler: time, throughput, CPU, memory, and what it fetched against what the site holds."""
    header = (
        "crawler",
        "runs",
        "wall s",
        "pages/s",
        "requests/s",
        "CPU s",
        "CPU ms/page",
        "peak RSS MB (all processes)",
        "peak PSS MB (shared once)",
        "server CPU s",
        "pages fetched",
        "distinct 200s",
    )
    rows = [
        (
            summary.crawler,
            f"{summary.runs}" + (f" (+{summary.failed} failed)" if summary.failed else ""),
            f"{summary.wall_seconds:.1f}",
            f"{summary.pages_per_second:.0f}",
            f"{summary.requests_per_second:.0f}",
            f"{summary.cpu_seconds:.1f}",
            f"{summary.cpu_ms_per_page:.2f}",
            f"{summary.peak_rss_mb:.0f}",
            f"{summary.peak_pss_mb:.0f}",
            f"{summary.server_cpu_seconds:.2f}",
            f"{summary.pages}/{site.pages}",
            f"{summary.distinct_ok}/{site.ok_responses}",
        )
        for summary in summaries
    ]
    return _table(header, rows)


def ratio_table(summaries: Sequence[CrawlerSummary]) -> str:
    """archiver against each peer, for each archiver setting: wall time and CPU per page as a
    share of the peer's (below 1: archiver takes less), pages/s as a multiple (above 1: faster)."""
    peers = [summary for summary in summaries if not summary.crawler.startswith("archiver")]
    ours = [summary for summary in summaries if summary.crawler.startswith("archiver")]
    if not peers or not ours:
        return "(no archiver run and peer run to compare)"
    header = ("archiver / peer", "wall ratio", "pages/s ratio", "CPU per page ratio", "peak RSS ratio")
    rows = [
        (
            f"{summary.crawler} / {peer.crawler}",
            f"{summary.wall_seconds / peer.wall_seconds:.2f}",
            f"{summary.pages_per_second / peer.pages_per_second:.2f}",
            f"{summary.cpu_ms_per_page / peer.cpu_ms_per_page:.2f}",
            f"{summary.peak_rss_mb / peer.peak_rss_mb:.2f}",
        )
        for summary in ours
        for peer in peers
    ]
    return _table(header, rows)
