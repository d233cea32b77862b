"""An HTML document read by libxml2: as a tree (parse_html()), or as a stream of parser events,
each element dropped once read, for pages too large to hold as a tree (about ten times their
size); an XML document (SVG) alike. Either way its start tags crowded with attributes are
thinned first (crowded_tags.py). Pure: bytes in, elements out.

>>> events = read_elements(b'<p><a href="/a">a</a><a href="/b">b</a>', ("start",))
>>> [element.get("href") for _event, element in events if element.tag == "a"]
['/a', '/b']
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import lxml.etree

from archiver.body_attributes import add_later_body_attributes
from archiver.crowded_tags import thin_crowded_tags

CHUNK = 64 * 1024
"""Bytes fed to the parser at a time."""


def read_elements(
    source: bytes | mmap.mmap, events: tuple[str, ...], encoding: str | None = None
) -> Iterator[tuple[str, lxml.etree._Element]]:
    """(event, element) of the HTML document ``source`` holds (its bytes, or a file's mapped
    bytes, read CHUNK at a time), its start tags crowded with attributes thinned
    (crowded_tags.py), as lxml's pull parser gives them:
    at "start" an element's attributes are all there, at "end" its text and children too.

    Once the caller is done with an element's "end" (the next event is asked for), the
    element is dropped with what came before it under its parent; the elements left open
    where the document stops end after the last chunk. The tree is that of lxml.html's parser,
    with libxml2's huge_tree: a page is read 2048 elements deep, not 256 (past that, unlike
    parse_html(), what follows is lost: a page this large read by a target would cost four
    times as much, and a page as deep is a page built to be). Raises LookupError for an
    encoding lxml does not know, lxml.etree.LxmlError for a document it cannot read.
    """
    parser = lxml.etree.HTMLPullParser(
        events=events, encoding=encoding, remove_comments=False, huge_tree=True
    )
    yield from _parsed(parser, thin_crowded_tags(source))


def parse_html(body: bytes, encoding: str | None = None) -> lxml.etree._Element | None:
    """Parse HTML bytes leniently, as a browser's parser gives the body its attributes
    (body_attributes.py); None if there is no document at all.

    lxml.html's parser, without its element classes: they are made by a call into Python for
    each element a walk meets (a fifth of the link findings' time), and nothing here uses
    their methods."""
    if not body.strip():
        return None
    body = bytes(thin_crowded_tags(body))
    try:
        # An encoding lxml does not know fails here, when the parser is made.
        parser = lxml.etree.HTMLParser(encoding=encoding, remove_comments=False)
        root = lxml.etree.fromstring(body, parser=parser)
        if root is not None and any(error.type == _TOO_DEEP for error in parser.error_log):
            read_in = root.getroottree().docinfo.encoding
            root = lxml.etree.fromstring(body, lxml.etree.HTMLParser(encoding=encoding, target=_CappedTree()))
            encoding = encoding or read_in
    except (lxml.etree.ParserError, LookupError, ValueError):
        root = None
    if root is None:  # no document (lxml.html says "Document is empty")
        return None if encoding is None else parse_html(body, None)
    page_body = root.find("body")
    if page_body is not None:  # a later <body> tag's attributes, which libxml2 drops
        add_later_body_attributes(body, encoding or root.getroottree().docinfo.encoding, page_body)
    return root


DOM_DEPTH = 512
"""The depth of Chromium's deepest element (its parser's kMaximumHTMLParserDOMTreeDepth): an
element met deeper is put beside the last one at that depth instead, and a page nested deeper
shows all it holds. libxml2 stops reading a page at 256 elements deep (2048 with its huge_tree
option), and what follows is lost: its links too."""
_TOO_DEEP = lxml.etree.ErrorTypes.ERR_RESOURCE_LIMIT
"""The error libxml2 stops reading a page with at its depth limit (or another of its limits)."""


class _CappedTree:
    """A parser target building parse_html()'s tree as Chromium builds it past DOM_DEPTH: libxml2
    keeps no limit of depth for a target, whose tree it does not hold. Each call into Python
    costs (about four times the parse in C): a page is read so only once libxml2 stopped on it.

    >>> deep = b"<body>" + b"<div>" * 600 + b'<a href="/in">a</a>' + b"</div>" * 600 + b"<a href=/b>b</a>"
    >>> root = parse_html(deep)
    >>> [a.get("href") for a in root.iter("a")], max(len(list(e.iterancestors())) for e in root.iter())
    (['/in', '/b'], 512)
    """

    def __init__(self) -> None:
        self._builder = lxml.etree.TreeBuilder()
        self._depth = 0

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        self._depth += 1
        self._builder.start(tag, attributes)
        if self._depth > DOM_DEPTH:  # beside its parent: what it holds comes after it
            self._builder.end(tag)

    def end(self, tag: str) -> None:
        if self._depth <= DOM_DEPTH:
            self._builder.end(tag)
        self._depth -= 1

    def data(self, text: str) -> None:
        self._builder.data(text)

    def comment(self, text: str) -> None:
        self._builder.comment(text)

    def close(self) -> lxml.etree._Element:
        return self._builder.close()


def read_xml_elements(
    source: bytes | BinaryIO, events: tuple[str, ...], encoding: str | None = None
) -> Iterator[tuple[str, lxml.etree._Element]]:
    """read_elements() of an XML document: what is not well-formed is read as well as it can be
    (a browser shows an error instead, so nothing it loads is missed). A hostile document costs
    no more than its size: no DTD is loaded, no entity expanded, the network never reached, and
    libxml2's limits (nesting, the size of a text) hold.
    """
    parser = lxml.etree.XMLPullParser(
        events=events,
        encoding=encoding,
        recover=True,
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        remove_comments=True,
        remove_pis="pi" not in events,
    )
    yield from _parsed(parser, source)


def _parsed(
    parser: lxml.etree.HTMLPullParser | lxml.etree.XMLPullParser, source: bytes | mmap.mmap | BinaryIO
) -> Iterator[tuple[str, lxml.etree._Element]]:
    for chunk in _chunks(source):
        parser.feed(chunk)
        yield from _dropping(parser.read_events())
    parser.close()
    yield from _dropping(parser.read_events())


def _chunks(source: bytes | mmap.mmap | BinaryIO) -> Iterator[bytes]:
    if isinstance(source, bytes | mmap.mmap):
        return (source[at : at + CHUNK] for at in range(0, len(source), CHUNK))
    return iter(lambda: source.read(CHUNK), b"")


def _dropping(events: Iterable[tuple[str, lxml.etree._Element]]) -> Iterator[tuple[str, lxml.etree._Element]]:
    for event, element in events:
        yield event, element
        if event == "end":
            element.clear()
            parent = element.getparent()  # None for the root, whose siblings are comments
            while parent is not None and element.getprevious() is not None:
                del parent[0]
