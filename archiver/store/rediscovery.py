"""How each URL of a manifest written again from the WARC files was found, found again from the seeds.

No record holds how a URL was found: it is found again the way the crawl found it, from the
seeds of crawl.json, level by level, through each chain of redirects and the links of each page
(read as verify reads them, its rendered DOM's too), each link judged by the crawl's scope. A
link to a URL with no record gets the row the crawl gives a URL it meets: skipped with its
reason, or queued, so the resume that follows fetches it. The URLs met, and those waiting to be
met, wait in SQLite: memory does not grow with the site (store/rebuild.py writes the rest).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from archiver.content import is_parsed, mime_type
from archiver.findings import extract
from archiver.links import REQUISITE, Link
from archiver.media_types import as_taken
from archiver.redirects import redirect_failure
from archiver.scope import Scope
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.referrers import stored_body
from archiver.store.rows import FAILED, FETCHED, QUEUED, REDIRECTED, SKIPPED, ManifestRow
from archiver.store.seeds import seed_landings
from archiver.warc.dom import DOM_CONTENT_TYPE
from archiver.warc.reader import WarcReader

DOM_READ_LIMIT = 64 * 1024 * 1024
"""Bytes of a rendered DOM read for its links."""
SEEN = "rebuild_met"
"""The temporary table of the URLs met while how each was found is found again."""
WAITING = "rebuild_waiting"
"""The temporary table of the URLs met and not yet given their rows, level by level."""
MET_BATCH = 1000
"""URLs read at once from the table of those waiting: what the walk holds in memory at most."""
CHAIN_SEPARATOR = "\n"
"""Between the URLs of a redirect's chain in the table of those waiting (no URL holds one)."""


@dataclasses.dataclass(frozen=True)
class Met:
    """A URL met on the way from the seeds, as the crawl meets it (discovery.consider)."""

    url: str
    depth: int
    found_by: str
    parent: str | None
    requisite: bool = False
    chain: tuple[str, ...] = ()
    """For a redirect's target: the URLs of its chain before it."""


def found_on(page: ManifestRow, links: Iterable[Link]) -> Iterator[Met]:
    """The URLs ``links`` of ``page`` name, met one level deeper, as links or requisites."""
    for link in links:
        requisite = link.kind == REQUISITE
        yield Met(link.url, page.depth + 1, "requisite" if requisite else "link", page.url, requisite)


class Rediscovery:
    """How each URL was found, found again from the seeds, level by level."""

    def __init__(
        self,
        manifest: Manifest,
        reader: WarcReader,
        scope: Scope,
        max_redirects: int,
        previous: Previous | None = None,
    ) -> None:
        self.max_redirects = max_redirects
        self.previous = previous
        """Where the bodies of a re-archive's revisits are (store/stored.py)."""
        self.manifest = manifest
        self.reader = reader
        self.scope = scope
        self._noted = 0
        """URLs noted in the table of those waiting so far: each one's place in its level."""
        # The URLs met so far, and those waiting to be met, on disk past SQLite's cache: memory
        # does not grow with the site.
        manifest.connection.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {SEEN} (url TEXT PRIMARY KEY) WITHOUT ROWID"
        )
        manifest.connection.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {WAITING} (depth INTEGER NOT NULL, place INTEGER NOT NULL, "
            "url TEXT NOT NULL, found_by TEXT NOT NULL, parent TEXT, requisite INTEGER NOT NULL, "
            "chain TEXT NOT NULL, PRIMARY KEY (depth, place)) WITHOUT ROWID"
        )

    def first_meeting(self, url: str) -> bool:
        """True the first time ``url`` is met (noted as met)."""
        added = self.manifest.connection.execute(f"INSERT OR IGNORE INTO {SEEN} VALUES (?)", (url,))
        return added.rowcount == 1

    def run(self, seeds: list[str]) -> None:
        """Meet the seeds (robots.txt and sitemaps first: the crawl asks them before any page),
        then everything they lead to; then the captures nothing led to."""
        for row in self.manifest.rows(where="url LIKE '%/robots.txt' OR url LIKE '%/sitemap%.xml'"):
            at_root = "/" not in row.url.partition("://")[2].partition("/")[2]
            if at_root and self.first_meeting(row.url):
                found_by = "robots" if row.url.endswith("/robots.txt") else "sitemap"
                self._found(dataclasses.replace(row, found_by=found_by, depth=0, parent=None))
        for seed in seeds:
            self.wait(Met(seed, 0, "seed", None))
        depth = 0
        for met in self.waiting():
            if met.depth != depth:
                self._level_met(depth)
                depth = met.depth
            self.meet(met)
        self._level_met(depth)

    def _level_met(self, depth: int) -> None:
        """Commit the rows of the level ``depth``; where the seeds' redirects landed, met on the
        first, is in scope as they are."""
        self.manifest.commit()
        if depth == 0:
            self.scope = self.scope.with_seeds(seed_landings(self.manifest))

    def wait(self, met: Met) -> None:
        """Note ``met`` to be met after what was noted before it at its depth: a redirect's next
        URL on the level of its source, a page's links on the next."""
        self._noted += 1
        self.manifest.connection.execute(
            f"INSERT INTO {WAITING} VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                met.depth,
                self._noted,
                met.url,
                met.found_by,
                met.parent,
                int(met.requisite),
                CHAIN_SEPARATOR.join(met.chain),
            ),
        )

    def waiting(self) -> Iterator[Met]:
        """The URLs noted by wait(), level by level, each level in the order they were noted
        (also those noted while it is read), MET_BATCH at a time: the walk holds no more. Each
        batch is of one level, the lowest waiting: a redirect met at the end of a level puts its
        next URL on that level still."""
        while True:
            found = self.manifest.connection.execute(
                f"SELECT depth, place, url, found_by, parent, requisite, chain FROM {WAITING} "
                f"WHERE depth = (SELECT min(depth) FROM {WAITING}) ORDER BY place LIMIT ?",
                (MET_BATCH,),
            ).fetchall()
            if not found:
                return
            last_depth, last_place = found[-1][0], found[-1][1]
            self.manifest.connection.execute(
                f"DELETE FROM {WAITING} WHERE depth = ? AND place <= ?", (last_depth, last_place)
            )
            batch = [
                Met(
                    url,
                    depth,
                    found_by,
                    parent,
                    bool(requisite),
                    tuple(chain.split(CHAIN_SEPARATOR)) if chain else (),
                )
                for depth, _place, url, found_by, parent, requisite, chain in found
            ]
            del found
            yield from batch

    def meet(self, met: Met) -> None:
        """Give ``met`` its row, and note what it leads to (wait()): its redirect's next URL, its
        page's links."""
        if not self.first_meeting(met.url):
            return
        row = self.manifest.get(met.url)
        if row is None:
            in_chain = met.found_by == "seed" or (met.found_by == "redirect" and met.depth == 0)
            reason = (
                None
                if met.found_by == "seed"
                else self.scope.skip_reason(met.url, met.depth, met.requisite or in_chain)
            )
            outcome = SKIPPED if reason else QUEUED
            self.manifest.upsert(ManifestRow(met.url, met.found_by, met.depth, outcome, met.parent, reason))
            return
        row = dataclasses.replace(row, found_by=met.found_by, parent=met.parent, depth=met.depth)
        chain = met.chain if met.found_by == "redirect" else ()
        failure = None
        if row.outcome == REDIRECTED and row.redirect_to:  # failed as the crawl fails it
            failure = redirect_failure(row.redirect_to, (*chain, met.url), len(chain), self.max_redirects)
        if failure is not None:
            row = dataclasses.replace(row, outcome=FAILED, reason=failure)
        elif row.outcome == REDIRECTED and row.redirect_to:
            hop = Met(row.redirect_to, met.depth, "redirect", met.url, met.requisite, (*chain, met.url))
            self.wait(hop)
        elif row.outcome == FETCHED and is_parsed(row.status, mime_type(row.content_type) or "text/html"):
            title = self._links(row)
            row = dataclasses.replace(row, title=title if title is not None else row.title)
        self._found(row)

    def _found(self, row: ManifestRow) -> None:
        """Write how ``row``'s capture was found, its title, and a redirect's failure (upsert()
        keeps the first)."""
        self.manifest.connection.execute(
            "UPDATE urls SET found_by = ?, parent = ?, depth = ?, title = ?, outcome = ?, reason = ? "
            "WHERE url = ?",
            (row.found_by, row.parent, row.depth, row.title, row.outcome, row.reason, row.url),
        )

    def _links(self, row: ManifestRow) -> str | None:
        """Note the links of ``row``'s page (and of its rendered DOM) to be met on the next level;
        returns the page's title."""
        read = stored_body(self.manifest, self.reader, row, self.previous)
        title = None
        if read is not None:
            body, content_type = read
            content_type = as_taken(content_type, row.content_type)
            page = extract(body, row.url, mime_type(content_type), content_type)
            title = page.title
            for met in found_on(row, page.links):
                self.wait(met)
        if row.dom_warc_file is not None and row.dom_warc_offset is not None:
            try:
                dom = self.reader.read(row.dom_warc_file, row.dom_warc_offset, DOM_READ_LIMIT)
            except Exception:  # noqa: BLE001 - damaged: its page is rendered again by the resume
                return title
            page = extract(dom.payload, row.url, "text/html", DOM_CONTENT_TYPE)
            title = page.title or title
            for met in found_on(row, page.links):
                self.wait(met)
        return title
