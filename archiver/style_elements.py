"""The CSS of a <style> element as a browser reads it, for the crawl, verify and the mirror alike.

In an HTML page a <style> is raw text, its ``&amp;`` four characters of CSS. Its text is markup
where the browser's parser reads it so: in an XML document (an XHTML page, an SVG image) and,
in an HTML page, inside <svg> or <math> (foreign content, whose text the HTML tokenizer reads
as it reads any element's): there a character reference is the character it names, and a
CDATA section's content is text as written. libxml2's HTML parser, which reads the crawl's
pages, keeps every <style>'s text raw; these functions read it as the browser does.

>>> markup_text("url(/i.png?a=1&amp;b=2) <![CDATA[&amp;]]>")
'url(/i.png?a=1&b=2) &amp;'
"""

from __future__ import annotations

import html
import re

import lxml.etree

CDATA = re.compile(r"<!\[CDATA\[(.*?)(?:\]\]>|\Z)", re.DOTALL)
"""A CDATA section (one never closed runs to the end of the text, as the parsers read it)."""
FOREIGN_ROOTS = frozenset({"svg", "math"})
"""The elements that start foreign content in an HTML page."""
HTML_INSIDE_FOREIGN = frozenset(
    {"foreignobject", "desc", "title", "mi", "mo", "mn", "ms", "mtext", "annotation-xml"}
)
"""The elements of SVG and MathML whose content is HTML again (HTML's integration points), as
libxml2 names them (lowercased)."""


def markup_text(raw: str) -> str:
    """Text that is markup as a parser reads it: character references replaced, CDATA sections'
    content kept as written."""
    if "&" not in raw:
        return raw
    out: list[str] = []
    last = 0
    for section in CDATA.finditer(raw):
        out += (html.unescape(raw[last : section.start()]), section.group(1))
        last = section.end()
    out.append(html.unescape(raw[last:]))
    return "".join(out)


def in_foreign_content(element: lxml.etree._Element) -> bool:
    """Whether an element of an HTML page, parsed by libxml2, is inside <svg> or <math> (and not
    inside the HTML one of their elements holds).

    >>> from archiver.html_stream import parse_html
    >>> root = parse_html(b"<style></style><svg><style></style><foreignObject><style></style>")
    >>> [in_foreign_content(style) for style in root.iter("style")]
    [False, True, False]
    """
    for ancestor in element.iterancestors():
        tag = ancestor.tag.lower() if isinstance(ancestor.tag, str) else ""
        if tag in FOREIGN_ROOTS:
            return True
        if tag in HTML_INSIDE_FOREIGN:
            return False
    return False


def style_text(element: lxml.etree._Element, xml: bool = False) -> str:
    """The CSS of a <style> element of a page libxml2's HTML parser read (``xml``: an XHTML page),
    as the browser reads it.

    >>> from archiver.html_stream import parse_html
    >>> root = parse_html(b"<style>a&amp;b</style><svg><style>a&amp;b</style>")
    >>> [style_text(style) for style in root.iter("style")], style_text(root.find(".//style"), xml=True)
    (['a&amp;b', 'a&b'], 'a&b')
    """
    text = element.text or ""
    if "&" in text and (xml or in_foreign_content(element)):
        return markup_text(text)
    return text
