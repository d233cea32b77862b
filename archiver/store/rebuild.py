"""The manifest written again from the WARC files, when it is lost or damaged (``crawl --resume --repair``).

The WARC files are the record of truth: each response, revisit and rendered
DOM gives back its capture's row (URL, status, type, length, digest, date,
WARC location; a redirect's next URL from its Location; a page's title from
its body; the pages a render loaded as frames, found otherwise, from its DOM;
a revisit's payload length, and a 304's status and type, from the response it
refers to, in these files or in the snapshot a re-archive was made against).
What no record holds, how each URL was found, is found again the
way the crawl found it (store/rediscovery.py): from the seeds of crawl.json,
level by level, each link judged by the crawl's scope; a link to a URL with
no record gets the row the crawl gives a URL it meets, skipped or queued, so
the resume that follows fetches it (a URL that failed, or was kept out by
robots.txt, is asked again, and robots.txt decides again). The sitemaps the
crawl read (those robots.txt names, /sitemap.xml, those their indexes list) are
met again first, each hop of their redirects, and the URLs they list. A capture
nothing leads to keeps its facts, found by a link on no known page. The mirror
is then built whole at the end of the resume (no row names a mirror file), and
the CDXJ index written again beside the rows.

A damaged manifest is never deleted: it is set aside (renamed, with its -wal
and -shm files) for whoever wants to read what is left of it.

A crawl node's part of a shared crawl (``archiver merge DIR --repair``) is written again the
same way from its node's WARC files, but how each URL was found is found again over every
node's: the page that linked a URL, a redirect that led to it, may be another node's capture.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archiver.config import DEFAULT_USER_AGENT, CrawlConfig
from archiver.content import decode_stream, mime_type
from archiver.media_types import effective_content_type, needs_sniffing
from archiver.mime_sniffing import SNIFF_BYTES
from archiver.redirects import (
    REDIRECT_STATUSES,
    redirect_fragment,
    redirect_nowhere,
    redirect_target,
)
from archiver.report import Report
from archiver.robots_directives import robots_agent
from archiver.scope import MAX_LINKS_PER_PAGE, Scope
from archiver.store.index_rebuild import rebuild_index
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous, open_previous
from archiver.store.rediscovery import Rediscovery
from archiver.store.rows import FETCHED, REDIRECTED, ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.urls import try_normalize
from archiver.warc.dom import FRAMES_FIELD, page_of
from archiver.warc.files import warc_paths
from archiver.warc.integrity import WarcScan
from archiver.warc.reader import WarcReader
from archiver.warc.record_index import RecordEntry, RecordIndex

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
"""What SQLite keeps beside a database: set aside with it, or a new manifest would read them."""
DEFAULT_MAX_REDIRECTS: int = CrawlConfig.max_redirects
"""The crawl's --max-redirects where crawl.json names none."""
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


def crawl_seeds(settings: dict[str, Any]) -> list[str]:
    """The seeds of crawl.json's ``settings``, normalised (those that are URLs), as the crawl began.

    >>> crawl_seeds({"seeds": ["HTTP://Example.com", "not a url"]})
    ['http://example.com/']
    """
    return [seed for seed in (try_normalize(str(url)) for url in settings.get("seeds") or ()) if seed]


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
        find_again(manifest, reader, previous, settings, seeds)
        manifest.commit()
        rebuild_index(snapshot.cdxj_path, records, manifest)
        snapshot.cdxj_pending_path.unlink(missing_ok=True)  # the index holds every line now
    return captures


def find_again(
    manifest: Manifest,
    reader: WarcReader,
    previous: Previous | None,
    settings: dict[str, Any],
    seeds: list[str],
) -> None:
    """Find again how each URL of ``manifest`` was found (store/rediscovery.py), from ``seeds``
    under the scope of crawl.json's ``settings``, through the records ``reader`` reads (and a
    re-archive's ``previous`` snapshot); then resolve its redirect chains."""
    max_redirects = settings.get("max_redirects")
    hops = max_redirects if isinstance(max_redirects, int) else DEFAULT_MAX_REDIRECTS
    read_sitemaps = settings.get("sitemaps") is not False
    max_links = settings.get("max_links_per_page")
    max_links = max_links if isinstance(max_links, int) else MAX_LINKS_PER_PAGE
    scope = Scope.from_settings(settings)
    user_agent = settings.get("user_agent")
    agent = robots_agent(user_agent if isinstance(user_agent, str) else DEFAULT_USER_AGENT)
    obeyed = settings.get("obey_robots") is not False
    Rediscovery(
        manifest, reader, scope, hops, previous, read_sitemaps, max_links, agent if obeyed else None
    ).run(seeds)
    manifest.resolve_redirects()


def found_by_nothing(manifest: Manifest) -> bool:
    """Whether a capture of ``manifest`` is found by a link on no known page: one a manifest
    written again from the WARC files met on no page, such as a link of a page whose record was
    damaged, its links unread."""
    return next(manifest.rows(where="found_by = 'link' AND parent IS NULL", limit=1), None) is not None


def rebuild_part_manifest(
    part: Snapshot, node_prefix: str, crawl_prefix: str, settings: dict[str, Any]
) -> int:
    """Write the manifest of the crawl node's ``part`` (none must be there) again from its WARC
    files (``node_prefix``), then its CDXJ index; returns its captures. The rows are found again
    over the WARC files of the whole crawl (``crawl_prefix``: every node's), under the scope of
    crawl.json's ``settings``, and the part keeps those of its own captures and of the URLs no
    capture holds (skipped, or queued: the merge keeps what another part says of them)."""
    own = {path.name for path in warc_paths(part.warc_dir, node_prefix)}
    with tempfile.TemporaryDirectory(prefix=".rebuilding-", dir=part.root) as scratch:
        whole = Snapshot(Path(scratch), part.warc_dir)
        rebuild_manifest(whole, crawl_prefix, settings, crawl_seeds(settings))
        with (
            Manifest.open(whole.manifest_path, readonly=True) as found,
            Manifest.open(part.manifest_path) as manifest,
        ):
            captures = 0
            for row in found.rows():
                if row.warc_file is None or row.warc_file in own:
                    manifest.upsert(row)
                    captures += row.warc_file is not None
            manifest.commit()
            with RecordIndex() as records:
                WarcScan(Report(), records).scan(sorted(part.warc_dir / name for name in own))
                rebuild_index(part.cdxj_path, records, manifest)
    part.cdxj_pending_path.unlink(missing_ok=True)  # the index holds every line now
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
            for frame in _frames(entry, reader):
                manifest.framed(frame, page)
    manifest.commit()
    return captures


def _frames(dom: RecordEntry, reader: WarcReader) -> list[str]:
    """The pages, found otherwise, that the render whose DOM record is ``dom`` loaded as frames
    (ManifestRow.framed_by): its WARC-Page-Frames (warc/dom.py)."""
    try:
        named = reader.record(dom.file, dom.offset, dom.length).rec_headers.get_header(FRAMES_FIELD)
    except Exception:  # noqa: BLE001 - damaged: its page is rendered again by the resume
        return []
    return named.split() if named else []


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
