"""Mirror names: the mirror can be copied whole to macOS, Windows, a USB stick or a zip.

Each path the mirror build wrote (the manifest's ``mirror_files``) is checked as those file
systems read it: every name one they all accept (paths.unportable: no character Windows
refuses, no name of a device, no dot or space ending it, at most 255 units), the whole path
within MAX_PATH_UNITS (Windows opens no longer path), and no two paths one name where case and
Unicode normalisation are ignored (paths.folded: ``About.html`` and ``about.html``, ``café``
written either way), nor a file where another path needs that name as a folder, nor two
folders one there (``Docs/`` and ``docs/``: a copy back merges them under one name). Copied, one of
two such files overwrites the other, and its links lead to the wrong page. The mirror's own
path plan (mirror/plan.py) gives none of these; a mirror built before it did, or by hand, may.

The folded paths are kept in a temporary SQLite file, not in memory: a mirror of millions of
files is checked in bounded memory.
"""

from __future__ import annotations

import contextlib
import sqlite3

from archiver.paths import MAX_PATH_UNITS, folded, folders_of, path_units, unportable
from archiver.report import UNPORTABLE_MIRROR_NAME, Report
from archiver.store.manifest import Manifest

_SCHEMA = """
CREATE TABLE files (folded TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE folders (folded TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
"""


def check_mirror_names(manifest: Manifest, report: Report) -> None:
    """Report each path of the mirror that a file system it is copied to refuses or takes for
    another path's (see the module docstring)."""
    try:
        paths = manifest.mirror_files()
        first = next(paths, None)
    except sqlite3.OperationalError:  # no files recorded: check_mirror_files() says so
        return
    if first is None:
        return
    with contextlib.closing(sqlite3.connect("")) as seen:  # "": a temporary file
        seen.executescript(_SCHEMA)
        _check(seen, first.path, report)
        for recorded in paths:
            _check(seen, recorded.path, report)


def _check(seen: sqlite3.Connection, path: str, report: Report) -> None:
    where = f"mirror/{path}"
    report.stats["mirror names checked"] += 1
    for name in path.split("/"):
        why = unportable(name)
        if why is not None:
            report.add(UNPORTABLE_MIRROR_NAME, where, f"{name!r} {why}")
            return
    if path_units(path) > MAX_PATH_UNITS:
        report.add(
            UNPORTABLE_MIRROR_NAME,
            where,
            f"{path_units(path)} characters long, past {MAX_PATH_UNITS}: Windows opens no path past 260",
        )
        return
    key = folded(path)
    other = _found(seen, "files", key) or _found(seen, "folders", key)
    if other is not None:
        report.add(UNPORTABLE_MIRROR_NAME, where, f"one name with mirror/{other} on macOS and Windows")
        return
    paths = path.split("/")
    for depth, folder in enumerate(folders_of(path), start=1):
        other = _found(seen, "files", folder)
        if other is not None:
            report.add(
                UNPORTABLE_MIRROR_NAME,
                where,
                f"needs mirror/{other} as a folder on macOS and Windows, where it is a file",
            )
            return
        spelled = "/".join(paths[:depth])
        other = _found(seen, "folders", folder)
        if other is not None and other != spelled:
            report.add(
                UNPORTABLE_MIRROR_NAME, where, f"its folder is one with mirror/{other} on macOS and Windows"
            )
            return
        seen.execute("INSERT OR IGNORE INTO folders VALUES (?, ?)", (folder, spelled))
    seen.execute("INSERT INTO files VALUES (?, ?)", (key, path))


def _found(seen: sqlite3.Connection, table: str, key: str) -> str | None:
    """The path recorded in ``table`` under ``key``, if any."""
    row = seen.execute(f"SELECT path FROM {table} WHERE folded = ?", (key,)).fetchone()
    return None if row is None else str(row[0])
