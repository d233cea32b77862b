"""The mirror's path plan: a collision-free local path for every capture, first come, first served.

Each capture's natural path is paths.url_to_path(); the few that meet (``/a``
and ``/a.html`` both HTML, names equal but for case or Unicode normalisation,
one name on macOS or Windows: paths.folded, a file where another needs a
folder) are told apart here, the only place that does it: the capture
placed later gets a hashed variant of its natural path (paths.candidate_paths),
or of its folder when an earlier file holds that folder's name. Folders that are
one on macOS or Windows are one here too, spelled as the first path placed in them.

Paths are given in capture order: the crawl's writer places each capture as it
stores it, and ``archiver mirror`` replays the manifest in WARC order, which is
the same order, so both give every capture the same path. A path once given
never changes, which is what lets the crawl write each page as it comes.

>>> from archiver.store.manifest import Manifest
>>> with Manifest.open(":memory:") as manifest:
...     plan = PathPlan(manifest.connection)
...     [plan.place(url, "text/html").path for url in ("http://h/a", "http://h/a.html", "http://h/a/b")]
['h/a.html', 'h/a@c3644f6cb41b.html', 'h/a/b.html']
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from archiver.content import HTML_TYPES, PARSED_TYPES, content_codings, error_status
from archiver.paths import candidate_paths, folded, folders_of, path_token, url_to_path, with_folder_token
from archiver.store.schema import has_table
from archiver.urls import url_folder

TABLES = ("mirror_taken", "mirror_folders", "mirror_shared", "mirror_folder_names")
"""The plan's tables in the manifest: kept while a crawl runs (a resumed crawl goes on placing)."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS mirror_taken (folded TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mirror_folders (folded TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mirror_shared (
    payload TEXT NOT NULL, coding TEXT, path TEXT NOT NULL, source TEXT
);
CREATE INDEX IF NOT EXISTS mirror_shared_payload ON mirror_shared (payload);
CREATE TABLE IF NOT EXISTS mirror_folder_names (folded TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Placed:
    """Where a capture goes in the mirror."""

    path: str
    """Relative to mirror/."""
    shared: bool = False
    """True: the file of an earlier capture of the same payload, already written (never twice)."""


def payload_key(
    url: str,
    content_type: str | None,
    digest: str | None,
    length: int | None,
    truncated: bool,
    share_pages: bool = True,
    status: int | None = None,
) -> str | None:
    """What captures that may share one file have in common (their Content-Encoding aside), or None.

    One payload digest and type, and for HTML, CSS and SVG one folder too: their
    links are rewritten relative to it. Empty and truncated bodies share nothing,
    nor do HTML pages when not ``share_pages``: a crawl that renders pages in a
    browser mirrors each rendered page from its own DOM (an application serves one
    shell at every address), and whether a page is rendered is known only later.
    Error answers (content.error_status(): 4xx, 5xx, a status outside 100-599) share
    nothing either: a site answers every dead link with one page, and a link to one,
    drafted before its fetch, takes the path the URL would have alone (sharing, every
    such page was written twice).
    """
    if not digest or not length or truncated or (not share_pages and content_type in HTML_TYPES):
        return None
    if error_status(status):
        return None
    folder = url_folder(url) if content_type in PARSED_TYPES else ""
    return f"{digest} {content_type or ''} {folder}"


def coding_of(content_encoding: str | None) -> str:
    """A Content-Encoding as the plan compares it (identical stored bytes decode alike only under one)."""
    return ",".join(content_codings(content_encoding))


class PathPlan:
    """Places captures in the mirror, keeping its bookkeeping in tables of the manifest file.

    Captures of one payload (payload_key, and one Content-Encoding) share the
    file of the first: ``/dir/`` and ``/dir/index.html`` serving the same page,
    so every link to either leads to one file. A path already taken (compared
    as paths.folded compares it, as on macOS and Windows), or one a file needs
    as a folder, is not given again. The bookkeeping is on disk, so a mirror of
    any size is planned in bounded memory.
    """

    def __init__(
        self,
        db: sqlite3.Connection,
        *,
        fresh: bool = False,
        read_coding: Callable[[str], str] = lambda _source: "",
    ) -> None:
        """``fresh``: forget what was placed before (a rebuild). ``read_coding(source)``: the
        coding of an earlier capture placed without one, from the ``source`` it was placed with."""
        self._db = db
        self._read_coding = read_coding
        if fresh:
            db.executescript("".join(f"DROP TABLE IF EXISTS {table};" for table in TABLES))
        db.executescript(_SCHEMA)

    @staticmethod
    def exists(db: sqlite3.Connection) -> bool:
        """True if the manifest holds a plan (a crawl placed captures and has not finished)."""
        return has_table(db, TABLES[0])

    def place(
        self,
        url: str,
        content_type: str | None,
        payload: str | None = None,
        coding: str | None = "",
        source: str | None = None,
    ) -> Placed:
        """Give ``url`` its path, or the file of an earlier capture of its ``payload`` (payload_key).

        ``coding`` (coding_of) may be None when it costs a read: ``source`` then says
        where to read it (read_coding), should a later capture of the payload ask.
        """
        if payload is not None:
            for path, known, where in self._db.execute(
                "SELECT path, coding, source FROM mirror_shared WHERE payload = ?", (payload,)
            ).fetchall():
                if known is None:
                    known = self._read_coding(where)
                    self._db.execute(
                        "UPDATE mirror_shared SET coding = ? WHERE payload = ? AND path = ?",
                        (known, payload, path),
                    )
                if coding is None:
                    coding = self._read_coding(source or "")
                if known == coding:
                    return Placed(path, shared=True)
        path = self._free_path(url, self._as_placed(url_to_path(url, content_type)))
        self._db.execute("INSERT INTO mirror_taken VALUES (?)", (folded(path),))
        folders = list(folders_of(path))
        self._db.executemany("INSERT OR IGNORE INTO mirror_folders VALUES (?)", ((key,) for key in folders))
        parts = path.split("/")
        self._db.executemany(
            "INSERT OR IGNORE INTO mirror_folder_names VALUES (?, ?)",
            ((key, "/".join(parts[:depth])) for depth, key in enumerate(folders, start=1)),
        )
        if payload is not None:
            self._db.execute("INSERT INTO mirror_shared VALUES (?, ?, ?, ?)", (payload, coding, path, source))
        return Placed(path)

    def _as_placed(self, path: str) -> str:
        """``path`` with its folders spelled as the first path placed in them spelled them
        (``Docs/b.html`` for ``docs/b.html`` after ``Docs/a.html``): on macOS and Windows the
        two are one folder, which a copy back to a file system that tells case apart would
        leave under one of its names, and the other's links broken."""
        parts = path.split("/")
        for depth, key in enumerate(folders_of(path), start=1):
            found = self._db.execute(
                "SELECT path FROM mirror_folder_names WHERE folded = ?", (key,)
            ).fetchone()
            if found is not None:
                parts[:depth] = str(found[0]).split("/")
        return "/".join(parts)

    def _free_path(self, url: str, natural: str) -> str:
        """The first of ``natural`` and its hashed variants that no file has and no file needs as a folder."""
        for attempt in itertools.count(1):
            blocked = self._file_in_the_way(natural)
            if blocked is None:
                break
            # An earlier file holds the name of a folder it needs: a folder of its own.
            natural = with_folder_token(natural, blocked, path_token(url, attempt))
        for path in candidate_paths(url, natural):
            key = folded(path)
            if not self._is_file(key) and not self._is_folder(key):
                return path
        raise AssertionError("candidate_paths() never ends")

    def _file_in_the_way(self, path: str) -> int | None:
        """The depth of the first folder of ``path`` that is a file already, or None."""
        for depth, folder in enumerate(folders_of(path)):
            if depth and self._is_file(folder):
                return depth
        return None

    def _is_file(self, key: str) -> bool:
        return self._db.execute("SELECT 1 FROM mirror_taken WHERE folded = ?", (key,)).fetchone() is not None

    def _is_folder(self, key: str) -> bool:
        found = self._db.execute("SELECT 1 FROM mirror_folders WHERE folded = ?", (key,))
        return found.fetchone() is not None

    def drop(self) -> None:
        """Forget the plan (the paths stay in the manifest's local_path)."""
        self._db.executescript("".join(f"DROP TABLE IF EXISTS {table};" for table in TABLES))
