"""A chunked body's framing as Chromium reads it (HttpChunkedDecoder), made plain for aiohttp's
parser: answer_parser.py feeds a chunked body through ChunkedFraming first.

Chromium ends each line of the framing at LF (a CR before it dropped), reads past a chunk's
extensions and spaces after its size, and reads past its trailers whatever they hold; it takes
a chunk size of hex digits alone (no ``0x``, no sign) and a line of up to 16 KiB. aiohttp's
parser refuses a chunk's data ended by a bare LF, and a trailer that is no field (no colon, a
lone CR): it then failed an answer whose body came whole, as a body cut short. Here the body is
given to the parser in the plainest framing (sizes in hex, CRLF, no extension, no trailer),
and the framing is broken where Chromium finds it broken, nowhere else. The WARC keeps the
body de-chunked, and the trailers that came after it (``trailers``: a checksum, Server-Timing),
which Chromium reads past but which the server sent, in the record's head (received.py).

Where Chromium de-chunks a body that aiohttp's parser reads to the close (``Transfer-Encoding:
chunked, gzip``: RFC 9112 has only a last ``chunked`` frame a body), the parser is given the body
itself, de-chunked here (``framed=False``), and its end is where the last chunk's trailers end.
"""

from __future__ import annotations

MAX_LINE_BYTES = 16 * 1024
"""Most bytes of a line of the framing (a chunk size with its extensions, a trailer) Chromium
reads (kMaxLineBufLen): a longer line breaks the framing."""
_MAX_CHUNK_SIZE = 2**63 - 1
"""The largest chunk size Chromium reads (an int64)."""
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


class ChunkedFraming:
    """A chunked body read as it comes, in any pieces, and given back in the plainest framing.

    >>> framing = ChunkedFraming()
    >>> framing.feed(b"5;name=value\\nhello\\n0\\nX-T: a\\rb\\nno colon\\n\\nafter")
    (b'5\\r\\nhello\\r\\n0\\r\\n\\r\\n', b'after')
    >>> framing.done, framing.broken, framing.trailers
    (True, False, [b'X-T: a', b'b', b'no colon'])
    >>> framing = ChunkedFraming()
    >>> framing.feed(b"3\\r\\nabc\\r\\n0x5\\r\\nhello"), framing.broken
    ((b'3\\r\\nabc\\r\\n', b''), True)
    >>> ChunkedFraming(framed=False).feed(b"3\\r\\nabc\\r\\n2\\nde\\n0\\r\\n\\r\\nafter")
    (b'abcde', b'after')
    """

    def __init__(self, *, framed: bool = True) -> None:
        self.framed = framed
        """True to give the body back in the plainest framing, False to give its data alone."""
        self.done = False
        """True once the body ended (the last chunk and its trailers came)."""
        self.broken = False
        """True once the framing broke where Chromium finds it broken: the body ends there."""
        self._line = bytearray()
        """The part of a line that came so far."""
        self._data_left = 0
        """Bytes of the current chunk's data still to come."""
        self._after_data = False
        """True when the next line ends a chunk's data (it must be empty)."""
        self._last_chunk = False
        """True once the last chunk (size 0) came: trailers follow, to an empty line."""
        self.trailers: list[bytes] = []
        """The lines after the last chunk, whatever they hold, read as a head's lines are (a lone
        CR ends a line, a NUL is dropped: answer_heads.py), so that a WARC head holds each as a
        field; their bytes are bounded as a head's are (answer_parser.py)."""

    def feed(self, data: bytes) -> tuple[bytes, bytes]:
        """(the plain framing of what ``data`` holds of the body, what follows the body's end);
        nothing more once the body ended or its framing broke (``done``, ``broken``)."""
        plain: list[bytes] = []
        at = 0
        while at < len(data) and not (self.done or self.broken):
            if self._data_left:
                taken = data[at : at + self._data_left]
                plain.append(taken)
                at += len(taken)
                self._data_left -= len(taken)
                self._after_data = not self._data_left
                continue
            end = data.find(b"\n", at)
            if end == -1:
                self._line += data[at:]
                at = len(data)
                self.broken = len(self._line) > MAX_LINE_BYTES + 1  # and a CR before its LF
                break
            if self._line:
                self._line += data[at:end]
                line = bytes(self._line)
                self._line.clear()
            else:
                line = data[at:end]
            at = end + 1
            self._read_line(line[:-1] if line.endswith(b"\r") else line, plain)
        return b"".join(plain), data[at:] if self.done else b""

    def _read_line(self, line: bytes, plain: list[bytes]) -> None:
        """Read one line of the framing (its line end gone), adding its plain framing to ``plain``."""
        if len(line) > MAX_LINE_BYTES:
            self.broken = True
        elif self._last_chunk:
            if line:  # a trailer, read past as Chromium reads past it, and kept
                self.trailers += [part for part in line.replace(b"\0", b"").split(b"\r") if part]
            else:
                self.done = True
                plain.append(b"0\r\n\r\n" if self.framed else b"")
        elif self._after_data:
            self._after_data = False
            self.broken = line != b""
            if not self.broken and self.framed:
                plain.append(b"\r\n")
        else:
            size = chunk_size(line)
            if size is None:
                self.broken = True
            elif size == 0:
                self._last_chunk = True
            else:
                self._data_left = size
                plain.append(b"%x\r\n" % size if self.framed else b"")


def chunk_size(line: bytes) -> int | None:
    """The chunk size a line of the framing gives, as Chromium reads it (ParseChunkSize): hex
    digits, spaces after them and extensions after a ``;`` read past; None if it gives none.

    >>> chunk_size(b"1a  ;ext"), chunk_size(b"0"), chunk_size(b"0x5"), chunk_size(b" 5"), chunk_size(b"")
    (26, 0, None, None, None)
    """
    digits = line.split(b";", 1)[0].rstrip(b" ")
    if not digits or not _HEX_DIGITS.issuperset(digits):
        return None
    significant = digits.lstrip(b"0")
    if len(significant) > 16 or int(significant or b"0", 16) > _MAX_CHUNK_SIZE:
        return None
    return int(significant or b"0", 16)
