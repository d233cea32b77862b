"""What the rewrite of an XML document (an SVG image, an XHTML page) needs beyond its tags: the
stylesheets its <?xml-stylesheet?> instructions name, which of its elements are the XHTML a
<foreignObject> holds, the CSS of its <style> written back as XML (and of a <style> of SVG or
MathML in an HTML page, whose text is markup too), the charset its declaration says. Pure
functions over a document's View (charsets.py).
"""

from __future__ import annotations

import html
import re

import lxml.etree

from archiver.encodings import as_utf8, web_codec
from archiver.html_stream import read_xml_elements
from archiver.markup import iter_tags
from archiver.mirror.charsets import View
from archiver.mirror.linker import Linker
from archiver.mirror.stylesheets import css_edits, rewrite_css_text
from archiver.style_elements import CDATA, FOREIGN_ROOTS, HTML_INSIDE_FOREIGN, markup_text
from archiver.svg import XHTML_NAMESPACE, prolog_stylesheets, stylesheet_href

_FOREIGN_OBJECT = re.compile("foreignobject", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"<\?xml\s[^>]*?encoding\s*=\s*[\"']?([A-Za-z0-9._-]*)", re.IGNORECASE)
_FOREIGN_START = re.compile("<(?:svg|math)", re.IGNORECASE)
"""Where foreign content may start in an HTML page (iter_tags() tells)."""
_FOREIGN_TAGS = FOREIGN_ROOTS | HTML_INSIDE_FOREIGN
_FOREIGN_END = re.compile(
    "</(" + "|".join(sorted(map(re.escape, _FOREIGN_TAGS))) + r")(?=[\t\n\r\f />])", re.IGNORECASE
)


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
    if "&" not in CDATA.sub("", css):
        return css_edits(css, base, link, view, markup=True)
    text = markup_text(view.to_text(css))
    rewritten = rewrite_css_text(text, base, link)
    return [] if rewritten == text else [(0, len(css), view.from_text(html.escape(rewritten, quote=False)))]


def foreign_styles(text: str, styles: list[tuple[int, int]]) -> frozenset[int]:
    """Where the text begins of each <style> of the HTML page ``text`` (their spans: ``styles``)
    that is in foreign content (inside <svg> or <math>, not in the HTML one of their elements
    holds): its text is markup to the browser, a character reference the character it names
    (style_elements.py). Read from the start tags iter_tags() finds and the end tags that close
    them; not at all in a page whose <style>s all come before any <svg> or <math> (most pages).

    >>> page = "<style>a</style><svg><style>b</style><foreignObject><style>c</style></foreignObject></svg>"
    >>> sorted(page[start] for start in foreign_styles(page, [(7, 8), (28, 29), (60, 61)]))
    ['b']
    >>> page = '<svg><g style="x"><style>a</style></g></svg><math/><style>b</style>'
    >>> sorted(page[start] for start in foreign_styles(page, [(25, 26), (58, 59)]))
    ['a']
    """
    first = _FOREIGN_START.search(text)
    if first is None or all(start < first.start() for start, _end in styles):
        return frozenset()
    events = [(end.start(), end.group(1).lower(), False) for end in _FOREIGN_END.finditer(text)]
    wanted = _FOREIGN_TAGS | {"style"}
    for offset, name, raw in iter_tags(text, [], wanted):  # and the tags with a style attribute
        if name in wanted and not raw.endswith("/>"):  # a <style>'s text begins where its tag ends
            events.append((offset + len(raw) if name == "style" else offset, name, True))
    foreign = []
    open_tags: list[str] = []
    for offset, name, starts in sorted(events):
        if name == "style":
            if open_tags and open_tags[-1] in FOREIGN_ROOTS:
                foreign.append(offset)
        elif starts:
            open_tags.append(name)
        elif name in open_tags:
            del open_tags[len(open_tags) - 1 - open_tags[::-1].index(name) :]
    return frozenset(foreign)


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
