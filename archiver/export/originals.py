"""The records of earlier snapshots that a re-archive's revisits refer to, taken into its package.

A revisit holds no payload: a replay tool finds its original through its
index, by the revisit's WARC-Refers-To-Target-URI and -Date and its payload
digest. The originals of a re-archive's revisits (of both profiles: a payload
sent again, or a 304) are mostly records of the snapshot it was made against,
or of one before that (a chain of re-archives, followed as store/previous.py
follows it), so a package of its own WARC files alone would not replay its
unchanged URLs. ``EarlierOriginals`` finds them: each revisit the manifest
names is read for its reference; an original the snapshot holds itself is in
the package already; one an earlier snapshot holds is noted once, with where
it lies, in a scratch SQLite file (memory does not grow with the revisits).
Each is checked whole (original_copies.py: one gzip member of its recorded length, the response
its manifest row names, its payload digest the revisit's) before anything is
written; then its bytes are copied as they are, after a warcinfo record of
their own, into one more WARC file of the package, and each gets a CDXJ line
of the form the snapshot's own lines have (cdxj_line, as the crawl's writer
calls it).

An earlier snapshot that is needed and gone, or an original that is damaged,
stops the export (SnapshotError, one line): the package would not replay.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from archiver import __version__
from archiver.content import mime_type
from archiver.errors import SnapshotError, UnsafePathError, WriteError
from archiver.export.original_copies import Copy, SnapshotReaders, damage, shown_path
from archiver.report import shell_word
from archiver.stop_signals import obey
from archiver.store.lock import unchanging
from archiver.store.manifest import Manifest
from archiver.store.previous import READ_ERRORS, Original, Previous, previous_path
from archiver.store.rows import ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.warc import records
from archiver.warc.cdxj import cdxj_line, write_sorted
from archiver.warc.reader import WarcReader

_SCHEMA = """
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE originals (
    snapshot TEXT, file TEXT, offset INTEGER, length INTEGER, url TEXT, date TEXT, digest TEXT,
    status INTEGER, mime TEXT,
    PRIMARY KEY (snapshot, file, offset)
);
"""
_COLUMNS = "snapshot, file, offset, length, url, date, digest, status, mime"


class EarlierOriginals:
    """The originals in earlier snapshots that a snapshot's revisits refer to; use with ``with``.

    The earlier snapshots they lie in are held unchanging (their writer lock)
    until close(), so no crawl cuts or adds to them while they are copied.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.count = 0
        """Originals to copy, each once."""
        self.bytes = 0
        """Their bytes, all told."""
        self._folder: Path | None = None
        self._connection: sqlite3.Connection | None = None
        self._held = contextlib.ExitStack()
        self._roots: dict[Path, str] = {}
        """The root of each earlier snapshot held so far, and its real path (the originals' key)."""

    def __enter__(self) -> EarlierOriginals:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let the earlier snapshots go and remove the scratch files; safe to call twice."""
        self._held.close()
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    @property
    def _scratch(self) -> Path:
        """The scratch folder, made when first needed (a snapshot without revisits needs none)."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="archiver-export-"))
        return self._folder

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            with _scratch_writes():
                self._connection = sqlite3.connect(self._scratch / "originals.sqlite3")
                self._connection.executescript(_SCHEMA)
        return self._connection

    def may_be_needed(self) -> bool:
        """True if the snapshot is a re-archive (its crawl.json names a previous snapshot): its
        revisits may refer to records of earlier snapshots."""
        return previous_path(self.snapshot) is not None

    def gather(self, manifest: Manifest) -> None:
        """Note the original of each revisit ``manifest`` names that an earlier snapshot holds,
        then check each; SnapshotError if one is out of reach or damaged.

        A revisit whose own record cannot be read is left to the checks that see it (the
        export's of the index, verify's): what it refers to is unknown.
        """
        previous: Previous | None = None
        try:
            with WarcReader(self.snapshot.warc_dir) as reader:
                for row in manifest.captures():
                    if row.record_type != "revisit":
                        continue
                    obey()
                    reference = _reference(reader, row)
                    if reference is None or _holds(manifest, reference[0], reference[1]):
                        continue
                    previous = previous or self._previous(row, reference)
                    self._note(row, reference, previous)
        finally:
            if previous is not None:
                previous.close()
        if self._connection is None:
            return  # no revisit refers to an earlier snapshot
        with _scratch_writes():
            self._db.commit()
        self.count, total = self._db.execute("SELECT COUNT(*), SUM(length) FROM originals").fetchone()
        self.bytes = total or 0
        self._check()

    def _previous(self, row: ManifestRow, reference: tuple[str, str, str]) -> Previous:
        path = previous_path(self.snapshot)
        if path is None:
            raise self._dangling(row, reference)
        try:
            return Previous(path)
        except SnapshotError:
            raise self._gone(path) from None

    def _note(self, row: ManifestRow, reference: tuple[str, str, str], previous: Previous) -> None:
        url, date, digest = reference
        original = previous.at(url, date)
        if original is None:
            missing = previous.gone_in_chain()
            raise self._gone(missing) if missing is not None else self._dangling(row, reference)
        if original.payload_digest != digest:
            raise self._damaged(original, f"has payload digest {original.payload_digest}, not {digest}")
        found = original.row
        if found.warc_file is None or found.warc_offset is None or not found.warc_length:
            raise self._damaged(original, "is not located by its manifest row")
        root = self._roots.get(original.snapshot.root)
        if root is None:  # the first original of that snapshot: keep it unchanged from now on
            self._held.enter_context(unchanging(original.snapshot.root, "archiver export"))
            root = self._roots[original.snapshot.root] = os.path.realpath(original.snapshot.root)
        values = (
            root,
            found.warc_file,
            found.warc_offset,
            found.warc_length,
            original.url,
            original.date,
            original.payload_digest,
            found.status,
            mime_type(found.content_type),
        )
        with _scratch_writes():
            self._db.execute(
                f"INSERT OR IGNORE INTO originals ({_COLUMNS}) VALUES ({', '.join('?' * 9)})", values
            )

    def _check(self) -> None:
        with SnapshotReaders() as readers:
            for copy in self:
                obey()
                problem = damage(copy, readers.of(copy))
                if problem is not None:
                    raise SnapshotError(
                        f"the record of {copy.url} in {copy.shown} that revisits of {self.snapshot.root} "
                        f"refer to {problem}; their package would not replay "
                        f"(archiver verify {shell_word(self.snapshot.root)} says more)"
                    )

    def __iter__(self) -> Iterator[Copy]:
        """The originals, each once, in the order they lie in their snapshots' files."""
        cursor = self._db.execute(f"SELECT {_COLUMNS} FROM originals ORDER BY snapshot, file, offset")
        for found in cursor:
            yield Copy(*found)

    def warcinfo(self, name: str) -> bytes:
        """The warcinfo record that opens the WARC file ``name`` of the copies."""
        sources = self._db.execute("SELECT DISTINCT snapshot, file FROM originals ORDER BY snapshot, file")
        info = [
            ("software", f"archiver/{__version__}"),
            ("format", "WARC File Format 1.1"),
            ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"),
            ("description", "records of earlier snapshots that revisits of this package refer to, as stored"),
            *(("source", f"{_folder_name(root)}/warc/{file}") for root, file in sources),
        ]
        fields = [
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", records.new_record_id()),
            ("WARC-Filename", name),
            ("WARC-Date", records.warc_date(datetime.now(UTC))),
        ]
        return records.encode_record(fields, records.WARC_FIELDS_TYPE, records.warc_fields(info))

    def copy(self, write: Callable[[bytes], object], name: str, start: int) -> Path:
        """Pass each original's bytes to ``write``, which writes the WARC file ``name`` of the package
        after the ``start`` bytes it holds already; returns a scratch file of their CDXJ lines, sorted."""
        index = self._scratch / "index.cdxj"
        write_sorted(self._copied(write, name, start), index)
        return index

    def _copied(self, write: Callable[[bytes], object], name: str, start: int) -> Iterator[str]:
        offset = start
        with SnapshotReaders() as readers:
            for copy in self:
                obey()
                try:
                    copied = readers.of(copy).copy(copy.file, copy.offset, copy.length, write)
                except (OSError, UnsafePathError) as exc:
                    raise SnapshotError(f"cannot read {copy.shown}: {exc}") from None
                if copied != copy.length:
                    raise SnapshotError(f"{copy.shown} was cut short while it was copied")
                yield cdxj_line(
                    copy.url,
                    copy.date,
                    mime=copy.mime,
                    status=copy.status,
                    digest=copy.digest,
                    length=copy.length,
                    offset=offset,
                    filename=name,
                )
                offset += copy.length

    def _gone(self, path: Path) -> SnapshotError:
        return SnapshotError(
            f"revisits of {self.snapshot.root} refer to records of the earlier snapshot {shown_path(path)}, "
            f"which {_why_unusable(path)}; their package would not replay without it "
            f"(archiver verify {shell_word(self.snapshot.root)} says more)"
        )

    def _dangling(self, row: ManifestRow, reference: tuple[str, str, str]) -> SnapshotError:
        return SnapshotError(
            f"the revisit of {row.url} refers to {reference[0]} at {reference[1]}, which neither "
            f"{self.snapshot.root} nor an earlier snapshot holds; the snapshot is damaged "
            f"(archiver verify {shell_word(self.snapshot.root)} says more)"
        )

    def _damaged(self, original: Original, problem: str) -> SnapshotError:
        return SnapshotError(
            f"the record of {original.url} in {shown_path(original.snapshot.root)} that revisits of "
            f"{self.snapshot.root} refer to {problem}; their package would not replay "
            f"(archiver verify {shell_word(self.snapshot.root)} says more)"
        )


@contextlib.contextmanager
def _scratch_writes() -> Iterator[None]:
    """SQLite's errors writing the scratch file (a full disk) as a WriteError."""
    try:
        yield
    except sqlite3.Error as exc:
        raise WriteError(f"cannot write a scratch file in {tempfile.gettempdir()}: {exc}") from None


def _reference(reader: WarcReader, row: ManifestRow) -> tuple[str, str, str] | None:
    """The URL, date and payload digest of the record the revisit of ``row`` refers to; None if
    its record cannot be read or names none."""
    assert row.warc_file is not None and row.warc_offset is not None
    try:
        record = reader.head(row.warc_file, row.warc_offset, row.warc_length)  # a revisit's block is small
    except READ_ERRORS:
        return None
    headers = record.rec_headers
    url = headers.get_header("WARC-Refers-To-Target-URI")
    date = headers.get_header("WARC-Refers-To-Date")
    digest = headers.get_header("WARC-Payload-Digest") or row.payload_digest
    if record.rec_type != "revisit" or not url or not date or not digest:
        return None
    return url, date, digest


def _holds(manifest: Manifest, url: str, date: str) -> bool:
    """True if the snapshot of ``manifest`` holds the response record of ``url`` dated ``date``."""
    row = manifest.get(url)
    if row is None or row.warc_file is None:
        return False
    return row.record_type == "response" and row.fetched_at == date


def _folder_name(root: str) -> str:
    return os.path.basename(os.path.abspath(root))


def _why_unusable(path: Path) -> str:
    """Why the snapshot at ``path`` cannot be read: gone, or what opening it says."""
    if not os.path.lexists(path):
        return "is gone"
    try:
        Previous(path).close()
    except SnapshotError as exc:
        return f"cannot be read ({exc})"
    return "cannot be read"
