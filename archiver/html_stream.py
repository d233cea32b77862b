"""An HTML document read as a stream of parser events, each element dropped once read: for
pages too large to hold as a tree (about ten times their size); an XML document (SVG) alike.
Pure: bytes in, elements out.

>>> events = read_elements(b'<p><a href="/a">a</a><a href="/b">b</a>', ("start",))
>>> [element.get("href") for _event, element in events if element.tag == "a"]
['/a', '/b']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import lxml.etree

CHUNK = 64 * 1024
"""Bytes fed to the parser at a time."""


def read_elements(
    source: bytes | BinaryIO, events: tuple[str, ...], encoding: str | None = None, huge_tree: bool = False
) -> Iterator[tuple[str, lxml.etree._Element]]:
    """(event, element) of the HTML document ``source`` holds (its bytes, or a file read CHUNK at a
    time), as lxml's pull parser gives them:
    at "start" an element's attributes are all there, at "end" its text and children too.

    Once the caller is done with an element's "end" (the next event is asked for), the
    element is dropped with what came before it under its parent; the elements left open
    where the document stops end after the last chunk. The tree is that of lxml.html's parser.
    Raises LookupError for an encoding lxml does not know, lxml.etree.LxmlError for a
    document it cannot read.
    """
    parser = lxml.etree.HTMLPullParser(
        events=events, encoding=encoding, remove_comments=False, huge_tree=huge_tree
    )
    yield from _parsed(parser, source)


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
    parser: lxml.etree.HTMLPullParser | lxml.etree.XMLPullParser, source: bytes | BinaryIO
) -> Iterator[tuple[str, lxml.etree._Element]]:
    for chunk in _chunks(source):
        parser.feed(chunk)
        yield from _dropping(parser.read_events())
    parser.close()
    yield from _dropping(parser.read_events())


def _chunks(source: bytes | BinaryIO) -> Iterator[bytes]:
    if isinstance(source, bytes):
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
