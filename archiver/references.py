"""Every URL a document refers to and where it stands: the links a crawl follows, the spans a mirror edits.

An HTML page is tokenized once (markup.scan). Each URL it holds (the
attributes of links.HTML_LINK_ATTRS and of EXTRA_LINK_ATTRS, srcset, inline
``style`` and ``<style>`` ``url()``, meta refresh) is resolved against the
page's base URL and normalised. ``References`` then says both what the page
links to (``links``: for the crawler and for verify) and where each URL stands
in the source (``edits``: for rewrite.apply_edits, which only looks the URLs
up and splices). Edits are lists of plain values, so a crawl keeps them as
JSON and its mirror build does not parse the page again.

Positions index the document's View text (see charsets.View): the bytes
themselves for an ASCII-compatible encoding.

>>> found = analyse_html(b'<a href="/b#x">b</a><img src=c.png>', "http://h/a/", None)
>>> found.links
{'http://h/b': 'link', 'http://h/a/c.png': 'requisite'}
>>> found.edits[0]
(1, 8, 14, 0, Ref(url='http://h/b', absolute='http://h/b#x', suffix='#x', same=False))
>>> page = extract_html(b'<a href="/b">b</a><img srcset="x.png 1x, y.png 2x">', "http://h/a")
>>> [(link.url, link.kind) for link in page.links]
[('http://h/b', 'link'), ('http://h/x.png', 'requisite'), ('http://h/y.png', 'requisite')]
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .charsets import View, declared_charset, known_encoding, sniff_bom
from .links import (
    HTML_LINK_ATTRS,
    LINK,
    REQUISITE,
    SRCSET_ATTRS,
    Link,
    Page,
    charset_from_content_type,
    is_fetchable_reference,
    iter_css_urls,
    link_kind,
    parse_meta_refresh,
    parse_srcset,
)
from .markup import Markup, attributes, scan
from .paths import HTML_TYPES
from .urls import join_url, try_normalize

# Attributes that hold a URL but are not links the crawler follows: still made
# local or absolute by the mirror, so no relative URL points into the void.
EXTRA_LINK_ATTRS = frozenset(
    {("form", "action"), ("button", "formaction"), ("blockquote", "cite"), ("q", "cite"),
     ("del", "cite"), ("ins", "cite")}
)
# Kept under another name when their element's URL is made local: a rewritten
# file fails its integrity hash, and a crossorigin request to a file:// URL fails.
NEUTRALISED_ATTRS = frozenset({"integrity", "crossorigin"})
NEUTRALISED_PREFIX = "data-archived-"
_URL_ATTRS: dict[str, frozenset[str]] = {}
for _tag, _attribute in (*HTML_LINK_ATTRS, *EXTRA_LINK_ATTRS):
    _URL_ATTRS[_tag] = _URL_ATTRS.get(_tag, frozenset()) | {_attribute}
_EDITED_TAGS = frozenset({*_URL_ATTRS, "meta", "base"})
_STYLE_ATTRIBUTE = re.compile("style", re.IGNORECASE)
_DOCTYPE = re.compile(r"\s*<!doctype[^>]*>", re.IGNORECASE)

# The kinds of edit, first item of each. Every edit but LITERAL names its
# group (one per start tag): NEUTRAL applies when a URL of its group was made local.
LITERAL = 0
"""(LITERAL, start, end, text): replace the span with ``text``, whatever the archive holds."""
VALUE = 1
"""(VALUE, start, end, group, ref): an attribute value (quotes included) that is one URL."""
PARTS = 2
"""(PARTS, start, end, group, mode, value, [(start, end, ref)...]): an attribute value
holding URLs among other text (positions of the inner spans index ``value``)."""
TEXT = 3
"""(TEXT, start, end, group, ref): a URL in CSS text, replaced as it is (not quoted)."""
NEUTRAL = 4
"""(NEUTRAL, start, end, group, name): rename an attribute if its element's URL became local."""
CSS_VALUE, SRCSET_VALUE, REFRESH_VALUE = 0, 1, 2
"""PARTS modes: a style attribute, a srcset, a meta refresh's content."""
_NO_GROUP = -1


class Ref(NamedTuple):
    """One URL reference, resolved (a JSON list once kept)."""

    url: str
    """Normalised absolute URL: what the archive knows it by."""
    absolute: str
    """The reference joined with its base: what it becomes when not archived."""
    suffix: str
    """``#fragment`` as written (or ""), kept on a local path."""
    same: bool
    """The reference was written as ``absolute`` already: not archived, it needs no edit."""


@dataclass
class References:
    """What analyse_html() or analyse_css() found in one document."""

    encoding: str
    """The encoding the document is read in, and its View made with."""
    edits: list[tuple[Any, ...]] = field(default_factory=list)
    """The spans to edit, in document order (see LITERAL...NEUTRAL)."""
    links: dict[str, str] = field(default_factory=dict)
    """Normalised URL -> LINK or REQUISITE, in document order (requisite wins)."""
    title: str | None = None
    base: str = ""
    """The URL references resolve against: the first <base href>, else the document's."""

    def add_link(self, url: str, kind: str) -> None:
        if self.links.get(url) != REQUISITE:
            self.links[url] = kind


def reference(value: str, base: str) -> Ref | None:
    """``value`` (a URL as written, unescaped) resolved against ``base``; None if no URL to fetch."""
    written = value.strip()
    if not is_fetchable_reference(written):
        return None
    try:
        absolute = join_url(base, written)
    except ValueError:
        return None
    url = try_normalize(written, base)
    if url is None:
        return None
    _, hash_sign, fragment = written.partition("#")
    return Ref(url, absolute, hash_sign + fragment, absolute == value)


class _Element:
    """The tag name and attributes links.link_kind() needs."""

    def __init__(self, tag: str, attributes: dict[str, str]) -> None:
        self.tag = tag
        self.attributes = attributes

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.attributes.get(name, default)


def document_encoding(body: bytes, header_charset: str | None) -> str:
    """The encoding a page is read in: byte-order mark, HTTP header, <meta>, else UTF-8."""
    return sniff_bom(body) or known_encoding(header_charset) or declared_charset(body) or "utf-8"


def analyse_html(body: bytes, page_url: str, header_charset: str | None) -> References:
    """The references of an HTML page at ``page_url``; ``header_charset`` is the HTTP header's.

    When the page does not declare the header's charset itself, an edit adds a
    <meta charset>, so a browser reading the file from disk decodes it as the
    site's visitors did. A <base href> is resolved, then renamed so it no
    longer applies to the mirror's local links.
    """
    header_encoding = known_encoding(header_charset)
    bom = sniff_bom(body)
    declared = declared_charset(body)
    view = View(body, bom or header_encoding or declared or "utf-8")
    scanner = scan(view.text)
    found = References(view.encoding, base=_document_base(scanner, page_url, view))
    for offset, tag, raw in scanner.tags:
        if tag in _EDITED_TAGS or _STYLE_ATTRIBUTE.search(raw):
            _tag_references(found, offset, tag, raw, view)
    for start, end in scanner.styles:
        css = view.text[start:end]
        lowered = css.lower()
        if "url(" in lowered or "@import" in lowered:
            for url_start, url_end, value in iter_css_urls(css):
                if ref := reference(view.to_text(value), found.base):
                    found.edits.append((TEXT, start + url_start, start + url_end, _NO_GROUP, ref))
                    found.add_link(ref.url, REQUISITE)
    if header_encoding and not bom and declared != header_encoding:
        doctype = _DOCTYPE.match(view.text)
        at = doctype.end() if doctype else 0
        found.edits.append((LITERAL, at, at, f'<meta charset="{html.escape(header_charset or "")}">'))
    if scanner.title is not None:
        text = html.unescape(view.to_text(view.text[scanner.title[0]:scanner.title[1]]))
        found.title = " ".join(text.split())[:500] or None
    return found


def analyse_css(body: bytes, css_url: str, charset: str | None) -> References:
    """The references of a stylesheet at ``css_url``, in its own encoding (declared, BOM, else UTF-8)."""
    view = View(body, known_encoding(charset) or sniff_bom(body) or "utf-8")
    found = References(view.encoding, base=css_url)
    for start, end, value in iter_css_urls(view.text):
        if ref := reference(view.to_text(value), css_url):
            found.edits.append((TEXT, start, end, _NO_GROUP, ref))
            found.add_link(ref.url, REQUISITE)
    return found


def _document_base(scanner: Markup, page_url: str, view: View) -> str:
    """The URL links resolve against: the first <base href>, or the page's URL."""
    for _offset, tag, raw in scanner.tags:
        if tag != "base":
            continue
        for name, _ns, _ne, value_start, value_end in attributes(raw):
            href = _attribute_text(raw[value_start:value_end], view)
            if name == "href" and is_fetchable_reference(href):
                try:
                    return join_url(page_url, href.strip())
                except ValueError:
                    return page_url
    return page_url


def _attribute_text(raw_value: str, view: View) -> str:
    """The text of an attribute value as written in the view: unquoted, decoded, then unescaped
    (in that order: a character reference may name a character the view cannot hold)."""
    if raw_value[:1] in ("'", '"') and raw_value[-1:] == raw_value[:1] and len(raw_value) >= 2:
        raw_value = raw_value[1:-1]
    return html.unescape(view.to_text(raw_value))


def quoted(text: str, view: View) -> str:
    """``text`` as a double-quoted attribute value in the view."""
    return '"' + view.from_text(html.escape(text, quote=True)) + '"'


def _tag_references(found: References, offset: int, tag: str, raw: str, view: View) -> None:
    """The edits and links of one start tag (one of _EDITED_TAGS, or with a style attribute)."""
    attrs = attributes(raw)
    texts = [_attribute_text(raw[start:end], view) for _n, _ns, _ne, start, end in attrs]
    values: dict[str, str] = {}
    for (name, *_spans), text in zip(reversed(attrs), reversed(texts), strict=True):
        values[name] = text  # the first of a repeated attribute wins, as in browsers
    element = _Element(tag, values)
    followed: set[str] = set()
    edits = found.edits
    count = len(edits)
    base = found.base
    for (name, name_start, name_end, value_start, value_end), value in zip(attrs, texts, strict=True):
        first = name not in followed  # only the first of a repeated attribute is followed
        followed.add(name)
        if value_start == value_end:
            continue
        start, end = offset + value_start, offset + value_end
        if tag == "base" and name == "href":
            edits.append((LITERAL, offset + name_start, offset + name_end, NEUTRALISED_PREFIX + "href"))
            if is_fetchable_reference(value):
                edits.append((LITERAL, start, end, quoted(base, view)))
            continue
        if name == "style":
            parts = [(s, e, ref) for s, e, url in iter_css_urls(value) if (ref := reference(url, base))]
            if parts:
                edits.append((PARTS, start, end, offset, CSS_VALUE, value, parts))
                if first and "url(" in value.lower():
                    for *_span, ref in parts:
                        found.add_link(ref.url, REQUISITE)
            continue
        if tag == "meta" and name == "content":
            if (element.get("http-equiv") or "").lower() != "refresh":
                continue
            span = parse_meta_refresh(value)
            if span and (ref := reference(span[2], base)):
                edits.append((PARTS, start, end, offset, REFRESH_VALUE, value, [(span[0], span[1], ref)]))
                if first:
                    found.add_link(ref.url, LINK)
            continue
        if name not in _URL_ATTRS.get(tag, ()):
            continue
        kind = None
        if (tag, name) in HTML_LINK_ATTRS:
            kind = link_kind(element, name)  # type: ignore[arg-type]
            if kind is None:
                continue
        if name in SRCSET_ATTRS:
            parts = [(s, e, ref) for s, e, url in parse_srcset(value) if (ref := reference(url, base))]
            if parts:
                edits.append((PARTS, start, end, offset, SRCSET_VALUE, value, parts))
            refs = [ref for *_span, ref in parts]
        elif ref := reference(value, base):
            edits.append((VALUE, start, end, offset, ref))
            refs = [ref]
        else:
            continue
        if kind is not None and first:
            for ref in refs:
                found.add_link(ref.url, kind)
    if len(edits) > count and tag in ("link", "script"):
        for name, name_start, name_end, _vs, _ve in attrs:
            if name in NEUTRALISED_ATTRS:
                edits.append((NEUTRAL, offset + name_start, offset + name_end, offset,
                              NEUTRALISED_PREFIX + name))


def analyse(body: bytes, url: str, mime_type: str, content_type_header: str | None = None
            ) -> References | None:
    """Dispatch on the MIME type: the references of an HTML page or a stylesheet, None for others."""
    charset = charset_from_content_type(content_type_header)
    if mime_type in HTML_TYPES:
        return analyse_html(body, url, charset)
    if mime_type == "text/css":
        return analyse_css(body, url, charset)
    return None


def page_of(found: References | None, url: str) -> Page:
    """The crawler's view of what analyse() found: links, title, base URL."""
    if found is None:
        return Page(base_url=url)
    return Page(links=tuple(map(Link._make, found.links.items())), title=found.title, base_url=found.base)


def extract(body: bytes, url: str, mime_type: str, content_type_header: str | None = None) -> Page:
    """The links of a document: HTML and CSS are parsed, anything else has none."""
    return page_of(analyse(body, url, mime_type, content_type_header), url)


def extract_html(body: bytes, url: str, encoding: str | None = None) -> Page:
    """Links and title of an HTML document at ``url`` (``encoding``: the HTTP header's charset)."""
    return page_of(analyse_html(body, url, encoding), url)


def extract_css(body: bytes, url: str, charset: str | None = None) -> Page:
    """Links (all requisites) of a stylesheet at ``url``."""
    return page_of(analyse_css(body, url, charset), url)
