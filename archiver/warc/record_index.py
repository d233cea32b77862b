"""The index of a scan's WARC records, on disk: memory does not grow with the archive.

What the later checks need of each response, revisit and resource record (a
RecordEntry, never a body) goes into a scratch SQLite file beside nothing of
the snapshot (a temporary folder), as do the record ids seen (to find
duplicates) and which records a manifest row or a CDXJ line named. Lookups
go through SQLite's own page cache, bounded.

>>> with RecordIndex() as records:
...     records.add(RecordEntry("a.warc.gz", 0, 10, "http://h/", "response", "2026-01-01T00:00:00Z",
...                             "sha1:X", 200, "text/html"))
...     records.get(("a.warc.gz", 0)).url, ("a.warc.gz", 5) in records, records.response_at("http://h/",
...     "2026-01-01T00:00:00Z")
('http://h/', False, ('a.warc.gz', 0))
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import astuple, dataclass
from pathlib import Path

BATCH = 2000
"""Entries gathered before one insert."""
CACHE_KIB = 16 * 1024
"""SQLite's page cache for the index (the rest stays on disk)."""


@dataclass(frozen=True, slots=True)
class RecordEntry:
    """What the later checks need of one response, revisit or resource record (a rendered DOM)."""

    file: str
    offset: int
    length: int
    """Bytes of the record in its file (its gzip member, when compressed)."""
    url: str
    record_type: str
    date: str
    payload_digest: str | None
    status: int | None
    mime: str
    """MIME type of the HTTP Content-Type, '' if none."""
    refers_url: str | None = None
    """For a revisit: WARC-Refers-To-Target-URI (and -Date below)."""
    refers_date: str | None = None
    truncated: str | None = None
    """WARC-Truncated: a declared cut (length, time, disconnect), not damage."""
    intact: bool = True
    """Parsed whole with matching digests."""
    payload_length: int | None = None
    """Bytes of its payload (after the HTTP headers, as stored); None if not counted."""
    redirect_to: str | None = None
    """Where its answer redirects: its Location as the crawl resolves it, for a status the crawl
    follows (redirects.redirect_target()); None for any other answer."""

    @property
    def refers_to(self) -> tuple[str, str] | None:
        """For a revisit: WARC-Refers-To-Target-URI and -Date."""
        return (self.refers_url or "", self.refers_date or "") if self.record_type == "revisit" else None


_FIELDS = len(RecordEntry.__dataclass_fields__)
_SCHEMA = f"""
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -{CACHE_KIB};
CREATE TABLE records (
    file TEXT, offset INTEGER, length INTEGER, url TEXT, record_type TEXT, date TEXT,
    payload_digest TEXT, status INTEGER, mime TEXT, refers_url TEXT, refers_date TEXT,
    truncated TEXT, intact INTEGER, payload_length INTEGER, redirect_to TEXT,
    claimed INTEGER NOT NULL DEFAULT 0, indexed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (file, offset)
);
CREATE TABLE ids (id TEXT PRIMARY KEY) WITHOUT ROWID;
"""
_COLUMNS = (
    "file, offset, length, url, record_type, date, payload_digest, status, mime, refers_url, "
    "refers_date, truncated, intact, payload_length, redirect_to"
)


def _entry(values: tuple[object, ...]) -> RecordEntry:
    fields = list(values)
    fields[12] = bool(fields[12])
    return RecordEntry(*fields)  # type: ignore[arg-type]


class RecordIndex:
    """(file name, offset) -> RecordEntry for every response, revisit and resource record of a scan.

    Use with ``with`` (the scratch file is removed at the end).
    """

    def __init__(self) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="archiver-verify-"))
        self._db = sqlite3.connect(self._folder / "records.sqlite3")
        self._db.executescript(_SCHEMA)
        self._batch: list[tuple[object, ...]] = []
        self._count = 0

    def __enter__(self) -> RecordIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the scratch file; safe to call twice."""
        if self._db is not None:
            self._db.close()
            self._db = None  # type: ignore[assignment]
            shutil.rmtree(self._folder, ignore_errors=True)

    def add(self, entry: RecordEntry) -> None:
        """Index ``entry`` (a second entry at one place replaces the first)."""
        self._batch.append(astuple(entry))
        self._count += 1
        if len(self._batch) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            placeholders = ", ".join("?" * _FIELDS)
            self._db.executemany(
                f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES ({placeholders})", self._batch
            )
            self._batch.clear()

    def first_id(self, record_id: str) -> bool:
        """Note a WARC-Record-ID: True the first time it is met, False for a duplicate."""
        return self._db.execute("INSERT OR IGNORE INTO ids VALUES (?)", (record_id,)).rowcount == 1

    def __len__(self) -> int:
        self._flush()
        return int(self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def __bool__(self) -> bool:
        return self._count > 0

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self.get(key) is not None

    def get(self, key: tuple[str, int]) -> RecordEntry | None:
        """The entry of the record at (file, offset), or None."""
        self._flush()
        found = self._db.execute(
            f"SELECT {_COLUMNS} FROM records WHERE file = ? AND offset = ?", key
        ).fetchone()
        return _entry(found) if found else None

    def values(self, where: str = "1") -> Iterator[RecordEntry]:
        """Every entry (those meeting the SQL condition ``where``, the caller's own text), in
        WARC order."""
        self._flush()
        cursor = self._db.execute(f"SELECT {_COLUMNS} FROM records WHERE {where} ORDER BY file, offset")
        for found in cursor:
            yield _entry(found)

    def response_at(self, url: str, date: str) -> tuple[str, int] | None:
        """Where the response record of ``url`` dated ``date`` is (what a revisit refers to)."""
        self._flush()
        found = self._db.execute(
            "SELECT file, offset FROM records WHERE url = ? AND date = ? AND record_type = 'response' "
            "LIMIT 1",
            (url, date),
        ).fetchone()
        return (found[0], found[1]) if found else None

    def index_by_target(self) -> None:
        """Make response_at() fast: call once every record is in (an index built at once)."""
        self._flush()
        self._db.execute("CREATE INDEX IF NOT EXISTS records_target ON records (url, date)")

    def claim(self, key: tuple[str, int]) -> None:
        """Note that a manifest row names the record at ``key``."""
        self._flush()
        self._db.execute("UPDATE records SET claimed = 1 WHERE file = ? AND offset = ?", key)

    def mark_indexed(self, key: tuple[str, int]) -> bool:
        """Note that a CDXJ line names the record at ``key``: False if one did already (or none is there)."""
        self._flush()
        return (
            self._db.execute(
                "UPDATE records SET indexed = 1 WHERE file = ? AND offset = ? AND indexed = 0", key
            ).rowcount
            == 1
        )
