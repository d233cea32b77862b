"""An earlier snapshot's record that a package takes in as it is (a re-archive's revisits refer
to it), and the check that it is whole before a byte of it is copied: one gzip member of its
recorded length, the response of its URL and date, its payload digest the revisit's. Apart
from :mod:`archiver.export.originals`, which finds which records these are."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from archiver.store.previous import READ_ERRORS
from archiver.store.snapshot import Snapshot
from archiver.warc import records
from archiver.warc.reader import WarcReader

CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Copy:
    """A response record of an earlier snapshot to copy into the package."""

    snapshot: str
    """The root folder of the snapshot that holds it."""
    file: str
    """Its WARC file, in that snapshot's warc/."""
    offset: int
    length: int
    """Bytes of its gzip member."""
    url: str
    date: str
    digest: str
    """Its payload digest."""
    status: int | None
    mime: str

    @property
    def shown(self) -> str:
        """Where it is, for a message."""
        return f"{shown_path(Path(self.snapshot))}/warc/{self.file} (offset {self.offset})"


def damage(copy: Copy, reader: WarcReader) -> str | None:
    """What is wrong with the original ``copy`` (None: its bytes are one whole gzip member holding
    the response record of its URL and date, with its payload digest)."""
    digest = hashlib.sha1()
    try:
        record, member = reader.member(copy.file, copy.offset)
        if not member.compressed:
            return "is not a gzip member (its WARC file is not compressed)"
        headers = record.rec_headers
        if (
            record.rec_type != "response"
            or headers.get_header("WARC-Target-URI") != copy.url
            or headers.get_header("WARC-Date") != copy.date
        ):
            return "is not the response record its manifest row names"
        while chunk := record.raw_stream.read(CHUNK):
            digest.update(chunk)
        member.drain()
    except READ_ERRORS as exc:
        return f"cannot be read ({exc})"
    if member.end != copy.offset + copy.length:
        return f"is not one gzip member of {copy.length} bytes"
    if records.sha1_digest(digest) != copy.digest:
        return f"has payload digest {records.sha1_digest(digest)}, not {copy.digest}"
    return None


class SnapshotReaders:
    """A WarcReader for each snapshot the originals lie in (a chain is short: MAX_DEPTH at most)."""

    def __init__(self) -> None:
        self._readers: dict[str, WarcReader] = {}

    def __enter__(self) -> SnapshotReaders:
        return self

    def __exit__(self, *exc: object) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    def of(self, copy: Copy) -> WarcReader:
        """The reader of the snapshot that holds ``copy``."""
        if copy.snapshot not in self._readers:
            self._readers[copy.snapshot] = WarcReader(Snapshot(Path(copy.snapshot)).warc_dir)
        return self._readers[copy.snapshot]


def shown_path(path: Path) -> str:
    """A snapshot's path as a user would write it (crawl.json names it relative to the next)."""
    return os.path.normpath(path)
