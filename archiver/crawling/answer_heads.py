"""An answer's head as Chromium reads it, where aiohttp's parser would refuse it or read it
otherwise: answer_parser.py feeds each whole head through read_as_browsers() first.

A head may give the same Content-Length twice (a proxy adding the field again, or a list in one
field, ``5, 5``), or a Content-Length with a chunked body: aiohttp's parser refuses both, browsers
take them. Here each value after the first, or every one beside chunked, goes to a field renamed
X-Archiver-Content-Length before the parser reads the head (one_framing), and the WARC keeps it
so named. A head Chromium reads past and aiohttp's parser refuses (``http/1.1 200OK``, a space
before a field's colon, a status line without a code) is made plain the same way
(read_as_browsers). A status code of four digits or more (``2000``), which Chromium reads as its
number and shows the answer of, is given to the parser as one it reads, and its message given
the code back (parser_status, with_status). An answer with no head at all (HTTP/0.9) is taken
where Chromium takes one (takes_headless()): its head is then the one Chromium gives it,
``HTTP/0.9 200 OK`` with no field, and its body runs to the close; elsewhere it is refused as
one, not left to look like a connection lost.

A line of a head that is no field (no colon, a name that is no token, a fold before any field)
Chromium reads past, where aiohttp's parser refuses the whole answer; it also ends a line at a
lone CR, and drops each NUL byte. Here such a line is kept under the name X-Archiver-Unread,
as Chromium reads it, and the answer taken (fields_as_chromium_reads).
"""

from __future__ import annotations

import re
from typing import Any

from archiver.urls import DEFAULT_PORTS

_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:([^\r\n]*?)\r?$", re.IGNORECASE | re.MULTILINE)
_CHUNKED = re.compile(
    rb"^transfer-encoding[ \t]*:(?:[^\r\n]*,)?[ \t]*chunked[ \t]*(?:,|\r?$)", re.IGNORECASE | re.MULTILINE
)
_TRANSFER_ENCODING = re.compile(rb"^transfer-encoding[ \t]*:", re.IGNORECASE | re.MULTILINE)
_DECHUNKING_VERSION = re.compile(rb"\AHTTP/(?:1\.[1-9]|[2-9]\.[0-9])")
"""A status line of a version Chromium de-chunks a body in (1.1 and later: HttpResponseHeaders::
IsChunkEncoded); an HTTP/1.0 (or 0.9) answer's body is what comes, chunked or not."""
_MAX_LENGTH = 2**63 - 1
"""The longest Content-Length Chromium reads as a length (an int64)."""
LENGTH_RENAMED = b"X-Archiver-"
"""What a Content-Length field that says again what the first said, or that a chunked body
overrides, and a Transfer-Encoding that frames nothing to Chromium, are renamed with."""


_STATUS_LINE = re.compile(rb"\A(?i:http)/([0-9]\.[0-9])[ \t]+([0-9]+)([ \t]*)")
_NO_STATUS_CODE = re.compile(rb"\A(?i:http)/([0-9]\.[0-9])(?:[ \t]+(?![ \t0-9])[^\r\n]*)?(?=\r?\n)")
_LONG_STATUS_CODE = re.compile(rb"\AHTTP/[0-9]\.[0-9] ([0-9]{4,})")
"""A status line as read_as_browsers() makes it, of a code of four digits or more."""
_MAX_STATUS = 2**31 - 1
"""The largest status code Chromium reads (an int: StringToInt saturates past it)."""
PARSER_STATUS = b"200"
"""The code aiohttp's parser is given for one it does not read (parser_status())."""
STATUS_LINE_START = 4
"""Bytes Chromium reads past for an answer's "HTTP" (HttpUtil::LocateStartOfStatusLine): an
answer without it that far is HTTP/0.9, a body without a head."""
_VERSION_WORD = re.compile(rb"\A(?i:http)([^ \t\r\n]*)")
"""A status line's first word: ``HTTP`` and what follows it, its version."""
_PARSER_VERSIONS = frozenset({b"/0.9", b"/1.0", b"/1.1", b"/2.0"})
"""The versions aiohttp's parser reads, each as Chromium reads it."""
_SPACE_BEFORE_COLON = re.compile(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]+:", re.MULTILINE)


def read_as_browsers(head: bytes) -> bytes:
    """``head`` (a whole head, as received) as Chromium reads it, where aiohttp's parser refuses
    it: ``http/1.1`` in any case, a version without a minor number (``HTTP/2 200`` on an HTTP/1
    connection, which Chromium reads as HTTP/1.0: a body to the close unless a length is given,
    no keep-alive), a status code run into its reason (``200OK``), whitespace between a field's
    name and its colon (RFC 9112, 5.1, has a proxy remove it); then with one framing of its body
    (one_framing()).

    >>> read_as_browsers(b"http/1.1 200OK\\r\\nContent-Type : text/html\\r\\n\\r\\n")
    b'HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\n\\r\\n'
    >>> read_as_browsers(b"HTTP/2 200\\r\\n\\r\\n")
    b'HTTP/1.0 200\\r\\n\\r\\n'

    Any other version reads as Chromium reads it: version_as_chromium_reads().

    Chromium reads past up to four bytes before ``HTTP``, tabs as spaces, and a code of one or
    two digits as that number (``20x``: 20, reason ``x``), zeros before a code as nothing, and a
    code of four digits or more as that number, at most 2^31 - 1 (parser_status()); a status line
    with no code is 200 OK to it (200 with no reason when something else follows the version).

    >>> read_as_browsers(b"xyHTTP/1.1\\t20x\\r\\n\\r\\n"), read_as_browsers(b"HTTP/1.1\\r\\n\\r\\n")
    (b'HTTP/1.1 020 x\\r\\n\\r\\n', b'HTTP/1.1 200 OK\\r\\n\\r\\n')
    >>> read_as_browsers(b"HTTP/1.1 -200 OK\\r\\n\\r\\n")
    b'HTTP/1.1 200\\r\\n\\r\\n'
    >>> read_as_browsers(b"HTTP/1.1 00302 Found\\r\\n\\r\\n"), read_as_browsers(b"HTTP/1.1 2000x\\r\\n\\r\\n")
    (b'HTTP/1.1 302 Found\\r\\n\\r\\n', b'HTTP/1.1 2000 x\\r\\n\\r\\n')

    An interim answer's head is skipped, whatever it holds: INTERIM_HEAD.

    >>> read_as_browsers(b"HTTP/1.0 103 Early Hints\\r\\nConnection: close\\r\\n\\r\\n")
    b'HTTP/1.1 103 \\r\\n\\r\\n'
    """
    if (start := head[: STATUS_LINE_START + 4].lower().find(b"http")) > 0:
        head = head[start:]
    head = version_as_chromium_reads(head)
    head = _NO_STATUS_CODE.sub(
        lambda line: b"HTTP/" + line[1] + (b" 200" if line[0][8:] else b" 200 OK"), head, count=1
    )
    status = _STATUS_LINE.match(head)
    if status is not None:
        rest = head[status.end() :]
        space = b" " if status[3] or rest[:1] not in (b"\r", b"\n", b"") else b""
        code = status_number(status[2])
        head = b"HTTP/" + status[1] + b" %03d" % code + space + rest
        if 100 <= code < 200 and code != SWITCHING_PROTOCOLS:
            return INTERIM_HEAD % code
    if b" :" in head or b"\t:" in head:  # a search of each line costs more than these two
        head = _SPACE_BEFORE_COLON.sub(rb"\1:", head)
    return one_framing(fields_as_chromium_reads(head))


def status_number(digits: bytes) -> int:
    """The status code ``digits`` (ASCII digits, as many as a head holds) give, as Chromium reads
    them (HttpResponseHeaders::ParseStatusLine, StringToInt): their number, at most _MAX_STATUS.

    >>> status_number(b"0204"), status_number(b"2000"), status_number(b"9" * 30)
    (204, 2000, 2147483647)
    """
    significant = digits.lstrip(b"0")
    return _MAX_STATUS if len(significant) > 10 else min(int(significant or b"0"), _MAX_STATUS)


def parser_status(head: bytes) -> tuple[bytes, int | None]:
    """``head`` (as read_as_browsers() makes it) with a code aiohttp's parser reads in place of
    one of four digits or more, which it refuses, and that code (None for any other head): the
    parser's message is given it back. Chromium shows such an answer's body, framed as any
    answer's but a 1xx, 204 or 304's (which such a code is not): PARSER_STATUS frames it alike.

    >>> parser_status(b"HTTP/1.1 2000 OK\\r\\n\\r\\n"), parser_status(b"HTTP/1.1 200 OK\\r\\n\\r\\n")
    ((b'HTTP/1.1 200 OK\\r\\n\\r\\n', 2000), (b'HTTP/1.1 200 OK\\r\\n\\r\\n', None))
    """
    long_code = _LONG_STATUS_CODE.match(head)
    if long_code is None:
        return head, None
    return head[: long_code.start(1)] + PARSER_STATUS + head[long_code.end(1) :], int(long_code[1])


def with_status(message: Any, status: int) -> Any:
    """aiohttp's parser's ``message`` (a RawResponseMessage, of its C parser or its Python one)
    with ``status`` for its code: the one parser_status() took from its head."""
    return _rebuilt(message, status, message.should_close)


def as_keep_alive_reads(message: Any) -> Any:
    """aiohttp's parser's ``message`` of an answer whose body it reads to the close and Chromium
    de-chunks (chromium_dechunks()), closing its connection after it only where Chromium closes
    one after a chunked body: where a Connection or Proxy-Connection field lists ``close``
    (HttpResponseHeaders::IsKeepAlive, for HTTP/1.1 and later, the only versions Chromium
    de-chunks in). A body read to the close ends the connection to the parser, whatever it says."""
    fields = message.headers.getall("Connection", []) + message.headers.getall("Proxy-Connection", [])
    closes = any(token.strip().lower() == "close" for value in fields for token in value.split(","))
    return _rebuilt(message, message.code, closes)


def _rebuilt(message: Any, status: int, should_close: bool) -> Any:
    """aiohttp's parser's ``message`` with ``status`` and ``should_close`` for its own."""
    fields = (message.version, status, message.reason, message.headers, message.raw_headers)
    return type(message)(*fields, should_close, message.compression, message.upgrade, message.chunked)


def version_as_chromium_reads(head: bytes) -> bytes:
    """``head`` (a whole head, its status line first) with a version aiohttp's parser refuses
    given as Chromium reads it (HttpResponseHeaders::ParseVersion, ParseStatusLine): the digit
    after ``HTTP/`` and the one after the first dot are its major and minor numbers (a version
    without them is none), and the version is then taken as 2.0, 1.1 for any other from 1.1 on
    (``HTTP/1.2``, ``HTTP/1.10``, ``HTTP/3.0``), else 1.0 (``HTTP/0.8``, ``HTTP/1.x``, ``HTTP/2``,
    ``HTTP 200``). Such an answer had failed, where Chromium shows it; its WARC record gives the
    version Chromium gives it.

    >>> [version_as_chromium_reads(line)[:8] for line in (b"HTTP/1.2 2", b"HTTP/1.x 2", b"http/1.1 2")]
    [b'HTTP/1.1', b'HTTP/1.0', b'http/1.1']
    """
    word = _VERSION_WORD.match(head)
    if word is None or word[1] in _PARSER_VERSIONS:
        return head
    version = word[1]
    dot = version.find(b".")
    numbered = version[:1] == b"/" and version[1:2].isdigit() and version[dot + 1 : dot + 2].isdigit()
    parsed = (int(version[1:2]), int(version[dot + 1 : dot + 2])) if numbered else (0, 0)
    taken = b"2.0" if parsed == (2, 0) else b"1.1" if parsed >= (1, 1) else b"1.0"
    return b"HTTP/" + taken + head[word.end() :]


SWITCHING_PROTOCOLS = 101
INTERIM_HEAD = b"HTTP/1.1 %d \r\n\r\n"
"""An interim (1xx) answer's head as the parser is given it: Chromium skips such a head, reading
none of its fields nor its version (HttpStreamParser), where aiohttp's parser reads them: an
HTTP/1.0 or ``Connection: close`` interim answer had it refuse the answer after it. What Chromium
keeps, and the WARC, is the answer's own head alone."""


_LINE_END = re.compile(rb"\r\n|\r|\n")
_LONE_CR = re.compile(rb"\r(?!\n)")
_FIELD_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+[ \t]*:")
"""A field's name as HTTP gives it (a token), and the colon after it."""
UNREAD = b"X-Archiver-Unread: "
"""What a line of a head that Chromium reads as no field is kept under."""
_PLAIN_HEAD = re.compile(
    rb"[^\r\n\0]*\r?\n"  # the status line
    rb"(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+[ \t]*:[^\r\n\0]*\r?\n(?:[ \t][^\r\n\0]*\r?\n)*)*"  # fields, folds
    rb"\r?\n"
)
"""A head every line of which is a field (or a fold after one), with no NUL and no lone CR: one
fields_as_chromium_reads() gives back as it came, told by one match (most heads)."""


def fields_as_chromium_reads(head: bytes) -> bytes:
    """``head`` (a whole head, status line first) with its lines as Chromium reads them
    (HttpUtil::AssembleRawHeaders, HeadersIterator): a lone CR ends a line as LF does, each NUL
    is dropped, and a line that is no field, one Chromium skips, is kept under UNREAD; a fold
    (a line starting with a space or tab) goes with the line before it. A head with no such
    line is given back as it came.

    >>> fields_as_chromium_reads(b"HTTP/1.1 200 OK\\r\\nX-A: a\\rb\\r\\nC: \\x00d\\r\\n\\r\\n")
    b'HTTP/1.1 200 OK\\r\\nX-A: a\\r\\nX-Archiver-Unread: b\\r\\nC: d\\r\\n\\r\\n'
    >>> fields_as_chromium_reads(b"HTTP/1.1 302 Found\\nX-A: a\\rLocation: /b\\n\\n")
    b'HTTP/1.1 302 Found\\r\\nX-A: a\\r\\nLocation: /b\\r\\n\\r\\n'
    """
    if _PLAIN_HEAD.fullmatch(head):
        return head
    lines = [line for line in _LINE_END.split(head.replace(b"\0", b"")) if line]
    if not lines:
        return head
    read = [lines[0]]
    last_was_field = False
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            is_field = last_was_field
        else:
            is_field = last_was_field = _FIELD_NAME.match(line) is not None
        read.append(line if is_field else UNREAD + line)
    if read == lines and b"\0" not in head and _LONE_CR.search(head) is None:
        return head
    return b"\r\n".join(read) + b"\r\n\r\n"


HEADLESS_HEAD = b"HTTP/0.9 200 OK\r\n\r\n"
"""The head Chromium gives an answer that came with none (HttpStreamParser), which its WARC
response record holds: no server sends it (HTTP/0.9 had no head), so it says what came."""
HEADLESS_REFUSED = (
    "no status line: an HTTP/0.9 answer, which Chromium takes only from the scheme's default port"
)
HEADLESS_AFTER_INTERIM = (
    "no status line after an interim (1xx) answer (a body given to it?), which Chromium fails"
)


def takes_headless(scheme: str, port: int | None, start: bytes) -> bool:
    """Whether Chromium takes an answer with no head (HTTP/0.9) that starts with ``start``, to a
    request of a URL of ``scheme`` and ``port``: from the scheme's default port (80, 443), and
    over http from any port when it starts with ``ICY`` (a Shoutcast stream's answer, which it
    shows whole as the body).

    >>> takes_headless("http", 80, b"<p>"), takes_headless("https", 443, b"<p>")
    (True, True)
    >>> takes_headless("http", 8080, b"<p>"), takes_headless("http", 8000, b"icy 200 OK")
    (False, True)
    >>> takes_headless("https", 8443, b"ICY 200 OK"), takes_headless("https", 80, b"<p>")
    (False, False)
    """
    if port == DEFAULT_PORTS.get(scheme):
        return True
    return scheme == "http" and start[:3].lower() == b"icy"


def starts_status_line(head: bytes, final: bool) -> bool | None:
    """Whether ``head`` (the first bytes of an answer; ``final``: all that came) starts a status
    line (None while too little came to tell); if not, it is an HTTP/0.9 answer, a body with no
    head."""
    if len(head) < STATUS_LINE_START + 4 and not final:
        return None
    return head[: STATUS_LINE_START + 4].lower().find(b"http") != -1


def one_framing(head: bytes) -> bytes:
    """``head`` (a whole head, status line first, as read_as_browsers() makes it) with one framing
    of its body, as Chromium reads it.

    A chunked body's head keeps no Content-Length (each is renamed X-Archiver-Content-Length):
    RFC 9112 (section 6.3) has Transfer-Encoding override it, and Chromium reads such an
    answer, whatever lengths it gives; aiohttp's parser refuses it.

    >>> one_framing(b"HTTP/1.1 200 OK\\r\\nContent-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n")[17:]
    b'X-Archiver-Content-Length: 3\\r\\nTransfer-Encoding: chunked\\r\\n'

    Chromium de-chunks a body only in an answer of HTTP/1.1 or later whose Transfer-Encoding
    lists ``chunked``, and reads past every other coding (``gzip``, ``identity``, ``foo``): any
    other answer's body is what came, by its Content-Length or to the close, chunk sizes and all.
    aiohttp's parser de-chunks an HTTP/1.0 body too, and refuses a length beside a coding: each
    Transfer-Encoding of such an answer is renamed X-Archiver-Transfer-Encoding (as the WARC
    names it anyway). Then one_content_length().

    >>> one_framing(b"HTTP/1.0 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n")[17:]
    b'X-Archiver-Transfer-Encoding: chunked\\r\\n\\r\\n'
    >>> one_framing(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: foo\\r\\nContent-Length: 2\\r\\n")[17:]
    b'X-Archiver-Transfer-Encoding: foo\\r\\nContent-Length: 2\\r\\n'
    """
    if b"transfer-encoding" not in head.lower():  # most heads: one search, not one of each line
        return one_content_length(head)
    if not chromium_dechunks(head):
        for field in reversed(list(_TRANSFER_ENCODING.finditer(head))):
            head = head[: field.start()] + LENGTH_RENAMED + head[field.start() :]
        return one_content_length(head)
    for field in reversed(list(_CONTENT_LENGTH.finditer(head))):
        head = head[: field.start()] + LENGTH_RENAMED + head[field.start() :]
    return head


_FOLD = re.compile(rb"\r?\n(?=[ \t])")


def chromium_dechunks(head: bytes) -> bool:
    """Whether Chromium de-chunks the body of the answer whose head is ``head`` (its status line
    as read_as_browsers() makes it; HttpResponseHeaders::IsChunkEncoded): an answer of HTTP/1.1
    or later whose Transfer-Encoding fields list ``chunked``, in any case and place, a field's
    folds read as part of it.

    >>> chromium_dechunks(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: gzip,\\r\\n Chunked\\r\\n\\r\\n")
    True
    >>> chromium_dechunks(b"HTTP/1.0 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n")
    False
    """
    if _DECHUNKING_VERSION.match(head) is None:
        return False
    if b"\n " in head or b"\n\t" in head:
        head = _FOLD.sub(b" ", head)
    return _CHUNKED.search(head) is not None


def one_content_length(head: bytes) -> bytes:
    """``head`` (a whole head, as received) with one Content-Length field when its fields give
    one length, each in as many fields and lists as they like (``5, 5``): each value after the
    first goes to a field of its own renamed X-Archiver-Content-Length. Fetch ("extract a
    length") and Chromium take such a head, comparing the values as strings; aiohttp's parser
    refuses a second field, and a list.

    >>> one_content_length(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\ncontent-length: 2\\r\\n\\r\\n")
    b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nX-Archiver-content-length: 2\\r\\n\\r\\n'
    >>> one_content_length(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2 , 2\\r\\n\\r\\n")
    b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nX-Archiver-Content-Length: 2\\r\\n\\r\\n'
    >>> one_content_length(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nContent-Length: 02\\r\\n")[17:]
    b'Content-Length: 2\\r\\nContent-Length: 02\\r\\n'

    A length that is no number, which Chromium reads as none, is renamed so: the body runs to the close.

    >>> one_content_length(b"HTTP/1.1 200 OK\\r\\nContent-Length: +38\\r\\n\\r\\n")[17:]
    b'X-Archiver-Content-Length: +38\\r\\n\\r\\n'
    """
    fields = list(_CONTENT_LENGTH.finditer(head))
    if not fields:
        return head
    values = [[value.strip(b" \t") for value in field[1].split(b",")] for field in fields]
    if len({value for listed in values for value in listed}) != 1:
        return head  # lengths that differ: the parser refuses those, as browsers do
    if not (values[0][0].isascii() and values[0][0].isdigit()) or _past_int64(values[0][0]):
        # No number (+38, 0x26, nothing, or past 64 bits): Chromium takes no length from it and
        # reads the body to the close, where RFC 9112 (6.3) has a client refuse the answer.
        for field in reversed(fields):
            head = head[: field.start()] + LENGTH_RENAMED + head[field.start() :]
        return head
    if len(fields) == 1 and len(values[0]) == 1:
        return head
    for at, (field, listed) in reversed(list(enumerate(zip(fields, values, strict=True)))):
        name = head[field.start() : field.start(1) - 1].rstrip(b" \t")
        names = [name if at == 0 and n == 0 else LENGTH_RENAMED + name for n in range(len(listed))]
        lines = b"\r\n".join(named + b": " + value for named, value in zip(names, listed, strict=True))
        head = head[: field.start()] + lines + head[field.end(1) :]
    return head


def _past_int64(digits: bytes) -> bool:
    """True if ``digits`` (ASCII digits, as many as a header holds) say more than _MAX_LENGTH."""
    significant = digits.lstrip(b"0")
    return len(significant) > 19 or int(significant or b"0") > _MAX_LENGTH
