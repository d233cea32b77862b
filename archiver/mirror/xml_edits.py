"""What the rewrite of an XML document (an SVG image, an XHTML page) needs beyond its tags: the
stylesheets its <?xml-stylesheet?> instructions name, which of its elements are the XHTML a
<foreignObject> holds, the CSS of its <style> written back as XML, the charset its declaration
says. Pure functions over a document's View (charsets.py).
"""

from __future__ import annotations

import html
import re

import lxml.etree

from archiver.encodings import as_utf8, web_codec
from archiver.html_stream import read_xml_elements
from archiver.mirror.charsets import View
from archiver.mirror.linker import Linker
from archiver.mirror.stylesheets import css_edits, rewrite_css_text
from archiver.svg import XHTML_NAMESPACE, prolog_stylesheets, stylesheet_href

_FOREIGN_OBJECT = re.compile("foreignobject", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"<\?xml\s[^>]*?encoding\s*=\s*[\"']?([A-Za-z0-9._-]*)", re.IGNORECASE)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)(?:\]\]>|\Z)", re.DOTALL)


def xhtml_tags(view: View, count: int) -> frozenset[int]:
    """Which of the ``count`` start tags of an SVG document (by their order) are of the XHTML a
    <foreignObject> holds, edited by HTML's rules: as an XML parser reads the namespaces (the
    crawl's svg.iter_svg_references()); none when it reads another number of elements (a
    document not well-formed, which the two read apart)."""
    if not _FOREIGN_OBJECT.search(view.text):
        return frozenset()
    body = as_utf8(view.encode(view.text), view.encoding)
    prefix = "{" + XHTML_NAMESPACE + "}"
    try:
        elements = [
            isinstance(element.tag, str) and element.tag.startswith(prefix)
            for _event, element in read_xml_elements(body, ("start",), "utf-8")
        ]
    except lxml.etree.LxmlError:
        return frozenset()
    return (
        frozenset(i for i, xhtml in enumerate(elements) if xhtml) if len(elements) == count else frozenset()
    )


def stylesheet_pi_edits(view: View, base: str, link: Linker) -> list[tuple[int, int, str]]:
    """The edits of the href of each <?xml-stylesheet?> before the root element of an XML
    document (an SVG image, an XHTML page): the stylesheets it is styled with."""
    edits = []
    for start, end in prolog_stylesheets(view.text):
        new = link(stylesheet_href(view.to_text(view.text[start:end])), base, view.query_encoding)
        if new is not None:
            edits.append((start, end, view.from_text(html.escape(new))))
    return edits


def xml_style_edits(css: str, base: str, link: Linker, view: View) -> list[tuple[int, int, str]]:
    """css_edits() of the text of an SVG <style>, which is XML: its URLs are written so that
    they are markup neither as text nor in a CDATA section. Where its text holds a character
    reference outside CDATA (``&amp;``), it is read as XML reads it and written back whole."""
    if "&" not in _CDATA.sub("", css):
        return css_edits(css, base, link, view, markup=True)
    text = _xml_text(view.to_text(css))
    rewritten = rewrite_css_text(text, base, link)
    return [] if rewritten == text else [(0, len(css), view.from_text(html.escape(rewritten, quote=False)))]


def _xml_text(raw: str) -> str:
    """XML character data as XML reads it: references replaced, CDATA sections' content kept."""
    out: list[str] = []
    last = 0
    for section in _CDATA.finditer(raw):
        out += (html.unescape(raw[last : section.start()]), section.group(1))
        last = section.end()
    out.append(html.unescape(raw[last:]))
    return "".join(out)


def xml_declaration_edits(text: str, encoding: str, label: str) -> list[tuple[int, int, str]]:
    """The edit that makes an XML document (XHTML) say the charset its HTTP header gave
    (``encoding``, named ``label`` there): XML reads its own declaration, not a <meta> (one
    before the root element breaks it), and without one reads UTF-8."""
    found = _XML_DECLARATION.match(text)
    label = html.escape(label)
    if found is None:
        if encoding == "utf-8":
            return []
        return [(0, 0, f'<?xml version="1.0" encoding="{label}"?>')]
    if web_codec(found.group(1)) == encoding:
        return []
    return [(found.start(1), found.end(1), label)]
