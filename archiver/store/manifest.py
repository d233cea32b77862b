"""The manifest: one SQLite row per URL the crawl met, with its outcome.

Outcomes: ``queued`` (met, not yet done: the frontier of an interrupted
crawl), ``fetched``, ``redirected``, ``failed``, ``skipped``. A row with a
capture names the WARC file, offset and length of its response or revisit
record; a page rendered in a browser also says why it was rendered and where
its rendered DOM (a resource record) is. The mirror stage fills ``local_path``,
and table ``mirror_files`` with what each file it wrote holds (MirrorFile), so
verify can tell a damaged mirror.

>>> with Manifest.open(":memory:") as manifest:
...     manifest.upsert(ManifestRow(url="http://h/", found_by="seed", depth=0, outcome="queued"))
...     manifest.get("http://h/").outcome
'queued'
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from archiver.errors import SnapshotError, WriteError
from archiver.redirects import follow_chain
from archiver.store.capture_offsets import CaptureOffsets
from archiver.store.row_columns import (
    FIELDS,
    INSERT_NEW,
    UPSERT,
    WRONG_TYPE,
    read_row,
    selected_columns,
)
from archiver.store.rows import (
    IS_REDIRECT,
    ManifestRow,
    MirrorFile,
)
from archiver.store.schema import create_tables, has_urls_table, read_as_current
from archiver.urls import earlier_form

COMPACT_FROM_PAGES = 256
"""Free pages (of 4 KiB) below which checkpoint() never rewrites the file: a small crawl's
manifest is not worth a rewrite."""


def readonly_uri(path: str | Path) -> str:
    """The SQLite URI that opens the database file ``path`` read-only: the path percent-encoded,
    as a folder named ``old#1`` or ``50%`` would otherwise end the path early or be decoded.

    >>> readonly_uri("/snaps/old#1/manifest.sqlite3")
    'file:///snaps/old%231/manifest.sqlite3?mode=ro'
    """
    return f"{Path(path).resolve().as_uri()}?mode=ro"


def write_failed(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed to write (a full disk, a file past its size limit), not to read: a
    write error, which a resume gets past once there is room, not a damaged or foreign file.

    >>> write_failed(sqlite3.OperationalError("database or disk is full"))  # no code: not known
    False
    """
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL)


class Manifest(CaptureOffsets):
    """The manifest.sqlite3 database of a snapshot."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection
        present = {info[1] for info in connection.execute("PRAGMA table_info(urls)")}
        self._selected = selected_columns(present) if present else selected_columns(set(FIELDS))
        self._select = f"SELECT {self._selected} FROM urls"
        self.checks_types = True
        """Whether a row with a value of the wrong type raises SnapshotError (row_columns.read_row)."""

    @classmethod
    def open(cls, path: str | Path, *, readonly: bool = False, existing: bool = False) -> Manifest:
        """Open (creating if needed) the manifest at ``path``.

        ``existing``: the file must already be a manifest (SnapshotError if it is
        not), as for a crawl resumed or a mirror built from it.
        """
        if readonly:
            db = sqlite3.connect(readonly_uri(path), uri=True, check_same_thread=False)
            read_as_current(db)
            return cls(db)
        try:
            db = sqlite3.connect(str(path), check_same_thread=False)
            if existing and not has_urls_table(db):
                db.close()
                raise SnapshotError(f"{path} is not a manifest of archiver (it has no urls table)")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            create_tables(db)
            db.commit()
        except sqlite3.Error as exc:  # a full disk, a read-only folder, a file that is not SQLite
            if write_failed(exc):
                raise WriteError(f"cannot write the manifest {path}: {exc}") from None
            raise SnapshotError(f"cannot open the manifest {path}: {exc}") from None
        return cls(db)

    @staticmethod
    def begun(path: Path) -> bool:
        """Whether ``path`` holds a manifest begun: False if it is missing, empty, or a database
        with no table yet (a crawl stopped by a full disk or a kill as it made its manifest)."""
        if not path.is_file() or path.stat().st_size == 0:
            return False
        try:
            db = sqlite3.connect(readonly_uri(path), uri=True)
            try:
                tables: int = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                return tables > 0
            finally:
                db.close()
        except sqlite3.Error:
            return True  # not a database: Manifest.open(existing=True) says so

    @staticmethod
    def damage_in(path: Path) -> str | None:
        """What is damaged in the manifest at ``path`` (SQLite's own check, or a value of the
        wrong type in a row), or None. A manifest not begun yet is no damage (see begun())."""
        if not Manifest.begun(path):
            return None
        try:
            with Manifest.open(path, readonly=True) as manifest:
                damage = manifest.damage(1)
                if damage:
                    return f"the manifest is damaged: {damage[0]} (archiver verify lists what else is)"
                manifest.check_types()
        except SnapshotError as exc:
            return str(exc)
        except sqlite3.Error as exc:
            if write_failed(exc):  # its check's scratch files: the command meets that itself
                return None
            return f"cannot read the manifest {path}: {exc}"
        return None

    @staticmethod
    def roll_back_killed_write(path: Path) -> None:
        """Undo what a process killed as it wrote ``path`` left of its last transaction, so that
        read-only connections read the file. A crawl killed as it made its manifest (SQLite had
        written the new file's first page, switching it to WAL, and not yet deleted the rollback
        journal) leaves a hot journal beside it, which only a connection that may write rolls
        back (on its first read): a read-only one fails ("attempt to write a readonly database"),
        and the manifest would seem damaged. Call it holding the lock of the snapshot (or node
        part) whose manifest it is, as its resume or merge does; a file that is no database is
        left for their checks to name."""
        if not path.with_name(path.name + "-journal").is_file() or not path.is_file():
            return
        with contextlib.suppress(sqlite3.Error):
            db = sqlite3.connect(str(path))
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                db.close()

    def __enter__(self) -> Manifest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def damage(self, most: int = 5) -> list[str]:
        """What SQLite's own check finds wrong with the file (pages, records, indexes), at most
        ``most`` lines; [] when it is whole. Reads every page once."""
        found = self._db.execute(f"PRAGMA quick_check({int(most)})").fetchall()
        lines = [line for (text,) in found for line in str(text).splitlines()]
        if lines == ["ok"]:
            return []
        return [line for line in lines if not line.startswith("*** in database")][:most]

    def check_types(self) -> None:
        """SnapshotError naming the first row with a value of the wrong type (see
        row_columns.read_row), found by one SQL scan rather than by reading each row."""
        found = self._db.execute(f"{self._select} WHERE {WRONG_TYPE} LIMIT 1").fetchone()
        if found:
            read_row(found)

    def close(self) -> None:
        """Commit and close; safe to call twice."""
        if self._db is not None:
            try:
                self._db.commit()
            finally:
                self._db.close()
                self._db = None  # type: ignore[assignment]

    @property
    def connection(self) -> sqlite3.Connection:
        """The database itself, for a stage's own scratch tables (the mirror's path plan)."""
        return self._db

    def commit(self) -> None:
        self._db.commit()

    def checkpoint(self) -> None:
        """Copy what the write-ahead log holds into manifest.sqlite3 itself, so the file alone is
        the whole manifest (copied without its -wal file, it would lack what the log held).

        When dropped scratch tables (the mirror's path plan and the pages it was to check
        again) left more than a quarter of the file free, it is rewritten without that
        space first (VACUUM): four fifths of the file after a finished crawl. A VACUUM
        that cannot run (it needs room for a copy of the live data) leaves the file as it is.
        """
        self._db.commit()
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
        if free * 4 > pages and free > COMPACT_FROM_PAGES:
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("VACUUM")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def rollback(self) -> None:
        """Drop what was written since the last commit (a batch whose records failed)."""
        self._db.rollback()

    def upsert(self, row: ManifestRow) -> None:
        """Insert or replace the row of ``row.url`` (committed by commit()/close())."""
        self._db.execute(UPSERT, tuple(getattr(row, name) for name in FIELDS))

    def insert_new(self, rows: Iterable[ManifestRow]) -> None:
        """Insert rows for URLs not in the manifest yet; existing rows are kept, but for a
        skipped one that a queued row replaces (the URL is to be fetched after all)."""
        self._db.executemany(INSERT_NEW, [tuple(getattr(r, n) for n in FIELDS) for r in rows])

    def set_render(
        self,
        url: str,
        reason: str | None,
        error: str | None = None,
        dom: tuple[str, int, int] | None = None,
        title: str | None = None,
        links_cut: str | None = None,
    ) -> None:
        """Record a page's render: why, what went wrong, its DOM record (file, offset, length),
        the DOM's title and why its links past a limit were cut (each None: the page's stays)."""
        file, offset, length = dom or (None, None, None)
        self._db.execute(
            "UPDATE urls SET render_reason = COALESCE(?, render_reason), render_error = ?, "
            "dom_warc_file = ?, dom_warc_offset = ?, dom_warc_length = ?, title = COALESCE(?, title), "
            "reason = COALESCE(?, reason) WHERE url = ?",
            (reason, error, file, offset, length, title, links_cut, url),
        )

    def framed(self, url: str, page: str) -> None:
        """Note that the page at ``url``, found otherwise, was loaded as a frame of the rendered
        ``page`` (ManifestRow.framed_by): the first such page stays."""
        self._db.execute("UPDATE urls SET framed_by = COALESCE(framed_by, ?) WHERE url = ?", (page, url))

    def keep_state(self, name: str, value: str) -> None:
        """Keep what a crawl holds beside its rows (its cookies), committed with the next batch."""
        self._db.execute("INSERT OR REPLACE INTO crawl_state VALUES (?, ?)", (name, value))

    def forget_state(self, name: str) -> None:
        """Drop what keep_state() kept as ``name``, with the next batch."""
        self._db.execute("DELETE FROM crawl_state WHERE name = ?", (name,))

    def states(self, prefix: str) -> dict[str, str]:
        """Every entry keep_state() kept whose name begins with ``prefix``."""
        try:
            found = self._db.execute(
                "SELECT name, value FROM crawl_state WHERE substr(name, 1, ?) = ?", (len(prefix), prefix)
            ).fetchall()
        except sqlite3.OperationalError:  # a manifest opened read-only from before the table
            return {}
        return {str(name): str(value) for name, value in found}

    def state(self, name: str) -> str | None:
        """What keep_state() kept as ``name`` (None: nothing, or a manifest from before)."""
        try:
            found = self._db.execute("SELECT value FROM crawl_state WHERE name = ?", (name,)).fetchone()
        except sqlite3.OperationalError:  # a manifest opened read-only from before the table
            return None
        return str(found[0]) if found else None

    def get(self, url: str) -> ManifestRow | None:
        """The row of ``url``, or of the form an earlier version kept it in (urls.earlier_form())."""
        found = self._db.execute(f"{self._select} WHERE url = ?", (url,)).fetchone()
        if found is None and (earlier := earlier_form(url)) is not None:
            found = self._db.execute(f"{self._select} WHERE url = ?", (earlier,)).fetchone()
        return read_row(found, self.checks_types) if found else None

    def rows(
        self, outcome: str | None = None, where: str = "", limit: int | None = None
    ) -> Iterator[ManifestRow]:
        """Every row (or those with ``outcome``; the first ``limit``), in URL order.

        ``where``: an SQL condition on the columns that rows must also meet, so
        those that do not are never built. It is the caller's text, never user input.
        Rows of one outcome come in URL order from an index, with no sort: the first
        of them cost no more than their own reading.
        """
        conditions, parameters = [], []
        if outcome is not None:
            conditions.append("outcome = ?")
            parameters.append(outcome)
        if where:
            conditions.append(f"({where})")
        clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        bound = f" LIMIT {int(limit)}" if limit is not None else ""
        cursor = self._db.execute(f"{self._select}{clause} ORDER BY url{bound}", parameters)
        for found in cursor:
            yield read_row(found, self.checks_types)

    def captures_by_path(self, plan: str, where: str = "1") -> Iterator[tuple[ManifestRow, str]]:
        """Rows planned in table ``plan`` (url, path...), with their path, in path order.

        ``plan`` is a table name the caller owns (the mirror's) and ``where`` a condition on
        its columns, never user input. One folder's files come together: the mirror
        rewrites them one after the other.
        """
        cursor = self._db.execute(
            f"SELECT {self._selected}, {plan}.path FROM {plan} JOIN urls ON urls.url = {plan}.url "
            f"WHERE {where} ORDER BY {plan}.path"
        )
        for found in cursor:
            yield read_row(found[:-1], self.checks_types), found[-1]

    def captures(self) -> Iterator[ManifestRow]:
        """Rows whose response or revisit record is in a WARC file, in WARC order."""
        cursor = self._db.execute(
            f"{self._select} WHERE warc_file IS NOT NULL ORDER BY warc_file, warc_offset"
        )
        for found in cursor:
            yield read_row(found, self.checks_types)

    def first_capture(self, digest: str, other_than: str = "") -> tuple[str, str] | None:
        """URL and WARC-Date of a whole, non-empty response record whose payload is ``digest``
        (of a URL other than ``other_than``)."""
        found = self._db.execute(
            "SELECT url, fetched_at FROM urls WHERE payload_digest = ? AND record_type = 'response' "
            "AND length > 0 AND NOT truncated AND url != ? LIMIT 1",
            (digest, other_than),
        ).fetchone()
        return (found[0], found[1]) if found else None

    def count_by(self, column: str, *, captured: bool = False, where: str = "") -> dict[str, int]:
        """Row counts grouped by one column (outcome, status, content_type...).

        With ``captured``, only rows whose record is in a WARC file; ``where``, an SQL
        condition the rows must also meet (the caller's text, never user input).
        """
        if column not in FIELDS:
            raise ValueError(column)
        conditions = [c for c in ("warc_file IS NOT NULL" if captured else "", where) if c]
        clause = f"WHERE {' AND '.join(f'({c})' for c in conditions)}" if conditions else ""
        cursor = self._db.execute(f"SELECT {column}, COUNT(*) FROM urls {clause} GROUP BY {column}")
        return {str(key): count for key, count in cursor}

    def captured_bytes(self) -> int:
        """Payload bytes of every capture in the WARC files."""
        return int(
            self._db.execute(
                "SELECT COALESCE(SUM(length), 0) FROM urls WHERE warc_file IS NOT NULL"
            ).fetchone()[0]
        )

    def replace_mirror_files(self, files: Iterable[MirrorFile]) -> None:
        """Record the files of a new mirror, in place of the last one's (committed)."""
        self._db.execute("DELETE FROM mirror_files")
        self._db.executemany(
            "INSERT OR REPLACE INTO mirror_files VALUES (?, ?, ?, ?)",
            ((f.path, f.sha256, f.size, f.note) for f in files),
        )
        self._db.commit()

    def record_mirror_file(self, file: MirrorFile) -> None:
        """Record one file the mirror wrote (in place of what that path held before)."""
        values = (file.path, file.sha256, file.size, file.note)
        self._db.execute("INSERT OR REPLACE INTO mirror_files VALUES (?, ?, ?, ?)", values)

    def mirror_files(self) -> Iterator[MirrorFile]:
        """Every file the last mirror build wrote, in path order.

        Raises sqlite3.OperationalError for a manifest written before files were recorded.
        """
        for found in self._db.execute("SELECT path, sha256, size, note FROM mirror_files ORDER BY path"):
            yield MirrorFile(*found)

    def mirror_notes(self) -> Iterator[tuple[str, str, str]]:
        """(url, local path, note) of each URL whose mirror file carries a note, in URL order."""
        try:
            yield from self._db.execute(
                "SELECT urls.url, mirror_files.path, mirror_files.note FROM urls "
                "JOIN mirror_files ON mirror_files.path = urls.local_path "
                "WHERE mirror_files.note IS NOT NULL ORDER BY urls.url"
            )
        except sqlite3.OperationalError:  # a manifest from before files were recorded
            return

    def resolve_redirects(self) -> None:
        """Fill final_url of every redirect row by following redirect_to through the manifest.

        Failed redirects (a loop, a chain too long) are hops too: final_url is
        where the recorded Locations lead, None for a loop.
        """
        targets: dict[str, str] = dict(
            self._db.execute(f"SELECT url, redirect_to FROM urls WHERE {IS_REDIRECT}").fetchall()
        )
        updates = [(follow_chain(url, targets.get).final, url) for url in targets]
        self._db.executemany("UPDATE urls SET final_url = ? WHERE url = ?", updates)
        self._db.commit()
