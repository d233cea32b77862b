"""The snapshot's index.html: the crawl's summary and every URL it met, from Jinja2 templates.

Titles and URLs come from the archived site, so they are hostile input: the
environment autoescapes everything, and only http(s) URLs become links. The
page is rendered as a stream (a large crawl never sits in memory whole) and
needs no server: it works opened from disk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterator
from datetime import datetime
from importlib.resources import files
from typing import Any

import jinja2

from archiver.content import HTML_TYPES, mime_type
from archiver.errors import SnapshotError, WriteError
from archiver.paths import quote_segment
from archiver.request_headers import shown_settings
from archiver.sizes import human_bytes
from archiver.store.changes import Changes
from archiver.store.manifest import Manifest
from archiver.store.previous import previous_path
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED, ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.store.totals import summary

INDEX_STATE = "index_html"
"""The crawl_state entry of the index.html written last: its SHA-256 and size, as JSON."""

MAX_SKIPPED_LISTED = 5000
"""Skipped URLs listed in the index at most (all are in the manifest)."""
CHANGES_LISTED = 200
"""URLs of each kind of change a re-archive's index lists at most (archiver diff lists all)."""
TYPES_CHARTED = 7
"""Content types the chart shows a bar each; the rest share one."""


def _load_template(name: str) -> str | None:
    resource = files("archiver.templates").joinpath(name)
    return resource.read_text(encoding="utf-8") if resource.is_file() else None


def environment() -> jinja2.Environment:
    """The Jinja2 environment of archiver's templates (packaged in archiver.templates)."""
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load_template),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        # Compiling the template costs more than rendering a small site's index: its compiled
        # form is kept between runs (in the user's own folder of the system's temporary
        # folder, made private and checked by Jinja2), keyed by the template's checksum.
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )
    env.filters["local_href"] = local_href
    env.filters["external_href"] = external_href
    env.filters["size"] = human_bytes
    env.filters["count"] = "{:,}".format
    return env


def local_href(local_path: str | None) -> str | None:
    """The link from index.html to a file under mirror/ (percent-encoded)."""
    if not local_path:
        return None
    return "mirror/" + "/".join(quote_segment(part) for part in local_path.split("/"))


def crawl_span(started: str | None, finished: str | None) -> str:
    """When the crawl ran, from crawl.json's times: '23 Nov 2026 21:38:33 to 21:40:02 UTC'.

    >>> crawl_span("2026-11-23T21:38:33Z", "2026-11-24T01:02:03Z")
    '23 Nov 2026 21:38:33 to 24 Nov 2026 01:02:03 UTC'
    >>> crawl_span("2026-11-23T21:38:33Z", None), crawl_span("soon", None), crawl_span(None, 5)
    ('23 Nov 2026 21:38:33 UTC', 'soon', '5')
    """
    try:
        start = datetime.fromisoformat(started or "")
        end = datetime.fromisoformat(finished) if finished else None
    except (TypeError, ValueError):  # crawl.json is the user's file: any JSON may be there
        return " to ".join(str(stamp) for stamp in (started, finished) if stamp)
    text = start.strftime("%d %b %Y %H:%M:%S")
    if end is not None:
        text += " to " + end.strftime("%H:%M:%S" if end.date() == start.date() else "%d %b %Y %H:%M:%S")
    return text + " UTC"


def external_href(url: str | None) -> str | None:
    """``url`` if it is an http(s) URL safe to link to, else None."""
    if url and url.lower().startswith(("http://", "https://")):
        return url
    return None


def _rows(manifest: Manifest, outcome: str, wanted: Any = None, where: str = "") -> Iterator[ManifestRow]:
    """The rows with ``outcome`` that are ``wanted``; ``where`` (SQL) passes a superset of them."""
    for row in manifest.rows(outcome, where):
        if wanted is None or wanted(row):
            yield row


# Each table of fetched URLs skips most of them: SQL leaves out the rows it certainly
# does not want (content_type holds MIME types, as mime_type() gives them).
_HTML_LIKE = "content_type LIKE '%html%'"
_NOT_HTML = f"content_type IS NULL OR content_type NOT IN ({', '.join(map(repr, sorted(HTML_TYPES)))})"
_MIRRORED = "local_path IS NOT NULL AND local_path != ''"


def _is_page(row: ManifestRow) -> bool:
    return bool(row.local_path) and mime_type(row.content_type) in HTML_TYPES


def _is_other_file(row: ManifestRow) -> bool:
    return bool(row.local_path) and mime_type(row.content_type) not in HTML_TYPES


def _unless_empty(items: Iterator[Any]) -> Iterator[Any] | None:
    """``items``, or None if it yields nothing (known by reading its first item only)."""
    first = next(items, _NOTHING)
    return None if first is _NOTHING else itertools.chain([first], items)


_NOTHING = object()


def _redirects(manifest: Manifest) -> Iterator[dict[str, Any]]:
    for row in manifest.rows(REDIRECTED):
        final = manifest.get(row.final_url) if row.final_url else None
        yield {"row": row, "final_path": final.local_path if final else None}


def _context(snapshot: Snapshot, manifest: Manifest) -> dict[str, Any]:
    try:
        crawl = snapshot.read_crawl_json()
    except SnapshotError:  # an index without crawl.json still lists the manifest
        crawl = {}
    outcomes = manifest.count_by("outcome")
    settings = crawl.get("settings") or {}
    totals = summary(manifest)
    runs = crawl.get("runs") or [{}]
    return {
        "crawl": crawl,
        "crawled": crawl_span(crawl.get("started"), crawl.get("finished")) if crawl.get("started") else None,
        "stop_reason": runs[-1].get("stop_reason") if crawl.get("status") == "interrupted" else None,
        "settings": shown_settings(settings),  # an index is meant to be shared: no credentials
        "seeds": settings.get("seeds") or [],
        "totals": totals,
        "cards": _cards(totals),
        "status_bars": _bars([(status, count) for status, count in totals["by_status"].items()]),
        "type_bars": _type_bars(totals["by_content_type"]),
        # Each list is None when empty, so the page shows no table of headers alone.
        "pages": _unless_empty(_rows(manifest, FETCHED, _is_page, f"{_MIRRORED} AND {_HTML_LIKE}")),
        "other_files": _unless_empty(
            _rows(manifest, FETCHED, _is_other_file, f"{_MIRRORED} AND ({_NOT_HTML})")
        ),
        "unmirrored": _unless_empty(
            _rows(manifest, FETCHED, lambda row: not row.local_path, f"NOT ({_MIRRORED})")
        ),
        "redirects": _unless_empty(_redirects(manifest)),
        "mirror_notes": _unless_empty(manifest.mirror_notes()),
        "failed": _unless_empty(_rows(manifest, FAILED)),
        "skipped": manifest.rows(SKIPPED, limit=MAX_SKIPPED_LISTED),
        "skipped_total": outcomes.get(SKIPPED, 0),
        "max_skipped": MAX_SKIPPED_LISTED,
        "changes": _changes(snapshot, crawl.get("stats") or {}),
    }


def _changes(snapshot: Snapshot, stats: dict[str, Any]) -> dict[str, Any] | None:
    """The change report of a re-archive (the first CHANGES_LISTED URLs of each kind); only the
    counts crawl.json kept (``stats``) once its previous snapshot is gone; None if it is none."""
    previous = previous_path(snapshot)
    if previous is None:
        return None
    shown = os.path.relpath(previous, snapshot.root)  # as crawl.json names it: no local path
    try:
        with Changes(Snapshot(previous).manifest_path, snapshot.manifest_path) as changes:
            return {"previous": shown, **changes.summary(CHANGES_LISTED)}
    except SnapshotError:
        kept = stats.get("changes")
        if not isinstance(kept, dict):
            return None
        return {"previous": shown, "counts": kept, "new": [], "changed": [], "gone": []}


def _cards(totals: dict[str, Any]) -> list[tuple[str, int, str]]:
    """The counts at the top, in the order a reader asks: what was fetched, then the rest
    (label, count, CSS class); a count that is zero and tells nothing is left out."""
    cards = [("fetched", totals["fetched"], "")]
    cards += [("redirected", totals["redirected"], "")] if totals["redirected"] else []
    cards += [("failed", totals["failed"], "bad")] if totals["failed"] else []
    cards += [("skipped", totals["skipped"], "")]
    cards += [("still queued", totals["queued"], "bad")] if totals["queued"] else []
    return cards


def _bars(counts: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """A bar chart's rows: label, count, and the bar's width in percent of the longest."""
    longest = max((count for _, count in counts), default=0) or 1
    return [
        {"label": label, "count": count, "width": round(100 * count / longest, 1), "kind": str(label)[:1]}
        for label, count in counts
    ]


def _type_bars(by_type: dict[str, int]) -> list[dict[str, Any]]:
    """The content types' bars, most common first; past TYPES_CHARTED, one bar for the rest."""
    kinds = list(by_type.items())
    if len(kinds) > TYPES_CHARTED + 1:
        rest = kinds[TYPES_CHARTED:]
        kinds = [*kinds[:TYPES_CHARTED], (f"{len(rest)} other types", sum(count for _, count in rest))]
    return _bars(kinds)


def write_index(snapshot: Snapshot, manifest: Manifest) -> None:
    """Render index.html of ``snapshot`` (replaced atomically)."""
    template = environment().get_template("index.html")
    target = snapshot.index_html
    temporary = target.with_name(".index.html.tmp")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(temporary, "wb") as out:
            for chunk in template.generate(**_context(snapshot, manifest)):
                data = chunk.encode("utf-8")
                digest.update(data)
                size += len(data)
                out.write(data)
        os.replace(temporary, target)
    except OSError as exc:  # a full disk: the index.html before stays
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    # What was written, for verify to check as it checks the mirror's files.
    manifest.keep_state(INDEX_STATE, json.dumps({"sha256": digest.hexdigest(), "size": size}))
    manifest.commit()
