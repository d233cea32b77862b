"""The pages of a snapshot as a WACZ lists them (pages/pages.jsonl): its archived HTML pages,
the seeds' first, with their titles, read from the manifest."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from archiver.content import HTML_TYPES
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED, FOR_CRAWLERS, ManifestRow
from archiver.store.seeds import seed_ends

PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_PAGE = (
    f"status = 200 AND warc_file IS NOT NULL AND content_type IN ({', '.join(map(repr, sorted(HTML_TYPES)))})"
)
"""SQL condition of a page: an HTML document archived with status 200."""
_ID_NAMESPACE = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")  # RFC 4122's URL namespace


@dataclass(frozen=True)
class Page:
    """One line of pages.jsonl."""

    url: str
    ts: str
    """The capture's WARC-Date, which ReplayWeb.page looks the page up by."""
    title: str | None
    seed: bool

    def to_json(self) -> str:
        """The page as a line of pages.jsonl; its id is the same in every export of it.

        >>> print(Page("http://h/", "2026-01-02T03:04:05Z", "Home", True).to_json())
        {"id": "...", "url": "http://h/", "ts": "2026-01-02T03:04:05Z", "title": "Home", "seed": true}
        """
        entry: dict[str, object] = {
            "id": str(uuid.uuid5(_ID_NAMESPACE, f"{self.ts} {self.url}")),
            "url": self.url,
            "ts": self.ts,
        }
        if self.title:
            entry["title"] = self.title
        if self.seed:
            entry["seed"] = True
        return json.dumps(entry, ensure_ascii=False)


def _is_page(row: ManifestRow | None) -> bool:
    return (
        row is not None
        and row.outcome == FETCHED
        and row.status == 200
        and row.warc_file is not None
        and row.content_type in HTML_TYPES
        and not row.for_crawlers
    )


def snapshot_pages(manifest: Manifest) -> Iterator[Page]:
    """The archived pages (HTML, status 200; robots.txt and sitemaps are not pages): where each
    seed landed first, in the seeds' order, then the others in URL order."""
    seeds: dict[str, None] = {}
    for _seed, end in seed_ends(manifest):
        if end is not None and _is_page(end) and end.url not in seeds:
            seeds[end.url] = None
            yield Page(end.url, end.fetched_at or "", end.title, True)
    for row in manifest.rows(FETCHED, where=f"{_PAGE} AND NOT {FOR_CRAWLERS}"):
        if row.url not in seeds:
            yield Page(row.url, row.fetched_at or "", row.title, False)
