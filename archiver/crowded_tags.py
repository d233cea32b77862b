"""Start tags crowded with attributes, thinned before libxml2 reads them.

libxml2's HTML parser compares each attribute of a start tag with every one
before it (an attribute named twice keeps its first value), so a tag of n
attributes of different names costs it n² steps: a page of 170 KB holding
one tag of 20,000 attributes took 11 s to parse, one of 1.6 MB would take
hours, and a hostile server held the crawl's parse, and then verify, as long
as it liked. A browser reads them at a cost that grows with their number.

A start tag with more than MAX_NAMES names is given to the parser with the
first MAX_NAMES of them and, past those, only the names the crawl reads
links, styles and hints from (href, src, style, rel...): each name where it
first comes, as HTML keeps it, its later ones left out, since they count for
nothing. Pages are otherwise given as they are. Such tags are looked for with
one regular expression (a tag that could hold that many attributes, which no
page of the real sites measured has), then with the tokenizer of markup.py,
which knows scripts and comments: text that merely looks like a crowded tag
is left alone.

>>> tag = b"<a " + b" ".join(b"a%d=x" % i for i in range(MAX_NAMES + 5)) + b' a0=y href="/b">b</a>'
>>> thinned = thin_crowded_tags(tag)
>>> thinned.count(b"="), thinned.endswith(b' href="/b">b</a>')
(65, True)
>>> page = b"<script>var t = '<a " + b" x" * 100 + b"';</script>"
>>> thin_crowded_tags(page) == page
True
"""

from __future__ import annotations

import mmap
import re
from itertools import chain

from archiver.links import CSS_ATTRS, HTML_LINK_ATTRS, SRCSET_ATTRS
from archiver.markup import attributes, iter_tags

MAX_NAMES = 64
"""Attribute names of a start tag read as they come. The pages of the real sites the
benchmarks serve (Python's, SQLite's and Git's documentation) have at most 23 in a tag; libxml2
reads a tag of 64 in 50 us, so a page of 200,000 such tags (content.MAX_MARKUP, 76 MB) costs it
some ten seconds, where one tag of 200,000 names cost it hours."""

READ_NAMES = frozenset(
    chain(
        (name for _tag, name in HTML_LINK_ATTRS),
        CSS_ATTRS,
        SRCSET_ATTRS,
        ("rel", "as", "type", "media", "crossorigin", "integrity", "referrerpolicy", "http-equiv"),
        ("content", "name", "charset", "srcdoc", "sizes", "imagesizes", "loading", "xlink:href"),
    )
)
"""Names kept past MAX_NAMES: those the crawl reads links, requests and styles from."""

_SPACE = rb"[\t\n\r\f\x20]"
_ATTRIBUTE = (
    rb"[\t\n\r\f\x20/]*+[^\t\n\r\f\x20/>][^\t\n\r\f\x20/=>]*+"
    rb"(?:" + _SPACE + rb"*+=+" + _SPACE + rb"""*+(?:"[^"]*+"|'[^']*+'|[^\t\n\r\f\x20>]*+))?+"""
)
_FEW = rb"(?:" + _ATTRIBUTE + rb"){0,%d}+[\t\n\r\f\x20/]*+>" % MAX_NAMES
_NAME_ENDS = rb"(?![^\t\n\r\f\x20/>])"
_RAW_TEXT = b"".join(
    rb"|<" + name + _NAME_ENDS + _FEW + rb".*?(?:</" + name + rb"[\t\n\r\f\x20/>]|\Z)"
    for name in (b"script", b"style", b"textarea", b"title", b"xmp", b"iframe", b"noembed", b"noframes")
)
_UNCROWDED = re.compile(
    rb"(?:[^<]++|<!--.*?(?:-->|\Z)|<(?![a-zA-Z])"
    + _RAW_TEXT
    + rb"|<plaintext"
    + _NAME_ENDS
    + _FEW
    + rb".*"
    + rb"|<[a-zA-Z][^\t\n\r\f\x20/>\x00]*+"
    + _FEW
    + rb")*+",
    re.DOTALL | re.IGNORECASE,
)
"""From the start: text, comments and raw text, and start tags of MAX_NAMES attributes or fewer,
markup.py's grammar without its subtleties, in one match that reads each byte once (a failed
try at each "<" of a long attribute value would take time squared). It stops at a start tag of
more, or one never closed, or the end."""


def _may_be_crowded(body: bytes | mmap.mmap) -> bool:
    """Whether ``body`` may hold a start tag of more than MAX_NAMES attributes (an attribute too
    many counted here only sends it to the tokenizer)."""
    stop = _UNCROWDED.match(body)
    return stop is not None and stop.end() < len(body)


def thin_crowded_tags(body: bytes | mmap.mmap) -> bytes | mmap.mmap:
    """``body`` (an HTML document in an encoding where markup is ASCII, as the crawl gives
    libxml2 its pages: UTF-8; or a file's mapped bytes) with each start tag of more than
    MAX_NAMES attribute names thinned as the module says; ``body`` itself when it holds none
    (a file's bytes are read into memory only when it does)."""
    if not _may_be_crowded(body):
        return body
    text = body[:].decode("latin-1")  # byte for byte: only ASCII markup is read
    parts = []
    done = 0
    for offset, _name, raw in iter_tags(text, []):
        found = attributes(raw)
        if len(found) <= MAX_NAMES:
            continue
        kept = _kept(raw, found)
        if kept is not None:
            parts += [text[done:offset], kept]
            done = offset + len(raw)
    if not parts:
        return body
    parts.append(text[done:])
    return "".join(parts).encode("latin-1")


def _kept(raw: str, found: list[tuple[str, int, int, int, int]]) -> str | None:
    """The start tag ``raw`` (whose attributes are ``found``) with only the attributes it keeps,
    or None if it keeps them all."""
    names: set[str] = set()
    spans = []
    for name, name_start, _name_end, _value_start, value_end in found:  # value_end: name_end if none
        if name in names or (len(names) >= MAX_NAMES and name not in READ_NAMES):
            continue
        names.add(name)
        spans.append((name_start, value_end))
    if len(spans) == len(found):
        return None
    head, tail = raw[: found[0][1]], raw[found[-1][4] :]
    return head + " ".join(raw[start:end] for start, end in spans) + tail
