"""Completeness of the crawl's endings: no URL left queued, every redirect chain ends at a
recorded outcome, no body cut short by the server, and a seed led to an archived page. These
read the manifest and the record index alone, no page: apart from the link checks, which read
every archived document."""

from __future__ import annotations

from archiver.redirects import LOOP, MAX_CHAIN_HOPS, TOO_LONG, follow_chain
from archiver.report import (
    CUT_BODY,
    DANGLING_REDIRECT,
    NOTHING_ARCHIVED,
    UNFINISHED_CRAWL,
    WRONG_REDIRECT,
    Report,
)
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, IS_REDIRECT, QUEUED, REDIRECTED, SKIPPED, ManifestRow
from archiver.store.seeds import seed_ends, seed_failure
from archiver.warc.integrity import Records


def check_endings(manifest: Manifest, records: Records, report: Report) -> None:
    """Report queued URLs, redirect chains that end nowhere, bodies cut short and a crawl that
    archived nothing."""
    finished = not manifest.count_by("outcome").get(QUEUED)
    for row in manifest.rows(where=f"outcome = '{QUEUED}' OR ({IS_REDIRECT})"):
        if row.outcome == QUEUED:
            found_on = f" on {row.parent}" if row.parent else ""
            report.add(UNFINISHED_CRAWL, row.url, f"found by {row.found_by}{found_on}")
            continue
        if row.outcome == REDIRECTED:
            _check_redirect(row, manifest, report)
        if row.final_url is not None or finished:  # a crawl stopped short fills it in at its end
            _check_final_url(row, manifest, report)
    for row in manifest.rows(where=f"final_url IS NOT NULL AND NOT ({IS_REDIRECT})"):
        report.add(WRONG_REDIRECT, row.url, f"a {row.outcome} row, no redirect, ends at {row.final_url}")
    # Cut on purpose at --max-file-size ("length") is declared; any other cut is the
    # server's, and the archive lacks the rest of the body.
    for entry in records.values("truncated IS NOT NULL AND truncated != 'length'"):
        report.add(CUT_BODY, entry.url, f"WARC-Truncated: {entry.truncated} at {entry.file}@{entry.offset}")
    _check_something_archived(manifest, report)


def _check_something_archived(manifest: Manifest, report: Report) -> None:
    """A snapshot none of whose seeds led to an archived page is not complete, however
    well its failures are recorded."""
    failures = [(seed, seed_failure(seed, end, manifest)) for seed, end in seed_ends(manifest)]
    if not failures:
        report.add(NOTHING_ARCHIVED, "manifest.sqlite3", "no seed is recorded")
    elif all(why is not None for _, why in failures):
        for seed, why in failures:
            report.add(NOTHING_ARCHIVED, seed, why or "")


def _check_redirect(row: ManifestRow, manifest: Manifest, report: Report) -> None:
    """Report a redirect chain that does not end at a recorded outcome (fetched, or a failure
    or skip with its reason): a failed redirect ends its chain, with the failure recorded."""
    report.stats["redirects followed"] += 1
    rows: dict[str, ManifestRow | None] = {row.url: row}

    def row_of(url: str) -> ManifestRow | None:
        if url not in rows:
            rows[url] = manifest.get(url)
        return rows[url]

    def next_hop(url: str) -> str | None:
        found = row_of(url)
        if found is None or found.outcome != REDIRECTED:
            return None
        return found.redirect_to or None

    chain = follow_chain(row.url, next_hop)
    if chain.ending == LOOP:
        report.add(DANGLING_REDIRECT, row.url, f"loop: {' -> '.join(chain.urls)}")
        return
    if chain.ending == TOO_LONG:
        report.add(DANGLING_REDIRECT, row.url, f"longer than {MAX_CHAIN_HOPS} hops")
        return
    end = chain.urls[-1]
    found = row_of(end)
    if found is None:
        report.add(DANGLING_REDIRECT, row.url, f"chain ends at {end}, which the manifest does not hold")
    elif found.outcome == REDIRECTED:
        report.add(DANGLING_REDIRECT, row.url, f"{end} redirects to no URL")
    elif not (found.outcome == FETCHED or (found.outcome in (FAILED, SKIPPED) and found.reason)):
        report.add(DANGLING_REDIRECT, row.url, f"chain ends at {end} ({found.outcome})")


def _check_final_url(row: ManifestRow, manifest: Manifest, report: Report) -> None:
    """A redirect row's final URL is where the recorded Locations lead, failed hops among them
    (Manifest.resolve_redirects()): the mirror's index.html shows it; None for a loop."""

    def next_hop(url: str) -> str | None:
        found = row if url == row.url else manifest.get(url)
        if found is None or found.outcome not in (REDIRECTED, FAILED):
            return None
        return found.redirect_to

    final = follow_chain(row.url, next_hop).final
    if row.final_url != final:
        report.add(
            WRONG_REDIRECT,
            row.url,
            f"its chain ends at {final or 'no URL (a loop)'}, its row says {row.final_url or 'none'}",
        )
