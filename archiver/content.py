"""Bodies as stored versus bodies as parsed: content types and the one bounded decoder.

WARC records keep bodies as the server sent them (gzip stays gzip). Parsing,
the mirror and verify need the decoded bytes, and a hostile server can send a
small gzip that inflates to gigabytes, so every place that decodes goes
through Decoding: it undoes each Content-Encoding (gzip, x-gzip, deflate
zlib-wrapped or raw, br, identity; ``gzip, gzip`` in turn) chunk by chunk,
never holding more than CHUNK bytes of output it was not asked for, and stops
at its limit. What it could not do is said, not raised: ``cut`` when more
bytes followed the limit, ``problem`` for an unknown encoding or corrupt data
(the bytes that decoded cleanly are kept; a body that is not encoded as
declared, such as plain text sent as gzip, is kept as received, as is one that names more
than MAX_CODINGS codings).

>>> import gzip
>>> decode_payload(gzip.compress(b"hello"), "gzip", limit=3)
b'hel'
>>> decoded = decode_body(gzip.compress(b"hello " * 1000), "x-gzip", limit=10)
>>> decoded.body, decoded.cut, decoded.problem
(b'hello hell', True, None)
>>> decode_body(b"plain text", "gzip").problem
'not gzip data: kept as received'
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, Protocol

import brotlicffi

from archiver.media_types import read_content_type

DEFAULT_DECODE_LIMIT = 32 * 1024 * 1024
"""Decoded bytes of a document parsed for links (crawl and verify alike) or rewritten."""
MAX_MARKUP = 200_000
"""Tags (HTML) or url() (CSS) a document is parsed or rewritten up to: past a few hundred
thousand, each costs the parser and the rewriter hundreds of bytes (a gzip of 1 GiB of
<a href> is 2.5 MB), so a page is read no further (see bounded_document)."""
CHUNK = 64 * 1024
"""Most bytes one decoding step gives at once: what a bomb can cost beyond what is asked."""
MAX_CODINGS = 8
"""Content-Encodings undone at most: servers apply one, ``gzip, gzip`` is seen, each is a stage
of decoding (and a bomb of its own). A body that names more is kept as received."""
XHTML_TYPE = "application/xhtml+xml"
HTML_TYPES = frozenset({"text/html", XHTML_TYPE})
CSS_TYPE = "text/css"
SVG_TYPE = "image/svg+xml"
PARSED_TYPES = HTML_TYPES | {CSS_TYPE, SVG_TYPE}
"""Documents the crawl reads links from (verify reads them again, the mirror rewrites them)."""
DATA_SCRIPT_TYPES = frozenset({"application/ld+json", "application/json", "text/template", "text/x-template"})
"""<script type=...> values that hold data, not code: no browser runs them."""
_ANY_BYTES = bytes(range(256))
_GZIP_MAGIC = b"\x1f\x8b"


def mime_type(content_type: str | None) -> str:
    """The bare MIME type of a Content-Type header value, lowercased ('' if none is valid), read
    as browsers read it (media_types.read_content_type()).

    >>> mime_type("Text/HTML; charset=utf-8"), mime_type("text/css, text/html"), mime_type("html")
    ('text/html', 'text/html', '')
    """
    return read_content_type(content_type).essence


NOT_MODIFIED = 304


def is_parsed(status: int | None, mime: str | None, leads_away: bool = False) -> bool:
    """True for a response the crawl takes links from: an HTML, CSS or SVG document a browser
    shows, of a 2xx or a 3xx but a 304 (a 300 Multiple Choices, a 301 without a Location: what
    Chromium does not take for a redirect, it shows, as wget takes it for a page), unless
    ``leads_away``: a redirect status with a Location (redirects.leads_away()), which a browser
    follows, or fails on, and never shows.

    >>> is_parsed(200, "text/css"), is_parsed(404, "text/html"), is_parsed(200, "image/png")
    (True, False, False)
    >>> is_parsed(300, "text/html"), is_parsed(301, "text/html"), is_parsed(301, "text/html", leads_away=True)
    (True, True, False)
    >>> is_parsed(304, "text/html")
    False
    """
    shown = status is not None and 200 <= status < 400 and status != NOT_MODIFIED and not leads_away
    return shown and mime in PARSED_TYPES


ANSWERED = (200, 400)
"""The statuses (from, to but not) of an answer a server gave without an error: 2xx and 3xx. A
4xx or 5xx is one, and so is a status outside 100-599 (RFC 9110, section 15: a client processes
it as a 5xx), which the crawl reads as Chromium does (``HTTP/1.1 020``, ``HTTP/1.1 2000``); a 1xx
is no final answer."""


def error_status(status: int | None) -> bool:
    """True for the status of an answer a server gave with an error (ANSWERED); False for None
    (no answer).

    >>> [error_status(status) for status in (200, 304, 404, 503, 0, 20, 2000, None)]
    [False, False, True, True, True, True, True, False]
    """
    return status is not None and not ANSWERED[0] <= status < ANSWERED[1]


def content_codings(content_encoding: str | None) -> list[str]:
    """The codings a Content-Encoding header names, in the order they were applied.

    >>> content_codings("GZIP, identity ,br")
    ['gzip', 'br']
    """
    names = (name.strip().lower() for name in (content_encoding or "").split(","))
    return [name for name in names if name and name != "identity"]


class _Inflate:
    """One zlib stage: gzip or deflate (zlib-wrapped or raw). Of gzip, the first member alone, as
    Chromium reads a body (what follows it is ignored, like any bytes past the stream's end);
    with ``members``, each member in turn, as gunzip reads a file."""

    def __init__(self, coding: str, members: bool = False) -> None:
        self.coding = coding
        self.gzip = coding != "deflate"
        self.members = members
        self._decoder: Any = None
        self._head = b""
        self.produced = 0
        self.finished = False

    def _start(self, data: bytes) -> Any:
        if self.gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # RFC 9110's deflate is zlib-wrapped; some servers send raw deflate: the header tells.
        wrapped = (data[0] & 0x0F) == 8 and (data[0] << 8 | data[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decoded pieces of ``data`` (the next input), CHUNK bytes at most each."""
        if self.finished:
            return
        if self._decoder is None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return
            self._head = b""
            self._decoder = self._start(data)
        while True:
            out = self._decoder.decompress(data, CHUNK)
            if out:
                self.produced += len(out)
                yield out
            if self._decoder.eof:
                rest = self._decoder.unused_data
                if not (self.members and self.gzip and rest.startswith(_GZIP_MAGIC)):
                    self.finished = True  # trailing bytes after the stream are ignored, as browsers do
                    return
                self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)  # another gzip member
                data = rest
                continue
            data = self._decoder.unconsumed_tail
            if not data and len(out) < CHUNK:
                return  # all input taken and no output held back

    def end(self) -> Iterator[bytes]:
        """What is left at the end of the input (nothing: output is never held back)."""
        if self._decoder is None and self._head:
            raise zlib.error("stream too short")
        if self._decoder is not None and not self.finished and not self._decoder.eof:
            raise zlib.error("stream ends early")
        return iter(())


class _Brotli:
    """One br stage (brotlicffi's Decompressor, its output bounded per step: it stops growing its
    buffer once past CHUNK, so a step gives a little more than CHUNK at most).

    brotlicffi, not the ``brotli`` module of the same API: warcio, which reads WARC files in the
    environment archiver is installed in (``warcio check``, pywb), decodes a br body with any
    module named ``brotli`` it finds, and fails on that one's Decompressor (it sets an attribute
    the type does not have): every record of a page sent as br stopped its reading."""

    def __init__(self) -> None:
        self.coding = "br"
        self._decoder = brotlicffi.Decompressor()
        self.produced = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decoded pieces of ``data``, about CHUNK bytes at most each."""
        if self._decoder.is_finished():
            return
        out = self._decoder.process(data, output_buffer_limit=CHUNK)
        while True:
            if out:
                self.produced += len(out)
                yield out
            if self._decoder.can_accept_more_data() or self._decoder.is_finished():
                return
            out = self._decoder.process(b"", output_buffer_limit=CHUNK)

    def end(self) -> Iterator[bytes]:
        """Nothing more to give; an error if the stream stopped before its end."""
        if not self._decoder.is_finished():
            raise brotlicffi.error("stream ends early")
        return iter(())


_Stage = _Inflate | _Brotli


class Readable(Protocol):
    """What decode_stream() reads from (a file, a WARC record's payload stream)."""

    def read(self, size: int = -1, /) -> bytes: ...


_DECODE_ERRORS = (zlib.error, brotlicffi.error)


def _stage(coding: str, members: bool) -> _Stage | None:
    if coding in ("gzip", "x-gzip", "deflate"):
        return _Inflate(coding, members)
    if coding == "br":
        return _Brotli()
    return None


class Decoding:
    """A body's Content-Encoding undone as it streams in: an iterator of decoded chunks.

    ``chunks`` are the stored bytes, in order. Iteration stops at ``limit``
    decoded bytes: ``cut`` then says whether more followed (one more chunk is
    decoded to know). ``problem`` says what could not be undone.

    A body in gzip is its first member, as Chromium reads it; ``gzip_members``: each member in
    turn, as gunzip reads a file (a sitemap.xml.gz).

    >>> import gzip, zlib
    >>> b"".join(Decoding([zlib.compress(b"a" * 10)], "deflate", limit=4))
    b'aaaa'
    >>> two = gzip.compress(b"first ") + gzip.compress(b"second")
    >>> b"".join(Decoding([two], "gzip", 99)), b"".join(Decoding([two], "gzip", 99, gzip_members=True))
    (b'first ', b'first second')
    """

    def __init__(
        self, chunks: Iterable[bytes], content_encoding: str | None, limit: int, gzip_members: bool = False
    ) -> None:
        self.limit = limit
        self.cut = False
        """True when the decoded body is longer than ``limit`` (the rest was never expanded)."""
        self.problem: str | None = None
        """Why the body is not wholly decoded (unknown encoding, corrupt data), or None."""
        self.size = 0
        """Decoded bytes given so far."""
        self._chunks = chunks
        self._stages: list[_Stage] = []
        codings = content_codings(content_encoding)
        if len(codings) > MAX_CODINGS:
            self.problem = f"{len(codings)} Content-Encodings, more than {MAX_CODINGS}: kept as received"
            codings = []
        for coding in reversed(codings):  # the last applied comes off first
            stage = _stage(coding, gzip_members)
            if stage is None:
                self.problem = f"unknown Content-Encoding {coding!r}: kept as received"
                self._stages.clear()  # an encoding we cannot undo hides the ones under it
                break
            self._stages.append(stage)
        self._output = self._run()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self._output)

    def _run(self) -> Iterator[bytes]:
        for piece in self._decoded():
            room = self.limit - self.size
            if len(piece) > room or room == 0:
                self.cut = True
                if room:
                    self.size += room
                    yield piece[:room]
                return
            self.size += len(piece)
            yield piece

    def _decoded(self) -> Iterator[bytes]:
        pieces: Iterator[bytes] = iter(self._chunks)
        for stage in self._stages:
            pieces = self._through(stage, pieces)
        return (piece for piece in pieces if piece)

    def _through(self, stage: _Stage, pieces: Iterator[bytes]) -> Iterator[bytes]:
        """``pieces`` decoded by ``stage``; on corrupt data, what decoded before it.

        A stage that fails before giving a byte was not encoded as declared
        (plain text sent as gzip): its input passes through as it is.
        """
        held: list[bytes] = []  # input kept until the stage has given a byte (a few bytes at most)
        try:
            for piece in pieces:
                if not stage.produced:
                    held.append(piece)
                yield from stage.feed(piece)
                if stage.produced:
                    held.clear()
            yield from stage.end()
        except _DECODE_ERRORS:
            if stage.produced:
                self.problem = self.problem or f"corrupt {stage.coding} data after {stage.produced} bytes"
                return
            self.problem = self.problem or f"not {stage.coding} data: kept as received"
            yield from held
            yield from pieces


def decode_body(raw: bytes, content_encoding: str | None, limit: int = DEFAULT_DECODE_LIMIT) -> Decoded:
    """``raw`` with its Content-Encoding undone, at most ``limit`` bytes, and what befell it."""
    decoding = Decoding((raw,), content_encoding, limit)
    body = b"".join(decoding)
    return Decoded(body, decoding.cut, decoding.problem)


def bounded_document(body: bytes, mime: str) -> tuple[bytes, bool]:
    """``body`` cut before its tag (HTML) or url() (CSS) past MAX_MARKUP, and whether it was.

    The crawl, verify and the mirror all read a document through this, so they
    see the same links.

    >>> bounded_document(b"<a><b><c>", "text/html")[1], bounded_document(b"x" * 9, "text/css")
    (False, (b'xxxxxxxxx', False))
    """
    if len(body) <= MAX_MARKUP:
        return body, False
    markers = (b"<",) if mime != "text/css" else (b"url(", b"URL(")
    if sum(body.count(marker) for marker in markers) <= MAX_MARKUP:
        return body, False
    found = sorted(_first_positions(body, markers, MAX_MARKUP + 1))
    return body[: found[MAX_MARKUP]], True


def _first_positions(body: bytes, markers: tuple[bytes, ...], count: int) -> Iterator[int]:
    for marker in markers:
        at = -1
        for _ in range(count):
            at = body.find(marker, at + 1)
            if at == -1:
                break
            yield at


def decode_stream(
    stream: Readable, content_encoding: str | None, limit: int = DEFAULT_DECODE_LIMIT
) -> Decoded:
    """decode_body() of what ``stream`` holds, read CHUNK bytes at a time (never all of it)."""
    decoding = Decoding(iter(lambda: stream.read(CHUNK), b""), content_encoding, limit)
    body = b"".join(decoding)
    return Decoded(body, decoding.cut, decoding.problem)


def decode_payload(raw: bytes, content_encoding: str | None, limit: int = DEFAULT_DECODE_LIMIT) -> bytes:
    """The payload with its Content-Encoding undone, at most ``limit`` bytes (see Decoding)."""
    return decode_body(raw, content_encoding, limit).body


class Decoded(NamedTuple):
    """A body decoded by decode_body()."""

    body: bytes
    cut: bool
    """More decoded bytes followed ``limit``."""
    problem: str | None
    """What could not be undone, or None."""
