"""Link extraction from HTML, CSS and SVG: pure functions over decoded documents.

The tables here (which attribute of which element holds a link, and whether
it is a page requisite) are shared by the crawler, the mirror's rewriter and
verify, so all three see the same links.

>>> page = extract_html(b'<a href="/b">b</a><img srcset="x.png 1x, y.png 2x">', "http://h/a")
>>> [(link.url, link.kind) for link in page.links]
[('http://h/b', 'link'), ('http://h/x.png', 'requisite'), ('http://h/y.png', 'requisite')]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import lxml.etree
import lxml.html

from archiver.content import CSS_TYPE, HTML_TYPES, SVG_TYPE, bounded_document, known_encoding
from archiver.encodings import (
    declared_charset,
    guessed_encoding,
    sniff_bom,
    stylesheet_encoding,
    xml_encoding,
)
from archiver.html_stream import read_elements
from archiver.link_values import iter_css_urls, may_hold_css_urls, parse_meta_refresh, parse_srcset
from archiver.robots_directives import meta_nofollow, says_nofollow_meta
from archiver.svg import SVG_LINK_ATTRS, iter_svg_references
from archiver.urls import query_encoded, reference_text, try_normalize, url_folder

LINK = "link"
REQUISITE = "requisite"

# (tag, attribute) -> kind. "srcset" attributes hold lists (see parse_srcset).
HTML_LINK_ATTRS: dict[tuple[str, str], str] = {
    ("a", "href"): LINK,
    ("area", "href"): LINK,
    ("img", "src"): REQUISITE,
    ("img", "srcset"): REQUISITE,
    ("img", "lowsrc"): REQUISITE,
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
_ATTRS_BY_TAG: dict[str, tuple[str, ...]] = {}
for _tag, _attribute in HTML_LINK_ATTRS:
    _ATTRS_BY_TAG[_tag] = (*_ATTRS_BY_TAG.get(_tag, ()), _attribute)
_REFERENCE_TAGS = (*_ATTRS_BY_TAG, "meta", "style")
_STARTS_READ = frozenset((*_ATTRS_BY_TAG, "meta", "base"))
"""The elements whose attributes _streamed_findings() reads (style attributes aside)."""
_STYLED = lxml.etree.XPath("descendant-or-self::*[@style]")
STREAMED_BYTES = 256 * 1024
"""HTML larger than this is parsed for links as a stream (see _streamed_findings)."""
MAX_SRCDOC_DEPTH = 10
"""Documents in the srcdoc of an <iframe> are read nested this deep at most: Firefox renders no
frame deeper (MAX_DEPTH_CONTENT_FRAMES), and each level is its page read again, so a page of
srcdoc nested a thousand deep costs ten reads of it, not a thousand."""
SKIPPED_SCHEMES = ("data:", "javascript:", "mailto:", "tel:", "about:", "blob:", "#")
LINK_MEMO = 8_192
"""Links whose normalised URL is kept (the most recently used), per process. What pages
repeat (menus, headers) stays in; four times as many saved no time on the generated site and
4% on the Python docs, for 9 and 6 MB more in every process that parses."""

_CHARSET = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)


class Link(NamedTuple):
    """One link found in a document (a named tuple: a page holds dozens, made by the thousand)."""

    url: str
    """Absolute, normalised URL."""
    kind: str
    """LINK (navigation) or REQUISITE (needed to render the page)."""


@dataclass(frozen=True)
class Page:
    """What parsing a document found."""

    links: tuple[Link, ...] = ()
    title: str | None = None
    base_url: str | None = None
    """The URL links resolve against (the <base href>, or the page's own)."""
    nofollow: bool = False
    """The page asks robots not to follow its links (<meta name="robots" content="nofollow">)."""


def charset_from_content_type(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, if any."""
    if not content_type:
        return None
    match = _CHARSET.search(content_type)
    return match.group(1) if match else None


def parse_html(body: bytes, encoding: str | None = None) -> lxml.html.HtmlElement | None:
    """Parse HTML bytes leniently; None if there is no document at all."""
    if not body.strip():
        return None
    try:
        # An encoding lxml does not know fails here, when the parser is made.
        parser = lxml.html.HTMLParser(encoding=encoding, remove_comments=False)
        return lxml.html.document_fromstring(body, parser=parser)
    except (lxml.etree.ParserError, LookupError, ValueError):
        if encoding is None:
            return None
        return parse_html(body, None)


def is_fetchable_reference(value: str) -> bool:
    """False for empty values and data:, javascript:, mailto: and fragment-only links."""
    value = reference_text(value)
    return bool(value) and not value.lower().startswith(SKIPPED_SCHEMES)


def link_kind(element: lxml.etree._Element, attribute: str) -> str | None:
    """LINK or REQUISITE for a link-bearing attribute, None if it holds no link."""
    tag = element.tag if isinstance(element.tag, str) else ""
    kind = HTML_LINK_ATTRS.get((tag.lower(), attribute))
    if tag == "link" and attribute == "imagesrcset":
        return REQUISITE
    if tag == "link" and attribute == "href":
        rels = set((element.get("rel") or "").lower().split())
        return REQUISITE if rels & REQUISITE_RELS else LINK
    if tag == "input" and (element.get("type") or "").lower() != "image":
        return None
    return kind


def iter_html_references(
    root: lxml.html.HtmlElement,
) -> Iterator[tuple[lxml.html.HtmlElement, str | None, int, int, str, str]]:
    """Every link in a parsed page: (element, attribute, start, end, value, kind).

    ``attribute`` is None for the text of a <style> element; start and end
    index the URL inside the attribute value (or text), so a rewriter can
    replace exactly that span. <base href> is not yielded: see base_href().
    """
    # Only the elements that can hold links are visited (lxml filters in C), then
    # the elements with a style attribute: the cost per page stays near the parse's.
    yield from _references_in(root.iter(*_REFERENCE_TAGS))
    yield from _style_attribute_references(_STYLED(root))


Reference = tuple[lxml.etree._Element, str | None, int, int, str, str]
"""(element, attribute, start, end, value, kind): see iter_html_references()."""


def _references_in(elements: Iterable[lxml.etree._Element]) -> Iterator[Reference]:
    """The links in the attributes of ``elements`` (their style attributes aside) and in the
    text of those that are <style>, in their order."""
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
                    stripped = value.strip()
                    start = value.find(stripped) if stripped else 0
                    yield element, attribute, start, start + len(stripped), stripped, kind
        elif tag == "meta" and (element.get("http-equiv") or "").lower() == "refresh":
            span = parse_meta_refresh(element.get("content") or "")
            if span:
                yield element, "content", span[0], span[1], span[2], LINK
        elif tag == "style" and element.text:
            for start, end, url in iter_css_urls(element.text):
                yield element, None, start, end, url, REQUISITE


def _style_attribute_references(elements: Iterable[lxml.etree._Element]) -> Iterator[Reference]:
    """The url()s in the style attributes of ``elements``."""
    for element in elements:
        style = element.get("style")
        if style is not None and may_hold_css_urls(style):
            for start, end, url in iter_css_urls(style):
                yield element, "style", start, end, url, REQUISITE


def base_href(root: lxml.html.HtmlElement, page_url: str, encoding: str | None = None) -> str:
    """The URL relative links resolve against: the first <base href>, or the page's URL."""
    for base in root.iter("base"):
        href = base.get("href")
        if href and is_fetchable_reference(href):
            return document_base(href, page_url, encoding)
    return page_url


def document_base(href: str, page_url: str, encoding: str | None = None) -> str:
    """The base URL a <base href> gives a page at ``page_url`` read in ``encoding`` (its own URL
    if the href is no http(s) URL): the crawl's parser and the mirror's rewriter both ask here."""
    return try_normalize(query_encoded(reference_text(href), encoding), page_url) or page_url


def page_title(root: lxml.html.HtmlElement) -> str | None:
    """The text of the page's first <title> (looked for in <head> first), whitespace collapsed."""
    title = root.find("head/title")
    if title is None:
        title = next(root.iter("title"), None)
    return None if title is None else _title_text(title)


def _title_text(title: lxml.etree._Element) -> str | None:
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


def _collect(found: dict[str, str], url: str | None, kind: str) -> None:
    # A URL that is both a link and a requisite is needed by the page: requisite wins.
    if url is not None and found.get(url) != REQUISITE:
        found[url] = kind


Findings = tuple[str | None, str, dict[str, str], bool]
"""(title, base URL, {normalised URL: kind}, nofollow) of a document: a Page as plain
values, which cross a process boundary several times cheaper."""


def _page(findings: Findings) -> Page:
    title, base_url, found, nofollow = findings
    return Page(
        links=tuple(map(Link._make, found.items())), title=title, base_url=base_url, nofollow=nofollow
    )


def root_findings(
    root: lxml.html.HtmlElement | None, url: str, encoding: str | None = None, depth: int = 0
) -> Findings:
    """Title, base URL, {url: kind} links and robots nofollow of an HTML page parsed by parse_html(),
    read in ``encoding`` (see read_page()); its iframes' srcdoc documents' links with its own.
    ``depth``: how deep in srcdoc documents the page is (0 for a page fetched)."""
    if root is None:
        return None, url, {}, False
    base = base_href(root, url, encoding)
    contexts = base_contexts(base)
    found: dict[str, str] = {}
    for _element, attribute, _start, _end, value, kind in iter_html_references(root):
        in_css = attribute is None or attribute == "style"
        _collect(found, resolve_reference(value, base, contexts, encoding=None if in_css else encoding), kind)
    _collect_srcdocs(found, srcdocs(root.iter("iframe")), base, depth)
    # lxml finds the <meta> elements in C: about 1.5 us for a 15 KB page (a case-blind
    # regex scan of the bytes for "robots", to skip it, cost 170 us).
    return page_title(root), base, found, meta_nofollow(root)


def srcdocs(iframes: Iterable[lxml.etree._Element]) -> list[str]:
    """The documents ``iframes`` hold in their srcdoc attributes (their text, unescaped)."""
    return [text for iframe in iframes if (text := iframe.get("srcdoc")) is not None]


def srcdoc_body(text: str) -> bytes:
    """A srcdoc document as the bytes it is read from: UTF-8 (its encoding, whatever its page's),
    cut at MAX_MARKUP tags as a page is (its tags are no tags of its page: the page's cut did not
    count them)."""
    return bounded_document(text.encode("utf-8", "surrogatepass"), "text/html")[0]


def _collect_srcdocs(found: dict[str, str], texts: list[str], base: str, depth: int) -> None:
    """Add to ``found`` the links of the srcdoc documents ``texts`` of a document whose base URL
    is ``base``, at ``depth``: a srcdoc document's links resolve against its page's base URL (as
    if it were at that URL: a <base> of its own is resolved against it), its queries in UTF-8."""
    if depth >= MAX_SRCDOC_DEPTH:
        return
    for text in texts:
        for url, kind in _html_findings(srcdoc_body(text), base, "utf-8", "utf-8", depth + 1)[2].items():
            _collect(found, url, kind)


def _streamed_findings(
    body: bytes, url: str, encoding: str | None, document_encoding: str, depth: int = 0
) -> Findings:
    """root_findings(parse_html(body, encoding), url, document_encoding, depth), the page parsed as a
    stream: each element is dropped once read, so a page of megabytes costs the memory of a
    chunk, not of its tree (about ten times its size). The same parser, so the same elements,
    in the same order.
    """
    references: list[tuple[str, str, str | None]] = []
    styled: list[tuple[str, str, str | None]] = []
    iframes: list[str] = []
    base: str | None = None
    title: str | None = None
    head_title: str | None = None
    nofollow = False
    try:
        for event, element in read_elements(body, ("start", "end"), encoding):
            tag = element.tag  # lowercased by the HTML parser
            if event == "start":  # its attributes are all there
                if tag in _STARTS_READ:
                    # Not a <style>: its text is not all there yet.
                    references.extend(
                        (ref[4], ref[5], document_encoding) for ref in _references_in((element,))
                    )
                    if tag == "base" and base is None:
                        href = element.get("href") or ""
                        base = (
                            document_base(href, url, document_encoding)
                            if is_fetchable_reference(href)
                            else None
                        )
                    elif tag == "meta" and not nofollow:
                        nofollow = says_nofollow_meta(element)
                    elif tag == "iframe":
                        iframes.extend(srcdocs((element,)))
                if element.get("style") is not None:
                    styled.extend((ref[4], ref[5], None) for ref in _style_attribute_references((element,)))
            elif tag == "style" and element.text:  # and now its text
                references.extend((value, REQUISITE, None) for _s, _e, value in iter_css_urls(element.text))
            elif tag == "title":
                text = _title_text(element)
                title = title if title is not None else text
                if head_title is None and _in_head(element):
                    head_title = text
    except (lxml.etree.LxmlError, LookupError, ValueError):
        if encoding is None:
            return None, url, {}, False
        return _streamed_findings(body, url, None, document_encoding, depth)
    base = base or url
    contexts = base_contexts(base)
    found: dict[str, str] = {}
    for value, kind, query_encoding in references + styled:
        _collect(found, resolve_reference(value, base, contexts, encoding=query_encoding), kind)
    _collect_srcdocs(found, iframes, base, depth)
    return head_title if head_title is not None else title, base, found, nofollow


def _html_findings(
    body: bytes, url: str, lxml_encoding: str | None, encoding: str, depth: int = 0
) -> Findings:
    """The findings of an HTML document read as _as_read() gives it: parsed as a stream past
    STREAMED_BYTES, else as a tree."""
    if len(body) > STREAMED_BYTES:
        return _streamed_findings(body, url, lxml_encoding, encoding, depth)
    return root_findings(parse_html(body, lxml_encoding), url, encoding, depth)


def _in_head(element: lxml.etree._Element) -> bool:
    """Whether ``element`` is a child of the <head> child of the root: page_title() looks there first."""
    head = element.getparent()
    return (
        head is not None
        and head.tag == "head"
        and (root := head.getparent()) is not None
        and root.getparent() is None
    )


def _svg_findings(body: bytes, url: str, content_type_header: str | None) -> Findings:
    """The links of an SVG document (svg.iter_svg_references()), its queries written in its
    encoding (encodings.xml_encoding()) but in its CSS."""
    body, _cut = bounded_document(body, SVG_TYPE)
    charset = charset_from_content_type(content_type_header)
    encoding = xml_encoding(body, charset)
    contexts = base_contexts(url)
    found: dict[str, str] = {}
    for value, requisite, in_css in iter_svg_references(body, charset if known_encoding(charset) else None):
        url_found = resolve_reference(value, url, contexts, encoding=None if in_css else encoding)
        _collect(found, url_found, REQUISITE if requisite else LINK)
    return None, url, found, False


def _css_findings(text: str, url: str) -> Findings:
    found: dict[str, str] = {}
    contexts = base_contexts(url)
    for _start, _end, value in iter_css_urls(text):
        _collect(found, resolve_reference(value, url, contexts), REQUISITE)
    return None, url, found, False


def extract_html(body: bytes, url: str, encoding: str | None = None) -> Page:
    """Links and title of an HTML document at ``url`` (``encoding``: its charset, if known)."""
    return _page(findings(body, url, "text/html", f"text/html; charset={encoding}" if encoding else None))


def extract_css(text: str, url: str) -> Page:
    """Links (all requisites) of a CSS stylesheet at ``url``."""
    return _page(_css_findings(text, url))


def decode_text(body: bytes, content_type: str | None) -> str:
    """Text of a stylesheet, in the encoding encodings.stylesheet_encoding() gives, never failing."""
    encoding = stylesheet_encoding(body, charset_from_content_type(content_type))
    return body.decode(encoding, errors="replace")


def parse_page(body: bytes, content_type_header: str | None = None) -> lxml.html.HtmlElement | None:
    """An HTML page parsed as the crawl reads it for links: up to MAX_MARKUP tags, in its charset."""
    return read_page(body, content_type_header)[0]


def read_page(
    body: bytes, content_type_header: str | None = None
) -> tuple[lxml.html.HtmlElement | None, str]:
    """parse_page(), and the encoding the page is read in (encodings.page_encoding()), which
    its links' queries are written in: what root_findings() takes."""
    body, lxml_encoding, encoding = _as_read(body, content_type_header)
    return parse_html(body, lxml_encoding), encoding


def _as_read(body: bytes, content_type_header: str | None) -> tuple[bytes, str | None, str]:
    """An HTML page's bytes up to MAX_MARKUP tags, the encoding to read it in named for lxml,
    and that encoding as encodings.page_encoding() says (the mirror's rewrite reads it so). A
    page that names its charset (header, byte-order mark, <meta>) is left to lxml, which reads
    those alike; one that names none would be read as Latin-1 even when it is UTF-8."""
    body, _cut = bounded_document(body, "text/html")
    charset = charset_from_content_type(content_type_header)
    bom, known, declared = sniff_bom(body), known_encoding(charset), declared_charset(body)
    if known is None and bom is None and declared is None:
        guessed = guessed_encoding(body)
        return body, guessed, guessed
    return body, charset, bom or known or declared or guessed_encoding(body)


def findings(body: bytes, url: str, mime_type: str, content_type_header: str | None = None) -> Findings:
    """extract(), as plain values."""
    if mime_type in HTML_TYPES:
        body, lxml_encoding, encoding = _as_read(body, content_type_header)
        return _html_findings(body, url, lxml_encoding, encoding)
    if mime_type == CSS_TYPE:
        body, _cut = bounded_document(body, mime_type)
        return _css_findings(decode_text(body, content_type_header), url)
    if mime_type == SVG_TYPE:
        return _svg_findings(body, url, content_type_header)
    return None, url, {}, False


def extract(body: bytes, url: str, mime_type: str, content_type_header: str | None = None) -> Page:
    """Dispatch on the MIME type: HTML, CSS and SVG are parsed, anything else has no links."""
    return _page(findings(body, url, mime_type, content_type_header))
