"""The snapshot's index.html: the crawl's summary and every URL it met, from Jinja2 templates.

Titles and URLs come from the archived site, so they are hostile input: the
environment autoescapes everything, and only http(s) URLs become links. The
page is rendered as a stream (a large crawl never sits in memory whole) and
needs no server: it works opened from disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import jinja2

from archiver.content import HTML_TYPES, mime_type
from archiver.errors import SnapshotError
from archiver.paths import quote_segment
from archiver.request_headers import shown_settings
from archiver.store.changes import Changes
from archiver.store.manifest import FAILED, FETCHED, REDIRECTED, SKIPPED, Manifest, ManifestRow
from archiver.store.previous import previous_path
from archiver.store.snapshot import Snapshot

MAX_SKIPPED_LISTED = 5000
"""Skipped URLs listed in the index at most (all are in the manifest)."""
CHANGES_LISTED = 200
"""URLs of each kind of change a re-archive's index lists at most (archiver diff lists all)."""


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
    env.filters["size"] = human_size
    return env


def local_href(local_path: str | None) -> str | None:
    """The link from index.html to a file under mirror/ (percent-encoded)."""
    if not local_path:
        return None
    return "mirror/" + "/".join(quote_segment(part) for part in local_path.split("/"))


def external_href(url: str | None) -> str | None:
    """``url`` if it is an http(s) URL safe to link to, else None."""
    if url and url.lower().startswith(("http://", "https://")):
        return url
    return None


def human_size(size: int | None) -> str:
    """1536 -> '1.5 KB'."""
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(size)


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
    return {
        "crawl": crawl,
        "settings": shown_settings(settings),  # an index is meant to be shared: no credentials
        "seeds": settings.get("seeds") or [],
        "stats": crawl.get("stats") or {},
        "outcomes": outcomes,
        "statuses": sorted(manifest.count_by("status").items()),
        "content_types": sorted(manifest.count_by("content_type").items(), key=lambda kv: -kv[1]),
        "pages": _rows(manifest, FETCHED, _is_page, f"{_MIRRORED} AND {_HTML_LIKE}"),
        "other_files": _rows(manifest, FETCHED, _is_other_file, f"{_MIRRORED} AND ({_NOT_HTML})"),
        "unmirrored": _rows(manifest, FETCHED, lambda row: not row.local_path, f"NOT ({_MIRRORED})"),
        "redirects": _redirects(manifest),
        "mirror_notes": manifest.mirror_notes(),
        "failed": _rows(manifest, FAILED),
        "skipped": manifest.rows(SKIPPED, limit=MAX_SKIPPED_LISTED),
        "skipped_total": outcomes.get(SKIPPED, 0),
        "max_skipped": MAX_SKIPPED_LISTED,
        "changes": _changes(snapshot),
    }


def _changes(snapshot: Snapshot) -> dict[str, Any] | None:
    """The change report of a re-archive (the first CHANGES_LISTED URLs of each kind), or None
    when the snapshot is not one, or its previous snapshot is gone."""
    previous = previous_path(snapshot)
    if previous is None or not Snapshot(previous).manifest_path.is_file():
        return None
    try:
        with Changes(Snapshot(previous).manifest_path, snapshot.manifest_path) as changes:
            shown = os.path.relpath(previous, snapshot.root)  # as crawl.json names it, no local path
            return {"previous": shown, **changes.summary(CHANGES_LISTED)}
    except SnapshotError:
        return None


def write_index(snapshot: Snapshot, manifest: Manifest) -> None:
    """Render index.html of ``snapshot`` (replaced atomically)."""
    template = environment().get_template("index.html")
    target = snapshot.index_html
    temporary = target.with_name(".index.html.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        for chunk in template.generate(**_context(snapshot, manifest)):
            out.write(chunk)
    os.replace(temporary, target)
