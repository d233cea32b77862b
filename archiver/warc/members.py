"""A WARC file's gzip members, read one by one, and damage told apart.

warcio's ArchiveIterator recovers silently from damage (a torn gzip member
ends the file without a word; corrupt data is printed to stderr and
skipped). Verifying needs the opposite, so the gzip layer lives here: each
member is decompressed on its own, and a file that ends inside a member
(:class:`TornFile`) is told apart from data that does not inflate
(:class:`CorruptData`). The same member walk finds where a crash cut a file
short (torn_offset, member_end), for resume. Records are read from the members
by warc/reader.py.

>>> import io
>>> source = Source(io.BytesIO(b"WARC/1.1\\r\\n"), gzipped=False)
>>> source.next_stream().readline()
b'WARC/1.1\\r\\n'
"""

from __future__ import annotations

import collections
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO, cast

from isal import isal_zlib

from archiver.errors import CorruptData, TornFile, UnsafePathError, WarcDamage
from archiver.warc.safe_join import safe_join

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 256 * 1024
MAX_LINE = 1024 * 1024
"""Longest header line kept; a longer one is cut (memory stays bounded on garbage)."""


# isal's type stub declares its error an instance; it is the exception class.
INFLATE_ERROR = cast(type[Exception], isal_zlib.error)


def is_gzipped(path_head: bytes) -> bool:
    """True if a file starting with ``path_head`` is gzip-compressed."""
    return path_head.startswith(GZIP_MAGIC[:2])


class Source:
    """The raw bytes of one WARC file, read forward; hands out one stream per gzip member.

    An uncompressed WARC is one stream for the whole file.
    """

    def __init__(self, fh: IO[bytes], gzipped: bool, offset: int = 0) -> None:
        self._fh = fh
        self.gzipped = gzipped
        self._pending = b""
        self.position = offset
        """File offset of the next byte not yet handed to a stream."""

    def take(self, size: int) -> bytes:
        """Up to ``size`` raw bytes (more if some were handed back)."""
        if self._pending:
            data, self._pending = self._pending, b""
        else:
            data = self._fh.read(size)
        self.position += len(data)
        return data

    def give_back(self, data: bytes) -> None:
        """Return bytes read past the end of a gzip member."""
        if data:
            self._pending = data + self._pending
            self.position -= len(data)

    def at_end(self) -> bool:
        """True when no byte is left in the file."""
        data = self.take(CHUNK)
        self.give_back(data)
        return not data

    def next_stream(self) -> MemberStream:
        """The stream of the next gzip member (or of the rest of an uncompressed file)."""
        return MemberStream(self)

    def seek_next_member(self, after: int) -> bool:
        """Move to the next gzip header after file offset ``after``; False if none is left."""
        self._pending = b""
        self._fh.seek(after)
        self.position = after
        tail = b""
        while True:
            data = self._fh.read(CHUNK)
            if not data:
                return False
            window = tail + data
            found = window.find(GZIP_MAGIC)
            if found >= 0:
                start = self.position - len(tail) + found
                self._fh.seek(start)
                self.position = start
                return True
            self.position += len(data)
            tail = window[-(len(GZIP_MAGIC) - 1) :]


class MemberStream:
    """Decompressed bytes of one gzip member, with read() and readline() for warcio."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self.start = source.position
        """File offset where the member starts."""
        self.end: int | None = None
        """File offset just past the member, once it has been read to its end."""
        self.compressed = source.gzipped
        self._inflate = isal_zlib.decompressobj(16 + isal_zlib.MAX_WBITS) if source.gzipped else None
        self._buffer = bytearray()
        self._pos = 0
        self._ended = False
        self._consumed = 0

    def tell(self) -> int:
        """Decompressed bytes read from the member so far."""
        return self._consumed

    def raw_position(self) -> int:
        """File offset of the next unread byte (uncompressed files only)."""
        return self._source.position - (len(self._buffer) - self._pos)

    def _fill(self) -> bool:
        """Add decompressed bytes to the buffer; False at the member's end."""
        if self._ended:
            return False
        if self._inflate is None:  # an uncompressed file: the stream runs to its end
            data = self._source.take(CHUNK)
            if not data:
                self._ended = True
                self.end = self._source.position
                return False
            self._append(data)
            return True
        raw = self._inflate.unconsumed_tail or self._source.take(CHUNK)
        if not raw:
            raise TornFile(self.start, "file ends inside a gzip member")
        try:
            data = self._inflate.decompress(raw, CHUNK)
        except INFLATE_ERROR as exc:
            raise CorruptData(self.start, f"gzip data does not decompress ({exc})") from None
        if self._inflate.eof:
            self._source.give_back(self._inflate.unused_data)
            self._ended = True
            self.end = self._source.position
        self._append(data)
        return True

    def _append(self, data: bytes) -> None:
        if self._pos > CHUNK:
            del self._buffer[: self._pos]
            self._pos = 0
        self._buffer += data

    def _available(self) -> int:
        return len(self._buffer) - self._pos

    def _take(self, size: int) -> bytes:
        data = bytes(self._buffer[self._pos : self._pos + size])
        self._pos += len(data)
        self._consumed += len(data)
        return data

    def read(self, size: int | None = None) -> bytes:
        """Up to ``size`` bytes (fewer only at the member's end)."""
        size = CHUNK if size is None or size < 0 else size
        while self._available() < size and self._fill():
            pass
        return self._take(size)

    def readline(self, size: int | None = None) -> bytes:
        """One line, newline included (cut at ``size`` or MAX_LINE bytes)."""
        size = MAX_LINE if size is None or size < 0 else min(size, MAX_LINE)
        while True:
            newline = self._buffer.find(b"\n", self._pos, self._pos + size)
            if newline >= 0:
                return self._take(newline + 1 - self._pos)
            if self._available() >= size or not self._fill():
                return self._take(size)

    def at_end(self) -> bool:
        """True when every byte of the member has been read."""
        while not self._available():
            if not self._fill():
                return True
        return False

    def drain(self) -> int:
        """Read the member to its end (so its CRC is checked); returns the bytes skipped."""
        skipped = self._available()
        self._pos = len(self._buffer)
        while self._fill():
            skipped += self._available()
            self._pos = len(self._buffer)
        return skipped


def member_ends(path: Path, offset: int = 0) -> Iterator[int]:
    """The file offset just past each whole gzip member from ``offset``, in order.

    Stops at the end of the file, or where the bytes do not inflate (a member
    cut short, or damage).
    """
    with open(path, "rb") as fh:
        fh.seek(offset)
        source = Source(fh, gzipped=True, offset=offset)
        while not source.at_end():
            stream = source.next_stream()
            try:
                stream.drain()
            except WarcDamage:
                return
            assert stream.end is not None
            yield stream.end


def torn_offset(path: Path) -> int | None:
    """Offset of a gzip member (record) cut short at the end of a WARC file, or None.

    A crash while writing leaves the last record torn; resume reports it and
    starts a new file instead of appending after it.
    """
    whole = collections.deque(member_ends(path), maxlen=1)  # the end of the last whole member
    end = whole[0] if whole else 0
    return end if end < path.stat().st_size else None


def member_end(path: Path, offset: int, members: int) -> int | None:
    """File offset just past ``members`` gzip members from ``offset``; None if the file ends first."""
    return next(itertools.islice(member_ends(path, offset), members - 1, None), None)


_RECORD_START = b"WARC/"
"""How a record of an uncompressed WARC file begins."""


class RecordPlaces:
    """The WARC files of a folder, each opened once, asked whether a record starts where a row
    says (crawling/resume.py checks every row so before a resume or a merge)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._open: dict[str, tuple[BinaryIO, int, bytes] | None] = {}

    def __enter__(self) -> RecordPlaces:
        return self

    def __exit__(self, *exc: object) -> None:
        for held in self._open.values():
            if held is not None:
                held[0].close()

    def moved(self, name: str, offset: int, length: int, followed: bool) -> str | None:
        """Why no record of ``length`` bytes sits at ``offset`` of WARC file ``name``, or None if
        one does, or if the file is too short to hold it (a file cut short: resume's recover()
        cuts it), gone or unreadable (what reads it next says so). ``followed``: another record a
        row names comes after it, so one starts past it."""
        if name not in self._open:
            self._open[name] = self._opened(name)
        held = self._open[name]
        if held is None:
            return None
        fh, size, start = held
        if offset + length > size:
            return None
        kind = "gzip member" if start == GZIP_MAGIC else "record"
        try:
            fh.seek(offset)
            if fh.read(len(start)) != start:
                return f"no {kind} starts there"
            fh.seek(offset + length)
            after = fh.read(len(start))
        except OSError:
            return None
        return None if after in (b"", start) or not followed else f"no {kind} starts {length} bytes on"

    def _opened(self, name: str) -> tuple[BinaryIO, int, bytes] | None:
        try:
            fh = open(safe_join(self._folder, name), "rb")  # noqa: SIM115 - kept open for the file's records, closed by __exit__
        except (OSError, UnsafePathError):  # a name out of the folder: no record of it is there
            return None
        try:
            size = os.fstat(fh.fileno()).st_size
            gzipped = is_gzipped(fh.read(2))
        except OSError:
            fh.close()
            return None
        return fh, size, GZIP_MAGIC if gzipped else _RECORD_START
