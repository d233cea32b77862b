"""The manifest written again from the WARC files, when it is lost or damaged (``crawl --resume --repair``).

The WARC files are the record of truth: each response, revisit and rendered
DOM gives back its capture's row (URL, status, type, length, digest, date,
WARC location; a redirect's next URL from its Location; a page's title from
its body; a revisit's payload length, and a 304's status and type, from the
response it refers to, in these files or in the snapshot a re-archive was made
against). What no record holds, how each URL was found, is found again the
way the crawl found it: from the seeds of crawl.json, level by level, through
each chain of redirects and the links of each page (read as verify reads
them), each link judged by the crawl's scope. A link to a URL with no record
gets the row the crawl gives a URL it meets: skipped with its reason, or
queued, so the resume that follows fetches it (a URL that failed, or was kept
out by robots.txt, is asked again, and robots.txt decides again). A capture
no seed leads to (a URL a sitemap listed) keeps its facts, found by a link on
no known page. The mirror is then built whole at the end of the resume (no
row names a mirror file), and the CDXJ index written again beside the rows.

A damaged manifest is never deleted: it is set aside (renamed, with its -wal
and -shm files) for whoever wants to read what is left of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archiver.config import CrawlConfig
from archiver.content import decode_stream, is_parsed, mime_type
from archiver.findings import extract
from archiver.links import REQUISITE, Link
from archiver.media_types import as_taken, effective_content_type, needs_sniffing
from archiver.mime_sniffing import SNIFF_BYTES
from archiver.redirects import (
    REDIRECT_STATUSES,
    redirect_failure,
    redirect_fragment,
    redirect_nowhere,
    redirect_target,
    robots_redirects,
)
from archiver.report import Report
from archiver.scope import Scope
from archiver.store.crawler_chains import chain_rows
from archiver.store.index_rebuild import rebuild_index
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous, open_previous
from archiver.store.referrers import stored_body
from archiver.store.rows import FAILED, FETCHED, QUEUED, REDIRECTED, SKIPPED, ManifestRow
from archiver.store.seeds import seed_landings
from archiver.store.snapshot import Snapshot
from archiver.warc.dom import DOM_CONTENT_TYPE, page_of
from archiver.warc.files import warc_paths
from archiver.warc.integrity import WarcScan
from archiver.warc.reader import WarcReader
from archiver.warc.record_index import RecordEntry, RecordIndex

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
"""What SQLite keeps beside a database: set aside with it, or a new manifest would read them."""
DOM_READ_LIMIT = 64 * 1024 * 1024
"""Bytes of a rendered DOM read for its links."""
DEFAULT_MAX_REDIRECTS: int = CrawlConfig.max_redirects
"""The crawl's --max-redirects where crawl.json names none."""
SEEN = "rebuild_met"
"""The temporary table of the URLs met while how each was found is found again."""
WAITING = "rebuild_waiting"
"""The temporary table of the URLs met and not yet given their rows, level by level."""
MET_BATCH = 1000
"""URLs read at once from the table of those waiting: what the walk holds in memory at most."""
CHAIN_SEPARATOR = "\n"
"""Between the URLs of a redirect's chain in the table of those waiting (no URL holds one)."""
NOT_MODIFIED = 304
"""The status of a revisit that a 304 answer to a conditional request wrote."""
RENDERED = "rendered (its DOM is in the WARC files)"
"""The render reason of a page whose rendered DOM a rebuilt manifest found in the WARC files."""


def set_aside_manifest(snapshot: Snapshot) -> str | None:
    """Rename a damaged manifest (and SQLite's files beside it) so a new one can be written;
    returns the new name (relative to the snapshot), or None if there was none."""
    path = snapshot.manifest_path
    if not path.exists():
        for suffix in SQLITE_SIDE_FILES:  # left without their database: they belong to no file now
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", *SQLITE_SIDE_FILES):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, f"{kept}{suffix}")
    return kept.name


def rebuild_manifest(snapshot: Snapshot, prefix: str, settings: dict[str, Any], seeds: list[str]) -> int:
    """Write the manifest of ``snapshot`` (none must be there) again from the WARC files of the
    crawl (``prefix``), found again from ``seeds`` under the scope of crawl.json's ``settings``;
    then its CDXJ index. Returns the captures found."""
    with RecordIndex() as records, contextlib.ExitStack() as held:
        WarcScan(Report(), records).scan(warc_paths(snapshot.warc_dir, prefix))
        manifest = held.enter_context(Manifest.open(snapshot.manifest_path))
        reader = held.enter_context(WarcReader(snapshot.warc_dir))
        # A re-archive's revisits refer to records of its previous snapshot (or of one before).
        previous = open_previous(snapshot)
        if previous is not None:
            held.enter_context(previous)
        captures = _write_captures(manifest, records, reader, previous)
        max_redirects = settings.get("max_redirects")
        hops = max_redirects if isinstance(max_redirects, int) else DEFAULT_MAX_REDIRECTS
        _Discovery(manifest, reader, Scope.from_settings(settings), hops, previous).run(seeds)
        manifest.resolve_redirects()
        manifest.commit()
        rebuild_index(snapshot.cdxj_path, records, manifest)
        snapshot.cdxj_pending_path.unlink(missing_ok=True)  # the index holds every line now
    return captures


def _write_captures(
    manifest: Manifest, records: RecordIndex, reader: WarcReader, previous: Previous | None
) -> int:
    """A row for each response and revisit record (the last of a URL, as the crawl keeps a
    robots.txt asked again), and each page's rendered DOM; returns how many captures."""
    captures = 0
    for entry in records.values("record_type IN ('response', 'revisit')"):
        manifest.upsert(_capture_row(entry, records, reader, previous))
        captures += 1
    for entry in records.values("record_type = 'resource'"):
        page = page_of(entry.url)
        if page is not None and manifest.get(page) is not None:
            manifest.set_render(page, RENDERED, None, (entry.file, entry.offset, entry.length))
    manifest.commit()
    return captures


def _original(entry: RecordEntry, records: RecordIndex, previous: Previous | None) -> _Original | None:
    """What the revisit ``entry`` refers to: a response of the WARC files read, or of the
    snapshot a re-archive was made against (or one before it); None if neither holds it."""
    refers_to = entry.refers_to or ("", "")
    own = records.get(records.response_at(*refers_to) or ("", -1))
    if own is not None:
        return _Original(own.status, own.mime or None, own.payload_length)
    earlier = previous.at(*refers_to) if previous is not None and all(refers_to) else None
    if earlier is None:
        return None
    return _Original(earlier.row.status, earlier.row.content_type, earlier.row.length)


def _capture_row(
    entry: RecordEntry, records: RecordIndex, reader: WarcReader, previous: Previous | None
) -> ManifestRow:
    """The row of the capture ``entry`` holds, as the writer wrote it (how it was found aside)."""
    status, content_type, length = entry.status, entry.mime or None, entry.payload_length
    if entry.record_type == "revisit":  # its payload is its original's
        original = _original(entry, records, previous)
        length = original.length if original is not None else None
        if original is not None and status == NOT_MODIFIED:
            # A 304 confirmed the original: the URL keeps its status and type (revisiting.py).
            status, content_type = original.status, original.content_type
    row = ManifestRow(
        url=entry.url,
        found_by="link",
        depth=1,
        outcome=FETCHED,
        status=status,
        content_type=content_type,
        length=length,
        payload_digest=entry.payload_digest,
        fetched_at=entry.date,
        warc_file=entry.file,
        warc_offset=entry.offset,
        warc_length=entry.length,
        record_type=entry.record_type,
        truncated=entry.truncated == "length",
    )
    redirect = status in REDIRECT_STATUSES  # the ones the crawl follows: a 300 or 305 is a page
    if not entry.intact or not (redirect or entry.record_type == "response"):
        return row
    try:
        record = reader.record(entry.file, entry.offset, entry.length)
        http = record.http_headers
        if http is None:
            return row
        if not redirect:  # its type as the crawl took it: sniffed from its body where it names none
            if not needs_sniffing(http.headers):
                return row
            coding = http.get_header("Content-Encoding")
            body = decode_stream(record.raw_stream, coding, SNIFF_BYTES).body
            return dataclasses.replace(
                row, content_type=mime_type(effective_content_type(http.headers, lambda: body)) or None
            )
    except Exception:  # noqa: BLE001 - damaged: repaired (fetched again) by the resume
        return row
    location = http.get_header("Location")
    target = redirect_target(location, entry.url)
    if target is None:
        return dataclasses.replace(row, reason=redirect_nowhere(entry.status or 0, location, entry.url))
    fragment = redirect_fragment(location, entry.url)
    return dataclasses.replace(row, outcome=REDIRECTED, redirect_to=target, redirect_fragment=fragment)


@dataclasses.dataclass(frozen=True)
class _Original:
    """What a revisit's row takes of the response it refers to."""

    status: int | None
    content_type: str | None
    length: int | None
    """Bytes of its payload."""


@dataclasses.dataclass(frozen=True)
class _Met:
    """A URL met on the way from the seeds, as the crawl meets it (discovery.consider)."""

    url: str
    depth: int
    found_by: str
    parent: str | None
    requisite: bool = False
    chain: tuple[str, ...] = ()
    """For a redirect's target: the URLs of its chain before it."""


def _found_on(page: ManifestRow, links: Iterable[Link]) -> Iterator[_Met]:
    """The URLs ``links`` of ``page`` name, met one level deeper, as links or requisites."""
    for link in links:
        requisite = link.kind == REQUISITE
        yield _Met(link.url, page.depth + 1, "requisite" if requisite else "link", page.url, requisite)


class _Discovery:
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

    def _unmet_row(self, url: str) -> ManifestRow | None:
        row = self.manifest.get(url)
        return row if row is not None and self.first_meeting(url) else None

    def run(self, seeds: list[str]) -> None:
        """Meet the seeds (robots.txt and sitemaps first: the crawl asks them before any page),
        then everything they lead to; then the captures nothing led to."""
        for row in self.manifest.rows(where="url LIKE '%/robots.txt' OR url LIKE '%/sitemap%.xml'"):
            at_root = "/" not in row.url.partition("://")[2].partition("/")[2]
            if at_root and self.first_meeting(row.url):
                found_by = "robots" if row.url.endswith("/robots.txt") else "sitemap"
                hops = robots_redirects(self.max_redirects) if found_by == "robots" else self.max_redirects
                for hop in chain_rows(row, found_by, hops, self._unmet_row):
                    self._found(hop)
        for seed in seeds:
            self.wait(_Met(seed, 0, "seed", None))
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

    def wait(self, met: _Met) -> None:
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

    def waiting(self) -> Iterator[_Met]:
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
                _Met(
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

    def meet(self, met: _Met) -> None:
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
            hop = _Met(row.redirect_to, met.depth, "redirect", met.url, met.requisite, (*chain, met.url))
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
            for met in _found_on(row, page.links):
                self.wait(met)
        if row.dom_warc_file is not None and row.dom_warc_offset is not None:
            try:
                dom = self.reader.read(row.dom_warc_file, row.dom_warc_offset, DOM_READ_LIMIT)
            except Exception:  # noqa: BLE001 - damaged: its page is rendered again by the resume
                return title
            page = extract(dom.payload, row.url, "text/html", DOM_CONTENT_TYPE)
            title = page.title or title
            for met in _found_on(row, page.links):
                self.wait(met)
        return title
