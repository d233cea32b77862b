"""The edits of the mirror's link rewriting (mirror/rewrite.py): the (start, end, new) spans to
replace in an HTML or SVG document, tag by tag, each start tag's link attributes resolved and
handed to the Linker, an iframe's srcdoc rewritten as a document of its own, and the CSS of its
<style> elements and style attributes.
"""

from __future__ import annotations

import html
import re

from archiver.encodings import WEB_ERRORS
from archiver.frame_documents import OWN_URL_SCHEMES, blob_document_url, resolves_to_nothing, srcdoc_body
from archiver.link_values import (
    may_hold_css_urls,
    parse_meta_refresh,
    parse_srcset,
)
from archiver.links import (
    CSS_ATTRS,
    HTML_LINK_ATTRS,
    MAX_SRCDOC_DEPTH,
    REQUISITE,
    SRCSET_ATTRS,
    SVG_LINK_ATTRS,
    document_base,
    is_fetchable_reference,
    link_kind,
)
from archiver.markup import attributes, iter_tags, one_read_attribute, unescape_attribute, unread_tags
from archiver.mirror.charsets import View
from archiver.mirror.linker import Edits, Linker
from archiver.mirror.scripts import INERT_TYPE
from archiver.mirror.stylesheets import REFUSED_URL, css_edits, replace_spans, rewrite_css_text
from archiver.mirror.xml_edits import foreign_styles, stylesheet_pi_edits, xhtml_tags, xml_style_edits
from archiver.store.referrers import data_document
from archiver.svg import local_name
from archiver.urls import ASCII_WHITESPACE

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
_NEUTRALISED = frozenset({"crossorigin", "integrity"})
"""Attributes the mirror renames: crossorigin always, integrity once its file is made local."""
_HINT_RELS = frozenset({"prefetch", "prerender", "preconnect", "dns-prefetch"})
"""<link rel=...> values that only have a browser fetch, or connect to, what the page may need
next: of a page that has no other rel, the href is renamed, for from the mirror the browser
would fetch the live URL it names (a local file gains nothing from it)."""
_POLICY = "content-security-policy"
"""The http-equiv of a <meta> whose Content-Security-Policy a browser enforces. Its sources name
the live site (``img-src https://cdn.example``, a hash of a <style> the mirror rewrote), never
the files of the mirror, which it would refuse from file://: it is kept under a name no browser
acts on, as the policy a header sent is not carried into the mirror either."""
_ON_THEIR_OWN = {"a": "ping", "area": "ping"}
"""Attributes renamed on these tags wherever they point: a click on a link of the mirror would
post its ping to the live site (a ping is no link, and no file is kept for it)."""
SPECULATION_RULES = "speculationrules"
"""The type of a <script> whose rules have a browser prefetch and prerender the URLs they name
(live ones, in a page from the mirror): it is given an inert type (mirror/scripts.py's)."""
_OWN_FRAGMENT_LINKS = unread_tags("a", _READ_ATTRS["a"] | _NEUTRALISED | {_ON_THEIR_OWN["a"]}, ("href", "#"))
"""An <a> whose only link is to a fragment of its own page, which the Linker keeps as it is: most
links of a documentation page (a heading's, a definition's), skipped by the tokenizer in a page
with no <base> of another URL rather than handed one by one to _tag_edits() for no edit."""
_ONE_LINK = one_read_attribute("a", _READ_ATTRS["a"] | _NEUTRALISED | {_ON_THEIR_OWN["a"]}, "href")
"""An <a> whose only attribute the mirror reads is one href: most links of a page, to another
page's fragment as often as not (a tag met once, which the memo of whole tags cannot help with).
Its one edit is its href's, asked of the Linker (whose memo knows the page without the
fragment), with none of _tag_edits()'s reading of each attribute."""
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
        self._found = found
        self._spans: dict[str, tuple[int, int]] | None = None
        """Each attribute's value span, made at the first get(): an <a> is never asked."""
        self._texts: dict[str, str] = {}

    def get(self, name: str, default: str | None = None) -> str | None:
        text = self._texts.get(name)
        if text is None:
            if self._spans is None:
                self._spans = {}
                for found_name, _ns, _ne, value_start, value_end in self._found:
                    # The first of a name wins, as in browsers.
                    self._spans.setdefault(found_name, (value_start, value_end))
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


def document_edits(
    view: View, base: str, link: Linker, depth: int, svg: bool = False, base_at: int = 0, xml: bool = False
) -> list[tuple[int, int, str]]:
    """The (start, end, new) spans to replace in an HTML document whose base URL is ``base``, at
    ``depth`` in srcdoc documents (0: a page); with ``svg``, in an SVG document; with ``xml``, in
    an XHTML page. ``base_at``: where the page's <base> tag begins (document_base_at()): the
    requisites of the tags and <style>s before it resolve against the page's URL.

    The text of a <style> that is markup to the browser (an SVG document's, an XHTML page's, one
    inside <svg> or <math> in an HTML page) is read as markup and written back as markup
    (xml_edits.xml_style_edits()): a character reference in it is the character it names."""
    spans: list[tuple[int, int, str]] = []
    styles: list[tuple[int, int]] = []
    edited = _SVG_EDITED_TAGS if svg else _EDITED_TAGS
    # In SVG every tag is looked at: a prefixed name (svg:image) is no name the scanner skips by.
    own_url = base[:5].lower() in OWN_URL_SCHEMES  # its relative links are renamed (_resolves_to_nothing)
    own_fragments = base == link.page_url and not own_url
    unread = _OWN_FRAGMENT_LINKS if own_fragments and not svg else None
    tags = iter_tags(view.text, styles, None if svg else _EDITED_TAGS, xml=svg, unread=unread)
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
        elif tag == "a" and not own_url and (one_link := _ONE_LINK.fullmatch(raw)) is not None:
            edits = _one_link_edits(one_link, base, link, view)
        elif offset < base_at and link.page_url:  # few tags, not remembered: a memo knows one base
            edits = tuple(_tag_edits(tag, raw, base, link, view, depth, page_base=link.page_url))
        else:
            edits = _remembered_tag_edits(tag, raw, base, link, view, depth)
        spans.extend((offset + start, offset + end, new) for start, end, new in edits)
    foreign = foreign_styles(view.text, styles) if styles and not (svg or xml) else frozenset()
    for start, end in styles:
        css = view.text[start:end]
        if may_hold_css_urls(css):
            at = link.page_url if start < base_at and link.page_url else base
            markup = svg or xml or start in foreign
            edits = tuple(xml_style_edits(css, at, link, view) if markup else css_edits(css, at, link, view))
            spans.extend((start + s, start + e, new) for s, e, new in edits)
    return spans


def _resolves_to_nothing(name: str, value: str, base: str) -> bool:
    """Whether the link ``value`` of the attribute ``name``, in the document of a blob: URL (at
    ``base``), is a relative one, which resolves to nothing there: Chromium loads nothing for it.
    Kept in the srcdoc the mirror holds that document in, it would resolve against the page's
    file; its attribute is renamed instead, and loads nothing either (a URL of CSS, in a style
    attribute too, is emptied: mirror/stylesheets.py).

    >>> [_resolves_to_nothing("src", v, "blob:http://h/1") for v in ("a.png", "http://h/a.png")]
    [True, False]
    >>> _resolves_to_nothing("src", "a.png", "http://h/")
    False
    """
    return name not in CSS_ATTRS and name != "srcdoc" and resolves_to_nothing(value, base)


def _rewritten_srcdoc(text: str, base: str, link: Linker, depth: int) -> str | None:
    """The document an iframe holds in its srcdoc (``text``, unescaped), in a document at
    ``depth`` whose base URL is ``base``, with its links rewritten; None if none changed.

    It is read as the crawl read it (frame_documents.srcdoc_body(): UTF-8, cut past MAX_MARKUP tags, the
    rest kept as it is, and no deeper than MAX_SRCDOC_DEPTH). Its links resolve against its
    page's base URL (a rendered DOM's blob: frame's, against that blob: URL, where none relative
    does), and from its page's file: it has no file of its own.
    """
    if depth >= MAX_SRCDOC_DEPTH:
        return None
    body = srcdoc_body(text)
    view = View(body, "utf-8")
    spans = document_edits(view, document_base_url(base, view), link, depth + 1)
    if not spans:
        return None
    rest = text[len(body.decode("utf-8", "surrogatepass")) :]
    return view.to_text(replace_spans(view.text, spans)) + rest


def document_base_url(page_url: str, view: View) -> str:
    """The URL links resolve against: the first <base href>, or the page's URL."""
    return document_base_at(page_url, view)[0]


def document_base_at(page_url: str, view: View) -> tuple[str, int]:
    """document_base_url(), and where its <base> tag begins (0 if the page has none): the
    requisites of the tags before it resolve against the page's URL (links.before_base())."""
    if not _BASE_TAG.search(view.text):  # most pages: no need to read the tags twice
        return page_url, 0
    for offset, tag, raw in iter_tags(view.text, [], _BASE):
        if tag != "base":
            continue
        for name, _ns, _ne, value_start, value_end in attributes(raw):
            href = _attribute_text(raw[value_start:value_end], view)
            if name == "href" and is_fetchable_reference(href):
                return document_base(href, page_url, view.query_encoding), offset
    return page_url, 0


def _quoted(text: str, view: View) -> str:
    return '"' + view.from_text(html.escape(text, quote=True)) + '"'


def _one_link_edits(one_link: re.Match[str], base: str, link: Linker, view: View) -> Edits:
    """_tag_edits() of an <a> that _ONE_LINK matched (``one_link``), in a document whose base URL
    is no blob: URL: its href's value replaced, or nothing."""
    start, end = one_link.span("value")
    new_value = link(_attribute_text(one_link["value"], view), base, view.query_encoding)
    return () if new_value is None else ((start, end, _quoted(new_value, view)),)


def _remembered_tag_edits(tag: str, raw: str, base: str, link: Linker, view: View, depth: int) -> Edits:
    """_tag_edits(), from the memo when this tag was met in this folder context before (an
    <iframe> is never remembered: a srcdoc can hold a page of its own)."""
    if link.memo is None or tag in ("base", "iframe"):
        return tuple(_tag_edits(tag, raw, base, link, view, depth))
    key = (raw, link.base_folder(base), link.here_folder, view.encoding, view.query_encoding)
    found = link.memo.tags.find(key)
    if found is None:
        guessed = link.memo.guessed_tags.find(key) if link.memo.guessed_tags else None
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
    tag: str,
    raw: str,
    base: str,
    link: Linker,
    view: View,
    depth: int,
    svg: bool = False,
    page_base: str | None = None,
) -> list[tuple[int, int, str]]:
    """The (start, end, new) spans to replace inside one raw start tag (one of _EDITED_TAGS, or
    of _SVG_EDITED_TAGS in ``svg``, or with a style attribute: _document_edits checks).
    ``page_base``: of a tag before the page's <base>, the page's URL, which its requisites
    resolve against (links.before_base())."""
    found = attributes(raw)
    element = _Element(tag, raw, found, view)
    read = _READ_ATTRS.get(tag, _ALWAYS_READ)
    edits = [] if svg else _reaching_out_edits(tag, found, element)
    local_before = link.made_local
    neutralised = []
    for name, name_start, name_end, value_start, value_end in found:
        if name in _NEUTRALISED:
            neutralised.append((name, name_start, name_end))
        if value_start == value_end:
            continue
        if any(start == name_start for start, _end, _new in edits):
            continue  # renamed: nothing to rewrite in it
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
        at = base
        if page_base is not None and (name in CSS_ATTRS or link_kind(element, name) == REQUISITE):
            at = page_base
        if _resolves_to_nothing(name, value, at):
            edits.append((name_start, name_end, NEUTRALISED_PREFIX + name))
            continue
        made_local = link.made_local
        if tag == "iframe" and name == "srcdoc":  # a blob: URL's document lives there (frame_documents.py)
            new_value = _rewritten_srcdoc(value, blob_document_url(element) or base, link, depth)
        else:
            new_value = _attribute_edit(element, tag, name, value, at, link, view.query_encoding)
        if (
            link.made_local > made_local
            and _used_only_unless_refused(element, tag, name)
            and link.refused(value, at, view.query_encoding)
        ):
            # What Chromium refused loads nothing from the mirror either: the error's body, a
            # script's or a stylesheet's, kept in its file, is no part of the page. An object
            # shows its fallback once its data fails to load (with none, it shows nothing).
            failing = f'{name}="{REFUSED_URL}" ' if tag == "object" else ""
            edits.append((name_start, name_end, failing + NEUTRALISED_PREFIX + name))
            continue
        if new_value is not None:
            edits.append((value_start, value_end, _quoted(new_value, view)))
        if tag == "meta" and name == "content" and link.made_local == local_before:
            edits.extend(_away_refresh_edits(element, found, value))
    integrity = link.made_local > local_before and tag in ("link", "script")
    for name, name_start, name_end in neutralised:
        if name == "crossorigin" or integrity:
            edits.append((name_start, name_end, NEUTRALISED_PREFIX + name))
    if tag == "iframe" and not svg and element.get("srcdoc") is None:
        edits.extend(_data_frame_edits(element, link, view, depth))
    return edits


def _used_only_unless_refused(element: _Element, tag: str, name: str) -> bool:
    """Whether what ``name`` of ``tag`` loads is one Chromium uses only when it is answered without
    an error: a script (not run), a stylesheet (not applied), an object's data (its fallback shown
    instead); an image so answered it shows (measured: mirror.local_paths.LocalPaths.refused)."""
    if tag == "script":
        return name == "src"
    if tag == "object":
        return name == "data"
    return tag == "link" and name == "href" and "stylesheet" in (element.get("rel") or "").lower().split()


def _data_frame_edits(element: _Element, link: Linker, view: View, depth: int) -> list[tuple[int, int, str]]:
    """The srcdoc given an <iframe> (``element``) of a data: URL that holds an HTML document: that
    document, its links rewritten as a srcdoc document's, living at that URL (a relative link
    resolves to nothing there, and is renamed). From the mirror, the frame's document loaded what
    it links from the live web, what the crawl archived of it too; a srcdoc takes the place of
    the src, which stays as it was. Nothing for a document that links nothing, or is no HTML.
    Its text is read in the charset its type names, else in its page's, as Chromium reads it."""
    src = (element.get("src") or "").strip(ASCII_WHITESPACE)
    found = data_document(src) if src[:5].lower() == "data:" else None
    if found is None:
        return []
    body, charset = found
    # At "data:" rather than its whole URL (the document itself, which the memo's keys would hold).
    rewritten = _rewritten_srcdoc(body.decode(charset or view.encoding, WEB_ERRORS), "data:", link, depth)
    if rewritten is None:
        return []
    at = len("<iframe")
    return [(at, at, " srcdoc=" + _quoted(rewritten, view))]


def _reaching_out_edits(
    tag: str, found: list[tuple[str, int, int, int, int]], element: _Element
) -> list[tuple[int, int, str]]:
    """The renames in one start tag that keep a browser, reading the page from the mirror, from
    reaching the live web by itself: a speculation rules script's type (an inert one put first),
    a resource hint's href (_HINT_RELS), a link's ping; and from refusing the mirror's own
    files: a <meta>'s Content-Security-Policy (_POLICY), the live site's."""
    renamed: str | None = _ON_THEIR_OWN.get(tag)
    edits = []
    if tag == "meta" and (element.get("http-equiv") or "").strip().lower() == _POLICY:
        renamed = "http-equiv"
    elif tag == "script" and (element.get("type") or "").strip().lower() == SPECULATION_RULES:
        renamed = "type"
        edits.append((len(tag) + 1, len(tag) + 1, f' type="{INERT_TYPE}"'))
    elif tag == "link":
        rels = set((element.get("rel") or "").lower().split())
        if rels and rels <= _HINT_RELS:
            renamed = "href"
    for name, name_start, name_end, _value_start, _value_end in found:
        if name == renamed:
            edits.append((name_start, name_end, NEUTRALISED_PREFIX + name))
    return edits


def _away_refresh_edits(
    element: _Element, found: list[tuple[str, int, int, int, int]], content: str
) -> list[tuple[int, int, str]]:
    """The rename of a <meta http-equiv=refresh>'s http-equiv when it would take the reader to a
    page not archived (``content`` names a URL the mirror has no file for): from the mirror, the
    browser would go to the live site on its own. A refresh to an archived page is kept."""
    if (element.get("http-equiv") or "").lower() != "refresh" or not parse_meta_refresh(content):
        return []
    return [
        (name_start, name_end, NEUTRALISED_PREFIX + name)
        for name, name_start, name_end, _vs, _ve in found
        if name == "http-equiv"
    ]


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
