"""Reading WARC records back by file and offset, and checking what is read.

Records are parsed by warcio's record loader from the gzip members that
warc/members.py reads one by one (data that does not inflate, or a member cut
short, is damage there), with its digest checking: a payload read to its end
is checked against the record's digests and its member's CRC
(:class:`CheckedToEnd`), so no reader hands on other bytes than were written,
compressed or not.
"""

from __future__ import annotations

import binascii
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from isal import isal_zlib
from warcio.digestverifyingreader import DigestVerifyingReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord, ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParserException

from archiver.errors import CorruptData, DigestMismatch, UnsafePathError
from archiver.warc.members import CHUNK, INFLATE_ERROR, MemberStream, Source, is_gzipped
from archiver.warc.safe_join import safe_join

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


class _Verifying(DigestVerifyingReader):  # type: ignore[misc]
    """warcio's digest-verifying reader, for which a digest whose value cannot be decoded (not
    base16, base32 or base64 of the digest's length) fails, as a value that does not match does:
    warcio raised binascii.Error out of the read that ended the block (or of the record's
    parse, for a block that is its head alone), a traceback to whoever read it."""

    def begin_payload(self) -> None:
        try:
            super().begin_payload()
        except (binascii.Error, ValueError) as exc:
            self.payload_digester = None
            self.digest_checker.problem(f"payload digest cannot be read: {self.payload_digest} ({exc})")

    def _update(self, buff: bytes) -> bytes:
        try:
            return cast(bytes, super()._update(buff))
        except (binascii.Error, ValueError) as exc:
            self.block_digester = self.payload_digester = None
            self.digest_checker.problem(f"a digest cannot be read ({exc})")
            return buff


class RecordLoader(ArcWarcRecordLoader):  # type: ignore[misc]
    """warcio's record loader, which with ``check_digests`` checks digests through _Verifying,
    and a revisit's WARC-Block-Digest too: warcio checks none of a revisit's digests (its
    payload digest is its original's), so a changed byte of its HTTP head, whose
    Content-Encoding and Content-Type the mirror reads, went unseen in an uncompressed file."""

    def wrap_digest_verifying_stream(
        self,
        stream: Any,
        rec_type: str,
        rec_headers: StatusAndHeaders,
        digest_checker: Any,
        length: Any = None,
    ) -> tuple[Any, bool]:
        block_digest = rec_headers.get_header("WARC-Block-Digest")
        payload_digest = rec_headers.get_header("WARC-Payload-Digest")
        if rec_type == "revisit":
            payload_digest = None  # its original's
        elif rec_headers.get_header("WARC-Segment-Number") is not None:
            payload_digest = None  # a segment's payload is the whole record's (warcio's rule)
        if not block_digest and not payload_digest:
            return stream, False
        verifying = _Verifying(
            stream, length, digest_checker, payload_digest=payload_digest, block_digest=block_digest
        )
        return verifying, True


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
        data = read(size)
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
    ...                   "HTTP/1.1", [], io.BytesIO(b"hi"), 2, "sha1:YIVV7ELYGQTASQUNN5I3FRNPJQF542SC")
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
            except INFLATE_ERROR as exc:  # a CRC that fails too: the streaming reader would not see it
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

    def head(self, name: str, offset: int, length: int | None = None) -> ArcWarcRecord:
        """The record at ``offset`` of ``name`` for its headers alone, checked: its block read to
        its end (read_to_end()), so a changed byte of its head is DigestMismatch or CorruptData
        as in a full read, not other headers handed on. For records whose block is small (a
        revisit's is its HTTP head) or read whole anyway. Raises as record() does."""
        return read_to_end(self.record(name, offset, length))

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


def read_to_end(record: ArcWarcRecord) -> ArcWarcRecord:
    """``record``, what is left of its block read and dropped: its digests, and its gzip member's
    CRC, are then checked (CheckedToEnd), its headers included (the WARC headers are covered by
    the CRC alone, the HTTP head by the block digest too). Raises DigestMismatch, CorruptData."""
    while record.raw_stream.read(CHUNK):
        pass
    return record
