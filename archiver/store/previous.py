"""A snapshot archived before, read-only: what a re-archive asks the server about, and refers to.

A re-archive (``crawl --previous OLD``) sends, for each URL OLD archived,
the validators OLD's record kept (If-None-Match from its ETag,
If-Modified-Since from its Last-Modified), and stores a payload OLD already
holds as a revisit of OLD's record. Everything is asked of OLD's manifest
with SQL, one URL or digest at a time, never loaded whole. OLD may itself be
a re-archive: a payload it only refers to is looked for in its own previous
snapshot, and so on.

The path of OLD is kept in NEW's crawl.json (setting ``previous``), relative
to NEW when it can be, so the two folders can move together.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from archiver.errors import SnapshotError, UnsafePathError, WarcDamage
from archiver.numerals import whole_number
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED, ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.warc.files import PayloadIndex
from archiver.warc.reader import WarcReader
from archiver.warc.records import sha1_digest

MAX_DEPTH = 16
"""Previous snapshots followed at most (a chain of re-archives, or a loop of them)."""
SPOOL_IN_MEMORY = 1024 * 1024
CHUNK = 256 * 1024
READ_ERRORS = (
    OSError,
    UnsafePathError,
    WarcDamage,
    ArchiveLoadFailed,
    StatusAndHeadersParserException,
    EOFError,
    ValueError,
)
"""What reading a record of a previous snapshot may raise: it is missing, damaged or not a record."""


def check_previous(previous: Path, output: Path) -> None:
    """Raise SnapshotError, saying why, unless ``previous`` is a snapshot other than ``output``."""
    if not previous.is_dir():
        raise SnapshotError(f"--previous {previous}: no such snapshot folder")
    if os.path.abspath(previous) == os.path.abspath(output):
        raise SnapshotError(f"--previous {previous} is the snapshot being written: name an earlier one")
    try:
        Previous(previous).close()
    except SnapshotError as exc:
        raise SnapshotError(f"--previous: {exc}") from None


def previous_path(snapshot: Snapshot) -> Path | None:
    """Where the crawl.json of ``snapshot`` says its previous snapshot is (None: it names none)."""
    try:
        settings = snapshot.read_crawl_json().get("settings")
    except (SnapshotError, AttributeError):
        return None
    named = settings.get("previous") if isinstance(settings, dict) else None
    if not isinstance(named, str) or not named:
        return None
    return snapshot.root / named


def open_previous(snapshot: Snapshot) -> Previous | None:
    """The previous snapshot ``snapshot`` was re-archived against, opened; None if it names none
    or it is not there any more."""
    path = previous_path(snapshot)
    if path is None:
        return None
    try:
        return Previous(path)
    except SnapshotError:
        return None


@dataclass(frozen=True)
class Original:
    """A whole response record of a previous snapshot: what a revisit refers to."""

    url: str
    date: str
    """Its WARC-Date."""
    payload_digest: str
    row: ManifestRow
    """Its manifest row (its WARC file, offset and length are in that snapshot's warc/)."""
    snapshot: Previous
    """The snapshot that holds it."""

    def read(self) -> tuple[str, list[tuple[str, str]], IO[bytes]]:
        """The status line ('200 OK'), HTTP headers and payload of the response record as stored
        (the payload still content-encoded, in a spooled temporary file at 0), in one read.

        Raises OSError, WarcDamage, ValueError or warcio errors if the record cannot be read.
        """
        assert self.row.warc_file is not None and self.row.warc_offset is not None
        record = self.snapshot.records.record(self.row.warc_file, self.row.warc_offset, self.row.warc_length)
        if record.http_headers is None:
            raise ValueError(f"the record of {self.url} has no HTTP headers")
        statusline = record.http_headers.statusline
        if whole_number(statusline.split(" ", 1)[0]) is None:
            raise ValueError(f"the record of {self.url} has no HTTP status: {statusline[:40]!r}")
        body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        while chunk := record.raw_stream.read(CHUNK):
            body.write(chunk)
        body.seek(0)
        return statusline, list(record.http_headers.headers), body

    def check(self) -> str | None:
        """What is wrong with the record (None: it is there, whole, with its payload digest)."""
        if self.row.warc_file is None or self.row.warc_offset is None:
            return "its row names no record"
        where = (self.row.warc_file, self.row.warc_offset, self.row.warc_length or 0)
        if not self.snapshot.records.holds(*where):
            return f"warc/{self.row.warc_file} does not hold it"
        try:
            record = self.snapshot.records.record(self.row.warc_file, self.row.warc_offset)
            digest = hashlib.sha1()
            while chunk := record.raw_stream.read(CHUNK):
                digest.update(chunk)
        except READ_ERRORS as exc:
            return f"it cannot be read: {exc}"
        if sha1_digest(digest) != self.payload_digest:
            return f"its payload digest is {sha1_digest(digest)}, not {self.payload_digest}"
        return None


class Previous:
    """A previous snapshot, opened read-only; use as a context manager (closes its previous ones).

    Not thread-safe: one thread asks it at a time (the fetch wrapper hops to one).
    """

    def __init__(self, root: Path, depth: int = 0) -> None:
        """Raises SnapshotError when ``root`` is not a snapshot with a manifest."""
        self.root = root
        snapshot = Snapshot(root)
        if not snapshot.manifest_path.is_file():
            raise SnapshotError(f"{root} is not a snapshot: no manifest.sqlite3")
        try:
            self.manifest = Manifest.open(snapshot.manifest_path, readonly=True)
            self.manifest.count_by("outcome")  # fails now if it is not a manifest
        except sqlite3.Error as exc:
            raise SnapshotError(f"cannot read the manifest of {root}: {exc}") from None
        self.records = WarcReader(snapshot.warc_dir)
        self._snapshot = snapshot
        self._depth = depth
        self._before: Previous | None | bool = False
        """Its own previous snapshot, opened when first needed (False: not looked for yet)."""

    def __enter__(self) -> Previous:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the manifest and WARC files (and those of earlier snapshots); safe to call twice."""
        self.records.close()
        self.manifest.close()
        if isinstance(self._before, Previous):
            self._before.close()
        self._before = None

    def before(self) -> Previous | None:
        """The snapshot this one was itself re-archived against, if it names one and it is there."""
        if self._before is False:
            self._before = None
            path = previous_path(self._snapshot)
            if path is not None and self._depth < MAX_DEPTH:
                with contextlib.suppress(SnapshotError):
                    self._before = Previous(path, self._depth + 1)
        return self._before if isinstance(self._before, Previous) else None

    def missing_before(self) -> Path | None:
        """The path of the first snapshot behind this one in its chain that cannot be opened (gone,
        or no snapshot any more), whose records are out of reach; None if the chain is whole."""
        before = self.before()
        if before is not None:
            return before.missing_before()
        path = previous_path(self._snapshot)
        return path if path is not None and self._depth < MAX_DEPTH else None

    def captured(self, url: str) -> ManifestRow | None:
        """The row of ``url`` if this snapshot archived it whole with a 200 (response or revisit)."""
        row = self.manifest.get(url)
        if (
            row is None
            or row.outcome != FETCHED
            or row.status != 200
            or row.warc_file is None
            or row.truncated
            or not row.payload_digest
        ):
            return None
        return row

    def original(self, digest: str) -> Original | None:
        """A whole, non-empty response record holding the payload ``digest``, here or in an
        earlier snapshot."""
        found = self.manifest.connection.execute(
            "SELECT url FROM urls WHERE payload_digest = ? AND record_type = 'response' "
            "AND length > 0 AND NOT truncated AND warc_file IS NOT NULL LIMIT 1",
            (digest,),
        ).fetchone()
        if found is not None:
            row = self.manifest.get(found[0])
            if row is not None and row.fetched_at:
                return Original(row.url, row.fetched_at, digest, row, self)
        before = self.before()
        return before.original(digest) if before is not None else None

    def at(self, url: str, date: str) -> Original | None:
        """The response record of ``url`` dated ``date`` (what a revisit names), here or earlier."""
        row = self.manifest.get(url)
        response = row is not None and row.record_type == "response" and row.fetched_at == date
        if row is not None and response and row.payload_digest:
            return Original(url, date, row.payload_digest, row, self)
        before = self.before()
        return before.at(url, date) if before is not None else None

    def validators(self, url: str) -> tuple[ManifestRow, dict[str, str]] | None:
        """The row of ``url`` and the conditional request headers its stored record allows
        (If-None-Match, If-Modified-Since); None when this snapshot has no use for a condition."""
        row = self.captured(url)
        if row is None:
            return None
        assert row.warc_file is not None and row.warc_offset is not None
        try:
            record = self.records.record(row.warc_file, row.warc_offset, row.warc_length)
        except READ_ERRORS:
            return None
        http = record.http_headers
        if http is None:
            return None
        conditions = {}
        etag = http.get_header("ETag")
        modified = http.get_header("Last-Modified")
        if etag:
            conditions["If-None-Match"] = etag
        if modified:
            conditions["If-Modified-Since"] = modified
        return (row, conditions) if conditions else None

    def mirror_file(self, url: str, digest: str | None) -> tuple[Path, str, int] | None:
        """The mirror file of ``url`` if this snapshot wrote one whole for the payload ``digest``:
        (path, its recorded SHA-256, its size)."""
        row = self.manifest.get(url)
        if row is None or not row.local_path or row.payload_digest != digest or row.truncated:
            return None
        try:
            found = self.manifest.connection.execute(
                "SELECT sha256, size FROM mirror_files WHERE path = ? AND note IS NULL", (row.local_path,)
            ).fetchone()
        except sqlite3.OperationalError:  # a manifest from before files were recorded
            return None
        if found is None:
            return None
        return self._snapshot.mirror_dir / row.local_path, found[0], found[1]


class PreviousPayloads:
    """The writer's PayloadIndex of a re-archive: payloads stored by this crawl first, then by the
    previous snapshots, so an unchanged body becomes a revisit of the record that holds it."""

    def __init__(self, own: PayloadIndex, previous: Previous) -> None:
        self._own = own
        self._previous = previous

    def find(self, digest: str) -> tuple[str, str] | None:
        found = self._own.find(digest)
        if found is not None:
            return found
        original = self._previous.original(digest)
        return (original.url, original.date) if original is not None else None

    def add(self, digest: str, url: str, date: str) -> None:
        self._own.add(digest, url, date)
