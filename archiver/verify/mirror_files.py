"""Mirror files: every file the mirror build wrote is still there, holding the bytes it wrote.

The build recorded each file's SHA-256 and size in the manifest (table
``mirror_files``); each file is read back and hashed, a megabyte at a time.
A capture the build could not write a file of (the file system refused its
name, say) has no local path: reported too, once the mirror holds any file.
That reads the whole mirror once: I/O-bound, about what reading the files
costs (SHA-256 runs at several hundred MB/s a core).
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
from pathlib import Path

from archiver.errors import UnsafePathError
from archiver.mirror.build import CAPTURED
from archiver.mirror.index_page import INDEX_STATE
from archiver.mirror.output import file_digest
from archiver.redirects import NO_PAGE_STATUSES
from archiver.report import (
    CHANGED_MIRROR_FILE,
    LOST_MIRROR_FILE,
    SHARED_MIRROR_FILE,
    UNMIRRORED_CAPTURE,
    UNRECORDED_MIRROR_FILE,
    Report,
)
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED
from archiver.warc.safe_join import safe_join

_UNRECORDED = (
    "SELECT url, local_path FROM urls WHERE local_path IS NOT NULL AND local_path != '' "
    "AND local_path NOT IN (SELECT path FROM mirror_files) ORDER BY url"
)
_UNMIRRORED = (
    "SELECT url FROM urls WHERE outcome = ? AND record_type IN (?, ?) AND warc_file IS NOT NULL "
    "AND warc_offset IS NOT NULL AND (status IS NULL OR status NOT IN "
    f"({', '.join('?' * len(NO_PAGE_STATUSES))})) "
    "AND (local_path IS NULL OR local_path = '') ORDER BY url"
)
"""Captures the mirror has a file of (mirror.build.is_mirrored) that have no local path."""
_RECORDED = "SELECT 1 FROM mirror_files WHERE path = ?"
_SHARED = (
    "SELECT local_path, COUNT(DISTINCT payload_digest), MIN(url) FROM urls WHERE local_path IS NOT NULL "
    "AND local_path != '' GROUP BY local_path HAVING COUNT(DISTINCT payload_digest) > 1 ORDER BY local_path"
)
"""Mirror files that the rows of URLs of different bodies name: the mirror gives URLs of one body
one file (a revisit's, its original's), never one to URLs of two."""


def check_mirror_files(manifest: Manifest, mirror_dir: Path, report: Report) -> None:
    """Report mirror files that changed or went missing, and local paths with no recorded file."""
    try:
        unrecorded = manifest.connection.execute(_UNRECORDED).fetchmany(1000)
        files = manifest.mirror_files()
        first = next(files, None)
    except sqlite3.OperationalError:  # a manifest written before the mirror's files were recorded
        report.add(UNRECORDED_MIRROR_FILE, "mirror/", "the manifest records none of the mirror's files")
        return
    for url, local_path in unrecorded:
        report.add(UNRECORDED_MIRROR_FILE, f"mirror/{local_path}", f"local path of {url}")
    for local_path, count, url in manifest.connection.execute(_SHARED).fetchmany(1000):
        report.add(
            SHARED_MIRROR_FILE,
            f"mirror/{local_path}",
            f"local path of {url} and of URLs of {count - 1} other bod{'y' if count == 2 else 'ies'}",
        )
    if first is None:
        if _holds_a_file(mirror_dir):  # a mirror the manifest forgot (a merge wrote it anew)
            report.add(UNRECORDED_MIRROR_FILE, "mirror/", "the manifest records none of the mirror's files")
        return
    for (url,) in manifest.connection.execute(
        _UNMIRRORED, (FETCHED, *CAPTURED, *sorted(NO_PAGE_STATUSES))
    ).fetchmany(1000):
        report.add(UNMIRRORED_CAPTURE, url, "archived, but the mirror holds no file of it")
    for recorded in itertools.chain((first,), files):
        report.stats["mirror files checked"] += 1
        where = f"mirror/{recorded.path}"
        try:
            path = safe_join(mirror_dir, recorded.path)
            if path.exists() and not path.is_file():  # a pipe would block the read for ever
                report.add(CHANGED_MIRROR_FILE, where, "is no longer a regular file (a folder, a pipe...)")
                continue
            digest, size = file_digest(path)
        except FileNotFoundError:
            report.add(LOST_MIRROR_FILE, where, f"{recorded.size} bytes written, now missing")
            continue
        except (OSError, UnsafePathError) as exc:
            report.add(LOST_MIRROR_FILE, where, f"cannot be read: {exc}")
            continue
        if (digest, size) != (recorded.sha256, recorded.size):
            report.add(
                CHANGED_MIRROR_FILE,
                where,
                f"holds {size} bytes, sha256 {digest[:16]}...; the build wrote {recorded.size} bytes, "
                f"sha256 {recorded.sha256[:16]}...",
            )
    _check_unwritten(manifest, mirror_dir, report)


def _check_unwritten(manifest: Manifest, mirror_dir: Path, report: Report) -> None:
    """Report what is in mirror/ that the build did not write: a file added, a symbolic link (one
    pointing out of the snapshot shows a browser what is not archived)."""
    outside = mirror_dir.parent.resolve()
    for folder, folders, names in os.walk(mirror_dir):
        here = Path(folder)
        links = [name for name in folders if (here / name).is_symlink()]
        for name in sorted([*names, *links]):
            path = here / name
            relative = path.relative_to(mirror_dir).as_posix()
            if path.is_symlink():
                target = path.resolve()
                leaves = outside != target and outside not in target.parents
                where = "out of the snapshot" if leaves else "inside the snapshot"
                report.add(
                    UNRECORDED_MIRROR_FILE, f"mirror/{relative}", f"a symbolic link to {target}, {where}"
                )
            elif not manifest.connection.execute(_RECORDED, (relative,)).fetchone():
                report.add(
                    UNRECORDED_MIRROR_FILE, f"mirror/{relative}", "a file the mirror build did not write"
                )


def check_index_page(manifest: Manifest, index_html: Path, report: Report) -> None:
    """Report an index.html (the snapshot's front page) gone or changed since it was written."""
    kept = manifest.state(INDEX_STATE)
    if kept is None:  # never written (a crawl stopped, --no-mirror), or a snapshot from before
        return
    where = index_html.name
    try:
        written = json.loads(kept)
        sha256, size = str(written["sha256"]), int(written["size"])
    except (ValueError, KeyError, TypeError):
        report.add(
            CHANGED_MIRROR_FILE, where, f"the manifest's note of what was written is damaged: {kept!r}"
        )
        return
    if index_html.is_symlink() or (index_html.exists() and not index_html.is_file()):
        report.add(CHANGED_MIRROR_FILE, where, "is no longer a regular file (a link, a folder, a pipe...)")
        return
    try:
        found = file_digest(index_html)
    except FileNotFoundError:
        report.add(LOST_MIRROR_FILE, where, f"{size} bytes written, now missing")
        return
    except OSError as exc:
        report.add(LOST_MIRROR_FILE, where, f"cannot be read: {exc}")
        return
    if found != (sha256, size):
        report.add(
            CHANGED_MIRROR_FILE,
            where,
            f"holds {found[1]} bytes, sha256 {found[0][:16]}...; the build wrote {size} bytes, "
            f"sha256 {sha256[:16]}...",
        )


def _holds_a_file(folder: Path) -> bool:
    """Whether ``folder`` holds a file, at any depth (False if it is no folder)."""
    return any(files for _folder, _folders, files in os.walk(folder))
