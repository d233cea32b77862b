"""Links of HTML: which attribute of which element holds one and whether it is a page requisite,
where a page's references are, and the URL each names. Pure functions over parsed documents.

The tables and rules here are shared by the crawler (findings.py), the mirror's
rewriter and verify, so all three see the same links.

>>> from archiver.html_stream import parse_html
>>> root = parse_html(b'<a href="/b">b</a><img srcset="x.png 1x, y.png 2x">')
>>> [(resolve_reference(value, "http://h/a"), kind) for *_, value, kind in iter_html_references(root)]
[('http://h/b', 'link'), ('http://h/x.png', 'requisite'), ('http://h/y.png', 'requisite')]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import lxml.etree
import lxml.html

from archiver.link_values import iter_css_urls, may_hold_css_urls, parse_meta_refresh, parse_srcset
from archiver.media_types import read_content_type
from archiver.style_elements import in_foreign_content, style_text
from archiver.urls import ASCII_WHITESPACE, query_encoded, reference_text, try_normalize, url_folder

LINK = "link"
REQUISITE = "requisite"

# (tag, attribute) -> kind. "srcset" attributes hold lists (see parse_srcset).
HTML_LINK_ATTRS: dict[tuple[str, str], str] = {
    ("a", "href"): LINK,
    ("area", "href"): LINK,
    ("img", "src"): REQUISITE,
    ("img", "srcset"): REQUISITE,
    ("img", "lowsrc"): REQUISITE,
    # HTML's parser makes an <image> start tag an <img> (outside SVG, whose <image> has an href).
    ("image", "src"): REQUISITE,
    ("image", "srcset"): REQUISITE,
    ("source", "src"): REQUISITE,
    ("source", "srcset"): REQUISITE,
    ("script", "src"): REQUISITE,
    ("iframe", "src"): REQUISITE,
    ("frame", "src"): REQUISITE,
    ("video", "src"): REQUISITE,
    ("video", "poster"): REQUISITE,
    ("audio", "src"): REQUISITE,
    ("track", "src"): REQUISITE,
    ("embed", "src"): REQUISITE,
    ("object", "data"): REQUISITE,
    ("input", "src"): REQUISITE,
    ("body", "background"): REQUISITE,
    ("table", "background"): REQUISITE,
    ("td", "background"): REQUISITE,
    ("th", "background"): REQUISITE,
    ("link", "href"): LINK,  # refined by REQUISITE_RELS
    ("link", "imagesrcset"): REQUISITE,
}
SVG_LINK_ATTRS: dict[str, bool] = {"a": False, "image": True, "use": True, "feimage": True, "script": True}
"""SVG elements (local names, lowercased) whose href (or xlink:href) holds a URL -> whether it is
a requisite (svg.py reads SVG documents with it)."""
PRESENTATION_URL_ATTRS = (
    "clip-path",
    "cursor",
    "fill",
    "filter",
    "marker-end",
    "marker-mid",
    "marker-start",
    "mask",
    "stroke",
)
"""SVG's presentation attributes whose value may be a CSS url() (fill="url(paint.svg#g)"): read as
a style attribute's CSS is, on any element (lxml's HTML parser keeps no namespace to tell an SVG
element by)."""
CSS_ATTRS = ("style", *PRESENTATION_URL_ATTRS)
"""Attributes whose URLs are CSS's (always UTF-8, escaped as CSS reads them)."""
for _tag, _requisite in SVG_LINK_ATTRS.items():  # SVG inside a page: as in an SVG file
    for _attribute in ("href", "xlink:href"):
        HTML_LINK_ATTRS.setdefault((_tag, _attribute), REQUISITE if _requisite else LINK)
SRCSET_ATTRS = frozenset({"srcset", "imagesrcset"})
# <link rel=...> values whose target the page needs to render.
REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "shortcut",
        "apple-touch-icon",
        "preload",
        "modulepreload",
        "manifest",
        "mask-icon",
        "image_src",
    }
)
PRELOAD_DESTINATIONS = {
    "image": "image",
    "style": "style",
    "script": "script",
    "font": "font",
    "track": "track",
    "fetch": "fetch",
}
"""<link rel=preload as=...> -> the destination of its request ('fetch': Fetch's empty destination
of a script's fetch(), told apart from a document's). Chromium 156 preloads these alone: a
preload as=audio, as=video, as=worker, as=document, as=json, of an unknown ``as`` or of none
is no request of its (link_kind() keeps its URL as a link, as it keeps one of a rel it does
not know, which a crawl follows in scope: not a requisite a page needs)."""
CONNECTION_RELS = frozenset({"preconnect", "dns-prefetch"})
"""<link rel=...> values that name an origin to connect to early: nothing is fetched from it."""
_ATTRS_BY_TAG: dict[str, tuple[str, ...]] = {}
for _tag, _attribute in HTML_LINK_ATTRS:
    _ATTRS_BY_TAG[_tag] = (*_ATTRS_BY_TAG.get(_tag, ()), _attribute)
_REFERENCE_TAGS = (*_ATTRS_BY_TAG, "meta", "style")
_STYLED = lxml.etree.XPath("descendant-or-self::*[@style]")
_PRESENTED = lxml.etree.XPath(
    "descendant-or-self::svg/descendant-or-self::*[@{}]".format(" or @".join(PRESENTATION_URL_ATTRS))
)
"""The elements of a page's SVG (no others: a <div fill> is nothing to a browser) with a
presentation attribute. Asked apart from style: one test a element is cheap, ten are not."""
MAX_SRCDOC_DEPTH = 10
"""Documents in the srcdoc of an <iframe> are read nested this deep at most: Firefox renders no
frame deeper (MAX_DEPTH_CONTENT_FRAMES), and each level is its page read again, so a page of
srcdoc nested a thousand deep costs ten reads of it, not a thousand."""
SKIPPED_SCHEMES = ("data:", "javascript:", "mailto:", "tel:", "about:", "blob:", "#")
LINK_MEMO = 8_192
"""Links whose normalised URL is kept (the most recently used), per process. What pages
repeat (menus, headers) stays in; four times as many saved no time on the generated site and
4% on the Python docs, for 9 and 6 MB more in every process that parses."""


class Link(NamedTuple):
    """One link found in a document (a named tuple: a page holds dozens, made by the thousand)."""

    url: str
    """Absolute, normalised URL."""
    kind: str
    """LINK (navigation) or REQUISITE (needed to render the page)."""


def charset_from_content_type(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, if any, read as browsers read it
    (media_types.read_content_type(): the last type's, a quoted one unquoted).

    >>> charset_from_content_type('text/html; charset="koi8-r"'), charset_from_content_type("text/css")
    ('koi8-r', None)
    """
    return read_content_type(content_type).charset


def is_fetchable_reference(value: str) -> bool:
    """False for empty values and data:, javascript:, mailto: and fragment-only links."""
    value = reference_text(value)
    return bool(value) and not value.lower().startswith(SKIPPED_SCHEMES)


def preload_as(element: lxml.etree._Element) -> str:
    """The ``as`` of a <link rel=preload> as Chromium reads it (trimmed, lowercased).

    >>> preload_as(lxml.html.fragment_fromstring('<link rel=preload as=" Font " href=f>'))
    'font'
    """
    return (element.get("as") or "").strip().lower()


def link_kind(element: lxml.etree._Element, attribute: str) -> str | None:
    """LINK or REQUISITE for a link-bearing attribute, None if it holds no link. A <link> whose
    request Chromium 156 does not make is no requisite: a preload of an ``as`` it ignores
    (PRELOAD_DESTINATIONS), a ``disabled`` stylesheet (kept as links: a script may enable it),
    an ``imagesrcset`` but a preload as=image's (no link: Chromium reads it nowhere else)."""
    tag = element.tag if isinstance(element.tag, str) else ""
    kind = HTML_LINK_ATTRS.get((tag.lower(), attribute))
    if tag == "link" and attribute == "imagesrcset":
        preloads_image = "preload" in (element.get("rel") or "").lower().split()
        return REQUISITE if preloads_image and preload_as(element) == "image" else None
    if tag == "link" and attribute == "href":
        rels = set((element.get("rel") or "").lower().split())
        if rels and rels <= CONNECTION_RELS:
            return None
        needed = rels & REQUISITE_RELS
        if needed == {"preload"} and preload_as(element) not in PRELOAD_DESTINATIONS:
            return LINK  # a preload Chromium does not make (PRELOAD_DESTINATIONS)
        if needed == {"stylesheet"} and element.get("disabled") is not None:
            return LINK  # a stylesheet Chromium leaves unfetched until a script enables it
        return REQUISITE if needed else LINK
    if tag == "input" and (element.get("type") or "").lower() != "image":
        return None
    return kind


def iter_html_references(
    root: lxml.etree._Element, xml: bool = False
) -> Iterator[tuple[lxml.etree._Element, str | None, int, int, str, str]]:
    """Every link in a parsed page: (element, attribute, start, end, value, kind).

    ``attribute`` is None for the text of a <style> element; start and end
    index the URL inside the attribute value (or text: style_elements.style_text()'s,
    the CSS a browser reads, ``xml`` for an XHTML page), so a rewriter can
    replace exactly that span. <base href> is not yielded: see base_href().
    """
    # Only the elements that can hold links are visited (lxml filters in C), then
    # the elements with a style attribute: the cost per page stays near the parse's.
    yield from references_in(root.iter(*_REFERENCE_TAGS), xml)
    yield from style_attribute_references(_STYLED(root), ("style",))
    yield from style_attribute_references(_PRESENTED(root), PRESENTATION_URL_ATTRS)


Reference = tuple[lxml.etree._Element, str | None, int, int, str, str]
"""(element, attribute, start, end, value, kind): see iter_html_references()."""


def references_in(elements: Iterable[lxml.etree._Element], xml: bool = False) -> Iterator[Reference]:
    """The links in the attributes of ``elements`` (their style attributes aside) and in the
    text of those that are <style>, in their order (``xml``: of an XHTML page)."""
    for element in elements:
        tag = element.tag.lower()
        attributes = _ATTRS_BY_TAG.get(tag)
        if attributes:
            for attribute in attributes:
                value = element.get(attribute)
                kind = link_kind(element, attribute) if value is not None else None
                if value is None or kind is None:
                    continue
                if attribute in SRCSET_ATTRS:
                    for start, end, url in parse_srcset(value):
                        yield element, attribute, start, end, url, kind
                else:
                    stripped = value.strip(ASCII_WHITESPACE)
                    start = value.find(stripped) if stripped else 0
                    yield element, attribute, start, start + len(stripped), stripped, kind
        elif tag == "meta" and (element.get("http-equiv") or "").lower() == "refresh":
            span = parse_meta_refresh(element.get("content") or "")
            if span:
                yield element, "content", span[0], span[1], span[2], LINK
        elif tag == "style" and element.text:
            for start, end, url in iter_css_urls(style_text(element, xml)):
                yield element, None, start, end, url, REQUISITE


def style_attribute_references(
    elements: Iterable[lxml.etree._Element], attributes: Iterable[str]
) -> Iterator[Reference]:
    """The url()s in the ``attributes`` of ``elements`` that hold CSS (of CSS_ATTRS: style, or
    SVG's presentation attributes)."""
    for element in elements:
        for attribute in attributes:
            css = element.get(attribute)
            if css is not None and may_hold_css_urls(css):
                for start, end, url in iter_css_urls(css):
                    yield element, attribute, start, end, url, REQUISITE


def base_href(
    root: lxml.etree._Element,
    page_url: str,
    encoding: str | None = None,
    base: lxml.etree._Element | None = None,
) -> str:
    """The URL relative links resolve against: the first <base href> (``base`` if the caller found
    it: first_base()), or the page's URL."""
    base = base if base is not None else first_base(root)
    return page_url if base is None else document_base(base.get("href") or "", page_url, encoding)


def first_base(root: lxml.etree._Element) -> lxml.etree._Element | None:
    """The page's first <base> whose href names a URL to resolve against, or None."""
    for base in root.iter("base"):
        href = base.get("href")
        if href and is_fetchable_reference(href):
            return base
    return None


def before_base(root: lxml.etree._Element, base: lxml.etree._Element | None) -> set[lxml.etree._Element]:
    """The elements before ``base``, the page's first <base href> (first_base()), in document
    order; none if it has none. Chromium fetches a requisite as its parser inserts its element: one before the
    <base> against the page's own URL (measured: a stylesheet, a script, an image far enough
    before it). A link followed later (an <a> clicked, a refresh) resolves against the base.

    >>> root = lxml.html.fromstring('<link rel=stylesheet href=s.css><base href=/b/><img src=i.png>')
    >>> sorted(element.tag for element in before_base(root, first_base(root)))
    ['head', 'html', 'link']
    """
    if base is None:
        return set()
    before = set()
    for element in root.iter():
        if element is base:
            break
        before.add(element)
    return before


def document_base(href: str, page_url: str, encoding: str | None = None) -> str:
    """The base URL a <base href> gives a page at ``page_url`` read in ``encoding`` (its own URL
    if the href is no http(s) URL): the crawl's parser and the mirror's rewriter both ask here."""
    return try_normalize(query_encoded(reference_text(href), encoding), page_url) or page_url


def page_title(root: lxml.etree._Element) -> str | None:
    """The text of the page's first <title> (looked for in <head> first), whitespace collapsed:
    its document's title (is_document_title()), as Chromium's document.title reads it."""
    title = root.find("head/title")
    if title is None:
        title = next((found for found in root.iter("title") if is_document_title(found)), None)
    return None if title is None else title_text(title)


def is_document_title(title: lxml.etree._Element) -> bool:
    """Whether a <title> element is its document's title, as Chromium reads it: not one of SVG
    or MathML (an <svg>'s own title), nor in a <template> (no part of the document) or in a
    <noscript> (text, in a browser that runs scripts), which the parser makes elements here.

    >>> page = lxml.html.fromstring("<body><svg><title>S</title></svg><template><title>T</title>"
    ...     "</template><noscript><title>N</title></noscript><math><mi><title>M</title></mi></math>")
    >>> [(t.text, is_document_title(t)) for t in page.iter("title")]
    [('S', False), ('T', False), ('N', False), ('M', True)]
    """
    if in_foreign_content(title):
        return False
    return not any(ancestor.tag in ("template", "noscript") for ancestor in title.iterancestors())


def title_text(title: lxml.etree._Element) -> str | None:
    """A <title>'s text, whitespace collapsed, at most 500 characters."""
    return " ".join("".join(title.itertext()).split())[:500] or None


def base_contexts(base: str) -> tuple[str, str]:
    """(origin + "/", folder) of ``base``: what a link with a path is resolved against.

    Joined with either (the origin for "/x", the folder for any other link with
    a path), a link gives what it gives with the whole base URL, so pages that
    share them share _normalized()'s memo.

    >>> base_contexts("http://h/a/b.html?q=/x")
    ('http://h/', 'http://h/a/')
    """
    folder = url_folder(base)
    return folder[: folder.index("/", folder.find("://") + 3) + 1], folder


@functools.lru_cache(maxsize=LINK_MEMO)
def _normalized(context: str, value: str) -> str | None:
    """try_normalize(value, context), remembered: pages repeat their links many times over."""
    return try_normalize(value, context)


def resolve_reference(
    value: str,
    base: str,
    contexts: tuple[str, str] | None = None,
    remember: bool = True,
    encoding: str | None = None,
) -> str | None:
    """The normalised URL that ``value``, a reference in a document at ``base``, names; None
    if it names nothing to fetch. ``contexts``: base_contexts(base), if the caller has it.
    ``remember``: keep the result in this process's memo (LINK_MEMO entries, about 3 MB).
    ``encoding``: the document's, which its query is written in (urls.query_encoded(); None
    for UTF-8, and for any URL of CSS, which is always UTF-8).

    The crawl follows what this gives, and the mirror's rewrite points each link at it.

    >>> resolve_reference(" ../b#f", "http://h/a/c.html"), resolve_reference("#top", "http://h/")
    ('http://h/b', None)
    >>> resolve_reference("b?caf\xe9", "http://h/", encoding="windows-1252")
    'http://h/b?caf%E9'
    """
    value = query_encoded(reference_text(value), encoding)
    if not value or value.lower().startswith(SKIPPED_SCHEMES):
        return None
    first = value[0]
    if first in "?#":  # resolved against the whole base URL
        return try_normalize(value, base)
    origin, folder = contexts or base_contexts(base)
    context = origin if first in "/\\" else folder
    return _normalized(context, value) if remember else try_normalize(value, context)
