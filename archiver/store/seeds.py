"""Where a crawl's seeds led: the row each seed's redirect chain ends at (seed_ends), the pages
redirected seeds landed on, which the crawl's scope takes in as seeds (seed_landings), and why
a seed archived no page (seed_failure), all read from the manifest."""

from __future__ import annotations

from collections.abc import Iterator

from archiver.content import error_status
from archiver.redirects import follow_chain
from archiver.scope import ROBOTS_UNREACHABLE
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED, ManifestRow
from archiver.urls import absolute_url


def seed_ends(manifest: Manifest) -> Iterator[tuple[str, ManifestRow | None]]:
    """Each seed's URL and the row its redirect chain ends at (its own row when it does not
    redirect; None when the chain loops or ends at a URL with no row)."""

    def hop(url: str) -> str | None:
        row = manifest.get(url)
        return row.redirect_to if row is not None and row.outcome == REDIRECTED else None

    for seed in manifest.rows(where="found_by = 'seed'"):
        final = follow_chain(seed.url, hop).final
        yield seed.url, manifest.get(final) if final else None


def seed_landings(manifest: Manifest) -> list[str]:
    """Where the seeds that redirect land, when a page was archived there: the crawl's
    scope takes them in as seeds (Scope.with_seeds)."""
    return [
        end.url
        for seed, end in seed_ends(manifest)
        if end is not None and end.url != seed and end.outcome == FETCHED
    ]


def seed_failure(seed: str, end: ManifestRow | None, manifest: Manifest | None = None) -> str | None:
    """Why a seed archived no page, given the row its chain ends at (see seed_ends); None if it
    did, or is still queued. A page the server answered with an error is no page archived.
    With ``manifest``, a seed a robots.txt out of reach kept out says what that robots.txt got."""
    if end is None:
        return "its redirects lead nowhere (a loop, or a URL never recorded)"
    landed = "" if end.url == seed else f"redirected to {end.url}: "
    if end.outcome == FETCHED and not error_status(end.status):
        return None
    if end.outcome == FETCHED:
        return f"{landed}HTTP {end.status}"
    if end.outcome in (FAILED, SKIPPED):
        why = f"{landed}{end.outcome}, {end.reason or 'no reason given'}"
        if end.reason == ROBOTS_UNREACHABLE and manifest is not None:
            why += f" ({_robots_answer(manifest, end.url)})"
        return why
    return None  # queued: an interrupted crawl, not a failure


def _robots_answer(manifest: Manifest, url: str) -> str:
    """What the robots.txt of ``url``'s host got, where its redirects ended: its error or status."""

    def hop(at: str) -> str | None:
        row = manifest.get(at)
        return row.redirect_to if row is not None and row.outcome == REDIRECTED else None

    robots = absolute_url("/robots.txt", url) or url
    final = follow_chain(robots, hop).final
    row = manifest.get(final) if final else None
    if row is None:
        return f"{robots}: no answer recorded"
    return f"{row.url}: {row.reason or f'HTTP {row.status}'}"
