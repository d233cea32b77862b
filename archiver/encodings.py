"""Which encoding a document is read in: one rule for the crawl's parse, verify and the mirror.

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
"""

from __future__ import annotations

import codecs
import re

from archiver.content import known_encoding

_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_CSS_CHARSET = re.compile(rb'@charset "([\w.:-]{1,40})";')
UNDECLARED_FALLBACK = "windows-1252"
"""What browsers of Western locales read a page in that names no charset and is not UTF-8."""


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


def stylesheet_encoding(body: bytes, header_charset: str | None) -> str:
    """The encoding a stylesheet is read in (see the module docstring)."""
    rule = _CSS_CHARSET.match(body)
    return (
        sniff_bom(body)
        or known_encoding(header_charset)
        or (known_encoding(rule.group(1).decode("ascii")) if rule else None)
        or "utf-8"
    )


def _is_utf8(body: bytes) -> bool:
    """True if ``body`` is UTF-8, a last character cut short included (a page cut at a limit)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError:
        return False
    return True
