"""The snapshot's totals, read from its manifest: what the crawl report, crawl.json and
index.html count, with SQL aggregates (no row is read that is not shown)."""

from __future__ import annotations

import heapq
from collections import Counter
from typing import Any

from archiver.content import ANSWERED
from archiver.scope import ROBOTS_UNREACHABLE
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, FOR_CRAWLERS, QUEUED, REDIRECTED, SKIPPED

MAX_ERRORS_SHOWN = 20
HTTP_ERROR = (
    f"status IS NOT NULL AND NOT (status >= {ANSWERED[0]} AND status < {ANSWERED[1]}) AND NOT truncated"
)
"""A whole answer the server gave with an error status (content.error_status(): a 4xx, a 5xx, one
outside 100-599); the row may be fetched or failed."""
KEPT_OUT = f"outcome = '{SKIPPED}' AND reason = '{ROBOTS_UNREACHABLE}'"
"""A URL not fetched because its host's robots.txt was out of reach: a server's or the
network's error kept it out, not a rule."""
NO_ANSWER = f"(outcome = '{FAILED}' AND NOT ({HTTP_ERROR})) OR ({KEPT_OUT})"
"""A fetch that failed otherwise: no response at all, a body cut short, a redirect loop, a
robots.txt out of reach."""


def summary(manifest: Manifest) -> dict[str, Any]:
    """Counts of the whole snapshot, read from its manifest (so resumed runs add up).

    robots.txt and sitemaps (their 404s and redirects too) are counted apart, under
    ``for_crawlers``: they are kept in the WARC, but they are not the site's pages.
    """
    pages = f"NOT {FOR_CRAWLERS}"
    by_outcome = manifest.count_by("outcome", where=pages)
    # Two kinds of trouble, told apart: the server answered with an error status (a dead
    # link, a 500), or the fetch got no whole answer (no response, a body cut short).
    failed = manifest.rows(FAILED, where=f"{pages} AND ({NO_ANSWER})", limit=MAX_ERRORS_SHOWN)
    kept_out = manifest.rows(SKIPPED, where=f"{pages} AND ({KEPT_OUT})", limit=MAX_ERRORS_SHOWN)
    errors = [(row.url, row.reason or "") for row in heapq.merge(failed, kept_out, key=lambda row: row.url)]
    errors = errors[:MAX_ERRORS_SHOWN]
    http_errors = [
        (row.url, row.status or 0)
        for row in manifest.rows(where=f"{pages} AND {HTTP_ERROR}", limit=MAX_ERRORS_SHOWN)
    ]
    http_by_status = manifest.count_by("status", where=f"{pages} AND {HTTP_ERROR}")
    by_status = Counter(manifest.count_by("status", captured=True, where=pages))
    by_type: Counter[str] = Counter()
    for kind, count in manifest.count_by("content_type", captured=True, where=pages).items():
        by_type["unknown" if kind in ("None", "") else kind] += count  # no Content-Type sent
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
        "skip_reasons": dict(
            Counter(manifest.count_by("reason", where=f"outcome = '{SKIPPED}'")).most_common()
        ),
        "errors": errors,
        "no_answer": sum(manifest.count_by("outcome", where=f"{pages} AND ({NO_ANSWER})").values()),
        "http_errors": http_errors,
        "http_error_count": sum(http_by_status.values()),
        "for_crawlers": {"robots.txt": kept.get("robots", 0), "sitemaps": kept.get("sitemap", 0)},
    }


def has_errors(totals: dict[str, Any]) -> bool:
    """True if a page got an answer with an error status, or no whole answer (the crawl is
    complete, with errors: its own exit code)."""
    return bool(totals.get("http_error_count") or totals.get("no_answer"))
