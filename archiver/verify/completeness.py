"""Completeness: every in-scope link of an archived page is recorded, every redirect ends.

Links are found again the way the crawl found them: each archived HTML or
CSS page is read back from its WARC record, its Content-Encoding undone,
and its links extracted by :mod:`archiver.links` and judged by the crawl's
own scope, rebuilt from crawl.json.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from archiver.content import decode_stream, mime_type
from archiver.errors import WarcDamage
from archiver.links import REQUISITE, extract
from archiver.scope import Scope
from archiver.store.manifest import FAILED, FETCHED, QUEUED, REDIRECTED, SKIPPED, Manifest, ManifestRow
from archiver.urls import try_normalize
from archiver.verify.integrity import PARSE_ERRORS, RecordEntry
from archiver.verify.report import DANGLING_REDIRECT, UNFINISHED_CRAWL, UNRECORDED_LINK, Report
from archiver.warc.reader import WarcReader

PARSED_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/css"})
MAX_REDIRECT_HOPS = 100
RECORDED_CACHE = 1 << 16
"""URLs whose manifest lookup is remembered (links repeat from page to page)."""

Records = dict[tuple[str, int], RecordEntry]


def crawl_scope(settings: dict[str, Any] | None, manifest: Manifest) -> Scope:
    """The crawl's scope from its crawl.json settings (or, lacking them, its seeds' hosts)."""
    if settings:
        seeds = [try_normalize(str(seed)) for seed in settings.get("seeds") or ()]
        return Scope.from_seeds(
            [seed for seed in seeds if seed is not None],
            kind=settings.get("scope") or "host",
            include=settings.get("include") or (),
            exclude=settings.get("exclude") or (),
            max_depth=settings.get("max_depth"),
        )
    return Scope.from_seeds(row.url for row in manifest.rows() if row.found_by == "seed")


def check_completeness(
    manifest: Manifest, records: Records, warc_dir: Path, scope: Scope, report: Report
) -> None:
    """Report queued URLs, unrecorded in-scope links and redirect chains that end nowhere."""
    for row in manifest.rows():
        if row.outcome == QUEUED:
            report.add(UNFINISHED_CRAWL, row.url, f"found by {row.found_by} on {row.parent}")
        elif row.outcome == REDIRECTED:
            _check_redirect(row, manifest, report)
    originals = {
        (entry.url, entry.date): key for key, entry in records.items() if entry.record_type == "response"
    }
    recorded = lru_cache(maxsize=RECORDED_CACHE)(lambda url: manifest.get(url) is not None)
    # Pages in WARC order, so each file is read forward once.
    with WarcReader(warc_dir) as pages, WarcReader(warc_dir) as revisited:
        for row in manifest.captures():
            if row.outcome != FETCHED or not _is_parsed(row):
                continue
            body, content_type = _read_page(row, records, originals, pages, revisited)
            if body is not None:
                _check_links(row, body, content_type, recorded, scope, report)


def _is_parsed(row: ManifestRow) -> bool:
    """True for pages the crawl took links from: 2xx HTML or CSS with a capture."""
    return (
        row.status is not None
        and 200 <= row.status < 300
        and row.content_type in PARSED_TYPES
        and row.warc_file is not None
    )


def _check_redirect(row: ManifestRow, manifest: Manifest, report: Report) -> None:
    report.stats["redirects followed"] += 1
    chain = [row.url]
    current = row
    for _ in range(MAX_REDIRECT_HOPS):
        target = current.redirect_to
        if not target:
            report.add(DANGLING_REDIRECT, row.url, f"{current.url} redirects to no URL")
            return
        if target in chain:
            report.add(DANGLING_REDIRECT, row.url, f"loop: {' -> '.join([*chain, target])}")
            return
        chain.append(target)
        found = manifest.get(target)
        if found is None:
            report.add(
                DANGLING_REDIRECT, row.url, f"chain ends at {target}, which the manifest does not hold"
            )
            return
        if found.outcome == FETCHED or (found.outcome in (FAILED, SKIPPED) and found.reason):
            return
        if found.outcome != REDIRECTED:
            report.add(DANGLING_REDIRECT, row.url, f"chain ends at {target} ({found.outcome})")
            return
        current = found
    report.add(DANGLING_REDIRECT, row.url, f"longer than {MAX_REDIRECT_HOPS} hops")


def _check_links(
    row: ManifestRow,
    body: bytes,
    content_type: str | None,
    recorded: Callable[[str], bool],
    scope: Scope,
    report: Report,
) -> None:
    report.stats["pages parsed"] += 1
    page = extract(body, row.url, mime_type(content_type), content_type)
    for link in page.links:
        requisite = link.kind == REQUISITE
        if scope.skip_reason(link.url, row.depth + 1, requisite) is not None:
            continue
        report.stats["in-scope links"] += 1
        if not recorded(link.url):
            kind = "requisite" if requisite else "link"
            report.add(UNRECORDED_LINK, link.url, f"{kind} on {row.url}, not in the manifest")


def _read_page(
    row: ManifestRow,
    records: Records,
    originals: dict[tuple[str, str], tuple[str, int]],
    pages: WarcReader,
    revisited: WarcReader,
) -> tuple[bytes | None, str | None]:
    """The decoded body of an archived page and its Content-Type; None if it cannot be read.

    A damaged record is left out: the integrity check has reported it.
    """
    entry = records.get((row.warc_file or "", row.warc_offset or 0))
    if entry is None or not entry.intact:
        return None, None
    try:
        stored = pages.record(entry.file, entry.offset)
        http = stored.http_headers
        if http is None:
            return None, None
        payload = stored.raw_stream
        if entry.record_type == "revisit":
            key = originals.get(entry.refers_to or ("", ""))
            original = records.get(key) if key else None
            if original is None or not original.intact:
                return None, None
            payload = revisited.record(original.file, original.offset).raw_stream
        # The crawl's decoder, with the crawl's limit: the same links as the crawl took.
        body = decode_stream(payload, http.get_header("Content-Encoding")).body
    except (OSError, WarcDamage, *PARSE_ERRORS):
        return None, None
    return body, http.get_header("Content-Type")
