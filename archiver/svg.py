"""SVG documents as the crawl, the mirror and verify read them: which element's href holds a
URL, and whether the image needs what it names; the references of an SVG file.

An SVG image needs what it draws (``<image>``, ``<use>``, ``<feImage>``), runs (``<script>``)
and styles with (``<style>``, ``style`` attributes and presentation attributes such as
``fill="url(paint.svg#g)"``: their CSS ``url()``; the stylesheets of ``<?xml-stylesheet?>``
before its root element); its ``<a>`` leads elsewhere, as an HTML page's does. The HTML a
``<foreignObject>`` holds (elements in the XHTML namespace) is read with HTML's table. SVG
inside an HTML page follows the same table (links.HTML_LINK_ATTRS takes it in). An href is read
in any namespace (``xlink:href``, or an href under a prefix of another name): SVG 2 reads a plain
one, SVG 1.1 the xlink one.

>>> body = b'<svg xmlns="http://www.w3.org/2000/svg"><image href="a.png"/><a href="b.svg"/></svg>'
>>> list(iter_svg_references(body, None))
[('a.png', True, False), ('b.svg', False, False)]
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import BinaryIO

import lxml.etree

from archiver.html_stream import read_xml_elements
from archiver.link_values import iter_css_urls, may_hold_css_urls, parse_srcset
from archiver.links import CSS_ATTRS, HTML_LINK_ATTRS, REQUISITE, SRCSET_ATTRS, SVG_LINK_ATTRS, link_kind
from archiver.urls import ASCII_WHITESPACE

XHTML_NAMESPACE = "http://www.w3.org/1999/xhtml"
STYLESHEET_PI = "xml-stylesheet"
_XHTML_PREFIX = "{" + XHTML_NAMESPACE + "}"
_PROLOG_PIECE = re.compile(
    rf"<!--.*?(?:-->|\Z)|<\?{STYLESHEET_PI}(?=[\s?])(?P<pseudo>.*?)(?:\?>|\Z)|<\?.*?(?:\?>|\Z)"
    r"|<!doctype(?:[^\[>]|\[[^\]]*\]?)*>?|(?P<root><[^\s!?/>])",
    re.DOTALL | re.IGNORECASE,
)
"""A piece of an XML document's prolog: a comment, a stylesheet's instruction (its pseudo-
attributes), another instruction, a doctype (its internal subset whole); or the root element's
start, where the prolog ends."""
_HREF_PSEUDO_ATTRIBUTE = re.compile(r"""(?<![\w.:-])href\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')""")


def local_name(name: str) -> str:
    """An element's or attribute's name without its namespace or prefix, lowercased.

    >>> local_name("{http://www.w3.org/1999/xlink}href"), local_name("xlink:href"), local_name("feImage")
    ('href', 'href', 'feimage')
    """
    return name.rpartition("}")[2].rpartition(":")[2].lower()


def stylesheet_href(pseudo_attribute: str) -> str:
    """The URL the href pseudo-attribute of an <?xml-stylesheet?> names, as written there: its
    character references read (the pseudo-attributes are read as XML attributes are).

    >>> stylesheet_href("s.css?a=1&amp;b=2")
    's.css?a=1&b=2'
    """
    return html.unescape(pseudo_attribute)


def prolog_stylesheets(text: str) -> Iterator[tuple[int, int]]:
    """The (start, end) of the href pseudo-attribute's value, as written, of each
    <?xml-stylesheet?> before the root element of the XML document ``text`` (an SVG image, an
    XHTML page): the stylesheets it is styled with (those after it, or in a comment, apply to
    nothing). ``text`` may be bytes read one character per byte: only ASCII syntax is looked for.

    >>> text = '<?xml-stylesheet href="a.css?x&amp;y"?><!-- <?xml-stylesheet href="no.css"?> --><svg/>'
    >>> [stylesheet_href(text[start:end]) for start, end in prolog_stylesheets(text)]
    ['a.css?x&y']
    """
    for piece in _PROLOG_PIECE.finditer(text):
        if piece.group("root") is not None:
            return
        pseudo = piece.group("pseudo")
        if pseudo is None:
            continue  # a comment, another instruction, the doctype
        href = _HREF_PSEUDO_ATTRIBUTE.search(pseudo)
        if href is not None:
            group = "dq" if href.group("dq") is not None else "sq"
            start = piece.start("pseudo") + href.start(group)
            yield start, start + len(href.group(group))


def iter_svg_references(body: bytes | BinaryIO, encoding: str | None) -> Iterator[tuple[str, bool, bool]]:
    """(value, requisite, in_css) of each URL reference of the SVG document ``body`` (its bytes,
    or a file), read as a stream (see html_stream.read_xml_elements()), in ``encoding`` if given
    (an HTTP charset, which wins over the document's XML declaration). ``in_css``: the value is
    CSS's (a style or presentation attribute's, or a <style>'s url() or @import), whose URL is
    always UTF-8.
    """
    try:
        yield from _references(read_xml_elements(body, ("start", "end", "pi"), encoding))
    except LookupError:  # an encoding lxml does not know: no element was read yet
        if encoding is not None and isinstance(body, bytes):
            yield from iter_svg_references(body, None)
    except lxml.etree.LxmlError:
        return  # what it read before is all there is


def _references(events: Iterator[tuple[str, lxml.etree._Element]]) -> Iterator[tuple[str, bool, bool]]:
    started = False
    for event, element in events:
        if event == "pi":
            # Only before the root element does a stylesheet's instruction apply.
            if not started and element.target == STYLESHEET_PI and (href := element.get("href")):
                yield stylesheet_href(href), True, False
            continue
        if not isinstance(element.tag, str):
            continue
        started = True
        name = local_name(element.tag)
        if event == "start":  # its attributes are all there
            if element.tag.startswith(_XHTML_PREFIX):
                yield from _html_references(element, name)
            else:
                requisite = SVG_LINK_ATTRS.get(name)
                if requisite is not None:
                    for attribute, value in element.items():
                        if local_name(str(attribute)) == "href":
                            yield str(value), requisite, False
            for attribute in CSS_ATTRS:
                css = element.get(attribute)
                if css is not None and may_hold_css_urls(css):
                    yield from ((url, True, True) for _start, _end, url in iter_css_urls(css))
        elif name == "style" and element.text:  # and now its text
            yield from ((url, True, True) for _start, _end, url in iter_css_urls(element.text))


class _HtmlElement:
    """An XHTML element as links.link_kind() reads it: by its local name."""

    def __init__(self, tag: str, element: lxml.etree._Element) -> None:
        self.tag = tag
        self.get = element.get


def _html_references(element: lxml.etree._Element, name: str) -> Iterator[tuple[str, bool, bool]]:
    """The references of an element of the XHTML a <foreignObject> holds, by HTML's table."""
    html_element = _HtmlElement(name, element)
    for (tag, attribute), _kind in HTML_LINK_ATTRS.items():
        if tag != name or (value := element.get(attribute)) is None:
            continue
        kind = link_kind(html_element, attribute)
        if kind is None:
            continue
        if attribute in SRCSET_ATTRS:
            yield from ((url, kind == REQUISITE, False) for _start, _end, url in parse_srcset(value))
        else:
            yield value.strip(ASCII_WHITESPACE), kind == REQUISITE, False
