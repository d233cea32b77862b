"""What a fetched document holds for the crawl: its links (with their kinds), its title, the
base URL its links resolve against and whether it asks robots not to follow them, read by
its type (links' tables and rules for HTML, with its srcdoc documents; CSS; svg's for SVG).

The crawl follows what this finds, verify finds it again in the WARC records,
and the mirror's rewrite (mirror/rewrite.py) edits the same links.

>>> page = extract_html(b'<a href="/b">b</a><img srcset="x.png 1x, y.png 2x">', "http://h/a")
>>> [(link.url, link.kind) for link in page.links]
[('http://h/b', 'link'), ('http://h/x.png', 'requisite'), ('http://h/y.png', 'requisite')]
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.etree
import lxml.html

from archiver.content import CSS_TYPE, HTML_TYPES, SVG_TYPE, XHTML_TYPE, bounded_document
from archiver.encodings import (
    WEB_ERRORS,
    as_utf8,
    page_encoding,
    stylesheet_encoding,
    web_codec,
    xml_encoding,
)
from archiver.frame_documents import FrameDocument, srcdoc_body, srcdoc_documents
from archiver.html_stream import parse_html
from archiver.link_requests import (
    NO_HINT,
    NO_ORIGIN,
    READ_IN,
    SRCDOC,
    Hint,
    Request,
    cors_font,
    element_request,
    meta_referrer,
    tells_reading,
)
from archiver.link_values import css_destination, iter_css_urls, parse_meta_refresh
from archiver.links import (
    CSS_ATTRS,
    LINK,
    MAX_SRCDOC_DEPTH,
    REQUISITE,
    Link,
    base_contexts,
    base_href,
    before_base,
    charset_from_content_type,
    first_base,
    iter_html_references,
    page_title,
    resolve_reference,
)
from archiver.robots_directives import nofollow_metas
from archiver.streamed_links import read_streamed
from archiver.style_elements import style_text
from archiver.svg import iter_svg_references, prolog_stylesheets, stylesheet_href

STREAMED_BYTES = 256 * 1024
"""HTML larger than this is parsed for links as a stream (streamed_links.py)."""


@dataclass(frozen=True)
class Page:
    """What parsing a document found."""

    links: tuple[Link, ...] = ()
    title: str | None = None
    base_url: str | None = None
    """The URL links resolve against (the <base href>, or the page's own)."""
    nofollow: frozenset[str] = frozenset()
    """The names of its robots metas that ask not to follow its links (``robots`` for every robot,
    a robot's own name: robots_directives.meta_nofollow() reads them for one)."""


def _collect(
    found: dict[str, str],
    url: str | None,
    kind: str,
    hints: dict[str, Hint] | None = None,
    hint: Hint = NO_HINT,
) -> None:
    # A URL that is both a link and a requisite is needed by the page: requisite wins.
    if url is not None and found.get(url) != REQUISITE:
        found[url] = kind
    if url is not None and hints is not None and hint != NO_HINT:
        hints.setdefault(url, hint)  # the first element that asks for it makes the request


Findings = tuple[str | None, str, dict[str, str], frozenset[str], dict[str, Hint]]
"""(title, base URL, {normalised URL: kind}, nofollow, {normalised URL: hint}) of a document: a
Page as plain values, which cross a process boundary several times cheaper. The hints say how a
browser requests a link (Hint), for the links that have one: the others are requested under
the document's Referrer-Policy header (or the default policy), as documents."""


def _page(findings: Findings) -> Page:
    title, base_url, found, nofollow, _hints = findings
    return Page(
        links=tuple(map(Link._make, found.items())), title=title, base_url=base_url, nofollow=nofollow
    )


def root_findings(
    root: lxml.etree._Element | None, url: str, encoding: str | None = None, depth: int = 0, xml: bool = False
) -> Findings:
    """Title, base URL, {url: kind} links and robots nofollow of an HTML page parsed by parse_html(),
    read in ``encoding`` (see read_page()); its iframes' srcdoc documents' links with its own.
    ``depth``: how deep in srcdoc documents the page is (0 for a page fetched). ``xml``: the
    page is XHTML, whose <style>s are markup (style_elements.py)."""
    if root is None:
        return None, url, {}, frozenset(), {}
    first = first_base(root)
    base = base_href(root, url, encoding, first)
    contexts = base_contexts(base)
    early = before_base(root, first) if base != url else set()
    page_contexts = base_contexts(url) if early else contexts
    found: dict[str, str] = {}
    hints: dict[str, Hint] = {}
    page_policy = meta_referrer(root.iter("meta"))
    known: dict[tuple[str | None, ...], Request] = {}
    # The <style> whose URLs are being read, and its text: lxml makes a new copy of an element's
    # text at each call, and a <style> of megabytes holds thousands of URLs.
    style: tuple[lxml.etree._Element | None, str] = (None, "")
    for element, attribute, start, _end, value, kind in iter_html_references(root, xml):
        # A requisite before the <base> was fetched against the page's URL (links.before_base()).
        at, at_contexts = (url, page_contexts) if kind == REQUISITE and element in early else (base, contexts)
        if attribute is None or attribute in CSS_ATTRS:  # CSS: a <style>'s text, a style attribute
            if attribute is None and style[0] is not element:
                style = (element, style_text(element, xml))
            destination = "image" if attribute else css_destination(style[1], start)
            hint = (page_policy, destination, cors_font(destination), "")
            resolved = resolve_reference(value, at, at_contexts)
        else:
            resolved = resolve_reference(value, at, at_contexts, encoding=encoding)
            if resolved is None:  # a fragment of the page (half a documentation page's links)
                continue
            policy, destination, cors, words = element_request(element, attribute, known)
            hint = (policy or page_policy, destination, cors, words)
        _collect(found, resolved, kind, hints, hint)
    _collect_srcdocs(found, hints, srcdoc_documents(root.iter("iframe")), base, depth)
    # lxml finds the <meta> elements in C: about 1.5 us for a 15 KB page (a case-blind
    # regex scan of the bytes for "robots", to skip it, cost 170 us).
    return page_title(root), base, found, nofollow_metas(root.iter("meta")), hints


def _collect_srcdocs(
    found: dict[str, str], hints: dict[str, Hint], documents: list[FrameDocument], base: str, depth: int
) -> None:
    """Add to ``found`` the links of the srcdoc ``documents`` (frame_documents.srcdoc_documents()) of a
    document whose base URL is ``base``, at ``depth``, and to ``hints`` how they are requested: a
    srcdoc document's links resolve against its page's base URL (as if it were at that URL: a
    <base> of its own is resolved against it), its queries in UTF-8; one of a blob: URL a
    rendered DOM keeps, against that URL (none relative resolves), its queries in its charset.
    It is of its page's origin unless sandboxed (NO_ORIGIN, as are the srcdoc documents it
    holds). Each is said to be read in its encoding (SRCDOC: UTF-8; else READ_IN), as its
    stylesheets are, but what a document inside it loads, read in that one's."""
    if depth >= MAX_SRCDOC_DEPTH:
        return
    for document in documents:
        _title, _base, links, _nofollow, asked = _html_findings(
            srcdoc_body(document.text), document.own_url or base, "utf-8", document.charset, depth + 1
        )
        reading = SRCDOC if document.charset == "utf-8" else READ_IN + document.charset
        for url, kind in links.items():
            policy, destination, cors, words = asked.get(url, NO_HINT)
            said = set(words.split())
            if not any(map(tells_reading, said)):
                said.add(reading)
            if document.sandboxed:
                said.add(NO_ORIGIN)
            _collect(found, url, kind, hints, (policy, destination, cors, " ".join(sorted(said))))


def _streamed_findings(
    body: bytes, url: str, encoding: str | None, document_encoding: str, depth: int = 0, xml: bool = False
) -> Findings:
    """root_findings(parse_html(body, encoding), url, document_encoding, depth, xml), the page parsed
    as a stream (streamed_links.read_streamed())."""
    read = read_streamed(body, url, encoding, document_encoding, xml)
    if read is None:
        return None, url, {}, frozenset(), {}
    base = read.base or url
    contexts = base_contexts(base)
    found: dict[str, str] = {}
    hints: dict[str, Hint] = {}
    for value, kind, query_encoding, policy, destination, cors, words in read.references:
        resolved = resolve_reference(value, base, contexts, encoding=query_encoding)
        _collect(found, resolved, kind, hints, (policy or read.page_policy, destination, cors, words))
    _collect_srcdocs(found, hints, list(read.iframes), base, depth)
    return read.title, base, found, read.nofollow, hints


def _html_findings(
    body: bytes, url: str, lxml_encoding: str | None, encoding: str, depth: int = 0, xml: bool = False
) -> Findings:
    """The findings of an HTML document (``xml``: XHTML) read as _as_read() gives it: parsed as a
    stream past STREAMED_BYTES, else as a tree."""
    if len(body) > STREAMED_BYTES:
        return _streamed_findings(body, url, lxml_encoding, encoding, depth, xml)
    return root_findings(parse_html(body, lxml_encoding), url, encoding, depth, xml)


def _svg_findings(body: bytes, url: str, encoding: str) -> Findings:
    """The links of an SVG document (svg.iter_svg_references()) read in ``encoding``
    (encodings.xml_encoding()), its queries written in it but in its CSS."""
    contexts = base_contexts(url)
    found: dict[str, str] = {}
    for value, requisite, in_css in iter_svg_references(as_utf8(body, encoding), "utf-8"):
        url_found = resolve_reference(value, url, contexts, encoding=None if in_css else encoding)
        _collect(found, url_found, REQUISITE if requisite else LINK)
    return None, url, found, frozenset(), {}


def with_prolog_stylesheets(found: Findings, body: bytes, encoding: str) -> Findings:
    """The findings of an XHTML page (``body``, read in ``encoding``) with the stylesheets of its
    <?xml-stylesheet?> instructions first, as an SVG image's: an XML document is styled by
    them too. They resolve against its base URL, their queries in its encoding, as its links do."""
    title, base, links, nofollow, hints = found
    text = body.decode(encoding, WEB_ERRORS)
    hrefs = [stylesheet_href(text[start:end]) for start, end in prolog_stylesheets(text)]
    if not hrefs:
        return found
    contexts = base_contexts(base)
    styled: dict[str, str] = {}
    for href in hrefs:
        _collect(styled, resolve_reference(href, base, contexts, encoding=encoding), REQUISITE)
    for link_url, kind in links.items():
        _collect(styled, link_url, kind)
    return title, base, styled, nofollow, hints


def _css_findings(text: str, url: str) -> Findings:
    found: dict[str, str] = {}
    hints: dict[str, Hint] = {}
    contexts = base_contexts(url)
    for start, _end, value in iter_css_urls(text):
        destination = css_destination(text, start)
        hint = ("", destination, cors_font(destination), "")
        _collect(found, resolve_reference(value, url, contexts), REQUISITE, hints, hint)
    return None, url, found, frozenset(), hints


def extract_html(body: bytes, url: str, encoding: str | None = None) -> Page:
    """Links and title of an HTML document at ``url`` (``encoding``: its charset, if known)."""
    return _page(findings(body, url, "text/html", f"text/html; charset={encoding}" if encoding else None))


def extract_css(text: str, url: str) -> Page:
    """Links (all requisites) of a CSS stylesheet at ``url``."""
    return _page(_css_findings(text, url))


def document_encoding(
    body: bytes, mime_type: str, content_type_header: str | None = None, referrer_encoding: str | None = None
) -> str | None:
    """The encoding findings() reads an HTML page, a stylesheet or an SVG image in (a Python
    codec); None for other documents. What a stylesheet it refers to is read in, when that
    names no encoding.

    >>> document_encoding(b"<p>caf\\xe9</p>", "text/html")
    'cp1252'
    >>> document_encoding(b"a{}", "text/css", None, "cp932")
    'cp932'
    """
    if mime_type in HTML_TYPES:
        return _as_read(body, content_type_header, mime_type)[2]
    if mime_type == CSS_TYPE:
        body, _cut = bounded_document(body, mime_type)
        return stylesheet_encoding(body, charset_from_content_type(content_type_header), referrer_encoding)
    if mime_type == SVG_TYPE:
        body, _cut = bounded_document(body, mime_type)
        return xml_encoding(body, charset_from_content_type(content_type_header))
    return None


def parse_page(body: bytes, content_type_header: str | None = None) -> lxml.etree._Element | None:
    """An HTML page parsed as the crawl reads it for links: up to MAX_MARKUP tags, in its charset."""
    return read_page(body, content_type_header)[0]


def read_page(
    body: bytes, content_type_header: str | None = None, mime_type: str = "text/html"
) -> tuple[lxml.etree._Element | None, str]:
    """parse_page(), and the encoding the page is read in (encodings.page_encoding()), which
    its links' queries are written in: what root_findings() takes."""
    body, lxml_encoding, encoding = _as_read(body, content_type_header, mime_type)
    return parse_html(body, lxml_encoding), encoding


def _as_read(
    body: bytes, content_type_header: str | None, mime_type: str = "text/html"
) -> tuple[bytes, str | None, str]:
    """An HTML page's bytes up to MAX_MARKUP tags as lxml is to read them, the encoding to read
    them in named for lxml, and the page's encoding as encodings.page_encoding() says (the
    mirror's rewrite reads it so). lxml is given the page as UTF-8: left to itself, it reads a
    charset's label its own way (ISO-8859-1 as Latin-1, where browsers read windows-1252), and
    a page that names none as Latin-1 even when it is UTF-8. An XHTML page (``mime_type``) is
    XML to a browser, read in the encoding XML's rules give (encodings.xml_encoding()): its XML
    declaration counts, a <meta> does not, and without either it is UTF-8."""
    body, _cut = bounded_document(body, "text/html")
    read_in = xml_encoding if mime_type == XHTML_TYPE else page_encoding
    encoding = read_in(body, charset_from_content_type(content_type_header))
    return as_utf8(body, encoding), "utf-8", encoding


def findings(
    body: bytes,
    url: str,
    mime_type: str,
    content_type_header: str | None = None,
    page_charset: str | None = None,
    referrer_encoding: str | None = None,
    refresh: str | None = None,
) -> Findings:
    """extract(), as plain values. ``page_charset``: of an HTML page kept in another encoding
    than its own (a rendered DOM, kept as UTF-8), the label of its own, which its links' queries
    are written in (warc.dom's WARC-Page-Charset). ``referrer_encoding``: of a stylesheet, the
    encoding of the document that refers to it (document_encoding()), which it is read in if
    it names none (encodings.stylesheet_encoding()). ``refresh``: the value of the answer's
    Refresh header, if any (with_refresh())."""
    found, _encoding = read_document(
        body, url, mime_type, content_type_header, page_charset, referrer_encoding, refresh
    )
    return found


def read_document(
    body: bytes,
    url: str,
    mime_type: str,
    content_type_header: str | None = None,
    page_charset: str | None = None,
    referrer_encoding: str | None = None,
    refresh: str | None = None,
) -> tuple[Findings, str | None]:
    """findings(), and the encoding the document is read in (document_encoding())."""
    if mime_type in HTML_TYPES:
        as_read, lxml_encoding, encoding = _as_read(body, content_type_header, mime_type)
        xml = mime_type == XHTML_TYPE
        found = _html_findings(as_read, url, lxml_encoding, web_codec(page_charset) or encoding, xml=xml)
        if xml:
            found = with_prolog_stylesheets(found, body, encoding)
        return with_refresh(found, refresh, encoding), encoding
    if mime_type == CSS_TYPE:
        body, _cut = bounded_document(body, mime_type)
        encoding = stylesheet_encoding(
            body, charset_from_content_type(content_type_header), referrer_encoding
        )
        return _css_findings(body.decode(encoding, WEB_ERRORS), url), encoding
    if mime_type == SVG_TYPE:
        body, _cut = bounded_document(body, SVG_TYPE)
        encoding = xml_encoding(body, charset_from_content_type(content_type_header))
        return _svg_findings(body, url, encoding), encoding
    return (None, url, {}, frozenset(), {}), None


def extract(
    body: bytes,
    url: str,
    mime_type: str,
    content_type_header: str | None = None,
    page_charset: str | None = None,
    referrer_encoding: str | None = None,
    refresh: str | None = None,
) -> Page:
    """Dispatch on the MIME type: HTML, CSS and SVG are parsed, anything else has no links.
    ``page_charset``, ``referrer_encoding``, ``refresh``: see findings()."""
    return _page(
        findings(body, url, mime_type, content_type_header, page_charset, referrer_encoding, refresh)
    )


def with_refresh(found: Findings, refresh: str | None, encoding: str | None = None) -> Findings:
    """The findings of an HTML page whose answer had a Refresh header of the value ``refresh``
    (None: none), the URL it names first among its links: Chromium follows the header as it
    follows a <meta http-equiv=refresh> (resolved against the page's base URL), and reads it
    before any such element. ``encoding``: the page's, its query's (resolve_reference()).

    >>> with_refresh((None, "http://h/a/", {"http://h/a/b": REQUISITE}, frozenset(), {}), "0; url=next")[2]
    {'http://h/a/next': 'link', 'http://h/a/b': 'requisite'}
    >>> with_refresh((None, "http://h/", {}, frozenset(), {}), "5")[2]   # no URL: the page itself again
    {}
    """
    span = parse_meta_refresh(refresh) if refresh else None
    if span is None:
        return found
    title, base, links, nofollow, hints = found
    target = resolve_reference(span[2], base, encoding=encoding)
    if target is None or target in links:
        return found
    return title, base, {target: LINK, **links}, nofollow, hints
