"""Which encoding a document is read in, and its links' queries written in: one rule for the
crawl's parse, verify and the mirror.

An HTML page: its byte-order mark, else the charset of its HTTP Content-Type,
else a <meta> charset in its first 1024 bytes, else, as browsers guess a page
that says nothing, UTF-8 if its bytes are UTF-8 and windows-1252 if not. A
stylesheet: its byte-order mark, else its header's charset, else its
``@charset`` rule, else UTF-8. The crawl finds links in what the mirror then
rewrites: read one way here and another there, a link to /naïve was fetched
as one URL and rewritten as another.

>>> page_encoding(b"<p>caf\\xc3\\xa9</p>", None), page_encoding(b"<p>caf\\xe9</p>", None)
('utf-8', 'windows-1252')
>>> stylesheet_encoding(b'@charset "ISO-8859-1"; a{}', None)
'iso8859-1'

A link's query is written in its page's encoding (the WHATWG URL standard's
encoding override), its path in UTF-8: query_encodings() says in which.
"""

from __future__ import annotations

import codecs
import re

from archiver.content import known_encoding

_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_CSS_CHARSET = re.compile(rb'@charset "([\w.:-]{1,40})";')
_XML_DECLARED = re.compile(rb"""<\?xml\s[^>]{0,200}?encoding\s*=\s*["']?([\w.:-]{1,40})""")
UNDECLARED_FALLBACK = "windows-1252"
"""What browsers of Western locales read a page in that names no charset and is not UTF-8."""
BROWSER_ENCODERS = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "gb2312": "gbk",
}
"""Codecs whose label browsers read as a larger encoding (the WHATWG Encoding standard): a
page labelled ISO-8859-1 is windows-1252 to them, Shift_JIS is Windows' Shift_JIS."""


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
    """The charset a page declares in a <meta> within its first 1024 bytes, if known."""
    match = _META_CHARSET.search(body[:1024])
    return known_encoding(match.group(1).decode("ascii", "replace")) if match else None


def page_encoding(body: bytes, header_charset: str | None) -> str:
    """The encoding an HTML page is read in (see the module docstring)."""
    return (
        sniff_bom(body) or known_encoding(header_charset) or declared_charset(body) or guessed_encoding(body)
    )


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


def stylesheet_encoding(body: bytes, header_charset: str | None) -> str:
    """The encoding a stylesheet is read in (see the module docstring)."""
    return _self_declared(body, header_charset, _CSS_CHARSET)


def _self_declared(body: bytes, header_charset: str | None, declaration: re.Pattern[bytes]) -> str:
    """A document's byte-order mark, else its header's charset, else the one its first bytes
    name (``declaration``'s group), else UTF-8: the order for XML and for CSS."""
    declared = declaration.match(body)
    return (
        sniff_bom(body)
        or known_encoding(header_charset)
        or (known_encoding(declared.group(1).decode("ascii")) if declared else None)
        or "utf-8"
    )


def query_encodings(encoding: str | None) -> tuple[str, ...]:
    """The codecs a browser writes the query of a link in, in a document read in ``encoding``:
    that codec, then the larger one browsers read its label as (a character the first cannot
    write, from a character reference, may be in the second); none for UTF-8, and for UTF-16
    and UTF-32, in which no URL is written (the URL standard's "get an output encoding").

    >>> query_encodings("latin1"), query_encodings("cp1251"), query_encodings("UTF-16LE")
    (('iso8859-1', 'cp1252'), ('cp1251',), ())
    """
    codec = known_encoding(encoding)
    if codec is None or codec.startswith(("utf-", "utf_")):
        return ()
    larger = BROWSER_ENCODERS.get(codec)
    return (codec, larger) if larger else (codec,)


def _is_utf8(body: bytes) -> bool:
    """True if ``body`` is UTF-8, a last character cut short included (a page cut at a limit)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return False
    return True
