"""SVG documents as the crawl, the mirror and verify read them: which element's href holds a
URL, and whether the image needs what it names; the references of an SVG file.

An SVG image needs what it draws (``<image>``, ``<use>``, ``<feImage>``), runs (``<script>``)
and styles with (``<style>``, ``style`` attributes: their CSS ``url()``); its ``<a>`` leads
elsewhere, as an HTML page's does. SVG inside an HTML page follows the same table
(links.HTML_LINK_ATTRS takes it in). An href is read in any namespace (``xlink:href``, or an
href under a prefix of another name): SVG 2 reads a plain one, SVG 1.1 the xlink one.

>>> body = b'<svg xmlns="http://www.w3.org/2000/svg"><image href="a.png"/><a href="b.svg"/></svg>'
>>> list(iter_svg_references(body, None))
[('a.png', True, False), ('b.svg', False, False)]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import lxml.etree

from archiver.html_stream import read_xml_elements
from archiver.link_values import iter_css_urls, may_hold_css_urls

SVG_LINK_ATTRS: dict[str, bool] = {"a": False, "image": True, "use": True, "feimage": True, "script": True}
"""Elements (local names, lowercased) whose href holds a URL -> whether it is a requisite."""


def local_name(name: str) -> str:
    """An element's or attribute's name without its namespace or prefix, lowercased.

    >>> local_name("{http://www.w3.org/1999/xlink}href"), local_name("xlink:href"), local_name("feImage")
    ('href', 'href', 'feimage')
    """
    return name.rpartition("}")[2].rpartition(":")[2].lower()


def iter_svg_references(body: bytes | BinaryIO, encoding: str | None) -> Iterator[tuple[str, bool, bool]]:
    """(value, requisite, in_css) of each URL reference of the SVG document ``body`` (its bytes,
    or a file), read as a stream (see html_stream.read_xml_elements()), in ``encoding`` if given
    (an HTTP charset, which wins over the document's XML declaration). ``in_css``: the value is
    CSS's (a style attribute's or a <style>'s url() or @import), whose URL is always UTF-8.
    """
    try:
        yield from _references(read_xml_elements(body, ("start", "end"), encoding))
    except LookupError:  # an encoding lxml does not know: no element was read yet
        if encoding is not None and isinstance(body, bytes):
            yield from iter_svg_references(body, None)
    except lxml.etree.LxmlError:
        return  # what it read before is all there is


def _references(events: Iterator[tuple[str, lxml.etree._Element]]) -> Iterator[tuple[str, bool, bool]]:
    for event, element in events:
        if not isinstance(element.tag, str):
            continue
        name = local_name(element.tag)
        if event == "start":  # its attributes are all there
            requisite = SVG_LINK_ATTRS.get(name)
            if requisite is not None:
                for attribute, value in element.items():
                    if local_name(str(attribute)) == "href":
                        yield str(value), requisite, False
            style = element.get("style")
            if style is not None and may_hold_css_urls(style):
                yield from ((url, True, True) for _start, _end, url in iter_css_urls(style))
        elif name == "style" and element.text:  # and now its text
            yield from ((url, True, True) for _start, _end, url in iter_css_urls(element.text))
