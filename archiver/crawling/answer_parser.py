"""The parser of the answer to one request on a connection of the fetcher's pool (connections.py):
aiohttp's, fed each answer as browsers read it, bounded as they bound it, and ending the answer
where it ends, whatever comes after it.

A server may send bytes after an answer: a Content-Length too small, bytes after the last
chunk, or an answer of its own shaped for the next request on the connection. RFC 9112
(section 6.3, after RFC 7230 section 3.3.3) forbids a client to take them for the answer
to a later request. aiohttp closes a connection whose answer came with bytes after it in
the same read when they read as an answer; when they do not (``hello world`` after a
Content-Length of 5, a body after a 204), it failed the whole answer, whole as it was.
Here the answer is kept and such bytes dropped, and its connection closed (those that come
once it waits in the pool are connections.py's).

A server may send an answer's head without end, or many interim (1xx) answers before it:
aiohttp bounds each header line and the count of headers, not their sum. Here the heads of
an answer, its interim ones included, are read up to MAX_HEAD_BYTES, as browsers bound them
(Chromium at 256 KiB): past that the answer is a broken message, however few headers it has.

A body may break HTTP's framing half way (a chunk size that is no number). aiohttp then
failed the whole answer when the break came in the read that brought its head, and when
it came later, left the body's reader waiting for bytes that never come, until --timeout.
Here the body ends where the framing broke, as a body cut short, whenever the break comes;
a chunked body's framing is read as Chromium reads it, which takes more than aiohttp's parser
does (a bare LF, trailers that are no fields: chunked_framing.py).

Chromium de-chunks the body of an answer whose Transfer-Encoding lists ``chunked`` anywhere
(``chunked, gzip``, ``chunked,``, a fold before ``chunked``); aiohttp's parser reads such a body
to the close, chunk sizes and all, and such an answer was refused. Here the parser is given the
body de-chunked, and the body ends where its last chunk's trailers end, or is cut short where the
close or its framing cuts it, as any chunked body. The connection then carries the next request,
as Chromium's does (a new TCP connection for each such answer costs a server that sends them on
every answer), when nothing came after those trailers and the head asks no close; else it is
closed, as bytes after the body answer nothing.

A chunked body may go on with bytes that add nothing to it: trailers, or chunk extensions,
without end. aiohttp bounded them by their count of fields only, the head's bound, so that a
head of many small fields was refused (browsers take one of hundreds) while trailers of
large fields cost 64 MiB. Here heads and trailers are bounded by their bytes alike: past
MAX_HEAD_BYTES of bytes that add nothing to the body, the body ends there, cut short.

Each head is read whole, however many reads brought it, and as Chromium reads it (a second
Content-Length, a status line aiohttp refuses, a status code of four digits or more, an answer
with no head: answer_heads.py). A head
the close cuts short is, over http, what came of it, as Chromium reads it; aiohttp failed such
an answer as a connection lost, and the fetch was tried again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, TransferEncodingError

from archiver.crawling.answer_heads import (
    HEADLESS_AFTER_INTERIM,
    HEADLESS_HEAD,
    HEADLESS_REFUSED,
    STATUS_LINE_START,
    as_keep_alive_reads,
    chromium_dechunks,
    parser_status,
    read_as_browsers,
    starts_status_line,
    takes_headless,
    with_status,
)
from archiver.crawling.chunked_framing import ChunkedFraming

if TYPE_CHECKING:
    from archiver.crawling.connections import WatchedHandler

MAX_HEAD_BYTES = 256 * 1024
"""Most bytes of an answer's heads (status lines and headers, interim answers included)."""
MAX_HEADERS = MAX_HEAD_BYTES // len(b"a:\n")
"""Most header fields of one answer, trailers included: as many as MAX_HEAD_BYTES holds, so
that the bytes of a head bound it, as browsers bound it, never the count of its fields
(aiohttp's own bound, 128 by default, refuses a page setting 150 cookies)."""


class AnswerParser:
    """aiohttp's parser of the answer to one request on a connection: it refuses heads that run
    past MAX_HEAD_BYTES, reads each head as browsers read it (read_as_browsers), and drops what
    comes after the answer is whole (module docstring).

    A parser fed its input in any pieces parses it alike: each head is fed whole, apart from
    what follows it, so the answer's message is out of the parser before bytes after its body
    can make it fail, and a head is read alike however many reads brought it."""

    def __init__(self, parser: Any, protocol: WatchedHandler) -> None:
        self._parser = parser
        self._protocol = protocol
        self._head_bytes = 0
        self._held = bytearray()
        """The part of a head that came so far, held until the head is whole (_whole_head())."""
        self._answer: Any = None
        """The answer's payload once its head came (a StreamReader)."""
        self._done = False
        """True once _end() ended the answer (the parser failed after its head, its body broke, or
        a body de-chunked here came whole): all that follows is dropped, and closes its connection."""
        self._final = False
        """True once the peer sent its EOF: what is held is all that comes (end_of_input())."""
        self._idle_bytes = 0
        """Bytes fed after the answer's head since its body last grew: framing, trailers."""
        self._chunks: ChunkedFraming | None = None
        """The framing of the answer's body, when chunked, as Chromium reads it."""

    def feed_data(self, data: bytes) -> tuple[list[Any], bool, bytes]:
        if self._done:
            if data:  # bytes after the answer answer nothing: the connection carries no other
                self._protocol.force_close()
            return [], False, b""
        messages: list[Any] = []
        while True:  # once at least: fed nothing, the parser goes on with what it held back
            in_head = self._answer is None
            piece = fed = received = data
            status = None
            if in_head and (data or (self._final and self._held)):
                whole, data = self._whole_head(data)
                if whole is None:
                    return messages, False, b""  # the rest of the head is still to come
                (piece, status), received = parser_status(read_as_browsers(whole)), whole
            elif self._chunks is not None and not self._chunks.done:
                piece, data = self._chunks.feed(data)
                if self._chunks.done:
                    self._protocol.answer_trailers(self._chunks.trailers)
            else:
                data = b""
            body_before = None if in_head else self._answer.total_bytes
            try:
                found, upgraded, tail = self._parser.feed_data(piece)
            except HttpProcessingError:
                if self._answer is None:
                    raise  # a broken head: no answer came
                self._end()
                return messages, False, b""
            if body_before is not None and (
                self._adds_nothing_past_bound(len(fed) - len(data), body_before)
                or (self._chunks is not None and self._chunks.broken)
            ):
                self._end()
                return messages, False, b""
            if self._chunks is not None and self._chunks.done and not self._chunks.framed:
                # A body the parser reads to the close, de-chunked here, whole: its connection
                # carries the next answer when nothing came after its last chunk's trailers.
                self._end(whole=True, reusable=not data)
                return messages, False, b""
            if status is not None:  # a code the parser does not read: Chromium's, given back
                found = [(with_status(message, status), payload) for message, payload in found]
            if in_head:
                found = self._count_head(received, piece, found)  # as it came: an interim head is fed shorter
            messages += found
            if upgraded:
                return messages, True, tail + data
            if not data:
                return messages, False, b""

    def feed_eof(self) -> Any:
        """The connection closed: a head cut short is the parser's to judge, as it came; a body
        de-chunked here (module docstring) that has not ended is cut short."""
        dechunking = self._chunks is not None and not self._chunks.framed
        if dechunking and not self._done and self._answer is not None and not self._answer.is_eof():
            raise TransferEncodingError("the connection closed within a chunked body")
        if self._held and not self._done:
            held, self._held = bytes(self._held), bytearray()
            if not starts_status_line(held, final=True):
                self._headless(held)  # not taken: why (one taken was read at the peer's EOF)
            self._parser.feed_data(held)
        return self._parser.feed_eof()

    def end_of_input(self) -> bool:
        """The peer sent all it sends (its EOF; the connection is not lost yet): True when what it
        sent is an answer whose feed_data(b"") now gives: one with no head, too short to be told
        from a head before, or over http one whose head the close cut short (_whole_head())."""
        self._final = True
        if not self._held or self._answer is not None:
            return False
        return not starts_status_line(bytes(self._held), True) or self._protocol.scheme == "http"

    def _headless(self, start: bytes) -> None:
        """Raise BadHttpMessage unless an answer starting ``start`` with no head is taken: as the
        answer itself (not after an interim one, as Chromium takes none there), where
        takes_headless() says Chromium takes it."""
        if self._head_bytes:
            raise BadHttpMessage(HEADLESS_AFTER_INTERIM)
        if not takes_headless(self._protocol.scheme, self._protocol.port, start):
            raise BadHttpMessage(HEADLESS_REFUSED)

    def _end(self, *, whole: bool = False, reusable: bool = False) -> None:
        """The answer ends here, all that follows dropped: the parser failed once its head came,
        on bytes after the whole answer, or half way through its body, which ends there,
        ``broken`` (aiohttp forgets a body whose framing breaks: its reader would wait for bytes
        that never come); or, ``whole``, a body the parser reads to the close came whole. The
        connection is closed after it, unless ``reusable``: nothing came after the answer, so
        the next request's answer is all that comes next (feed_data() closes it if more comes)."""
        self._done = True
        if not reusable:
            self._protocol.force_close()
        if not self._answer.is_eof():
            # Ended, not failed: a reader gets every byte that came before the break.
            self._protocol.broken = not whole
            if self._answer.exception() is None:
                self._answer.feed_eof()

    def _adds_nothing_past_bound(self, received: int, body_before: int) -> bool:
        """True once more than MAX_HEAD_BYTES came after the answer's head without adding to its
        body (trailers or chunk extensions without end: module docstring), ``received`` the
        latest bytes read of it and ``body_before`` the body's size before them."""
        if self._answer.total_bytes > body_before or self._answer.is_eof():
            self._idle_bytes = 0
            return False
        self._idle_bytes += received
        return self._idle_bytes > MAX_HEAD_BYTES

    def _whole_head(self, data: bytes) -> tuple[bytes | None, bytes]:
        """The head ``data`` ends (with what came of it before), and what follows it; None while
        the head is not whole (``data`` is then held). A head is read whole, as it would be in
        one read, however the server sent it: a byte at a time, or a line a second."""
        start = max(len(self._held) - 2, 0)
        self._held += data
        start_line = starts_status_line(bytes(self._held[: STATUS_LINE_START + 4]), self._final)
        if self._held and start_line is False:
            self._headless(bytes(self._held))
            body = bytes(self._held)
            self._held.clear()
            return HEADLESS_HEAD, body  # a head as Chromium gives it, and all that came as body
        ends = [at + len(end) for end in (b"\n\r\n", b"\n\n") if (at := self._held.find(end, start)) != -1]
        cut = min(ends, default=None)
        if self._head_bytes + (len(self._held) if cut is None else cut) > MAX_HEAD_BYTES:
            # Heads before it (interim answers) included; whole or not, in one read or many.
            raise BadHttpMessage(f"the answer's head runs past {MAX_HEAD_BYTES // 1024} KiB")
        if cut is None and self._final and self._protocol.scheme == "http":
            # The connection closed within the head: Chromium reads what came as the whole head
            # over http, never over https (HttpStreamParser: truncated headers), its body empty
            # unless the head gives one that did not come (then a body cut short).
            self._held += b"\r\n" if self._held.endswith(b"\n") else b"\r\n\r\n"
            cut = len(self._held)
        if cut is None:
            return None, b""
        head, rest = bytes(self._held[:cut]), bytes(self._held[cut:])
        self._held.clear()
        return head, rest

    def _count_head(self, head: bytes, read: bytes, found: list[Any]) -> list[Any]:
        """Count ``head`` (as it came), and note the answer's body once the answer itself came;
        ``read``: the head as the parser read it. A body Chromium de-chunks and the parser
        reads to the close is de-chunked here (module docstring), and its message is given the
        keep-alive Chromium reads (as_keep_alive_reads()): ``found``, so amended."""
        self._head_bytes += len(head)
        for at, (message, payload) in enumerate(found):
            if not 100 <= message.code < 200 or message.code == 101:
                self._answer = payload  # the answer itself has come: what follows is its body
                if not payload.is_eof() and (message.chunked or chromium_dechunks(read)):
                    self._chunks = ChunkedFraming(framed=message.chunked)
                    if not message.chunked:
                        found = [*found[:at], (as_keep_alive_reads(message), payload), *found[at + 1 :]]
                break
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)
