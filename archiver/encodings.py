"""Which encoding a document is read in, and its links' queries written in: one rule for the
crawl's parse, verify and the mirror.

An HTML page: its byte-order mark, else the charset of its HTTP Content-Type,
else a <meta> charset in its first 1024 bytes, else, as browsers guess a page
that says nothing, UTF-8 if its bytes are UTF-8 and windows-1252 if not. A
stylesheet: its byte-order mark, else its header's charset, else its
``@charset`` rule, else the encoding of the document that refers to it, else
UTF-8. The crawl finds links in what the mirror then rewrites: read one way
here and another there, a link to /naïve was fetched as one URL and rewritten
as another.

A charset is named by a label, read as browsers read it (the WHATWG Encoding
standard's table, from webencodings): ISO-8859-1, latin1 and US-ASCII are
windows-1252 there, Shift_JIS is Windows' (cp932, read and written as browsers do), a label browsers do not
know (UTF-7, a codec only Python has) names nothing. Everything here gives
Python codec names. The labels of the standard's "replacement" encoding (ISO-2022-KR,
HZ-GB-2312, ISO-2022-CN: encodings whose bytes can hide markup from a server's filters) name
REPLACEMENT, a codec registered here that reads any content as one U+FFFD, as browsers do: no
link, no title is found in such a document.

>>> page_encoding(b"<p>caf\\xc3\\xa9</p>", None), page_encoding(b"<p>caf\\xe9</p>", None)
('utf-8', 'cp1252')
>>> stylesheet_encoding(b'@charset "ISO-8859-1"; a{}', None)
'cp1252'

A link's query is written in its page's encoding (the WHATWG URL standard's
encoding override), its path in UTF-8: query_encodings() says in which.
"""

from __future__ import annotations

import codecs
import functools
import re
from typing import Any

import webencodings

from archiver import web_codecs
from archiver.prescan import prescan

_CSS_CHARSET = re.compile(rb'@charset "([\w.:-]{1,40})";')
CSS_CHARSET_RULE = re.compile(r'@charset "([\w.:-]{1,40})";')
"""A stylesheet's @charset rule, which counts only as its very first bytes, written so."""
_XML_DECLARED = re.compile(rb"""<\?xml\s[^>]{0,200}?encoding\s*=\s*["']?([\w.:-]{1,40})""")
UNDECLARED_FALLBACK = "cp1252"
"""What browsers of Western locales read a page in that names no charset and is not UTF-8."""
_NOT_CODECS = frozenset({"x-user-defined"})
"""Encodings of the standard that Python has no codec of (webencodings' own): taken as unknown."""
REPLACEMENT = "web-replacement"
"""The codec of the standard's "replacement" encoding: any content decodes to one U+FFFD
(nothing to nothing), and text encodes as UTF-8 (the standard's output encoding of it)."""


def _replaced(data: Any, errors: str = "strict", /) -> tuple[str, int]:
    size = memoryview(data).nbytes
    return ("\ufffd" if size else ""), size


class _ReplacementDecoder(codecs.IncrementalDecoder):
    """One U+FFFD for the first bytes met, nothing for the rest."""

    def __init__(self, errors: str = "strict") -> None:
        super().__init__(errors)
        self.seen = False

    def decode(self, data: Any, final: bool = False) -> str:
        if self.seen or not memoryview(data).nbytes:
            return ""
        self.seen = True
        return "\ufffd"

    def reset(self) -> None:
        self.seen = False


def _search(name: str) -> codecs.CodecInfo | None:
    if (found := web_codecs.find(name)) is not None:
        return found
    if name != REPLACEMENT.replace("-", "_"):
        return None
    utf8 = codecs.lookup("utf-8")
    return codecs.CodecInfo(
        utf8.encode,
        _replaced,
        name=REPLACEMENT,
        incrementalencoder=utf8.incrementalencoder,
        incrementaldecoder=_ReplacementDecoder,
    )


codecs.register(_search)

WEB_ERRORS = "web"
"""The error handler that decodes as the Encoding standard's single-byte encodings do where
Python's codecs have holes: a byte 0x80-0x9F that windows-1252 (or another windows- encoding)
assigns no character is the C1 control of its value (browsers request ``/%C2%81`` for a link
``/\x81`` of a windows-1252 page); any other byte it cannot read is U+FFFD, as "replace" does.

>>> b"/\x81\xe9\x80\x9d".decode("cp1252", WEB_ERRORS), b"\xaa".decode("cp1253", WEB_ERRORS)
('/\x81é€\x9d', '\ufffd')

A two-byte sequence of Shift_JIS, EUC-KR, Big5, EUC-JP or GBK that makes no character is one U+FFFD
when its second byte is past ASCII (Python's codecs fail its first byte alone, then read the
second as a character of its own), as the standard reads it:

>>> b"\x81\xad".decode("cp932", WEB_ERRORS), b"\x81\x80".decode("cp949", WEB_ERRORS)
('\ufffd', '\ufffd')
>>> b"\x81\xffa".decode("gb18030", WEB_ERRORS), b"\x81\x30\n\x84\x31\xa5\x30".decode("gb18030", WEB_ERRORS)
('\ufffda', '\ufffd0\n\ufffd')
"""


_TWO_BYTE_LEADS = {
    "cp932": frozenset([*range(0x81, 0xA0), *range(0xE0, 0xFD)]),
    "cp949": frozenset(range(0x81, 0xFF)),
    "big5hkscs": frozenset(range(0x81, 0xFF)),
    "euc_jp": frozenset([0x8E, *range(0xA1, 0xFF)]),
    "gb18030": frozenset(range(0x81, 0xFF)),
}
"""Lead bytes of the two-byte sequences of Shift_JIS, EUC-KR, Big5, EUC-JP and GBK/GB18030 (by
their Python codecs): a lead and a byte past ASCII that make no character (0x81 0xFF of GBK)
are one error to the standard, one U+FFFD (Python's codecs fail the lead alone, then read the
second byte on its own)."""


def _gb18030_error_end(data: bytes, start: int) -> int | None:
    """Where the standard's GB18030 decoder ends the error Python's gb18030 met at ``start`` when it
    is a lead and a digit, a four-byte sequence begun (None for any other): the whole sequence
    when its four bytes make no character or the data ends in it, the lead alone when a byte of
    it is out of its range (the bytes after it are read again: Python's codec ate them)."""
    if not 0x81 <= data[start] <= 0xFE or start + 1 >= len(data) or not 0x30 <= data[start + 1] <= 0x39:
        return None
    rest = data[start + 2 : start + 4]
    if not rest[:1] or (len(rest) == 1 and 0x81 <= rest[0] <= 0xFE):
        return len(data)  # cut short by the end
    if not 0x81 <= rest[0] <= 0xFE or not 0x30 <= rest[1] <= 0x39:
        return start + 1
    return start + 4


def _web_errors(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    byte = error.object[error.start]
    after = error.start + 1
    if error.encoding == "gb18030" and (end := _gb18030_error_end(error.object, error.start)) is not None:
        return "\ufffd", end
    if (
        byte in _TWO_BYTE_LEADS.get(error.encoding, ())
        and after < len(error.object)
        and error.object[after] >= 0x80
    ):
        return "\ufffd", after + 1
    if error.encoding == "charmap" and 0x80 <= byte <= 0x9F:
        return chr(byte), error.start + 1
    if error.encoding == "gb18030" and byte == 0x80:  # the standard's GB18030 reads it as a euro sign
        return "\u20ac", error.start + 1
    return "\ufffd", error.end  # as "replace"


codecs.register_error(WEB_ERRORS, _web_errors)


def hole_byte(character: str, codec: str) -> bytes | None:
    """The byte ``codec`` writes a C1 control it has no character for as, where the Encoding
    standard writes it (WEB_ERRORS reads that byte back as it); None for any other character.

    >>> hole_byte("\x81", "cp1252"), hole_byte("\x80", "cp1252"), hole_byte("é", "cp1252")
    (b'\x81', None, None)
    """
    if not "\x80" <= character <= "\x9f":
        return None
    byte = bytes([ord(character)])
    try:
        byte.decode(codec)
    except UnicodeDecodeError as error:
        return byte if error.encoding == "charmap" else None
    except LookupError:
        return None
    return None


@functools.lru_cache(maxsize=256)
def web_codec(label: str | None) -> str | None:
    """The Python codec of the encoding browsers read ``label`` as; None for a label they do not
    know (then the next rule decides, as in a browser).

    >>> web_codec("ISO-8859-1"), web_codec(" latin1"), web_codec("Shift_JIS"), web_codec("utf-7")
    ('cp1252', 'cp1252', 'web-shift_jis', None)
    >>> web_codec("ISO-2022-KR"), b"<a href=x>".decode(web_codec("hz-gb-2312"))
    ('web-replacement', '\ufffd')
    >>> b"\\xca".decode(web_codec("windows-1255")) == "\\u05ba", b"\\xae".decode(web_codec("koi8-u"))
    (True, 'ў')
    """
    encoding = webencodings.lookup(label) if label else None
    if encoding is None or encoding.name in _NOT_CODECS:
        return None
    if encoding.name == "replacement":
        return REPLACEMENT
    if encoding.name in web_codecs.WEB_CODECS:
        return f"web-{encoding.name}"
    return str(encoding.codec_info.name)


def _declared(label: str) -> str | None:
    """The codec a document's own declaration of ``label`` (a <meta>, @charset) reads it in: as
    the standard says, a document that says UTF-16 of itself is UTF-8 (bytes that could say so
    are no UTF-16)."""
    codec = web_codec(label)
    return "utf-8" if codec is not None and codec.startswith("utf-16") else codec


def utf16_bom(codec: str | None) -> bytes | None:
    """The byte-order mark of ``codec`` if it is UTF-16 of one byte order: what a file of it needs
    to be read so from disk, where no header names it (a <meta> or @charset saying UTF-16 is read
    as UTF-8, and XML reads UTF-16 only after a mark).

    >>> utf16_bom("utf-16-le"), utf16_bom("cp1252")
    (b'\\xff\\xfe', None)
    """
    return {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}.get(codec or "")


def sniff_bom(body: bytes) -> str | None:
    """The encoding a byte-order mark names, if the body starts with one."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return name
    return None


def declared_charset(body: bytes) -> str | None:
    """The charset a page declares in a <meta> within its first 1024 bytes, if known, found as
    browsers find it (prescan.py: not in a comment, not in a description)."""
    label = prescan(body)
    return _declared(label) if label is not None else None


def page_encoding(body: bytes, header_charset: str | None) -> str:
    """The encoding an HTML page is read in (see the module docstring)."""
    return sniff_bom(body) or web_codec(header_charset) or declared_charset(body) or guessed_encoding(body)


def guessed_encoding(body: bytes) -> str:
    """The encoding of a page that names none: UTF-8 if its bytes are UTF-8, else windows-1252."""
    return "utf-8" if _is_utf8(body) else UNDECLARED_FALLBACK


def xml_encoding(body: bytes, header_charset: str | None) -> str:
    """The encoding an XML document (an SVG image) is read in: its byte-order mark, else its
    header's charset, else its XML declaration's, else UTF-8 (RFC 7303, as browsers read it).

    >>> xml_encoding(b'<?xml version="1.0" encoding="windows-1252"?><svg/>', None)
    'cp1252'
    """
    return _self_declared(body, header_charset, _XML_DECLARED)


def stylesheet_encoding(body: bytes, header_charset: str | None, referrer_encoding: str | None = None) -> str:
    """The encoding a stylesheet is read in (see the module docstring): without a byte-order
    mark, a header's charset or an @charset rule, the encoding of the document that refers to
    it (``referrer_encoding``, a codec: a page's, or that of the stylesheet whose @import names
    it), as browsers read it (CSS Syntax's "environment encoding"), else UTF-8.

    >>> stylesheet_encoding(b"a{}", None, "cp932"), stylesheet_encoding(b'@charset "utf-8";', None, "cp932")
    ('cp932', 'utf-8')
    """
    return _self_declared(body, header_charset, _CSS_CHARSET, fallback_codec(referrer_encoding))


def fallback_codec(encoding: str | None) -> str | None:
    """The codec a stylesheet that names none is read in when it is referred to by a document
    read in ``encoding``: that one, but UTF-16, which no bytes without a mark are read in (as
    the standard treats a document's own word for UTF-16), and UTF-8 (the default anyway)."""
    codec = web_codec(encoding) or _python_codec(encoding)
    if codec is None or codec.startswith(("utf-", "utf_")):
        return None
    return codec


def web_label(codec: str) -> str:
    """The name the standard gives the encoding of ``codec`` (one web_codec() gave), which any
    browser reads as that codec: what a file says of itself.

    >>> web_label("cp932"), web_label("cp1252"), web_label("koi8-r")
    ('shift_jis', 'windows-1252', 'koi8-r')
    """
    return _WEB_LABELS().get(codec, codec)


@functools.cache
def _WEB_LABELS() -> dict[str, str]:  # noqa: N802 - a constant made once, when first needed
    names: dict[str, str] = {}
    for label in webencodings.LABELS:
        if (codec := web_codec(label)) is not None:
            names.setdefault(codec, webencodings.lookup(label).name)
    # The Python codecs earlier snapshots named these encodings by, before they had codecs here.
    return names | {"cp932": "shift_jis", "big5hkscs": "big5", "euc_jp": "euc-jp"}


def _self_declared(
    body: bytes, header_charset: str | None, declaration: re.Pattern[bytes], fallback: str | None = None
) -> str:
    """A document's byte-order mark, else its header's charset, else the one its first bytes
    name (``declaration``'s group), else ``fallback``, else UTF-8: the order for XML and for CSS."""
    return _own_encoding(body, header_charset, declaration) or fallback or "utf-8"


def stylesheet_names_its_encoding(body: bytes, header_charset: str | None) -> bool:
    """True if a stylesheet says what it is written in (a byte-order mark, its header's charset,
    an @charset rule): the encoding of the document that refers to it does not matter.

    >>> stylesheet_names_its_encoding(b'@charset "shift_jis"; a{}', None)
    True
    >>> stylesheet_names_its_encoding(b"a{}", None), stylesheet_names_its_encoding(b"a{}", "cp1252")
    (False, True)
    """
    return _own_encoding(body, header_charset, _CSS_CHARSET) is not None


def _own_encoding(body: bytes, header_charset: str | None, declaration: re.Pattern[bytes]) -> str | None:
    """A document's byte-order mark, else its header's charset, else the one its first bytes
    name (``declaration``'s group); None if none of them says one."""
    declared = declaration.match(body)
    return (
        sniff_bom(body)
        or web_codec(header_charset)
        or (_declared(declared.group(1).decode("ascii")) if declared else None)
    )


def query_encodings(encoding: str | None) -> tuple[str, ...]:
    """The codec a browser writes the query of a link in, in a document read in ``encoding`` (a
    codec this module gave, or a label, read as browsers read it); none for UTF-8, and for UTF-16,
    in which no URL is written (the URL standard's "get an output encoding").

    >>> query_encodings("latin1"), query_encodings("cp932"), query_encodings("UTF-16LE")
    (('cp1252',), ('cp932',), ())
    """
    codec = web_codec(encoding) or _python_codec(encoding)
    if codec is None or codec == REPLACEMENT or codec.startswith(("utf-", "utf_")):
        return ()
    return (codec,)


def _python_codec(name: str | None) -> str | None:
    """The canonical name of Python's codec ``name`` (one that is no label of the standard:
    cp932, big5hkscs), if it has one."""
    try:
        return codecs.lookup(name).name if name else None
    except LookupError:
        return None


def as_utf8(body: bytes, encoding: str) -> bytes:
    """``body``, a document read in ``encoding``, as UTF-8: what lxml is given, whose parser would
    read a label its own way (ISO-8859-1 as Latin-1, where browsers read windows-1252) and knows
    the names of few codecs.

    >>> as_utf8(b"\\x93caf\\xe9\\x94", "cp1252").decode()
    '“café”'
    """
    if encoding == "utf-8":
        return body
    return body.decode(encoding, WEB_ERRORS).encode("utf-8", "surrogatepass")


def _is_utf8(body: bytes) -> bool:
    """True if ``body`` is UTF-8, a last character cut short included (a page cut at a limit)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return False
    return True
