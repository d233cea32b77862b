"""Link rewriting for the offline mirror: pure functions over HTML and SVG documents (their
CSS, and stylesheets, by stylesheets.py).

Every link a page holds (the attributes of links.HTML_LINK_ATTRS, srcset,
inline ``style`` and ``<style>`` ``url()``, meta refresh, the document of an
iframe's srcdoc; in SVG, the hrefs of svg.SVG_LINK_ATTRS) is resolved against
the page's base URL and handed to ``resolve(url)``, which answers with the
path (relative to mirror/) of the archived file, or None. Archived targets
become relative paths from the page's own file; the rest become absolute URLs,
so nothing points into the void. Fragments are kept.

Edits are spans replaced in the original text: everything else, malformed
markup included, stays byte for byte. Pages in an ASCII-compatible encoding
(UTF-8, Latin-1, Shift_JIS, GBK...) are edited as bytes, so their encoding is
kept exactly.

>>> resolve = {"http://h/b": "h/b.html"}.get
>>> rewrite_html(b'<a href="/b#x">b</a><img src=c.png>', "http://h/a/", None, resolve,
...              page_path="h/a/index.html")
b'<a href="../b.html#x">b</a><img src="http://h/a/c.png">'
"""

from __future__ import annotations

import html
import re

from archiver.content import SVG_TYPE
from archiver.encodings import (
    REPLACEMENT,
    declared_charset,
    guessed_encoding,
    sniff_bom,
    utf16_bom,
    web_codec,
    xml_encoding,
)
from archiver.link_values import (
    may_hold_css_urls,
    parse_meta_refresh,
    parse_srcset,
)
from archiver.links import (
    CSS_ATTRS,
    HTML_LINK_ATTRS,
    MAX_SRCDOC_DEPTH,
    SRCSET_ATTRS,
    SVG_LINK_ATTRS,
    document_base,
    is_fetchable_reference,
    link_kind,
    srcdoc_body,
)
from archiver.mirror.charsets import View
from archiver.mirror.linker import Edits, Linker, Memo, Resolver
from archiver.mirror.markup import attributes, iter_tags, unescape_attribute
from archiver.mirror.stylesheets import css_edits, own_path, replace_spans, rewrite_css_text
from archiver.mirror.xml_edits import stylesheet_pi_edits, xhtml_tags, xml_declaration_edits, xml_style_edits
from archiver.svg import local_name

# Attributes that hold a URL but are not links the crawler follows: still made
# local or absolute, so no relative URL points into the void.
EXTRA_LINK_ATTRS = frozenset(
    {
        ("form", "action"),
        ("button", "formaction"),
        ("blockquote", "cite"),
        ("q", "cite"),
        ("del", "cite"),
        ("ins", "cite"),
    }
)
# Kept under another name: a rewritten file fails its integrity hash, and a
# crossorigin request from a file:// page fails (its origin is null), whatever
# the element (img, video, audio, link, script) and wherever its URL points.
NEUTRALISED_ATTRS = frozenset({"integrity", "crossorigin"})
NEUTRALISED_PREFIX = "data-archived-"
_URL_ATTRS: dict[str, frozenset[str]] = {}
for _tag, _attribute in (*HTML_LINK_ATTRS, *EXTRA_LINK_ATTRS):
    _URL_ATTRS[_tag] = _URL_ATTRS.get(_tag, frozenset()) | {_attribute}

_EDITED_TAGS = frozenset({*_URL_ATTRS, "meta", "base"})
_ALWAYS_READ = frozenset({"href", "content", "srcdoc", *CSS_ATTRS})
"""Attributes read on any tag (the rest of _URL_ATTRS's by tag): <base href>, <meta content> (a
refresh), <iframe srcdoc>, and CSS."""
_READ_ATTRS = {tag: names | _ALWAYS_READ for tag, names in _URL_ATTRS.items()}
_SVG_EDITED_TAGS = frozenset(SVG_LINK_ATTRS)
_STYLE_ATTRIBUTE = re.compile("|".join(CSS_ATTRS), re.IGNORECASE)
"""A tag that may hold an attribute whose CSS holds a URL (a first look: attributes() tells)."""
# What may come before a doctype without making a browser read the page in quirks mode:
# white space, comments, an XML declaration. One character or one whole piece a step, so
# a page of "<!--" never closed costs one scan.
_DOCTYPE = re.compile(r"(?:\s|<!--.*?-->|<\?[^>]*>)*<!doctype[^>]*>", re.IGNORECASE | re.DOTALL)
_BASE = frozenset({"base"})
_BASE_TAG = re.compile("<base", re.IGNORECASE)
"""Where a <base> tag may start (a comment or a script may hold the text: iter_tags() tells)."""


class _Element:
    """The tag name and attributes links.link_kind() needs: each value decoded when first asked
    for (most attributes of a tag, its class or title, are never read)."""

    def __init__(self, tag: str, raw: str, found: list[tuple[str, int, int, int, int]], view: View) -> None:
        self.tag = tag
        self._raw = raw
        self._view = view
        self._spans: dict[str, tuple[int, int]] = {}
        for name, _ns, _ne, value_start, value_end in found:
            self._spans.setdefault(name, (value_start, value_end))  # the first wins, as in browsers
        self._texts: dict[str, str] = {}

    def get(self, name: str, default: str | None = None) -> str | None:
        text = self._texts.get(name)
        if text is None:
            span = self._spans.get(name)
            if span is None:
                return default
            text = self._texts[name] = _attribute_text(self._raw[span[0] : span[1]], self._view)
        return text


def _attribute_text(raw_value: str, view: View) -> str:
    """The text of an attribute value as written in the view: unquoted, decoded, then unescaped
    (in that order: a character reference may name a character the view cannot hold)."""
    if raw_value[:1] in ("'", '"') and raw_value[-1:] == raw_value[:1] and len(raw_value) >= 2:
        raw_value = raw_value[1:-1]
    return unescape_attribute(view.to_text(raw_value))


def rewrite_html(
    body: bytes,
    page_url: str,
    encoding: str | None,
    resolve: Resolver,
    page_path: str | None = None,
    memo: Memo | None = None,
    xml: bool = False,
    page_charset: str | None = None,
) -> bytes:
    """A page's bytes with every link made local (if archived) or absolute.

    ``encoding`` is the charset of the HTTP Content-Type, if any; when the page
    does not declare that same charset itself, a <meta charset> is added (after
    its doctype) so a browser reading the file from disk decodes it as the
    site's visitors did; in an XML document (``xml``: XHTML), its XML
    declaration says it instead.
    ``page_path`` is the page's own file (relative to mirror/); by default
    ``resolve(page_url)``. A <base href> is resolved, then renamed so it no
    longer applies to the local links. ``memo``: shared by every document
    rewritten with this ``resolve`` (a mirror build), so what its pages repeat
    is worked out once. ``page_charset``: the label of the page's own encoding,
    which its queries are written in, when its bytes are in another (a rendered
    DOM, kept as UTF-8: findings.findings() reads it alike).
    """
    header_encoding = web_codec(encoding)
    bom = sniff_bom(body)
    declared = None if xml else declared_charset(body)
    # encodings.page_encoding() (xml_encoding() for XHTML), from the parts already in hand.
    read_in = (
        bom or header_encoding or declared or (xml_encoding(body, None) if xml else guessed_encoding(body))
    )
    if read_in == REPLACEMENT:
        return _kept_replaced(body, encoding if header_encoding == REPLACEMENT else None, declared, xml)
    view = View(body, read_in, web_codec(page_charset))
    here = page_path or own_path(page_url, "text/html", resolve)
    link = Linker(here, resolve, memo, page_url)
    base = _document_base(page_url, view)
    spans = _document_edits(view, base, link, 0)
    if xml:  # the stylesheets of its <?xml-stylesheet?> instructions, as an SVG image's
        spans.extend(stylesheet_pi_edits(view, base, link))
    if header_encoding and not bom and (mark := utf16_bom(header_encoding)) is not None:
        return mark + view.encode(replace_spans(view.text, spans))  # no <meta> can say UTF-16
    if header_encoding and not bom:
        if xml:
            spans.extend(xml_declaration_edits(view.text, header_encoding, encoding or header_encoding))
        elif declared != header_encoding:
            doctype = _DOCTYPE.match(view.text)
            at = doctype.end() if doctype else 0
            spans.append((at, at, f'<meta charset="{html.escape(encoding or "")}">'))
    if not spans:
        return body
    return view.encode(replace_spans(view.text, spans))


def rewrite_svg(
    body: bytes,
    url: str,
    encoding: str | None,
    resolve: Resolver,
    path: str | None = None,
    memo: Memo | None = None,
) -> bytes:
    """An SVG document's bytes with every link made local (if archived) or absolute, still XML:
    each value written back escaped, a URL in CSS escaped as CSS reads it. ``encoding``: the
    charset of its HTTP Content-Type, said in its XML declaration (without it, XML reads its
    own declaration, or UTF-8). ``path``, ``memo``: as rewrite_html()'s.

    >>> resolve = {"http://h/i/a.png": "h/a.png"}.get
    >>> rewrite_svg(b'<svg><image href="a.png"/><a href="b.svg"/></svg>', "http://h/i/x.svg", None,
    ...             resolve, "h/i/x.svg")
    b'<svg><image href="../a.png"/><a href="http://h/i/b.svg"/></svg>'
    """
    header_encoding = web_codec(encoding)
    bom = sniff_bom(body)
    read_in = xml_encoding(body, encoding)
    if read_in == REPLACEMENT:
        return _kept_replaced(body, encoding if header_encoding == REPLACEMENT else None, None, True)
    view = View(body, read_in)
    link = Linker(path or own_path(url, SVG_TYPE, resolve), resolve, memo, url)
    spans = _document_edits(view, url, link, 0, svg=True)
    if header_encoding and not bom and (mark := utf16_bom(header_encoding)) is not None:
        return mark + view.encode(replace_spans(view.text, spans))  # XML reads UTF-16 after a mark
    if header_encoding and not bom:
        spans.extend(xml_declaration_edits(view.text, header_encoding, encoding or header_encoding))
    return view.encode(replace_spans(view.text, spans)) if spans else body


def _kept_replaced(body: bytes, label: str | None, declared: str | None, xml: bool) -> bytes:
    """A document a browser reads in the "replacement" encoding (encodings.REPLACEMENT), which it
    shows as one U+FFFD: kept as received, links and all, for it holds none a browser sees. When
    its HTTP header named that encoding (``label``, the header's label), the file says it
    itself (a <meta> at its very start, or its XML declaration), so that a browser opening it
    from disk shows the same U+FFFD and never the markup its bytes may hide."""
    if label is None or declared == REPLACEMENT:
        return body
    text = body.decode("latin-1")
    if xml:
        return replace_spans(text, xml_declaration_edits(text, REPLACEMENT, label)).encode("latin-1")
    return f'<meta charset="{html.escape(label)}">'.encode("ascii", "xmlcharrefreplace") + body


def _document_edits(
    view: View, base: str, link: Linker, depth: int, svg: bool = False
) -> list[tuple[int, int, str]]:
    """The (start, end, new) spans to replace in an HTML document whose base URL is ``base``, at
    ``depth`` in srcdoc documents (0: a page); with ``svg``, in an SVG document."""
    spans: list[tuple[int, int, str]] = []
    styles: list[tuple[int, int]] = []
    edited = _SVG_EDITED_TAGS if svg else _EDITED_TAGS
    # In SVG every tag is looked at: a prefixed name (svg:image) is no name the scanner skips by.
    tags = iter_tags(view.text, styles, None if svg else _EDITED_TAGS, xml=svg)
    if svg:
        tags_read = list(tags)
        xhtml = xhtml_tags(view, len(tags_read))
        tags = iter(tags_read)
        spans.extend(stylesheet_pi_edits(view, base, link))
    for index, (offset, tag, raw) in enumerate(tags):
        html_rules = not svg or index in xhtml
        if tag not in (_EDITED_TAGS if html_rules else edited) and not _STYLE_ATTRIBUTE.search(raw):
            continue  # a raw-text element's tag with nothing to edit
        if svg:
            edits: Edits = tuple(_tag_edits(tag, raw, base, link, view, depth, not html_rules))
        else:
            edits = _remembered_tag_edits(tag, raw, base, link, view, depth)
        spans.extend((offset + start, offset + end, new) for start, end, new in edits)
    for start, end in styles:
        css = view.text[start:end]
        if may_hold_css_urls(css):
            edits = tuple(xml_style_edits(css, base, link, view) if svg else css_edits(css, base, link, view))
            spans.extend((start + s, start + e, new) for s, e, new in edits)
    return spans


def _rewritten_srcdoc(text: str, base: str, link: Linker, depth: int) -> str | None:
    """The document an iframe holds in its srcdoc (``text``, unescaped), in a document at
    ``depth`` whose base URL is ``base``, with its links rewritten; None if none changed.

    It is read as the crawl read it (links.srcdoc_body(): UTF-8, cut past MAX_MARKUP tags, the
    rest kept as it is, and no deeper than MAX_SRCDOC_DEPTH). Its links resolve against its
    page's base URL, and from its page's file: it has no file of its own.
    """
    if depth >= MAX_SRCDOC_DEPTH:
        return None
    body = srcdoc_body(text)
    view = View(body, "utf-8")
    spans = _document_edits(view, _document_base(base, view), link, depth + 1)
    if not spans:
        return None
    rest = text[len(body.decode("utf-8", "surrogatepass")) :]
    return view.to_text(replace_spans(view.text, spans)) + rest


def _document_base(page_url: str, view: View) -> str:
    """The URL links resolve against: the first <base href>, or the page's URL."""
    if not _BASE_TAG.search(view.text):  # most pages: no need to read the tags twice
        return page_url
    for _offset, tag, raw in iter_tags(view.text, [], _BASE):
        if tag != "base":
            continue
        for name, _ns, _ne, value_start, value_end in attributes(raw):
            href = _attribute_text(raw[value_start:value_end], view)
            if name == "href" and is_fetchable_reference(href):
                return document_base(href, page_url, view.query_encoding)
    return page_url


def _quoted(text: str, view: View) -> str:
    return '"' + view.from_text(html.escape(text, quote=True)) + '"'


def _remembered_tag_edits(tag: str, raw: str, base: str, link: Linker, view: View, depth: int) -> Edits:
    """_tag_edits(), from the memo when this tag was met in this folder context before (an
    <iframe> is never remembered: a srcdoc can hold a page of its own)."""
    if link.memo is None or tag in ("base", "iframe"):
        return tuple(_tag_edits(tag, raw, base, link, view, depth))
    key = (raw, link.base_folder(base), link.here_folder, view.encoding, view.query_encoding)
    found = link.memo.tags.find(key)
    if found is None:
        guessed = link.memo.guessed_tags.find(key)
        if guessed is not None:
            link.replay(guessed[1])
            return guessed[0]
        whole_base_uses, mark = link.whole_base_uses, len(link.guessed)
        found = tuple(_tag_edits(tag, raw, base, link, view, depth))
        if link.whole_base_uses == whole_base_uses:
            if len(link.guessed) == mark:
                link.memo.tags.keep(key, found)
            else:
                link.memo.guessed_tags.keep(key, (found, tuple(link.guessed[mark:])))
    return found


def _tag_edits(
    tag: str, raw: str, base: str, link: Linker, view: View, depth: int, svg: bool = False
) -> list[tuple[int, int, str]]:
    """The (start, end, new) spans to replace inside one raw start tag (one of _EDITED_TAGS, or
    of _SVG_EDITED_TAGS in ``svg``, or with a style attribute: _document_edits checks)."""
    found = attributes(raw)
    element = _Element(tag, raw, found, view)
    read = _READ_ATTRS.get(tag, _ALWAYS_READ)
    edits = []
    local_before = link.made_local
    for name, name_start, name_end, value_start, value_end in found:
        if value_start == value_end:
            continue
        if not svg and name not in read:
            continue  # holds no link: left undecoded
        # A repeated attribute is rewritten too (the first is the one that applies).
        value = _attribute_text(raw[value_start:value_end], view)
        if svg:
            new_value = _svg_attribute_edit(tag, name, value, base, link, view.query_encoding)
            if new_value is not None:
                edits.append((value_start, value_end, _quoted(new_value, view)))
            continue
        if tag == "base" and name == "href":
            new_name = NEUTRALISED_PREFIX + "href"
            edits.append((name_start, name_end, new_name))
            if is_fetchable_reference(value):
                edits.append((value_start, value_end, _quoted(base, view)))
            continue
        if tag == "iframe" and name == "srcdoc":
            new_value = _rewritten_srcdoc(value, base, link, depth)
        else:
            new_value = _attribute_edit(element, tag, name, value, base, link, view.query_encoding)
        if new_value is not None:
            edits.append((value_start, value_end, _quoted(new_value, view)))
    integrity = link.made_local > local_before and tag in ("link", "script")
    for name, name_start, name_end, _vs, _ve in found:
        if name == "crossorigin" or (name == "integrity" and integrity):
            edits.append((name_start, name_end, NEUTRALISED_PREFIX + name))
    return edits


def _svg_attribute_edit(
    tag: str, name: str, value: str, base: str, link: Linker, encoding: str
) -> str | None:
    """The new value of one attribute of an SVG document read in ``encoding``, or None to leave it."""
    if name in CSS_ATTRS:
        css = rewrite_css_text(value, base, link)
        return css if css != value else None
    if tag in SVG_LINK_ATTRS and local_name(name) == "href":
        return link(value, base, encoding)
    return None


def _attribute_edit(
    element: _Element, tag: str, name: str, value: str, base: str, link: Linker, encoding: str
) -> str | None:
    """The new value of one attribute of a document read in ``encoding``, or None to leave it."""
    if name in CSS_ATTRS:
        css = rewrite_css_text(value, base, link)
        return css if css != value else None
    if tag == "meta" and name == "content":
        if (element.get("http-equiv") or "").lower() != "refresh":
            return None
        span = parse_meta_refresh(value)
        if not span or (new := link(span[2], base, encoding)) is None:
            return None
        return value[: span[0]] + new + value[span[1] :]
    if name not in _URL_ATTRS.get(tag, ()):
        return None
    if (tag, name) in HTML_LINK_ATTRS and link_kind(element, name) is None:
        return None
    if name in SRCSET_ATTRS:
        spans = []
        for start, end, url in parse_srcset(value):
            replacement = link(url, base, encoding)
            if replacement is not None:
                # A srcset URL ends at a space, or at a comma that ends it.
                replacement = replacement.replace(" ", "%20")
                if replacement.endswith(","):
                    replacement = replacement[:-1] + "%2C"
                spans.append((start, end, replacement))
        return replace_spans(value, spans) if spans else None
    return link(value, base, encoding)
