"""Reading WARC files record by record, streaming, and telling damage apart.

warcio's ArchiveIterator recovers silently from damage (a torn gzip member
ends the file without a word; corrupt data is printed to stderr and
skipped). Verifying needs the opposite, so the gzip layer lives here: each
member is decompressed on its own, and a file that ends inside a member
(:class:`TornFile`) is told apart from data that does not inflate
(:class:`CorruptData`). Records are still parsed by warcio's record loader,
with its digest checking: a payload read to its end is checked against the
record's digests (:class:`CheckedToEnd`), so no reader hands on other bytes
than were written, compressed or not. The same member walk finds where a
crash cut a file short (torn_offset, member_end), for resume.

>>> import io
>>> source = Source(io.BytesIO(b"WARC/1.1\\r\\n"), gzipped=False)
>>> source.next_stream().readline()
b'WARC/1.1\\r\\n'
"""

from __future__ import annotations

import binascii
import collections
import io
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from isal import isal_zlib
from warcio.digestverifyingreader import DigestVerifyingReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord, ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParserException

from archiver.errors import CorruptData, DigestMismatch, TornFile, UnsafePathError, WarcDamage
from archiver.store.safe_join import safe_join

GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 256 * 1024
MAX_LINE = 1024 * 1024
"""Longest header line kept; a longer one is cut (memory stays bounded on garbage)."""
WHOLE_READ_BYTES = 1024 * 1024
"""A record no longer than this in the file, when its length is known, is read in one go..."""
WHOLE_INFLATED_BYTES = 8 * 1024 * 1024
"""...if it inflates to no more than this (else it is streamed)."""


PARSE_ERRORS = (
    ArchiveLoadFailed,
    StatusAndHeadersParserException,
    EOFError,
    ValueError,
    # warcio meets some damage unawares: a response whose WARC-Target-URI header is gone or cut
    # raises AttributeError from inside its loader.
    AttributeError,
    TypeError,
)
"""What warcio's record loader raises on bytes that are not a whole record."""


class RecordLoader(ArcWarcRecordLoader):  # type: ignore[misc]
    """warcio's record loader, which with ``check_digests`` checks a revisit's WARC-Block-Digest
    too: warcio checks none of a revisit's digests (its payload digest is its original's), so a
    changed byte of its HTTP head, whose Content-Encoding and Content-Type the mirror reads, went
    unseen in an uncompressed file."""

    def wrap_digest_verifying_stream(
        self,
        stream: Any,
        rec_type: str,
        rec_headers: StatusAndHeaders,
        digest_checker: Any,
        length: Any = None,
    ) -> tuple[Any, bool]:
        block_digest = rec_headers.get_header("WARC-Block-Digest")
        if rec_type != "revisit" or not block_digest:
            return cast(
                tuple[Any, bool],
                super().wrap_digest_verifying_stream(
                    stream, rec_type, rec_headers, digest_checker, length=length
                ),
            )
        return DigestVerifyingReader(stream, length, digest_checker, block_digest=block_digest), True


# isal's type stub declares its error an instance; it is the exception class.
_INFLATE_ERROR = cast(type[Exception], isal_zlib.error)


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
        except _INFLATE_ERROR as exc:
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


class CheckedToEnd:
    """A record's payload stream that checks what it hands on once it is read to its end.

    The record's digests (WARC-Block-Digest, WARC-Payload-Digest), summed by warcio's
    digest-verifying reader as the bytes go by, settle with the last byte of the block: a
    mismatch is DigestMismatch, raised in place of that last read, before the bytes are whole
    (an uncompressed file has no other check; a payload read in part is not checked). And a
    gzip member is read to its end too: warcio stops at Content-Length, before the member's
    CRC and length, and a bit flipped inside the deflate data can inflate to other bytes
    without an error, which only the CRC tells. Reading the few bytes left (the record's
    closing CRLFs) checks it: CorruptData then.
    """

    def __init__(self, record: ArcWarcRecord, offset: int, member: MemberStream | None = None) -> None:
        """``offset``: the record's in its file; ``member``: the gzip member it is read from."""
        self._payload = record.raw_stream
        self._checker = record.digest_checker
        self._offset = offset
        self._member = member
        self.check()

    def check(self) -> None:
        """Raise DigestMismatch if the bytes read so far settled a digest that does not match."""
        if self._checker.passed is False:
            problems = "; ".join(self._checker.problems)
            raise DigestMismatch(self._offset, f"the record does not match its digests ({problems})")

    def _checked(self, read: Callable[[int | None], bytes], size: int | None) -> bytes:
        try:
            data = read(size)
        except binascii.Error as exc:  # a digest's value is damaged: warcio decodes it at the end
            raise DigestMismatch(self._offset, f"a digest of the record cannot be read ({exc})") from None
        self.check()
        if not data and size != 0 and self._member is not None and self._member.compressed:
            self._member.drain()
        return data

    def read(self, size: int | None = None) -> bytes:
        return self._checked(self._payload.read, size)

    def readline(self, size: int | None = None) -> bytes:
        return self._checked(self._payload.readline, size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._payload, name)


@dataclass(frozen=True)
class StoredRecord:
    """One record read back from its offset: headers and the start of its payload."""

    rec_headers: StatusAndHeaders
    http_headers: StatusAndHeaders | None
    payload: bytes
    """The HTTP payload as stored (still content-encoded), at most the limit asked for."""


class WarcReader:
    """Reads records back by file name and offset, keeping the last file open.

    >>> import io, tempfile
    >>> from datetime import UTC, datetime
    >>> from archiver.warc.capture import Capture
    >>> from archiver.warc.files import WarcFiles
    >>> capture = Capture("http://h/", datetime(2026, 1, 2, tzinfo=UTC), "GET / HTTP/1.1", [], "200 OK",
    ...                   "HTTP/1.1", [], io.BytesIO(b"hi"), 2, "sha1:HI")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     with WarcFiles(Path(folder), "t", 10**9) as warcs:
    ...         written = warcs.write_capture(capture)
    ...     with WarcReader(Path(folder)) as reader:
    ...         stored = reader.read(written.warc_file, written.offset, limit=1024)
    >>> stored.rec_headers.get_header("WARC-Target-URI"), stored.payload
    ('http://h/', b'hi')
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._name = ""
        self._fh: IO[bytes] | None = None
        self._gzipped = False
        self._loader = RecordLoader(verify_http=False)
        self._sizes: dict[str, int] = {}

    def __enter__(self) -> WarcReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the open file; safe to call twice."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            self._name = ""

    def holds(self, name: str, offset: int, length: int) -> bool:
        """True if WARC file ``name`` exists (inside the folder) and reaches ``offset + length``."""
        if name not in self._sizes:
            try:
                path = safe_join(self.folder, name)
                self._sizes[name] = path.stat().st_size if path.is_file() else -1
            except (OSError, UnsafePathError):
                self._sizes[name] = -1
        return self._sizes[name] >= offset + length

    def _open(self, name: str) -> IO[bytes]:
        """The WARC file ``name``, open (the one open already, if it is that one)."""
        if self._fh is None or name != self._name:
            self.close()
            self._fh = open(safe_join(self.folder, name), "rb")  # noqa: SIM115
            self._name = name
            self._gzipped = is_gzipped(self._fh.read(2))
        return self._fh

    def record(self, name: str, offset: int, length: int | None = None) -> ArcWarcRecord:
        """The record at ``offset`` of ``name``, its payload streamed by ``raw_stream``.

        ``length``: the record's length in the file, when known (the manifest
        has it). A small gzipped record is then read and inflated in one go;
        data that does not inflate is CorruptData, anything else unexpected
        falls back to the streaming reader, which says what is wrong. A payload
        read to its end has its digests and its member's CRC checked
        (CheckedToEnd). Raises OSError, UnsafePathError (a name leaving the
        folder), WarcDamage or warcio errors.
        """
        fh = self._open(name)
        fh.seek(offset)
        if self._gzipped and length is not None and 0 < length <= WHOLE_READ_BYTES:
            inflate = isal_zlib.decompressobj(16 + isal_zlib.MAX_WBITS)
            try:
                data = inflate.decompress(fh.read(length), WHOLE_INFLATED_BYTES)
            except _INFLATE_ERROR as exc:  # a CRC that fails too: the streaming reader would not see it
                raise CorruptData(offset, f"gzip data does not decompress ({exc})") from None
            if inflate.eof and not inflate.unused_data:
                return self._parse(io.BytesIO(data), offset)
        return self.member(name, offset)[0]

    def _parse(self, stream: Any, offset: int, member: MemberStream | None = None) -> ArcWarcRecord:
        """The record at the start of ``stream``, its payload checked as it is read (CheckedToEnd)."""
        record = self._loader.parse_record_stream(stream, known_format="warc", check_digests=True)
        if record.length is None:  # warcio then reads on to the end of the file, nothing checked
            raise DigestMismatch(offset, "the record has no valid Content-Length to check its digests by")
        record.raw_stream = CheckedToEnd(record, offset, member)
        return record

    def member(self, name: str, offset: int) -> tuple[ArcWarcRecord, MemberStream]:
        """The record at ``offset`` of ``name`` (streamed), and the stream of the gzip member it
        starts (of the rest of the file, if it is not compressed): once drained, its ``end`` says
        where the member ends. Raises as record() does."""
        fh = self._open(name)
        fh.seek(offset)
        stream = Source(fh, self._gzipped, offset).next_stream()
        return self._parse(stream, offset, stream), stream

    def copy(self, name: str, offset: int, length: int, write: Callable[[bytes], object]) -> int:
        """Pass the ``length`` bytes at ``offset`` of ``name`` to ``write`` as they are stored;
        returns how many there were (fewer where the file ends). Raises OSError, UnsafePathError."""
        fh = self._open(name)
        fh.seek(offset)
        left = length
        while left and (chunk := fh.read(min(CHUNK, left))):
            write(chunk)
            left -= len(chunk)
        return length - left

    def read(self, name: str, offset: int, limit: int) -> StoredRecord:
        """The record at ``offset`` of ``name``, with at most ``limit`` bytes of its payload."""
        record = self.record(name, offset)
        payload = bytearray()
        while len(payload) < limit:
            data = record.raw_stream.read(min(CHUNK, limit - len(payload)))
            if not data:
                break
            payload += data
        return StoredRecord(record.rec_headers, record.http_headers, bytes(payload))
