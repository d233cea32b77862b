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

import hashlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from archiver.errors import SnapshotError, UnsafePathError, WarcDamage
from archiver.numerals import whole_number
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED, ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.warc.reader import PARSE_ERRORS, WarcReader
from archiver.warc.records import NOT_MODIFIED_PROFILE, sha1_digest
from archiver.warc.safe_join import safe_join

MAX_DEPTH = 16
"""Previous snapshots followed at most (a chain of re-archives, or a loop of them)."""
SPOOL_IN_MEMORY = 1024 * 1024
CHUNK = 256 * 1024
READ_ERRORS = (OSError, UnsafePathError, WarcDamage, *PARSE_ERRORS)
"""What reading a record of a previous snapshot may raise: it is missing, damaged or not a record."""


def check_previous(previous: Path, output: Path) -> None:
    """Raise SnapshotError, saying why, unless ``previous`` is a snapshot other than ``output``."""
    if not previous.is_dir():
        raise SnapshotError(f"--previous {previous}: no such snapshot folder")
    if os.path.abspath(previous) == os.path.abspath(output):
        raise SnapshotError(f"--previous {previous} is the snapshot being written: name an earlier one")
    try:
        Snapshot(previous).check_manifest()  # lost or damaged: the WARC files give it back
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


def missing_previous(snapshot: Snapshot) -> Path | None:
    """The first snapshot of the chain ``snapshot`` was re-archived against (crawl.json's
    ``previous``, then that one's, and so on) that is not there; None if all are, or it names none."""
    path = previous_path(snapshot)
    if path is None:
        return None
    try:
        with Previous(path) as previous:
            return previous.gone_in_chain()
    except SnapshotError:
        return Path(os.path.normpath(path))


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

    def head(self) -> tuple[str, list[tuple[str, str]]]:
        """The status line and HTTP headers of the response record (read() without keeping the
        payload), once the record is read to its end and checked (WarcReader.head()): a changed
        byte of its head would be other validators sent, or other headers a 304 confirms."""
        assert self.row.warc_file is not None and self.row.warc_offset is not None
        record = self.snapshot.records.head(self.row.warc_file, self.row.warc_offset, self.row.warc_length)
        if record.http_headers is None:
            raise ValueError(f"the record of {self.url} has no HTTP headers")
        return record.http_headers.statusline, list(record.http_headers.headers)

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


@dataclass(frozen=True)
class Stored:
    """What a previous snapshot holds of one URL archived whole with a 200: the head its last
    capture says the URL had, and a response record of that same URL with its payload."""

    row: ManifestRow
    """The URL's row in the previous snapshot (a response or a revisit)."""
    status_line: str
    headers: list[tuple[str, str]]
    """As stored, or, where the capture was a 304, the headers of the response it confirmed
    updated by the 304's (RFC 9111, section 3.2)."""
    original: Original
    """The response record of the URL holding the payload (``row``'s own, or the one its
    revisit refers to, here or in an earlier snapshot)."""

    def conditions(self) -> dict[str, str]:
        """The conditional request headers its head allows: If-None-Match, If-Modified-Since."""
        conditions = {}
        for name, value in self.headers:
            if name.lower() == "etag" and value:
                conditions["If-None-Match"] = value
            elif name.lower() == "last-modified" and value:
                conditions["If-Modified-Since"] = value
        return conditions


NOT_UPDATED_BY_304 = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive", "content-range"}
)
"""Headers a 304 does not change in the stored response: they describe the stored payload, or
the 304's own message (RFC 9111, section 3.2)."""


def updated_headers(stored: list[tuple[str, str]], answer: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``stored`` headers updated by those of a 304 ``answer``: each header the 304 sends
    replaces the stored values of its name (RFC 9111, section 3.2), in the stored order.

    >>> updated_headers([("ETag", '"a"'), ("Date", "d1"), ("Content-Length", "5")],
    ...                 [("Date", "d2"), ("Content-Length", "0"), ("Expires", "e")])
    [('ETag', '"a"'), ('Date', 'd2'), ('Content-Length', '5'), ('Expires', 'e')]
    """
    given: dict[str, list[tuple[str, str]]] = {}
    for name, value in answer:
        if name.lower() not in NOT_UPDATED_BY_304:
            given.setdefault(name.lower(), []).append((name, value))
    headers = []
    for name, value in stored:
        replaced = given.pop(name.lower(), None)
        if replaced is None:
            headers.append((name, value))
        elif replaced:
            headers.extend(replaced)
            given[name.lower()] = []  # a name the 304 sends twice replaces every stored value once
    headers.extend(header for added in given.values() for header in added)
    return headers


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
        self._gone: Path | None = None
        """The previous snapshot it names, if that is not there."""

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
                try:
                    self._before = Previous(path, self._depth + 1)
                except SnapshotError:
                    self._gone = Path(os.path.normpath(path))  # as said to a reader: new/../old is old
        return self._before if isinstance(self._before, Previous) else None

    def gone_in_chain(self) -> Path | None:
        """The first snapshot of the chain behind this one that is named but not there, if any."""
        before = self.before()
        return before.gone_in_chain() if before is not None else self._gone

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

    def stored(self, url: str) -> Stored | None:
        """What this snapshot holds of ``url`` (see Stored); None if it did not archive it whole
        with a 200, or its record, or the response its revisit refers to, cannot be read (or is
        damaged, its head included).

        A revisit counts only if it refers to a response of the same URL: one of another URL
        with the same payload (an identical-payload revisit) has another URL's status and
        headers, which a 304 to this URL does not confirm.
        """
        row = self.captured(url)
        if row is None:
            return None
        assert row.warc_file is not None and row.warc_offset is not None
        try:
            # Read to its end and checked (a response's payload too: its head is covered by the
            # block digest and the CRC alone), so a changed byte of the head is damage, and the
            # URL is fetched whole, not asked with validators no digest vouches for.
            record = self.records.head(row.warc_file, row.warc_offset, row.warc_length)
            http = record.http_headers
            if http is None:
                return None
            if record.rec_type == "response":
                assert row.fetched_at is not None and row.payload_digest is not None
                original = Original(url, row.fetched_at, row.payload_digest, row, self)
                return Stored(row, http.statusline, list(http.headers), original)
            refers_to = record.rec_headers.get_header("WARC-Refers-To-Target-URI")
            refers_date = record.rec_headers.get_header("WARC-Refers-To-Date")
            if refers_to != url or not refers_date:
                return None
            earlier = self.at(url, refers_date)
            if earlier is None or earlier.payload_digest != row.payload_digest:
                return None
            if record.rec_headers.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE:
                status_line, headers = earlier.head()
                return Stored(row, status_line, updated_headers(headers, list(http.headers)), earlier)
            return Stored(row, http.statusline, list(http.headers), earlier)
        except READ_ERRORS:
            return None

    def validators(self, url: str) -> tuple[Stored, dict[str, str]] | None:
        """What this snapshot holds of ``url`` and the conditional request headers its head
        allows (Stored.conditions); None when this snapshot has no use for a condition."""
        stored = self.stored(url)
        conditions = stored.conditions() if stored is not None else {}
        return (stored, conditions) if stored is not None and conditions else None

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
        try:  # a manifest naming a file outside the mirror gives nothing (read, linked, copied)
            path = safe_join(self._snapshot.mirror_dir, row.local_path)
        except UnsafePathError:
            return None
        return path, found[0], found[1]
