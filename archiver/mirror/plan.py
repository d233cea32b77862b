"""The mirror's path plan: a collision-free local path for every capture, deterministic for a set.

Each capture's natural path is paths.url_to_path(); the few that meet (``/a``
and ``/a.html`` both HTML, names equal but for case, a file that another
needs as a folder) are told apart here, the only place that does it.

>>> from archiver.store.manifest import Manifest, ManifestRow
>>> with Manifest.open(":memory:") as manifest:
...     for offset, url in enumerate(["http://h/a", "http://h/a.html", "http://h/a/b"]):
...         manifest.upsert(ManifestRow(url, "link", 0, "fetched", content_type="text/html",
...                                     warc_file="w.warc.gz", warc_offset=offset, record_type="response"))
...     plan = PathPlan(manifest.connection)
...     plan.make(lambda *_: True)
...     [plan.path_of(url) for url in ("http://h/a", "http://h/a.html", "http://h/a/b")]
['h/a.html', 'h/a@c3644f6cb41b.html', 'h/a/b.html']
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator

from archiver.content import PARSED_TYPES, content_codings
from archiver.paths import candidate_paths, folders_of, url_to_path
from archiver.redirects import follow_chain
from archiver.store.manifest import IS_REDIRECT
from archiver.urls import url_folder

RESOLVE_CACHE = 16384
"""Link targets whose local path is kept in RAM (a bounded cache; the plan is on disk)."""


class PathPlan:
    """Local paths for every capture, kept in scratch tables of the manifest file.

    Captures of one payload share one file (``/dir/`` and ``/dir/index.html``
    serving the same page: every link to either leads to one file): those of one
    payload digest and type, and for HTML and CSS of one folder too (their links
    are rewritten relative to it). The file is the one of the directory form
    (``/dir/``: the address a site gives a folder, and whose file is
    ``dir/index.html`` anyway), else of the shortest URL, else the first; the
    others are planned as its aliases and never written twice.

    A path already taken (compared without case, as on macOS and Windows), or
    one that another capture needs as a folder, goes to the URL later in sorted
    order, which gets a hashed variant of its natural path (paths.candidate_paths).
    The bookkeeping is on disk so the mirror of a site of any size plans in
    bounded memory. Lookups (one per link rewritten) go through a bounded cache.
    """

    TABLE = "mirror_plan"
    """The table of (url, path) planned."""
    _SCHEMA = """
    DROP TABLE IF EXISTS mirror_plan;
    DROP TABLE IF EXISTS mirror_taken;
    DROP TABLE IF EXISTS mirror_folders;
    DROP TABLE IF EXISTS mirror_alias;
    CREATE TABLE mirror_plan (url TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE mirror_alias (url TEXT PRIMARY KEY, canonical TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE mirror_taken (folded TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TABLE mirror_folders (folded TEXT PRIMARY KEY) WITHOUT ROWID;
    """
    _CAPTURED = (
        "outcome = 'fetched' AND warc_file IS NOT NULL AND warc_offset IS NOT NULL "
        "AND record_type IN ('response', 'revisit')"
    )
    _CAPTURES = (
        "SELECT url, content_type, warc_file, warc_offset, warc_length FROM urls "
        f"WHERE {_CAPTURED} AND url NOT IN (SELECT url FROM mirror_alias) ORDER BY url"
    )
    # A page rendered in a browser is mirrored from its own DOM, not from its payload: the
    # shell an application serves at every address becomes a different page at each.
    _BY_PAYLOAD = (
        "SELECT url, content_type, payload_digest, warc_file, warc_offset, warc_length FROM urls "
        f"WHERE {_CAPTURED} AND payload_digest IS NOT NULL AND length > 0 AND NOT truncated "
        "AND dom_warc_file IS NULL ORDER BY payload_digest, content_type, url"
    )
    _REDIRECTS = f"SELECT url FROM urls WHERE {IS_REDIRECT}"
    _NEXT_HOP = f"SELECT redirect_to, final_url FROM urls WHERE url = ? AND {IS_REDIRECT}"

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.resolve = functools.lru_cache(maxsize=RESOLVE_CACHE)(self._resolve)
        self.planned = 0

    def make(
        self,
        readable: Callable[[str, int, int], bool],
        encoding: Callable[[str, int, int], str | None] = lambda *_: None,
    ) -> None:
        """Plan every capture whose record ``readable(file, offset, length)``, and commit.

        ``encoding(file, offset, length)``: the Content-Encoding of a record, asked only of
        captures whose payload another has too (identical stored bytes decode alike only
        under one encoding).
        """
        self._db.executescript(self._SCHEMA)
        self._db.executemany("INSERT INTO mirror_alias VALUES (?, ?)", self._aliases(readable, encoding))
        # Two streaming passes in URL order: the folders every file needs, then the paths.
        self._db.executemany(
            "INSERT OR IGNORE INTO mirror_folders VALUES (?)",
            (
                (folder,)
                for url, content_type in self._captures(readable)
                for folder in folders_of(url_to_path(url, content_type))
            ),
        )
        batch = []
        planned = 0
        for url, content_type in self._captures(readable):
            for path in candidate_paths(url, url_to_path(url, content_type)):
                if self._free(path.casefold()):
                    break
            batch.append((url, path))
            planned += 1
            if len(batch) >= 1000:
                self._db.executemany("INSERT INTO mirror_plan VALUES (?, ?)", batch)
                batch.clear()
        self._db.executemany("INSERT INTO mirror_plan VALUES (?, ?)", batch)
        self.planned = planned
        self._db.commit()

    def _aliases(
        self, readable: Callable[[str, int, int], bool], encoding: Callable[[str, int, int], str | None]
    ) -> Iterator[tuple[str, str]]:
        """(url, canonical url) of each capture that shares the file of another."""
        group: list[tuple[str, str, tuple[str, int, int]]] = []
        key: tuple[str, str | None] | None = None
        for url, content_type, digest, warc_file, offset, length in self._db.execute(self._BY_PAYLOAD):
            where = (warc_file, offset, length or 0)
            if not readable(*where):
                continue
            if (digest, content_type) != key:
                yield from _shared(group, encoding)
                group, key = [], (digest, content_type)
            group.append((url_folder(url) if content_type in PARSED_TYPES else "", url, where))
        yield from _shared(group, encoding)

    def _captures(self, readable: Callable[[str, int, int], bool]) -> Iterator[tuple[str, str | None]]:
        for url, content_type, warc_file, offset, length in self._db.execute(self._CAPTURES):
            if readable(warc_file, offset, length or 0):
                yield url, content_type

    def _free(self, folded: str) -> bool:
        """Take ``folded`` if no file has it and no file needs it as a folder."""
        if self._db.execute("SELECT 1 FROM mirror_folders WHERE folded = ?", (folded,)).fetchone():
            return False
        return self._db.execute("INSERT OR IGNORE INTO mirror_taken VALUES (?)", (folded,)).rowcount == 1

    def path_of(self, url: str) -> str | None:
        """The planned file of a captured ``url`` (its own, or the one it shares)."""
        found = self._db.execute("SELECT path FROM mirror_plan WHERE url = ?", (url,)).fetchone()
        if found is None:
            found = self._db.execute(
                "SELECT path FROM mirror_alias JOIN mirror_plan ON mirror_plan.url = mirror_alias.canonical "
                "WHERE mirror_alias.url = ?",
                (url,),
            ).fetchone()
        return found[0] if found else None

    def shared(self) -> int:
        """Captures planned to share the file of an identical one."""
        return int(self._db.execute("SELECT COUNT(*) FROM mirror_alias").fetchone()[0])

    def _resolve(self, url: str) -> str | None:
        path = self.path_of(url)
        if path is None and (final := self._final_url(url)) is not None:
            path = self.path_of(final)
        return path

    def _final_url(self, url: str) -> str | None:
        """Where a redirecting URL's chain ends (through its manifest final_url where it has one)."""
        chain = follow_chain(url, self._next_hop)
        return chain.final if chain.hops else None

    def _next_hop(self, url: str) -> str | None:
        """Where ``url`` redirects to: its final_url (its chain's end) if known, else its redirect_to."""
        found = self._db.execute(self._NEXT_HOP, (url,)).fetchone()
        return str(found[1] or found[0]) if found else None

    def resolved_redirects(self) -> int:
        """Redirecting URLs whose chain ends at a planned file."""
        urls = [url for (url,) in self._db.execute(self._REDIRECTS)]
        return sum(1 for url in urls if self.resolve(url))

    def store_local_paths(self, failed: set[str]) -> None:
        """Each row's local_path: its planned file if written, else NULL; then drop the plan."""
        self._db.execute("UPDATE urls SET local_path = NULL WHERE local_path IS NOT NULL")
        self._db.execute(
            "UPDATE urls SET local_path = (SELECT path FROM mirror_plan AS p "
            "WHERE p.url = urls.url) WHERE url IN (SELECT url FROM mirror_plan)"
        )
        self._db.execute(
            "UPDATE urls SET local_path = (SELECT p.path FROM mirror_alias AS a JOIN mirror_plan AS p "
            "ON p.url = a.canonical WHERE a.url = urls.url) WHERE url IN (SELECT url FROM mirror_alias)"
        )
        self._db.executemany(
            "UPDATE urls SET local_path = NULL WHERE url = ? "
            "OR url IN (SELECT url FROM mirror_alias WHERE canonical = ?)",
            ((u, u) for u in failed),
        )
        self._db.executescript(
            "DROP TABLE mirror_plan; DROP TABLE mirror_taken; DROP TABLE mirror_folders; "
            "DROP TABLE mirror_alias;"
        )
        self._db.commit()


def _shared(
    group: list[tuple[str, str, tuple[str, int, int]]], encoding: Callable[[str, int, int], str | None]
) -> Iterator[tuple[str, str]]:
    """(url, canonical url) for the captures of one payload and type, per folder (HTML and CSS)
    and Content-Encoding."""
    if len(group) < 2:
        return
    by_kind: dict[tuple[str, str], list[str]] = {}
    for share_folder, url, where in group:
        coding = ",".join(content_codings(encoding(*where)))
        by_kind.setdefault((share_folder, coding), []).append(url)
    for urls in by_kind.values():
        canonical = min(urls, key=lambda url: (not url.endswith("/"), len(url), url))
        yield from ((url, canonical) for url in urls if url != canonical)
