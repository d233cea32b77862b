"""Link rewriting for the offline mirror: pure functions over HTML and CSS documents.

Every link a page holds (the attributes of links.HTML_LINK_ATTRS, srcset,
inline ``style`` and ``<style>`` ``url()``, meta refresh) is resolved against
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

import collections
import html
import re
from collections.abc import Callable
from typing import TypeVar

from archiver.content import known_encoding
from archiver.links import (
    HTML_LINK_ATTRS,
    SRCSET_ATTRS,
    base_contexts,
    document_base,
    is_fetchable_reference,
    iter_css_urls,
    link_kind,
    parse_meta_refresh,
    parse_srcset,
    resolve_reference,
)
from archiver.mirror.charsets import View, declared_charset, sniff_bom
from archiver.mirror.markup import Markup, attributes, scan
from archiver.paths import relative_url, url_to_path
from archiver.urls import absolute_url, try_normalize

Resolver = Callable[[str], "str | None"]
"""Normalised absolute URL -> path of its archived file relative to mirror/, or None. A resolver
with a ``guessed`` count (mirror.local_paths.LocalPaths while the crawl runs) says which of its
answers may still change: those are remembered apart, with the guesses, which a memo hit hands
back to the resolver's ``noted()``, and for GUESSES_KEPT_FOR documents at most."""

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
# crossorigin request to a file:// URL fails.
NEUTRALISED_ATTRS = frozenset({"integrity", "crossorigin"})
NEUTRALISED_PREFIX = "data-archived-"
_URL_ATTRS: dict[str, frozenset[str]] = {}
for _tag, _attribute in (*HTML_LINK_ATTRS, *EXTRA_LINK_ATTRS):
    _URL_ATTRS[_tag] = _URL_ATTRS.get(_tag, frozenset()) | {_attribute}

_EDITED_TAGS = frozenset({*_URL_ATTRS, "meta", "base"})
_STYLE_ATTRIBUTE = re.compile("style", re.IGNORECASE)
_DOCTYPE = re.compile(r"\s*<!doctype[^>]*>", re.IGNORECASE)


class _Element:
    """The tag name and attributes links.link_kind() needs."""

    def __init__(self, tag: str, attributes: dict[str, str]) -> None:
        self.tag = tag
        self.attributes = attributes

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.attributes.get(name, default)


MEMO_SIZE = 5_000
"""Entries a memo table keeps (the most recently used): bounded memory, still most hits."""
GUESSES_KEPT_FOR = 100
"""Documents after which a memo forgets what it remembered of guesses: a guess made stale by the
crawl meanwhile is still right (each page is checked at the end), but may cost a page's rewrite."""
_Edits = tuple[tuple[int, int, str], ...]
_Guesses = tuple[tuple[str, "str | None"], ...]
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class Memo:
    """What a mirror build has worked out already, for the documents it rewrites with one resolver.

    Pages of one folder repeat their navigation, their neighbours and their
    assets, often as the very same tags. A reference with a path resolves the
    same against any base URL of one folder, and a relative path depends only
    on the document's folder, so both are remembered per (base URL's folder,
    document's folder): a reference's replacement, and a whole start tag's
    edits. References without a path (``?q``, ``#f``, empty) depend on the whole
    base URL: they, and the tags holding one, are never remembered. What the
    resolver only guessed (a link to a URL the crawl has not fetched yet) is
    remembered in tables of its own with the guesses it took, handed back to
    the resolver at each use, and forgotten every GUESSES_KEPT_FOR documents.
    """

    def __init__(self) -> None:
        self.references: _Recent[tuple[str, str, str], tuple[str | None, bool]] = _Recent()
        self.tags: _Recent[tuple[str, str, str, str], _Edits] = _Recent()
        self.guessed_references: _Recent[tuple[str, str, str], tuple[tuple[str | None, bool], _Guesses]]
        self.guessed_tags: _Recent[tuple[str, str, str, str], tuple[_Edits, _Guesses]]
        self.documents = 0
        self._forget_guesses()

    def begin_document(self) -> None:
        """Count a document; every GUESSES_KEPT_FOR, forget what was remembered of guesses."""
        self.documents += 1
        if self.documents % GUESSES_KEPT_FOR == 0:
            self._forget_guesses()

    def _forget_guesses(self) -> None:
        self.guessed_references = _Recent()
        self.guessed_tags = _Recent()


class _Recent(collections.OrderedDict[_Key, _Value]):
    """A table that keeps the MEMO_SIZE entries used last."""

    def find(self, key: _Key) -> _Value | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def keep(self, key: _Key, value: _Value) -> None:
        self[key] = value
        if len(self) > MEMO_SIZE:
            self.popitem(last=False)


class _Linker:
    """Rewrites one URL reference found in a document whose file is ``here`` (see Memo)."""

    def __init__(self, here: str, resolve: Resolver, memo: Memo | None = None) -> None:
        self.here = here
        self.here_folder = here.rpartition("/")[0]
        self.resolve = resolve
        self.memo = memo
        self.made_local = 0
        """How many references were made local so far."""
        self.whole_base_uses = 0
        """How many references so far depended on the whole base URL (no path of their own)."""
        self.guesses = 0
        """How many references so far the resolver only guessed (see Resolver)."""
        self.guessed: list[tuple[str, str | None]] = []
        """Those guesses: (URL, the answer)."""
        self._base = ("", ("", ""))
        if memo is not None:
            memo.begin_document()

    def replay(self, guesses: _Guesses) -> None:
        """Hand back to the resolver the guesses a remembered answer took (a memo hit)."""
        self.guesses += len(guesses)
        self.guessed.extend(guesses)
        noted = getattr(self.resolve, "noted", None)
        if noted is not None:
            noted(guesses)

    def base_contexts(self, base: str) -> tuple[str, str]:
        """links.base_contexts(base): (origin, folder), worked out once per document (its
        base rarely changes)."""
        if self._base[0] != base:
            self._base = (base, base_contexts(base))
        return self._base[1]

    def base_folder(self, base: str) -> str:
        """url_folder(base)."""
        return self.base_contexts(base)[1]

    def __call__(self, value: str, base: str) -> str | None:
        """The replacement for ``value`` (a local path or an absolute URL), None to keep it."""
        if value.lstrip()[:1] in ("?", "#", ""):
            self.whole_base_uses += 1
            new, local = self._work_out(value, base)
        elif self.memo is None:
            new, local = self._work_out(value, base)
        else:
            new, local = self._remembered(value, base, self.memo)
        self.made_local += local
        return new

    def _remembered(self, value: str, base: str, memo: Memo) -> tuple[str | None, bool]:
        """_work_out(), from the memo when the reference was met in this folder context before.

        A local path is remembered for the reference without its fragment, which it
        only carries along: documentation pages link to many anchors of one page.
        """
        head, hash_sign, fragment = value.strip().partition("#")
        key = (self.base_folder(base), self.here_folder, head)
        found = memo.references.find(key)
        if found is not None and found[1]:
            return f"{found[0]}{hash_sign}{fragment}", True
        whole_key = (key[0], key[1], value)
        found = memo.references.find(whole_key)
        if found is None:
            guessed = memo.guessed_references.find(whole_key)
            if guessed is not None:
                self.replay(guessed[1])
                return guessed[0]
            mark = len(self.guessed)
            found = self._work_out(value, base)
            if len(self.guessed) == mark:
                if found[1]:
                    path = found[0] or ""
                    memo.references.keep(key, (path[: len(path) - len(fragment) - len(hash_sign)], True))
                else:
                    memo.references.keep(whole_key, found)
            else:
                memo.guessed_references.keep(whole_key, (found, tuple(self.guessed[mark:])))
        return found

    def _work_out(self, value: str, base: str) -> tuple[str | None, bool]:
        reference = value.strip()
        # The URL the crawl fetched for this link (kept by this module's memo, not the crawl's).
        url = resolve_reference(reference, base, self.base_contexts(base), remember=False)
        if url is None:
            return None, False
        guessed = getattr(self.resolve, "guessed", 0)
        target = self.resolve(url)
        if getattr(self.resolve, "guessed", 0) != guessed:
            self.guesses += 1
            self.guessed.append((url, target))
        if target is None:
            absolute = absolute_url(reference, base)
            return (absolute if absolute is not None and absolute != value else None), False
        _, hash_sign, fragment = reference.partition("#")
        return relative_url(self.here, target) + hash_sign + fragment, True


def _replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end, new) span replaced; spans must not overlap."""
    out, last = [], 0
    for start, end, new in sorted(spans):
        if start < last:
            continue
        out.append(text[last:start])
        out.append(new)
        last = end
    out.append(text[last:])
    return "".join(out)


def _rewrite_css_text(text: str, base: str, link: _Linker) -> str:
    spans = []
    for start, end, value in iter_css_urls(text):
        new = link(value, base)
        if new is not None:
            spans.append((start, end, new))
    return _replace_spans(text, spans) if spans else text


def _own_path(url: str, content_type: str, resolve: Resolver) -> str:
    """Where the document itself is stored: as resolved, else its natural path."""
    return resolve(try_normalize(url) or url) or url_to_path(url, content_type)


def rewrite_css(text: str, css_url: str, resolve: Resolver, css_path: str | None = None) -> str:
    """CSS text with url() and @import targets made local (or absolute).

    >>> resolve = {"http://h/i.png": "h/i.png"}.get
    >>> rewrite_css("a{background:url(/i.png)}", "http://h/s/a.css", resolve)
    'a{background:url(../i.png)}'
    """
    here = css_path or _own_path(css_url, "text/css", resolve)
    return _rewrite_css_text(text, css_url, _Linker(here, resolve))


def rewrite_css_bytes(
    body: bytes,
    css_url: str,
    encoding: str | None,
    resolve: Resolver,
    css_path: str | None = None,
    memo: Memo | None = None,
) -> bytes:
    """A stylesheet's bytes rewritten, in its own encoding (declared, BOM, else UTF-8).

    ``memo``: shared by every document rewritten with this ``resolve``.
    """
    encoding = known_encoding(encoding) or sniff_bom(body) or "utf-8"
    view = View(body, encoding)
    here = css_path or _own_path(css_url, "text/css", resolve)
    link = _Linker(here, resolve, memo)
    spans = []
    for start, end, value in iter_css_urls(view.text):
        new = link(view.to_text(value), css_url)
        if new is not None:
            spans.append((start, end, view.from_text(new)))
    return view.encode(_replace_spans(view.text, spans)) if spans else body


def _attribute_text(raw_value: str, view: View) -> str:
    """The text of an attribute value as written in the view: unquoted, decoded, then unescaped
    (in that order: a character reference may name a character the view cannot hold)."""
    if raw_value[:1] in ("'", '"') and raw_value[-1:] == raw_value[:1] and len(raw_value) >= 2:
        raw_value = raw_value[1:-1]
    return html.unescape(view.to_text(raw_value))


def rewrite_html(
    body: bytes,
    page_url: str,
    encoding: str | None,
    resolve: Resolver,
    page_path: str | None = None,
    memo: Memo | None = None,
) -> bytes:
    """A page's bytes with every link made local (if archived) or absolute.

    ``encoding`` is the charset of the HTTP Content-Type, if any; when the page
    does not declare that same charset itself, a <meta charset> is added so a
    browser reading the file from disk decodes it as the site's visitors did.
    ``page_path`` is the page's own file (relative to mirror/); by default
    ``resolve(page_url)``. A <base href> is resolved, then renamed so it no
    longer applies to the local links. ``memo``: shared by every document
    rewritten with this ``resolve`` (a mirror build), so what its pages repeat
    is worked out once.
    """
    header_encoding = known_encoding(encoding)
    bom = sniff_bom(body)
    declared = declared_charset(body)
    effective = bom or header_encoding or declared or "utf-8"
    view = View(body, effective)
    here = page_path or _own_path(page_url, "text/html", resolve)
    link = _Linker(here, resolve, memo)
    scanner = scan(view.text)
    base = _document_base(scanner, page_url, view)
    spans: list[tuple[int, int, str]] = []
    for offset, tag, raw in scanner.tags:
        if tag not in _EDITED_TAGS and not _STYLE_ATTRIBUTE.search(raw):
            continue  # most tags: no attribute to edit (checked here, without a call per tag)
        for start, end, new in _remembered_tag_edits(tag, raw, base, link, view):
            spans.append((offset + start, offset + end, new))
    for start, end in scanner.styles:
        css = view.text[start:end]
        if "url(" in css.lower() or "@import" in css.lower():
            rewritten = _rewrite_css_view(css, base, link, view)
            if rewritten != css:
                spans.append((start, end, rewritten))
    if header_encoding and not bom and declared != header_encoding:
        doctype = _DOCTYPE.match(view.text)
        at = doctype.end() if doctype else 0
        spans.append((at, at, f'<meta charset="{html.escape(encoding or "")}">'))
    if not spans:
        return body
    return view.encode(_replace_spans(view.text, spans))


def _document_base(scanner: Markup, page_url: str, view: View) -> str:
    """The URL links resolve against: the first <base href>, or the page's URL."""
    for _offset, tag, raw in scanner.tags:
        if tag != "base":
            continue
        for name, _ns, _ne, value_start, value_end in attributes(raw):
            href = _attribute_text(raw[value_start:value_end], view)
            if name == "href" and is_fetchable_reference(href):
                return document_base(href, page_url)
    return page_url


def _rewrite_css_view(css: str, base: str, link: _Linker, view: View) -> str:
    spans = []
    for start, end, value in iter_css_urls(css):
        new = link(view.to_text(value), base)
        if new is not None:
            spans.append((start, end, view.from_text(new)))
    return _replace_spans(css, spans) if spans else css


def _quoted(text: str, view: View) -> str:
    return '"' + view.from_text(html.escape(text, quote=True)) + '"'


def _remembered_tag_edits(tag: str, raw: str, base: str, link: _Linker, view: View) -> _Edits:
    """_tag_edits(), from the memo when this tag was met in this folder context before."""
    if link.memo is None or tag == "base":
        return tuple(_tag_edits(tag, raw, base, link, view))
    key = (raw, link.base_folder(base), link.here_folder, view.encoding)
    found = link.memo.tags.find(key)
    if found is None:
        guessed = link.memo.guessed_tags.find(key)
        if guessed is not None:
            link.replay(guessed[1])
            return guessed[0]
        whole_base_uses, mark = link.whole_base_uses, len(link.guessed)
        found = tuple(_tag_edits(tag, raw, base, link, view))
        if link.whole_base_uses == whole_base_uses:
            if len(link.guessed) == mark:
                link.memo.tags.keep(key, found)
            else:
                link.memo.guessed_tags.keep(key, (found, tuple(link.guessed[mark:])))
    return found


def _tag_edits(tag: str, raw: str, base: str, link: _Linker, view: View) -> list[tuple[int, int, str]]:
    """The (start, end, new) spans to replace inside one raw start tag (one of _EDITED_TAGS or
    with a style attribute: rewrite_html checks before calling)."""
    found = attributes(raw)
    texts = [_attribute_text(raw[start:end], view) for _n, _ns, _ne, start, end in found]
    values = {}
    for (name, *_spans), text in zip(reversed(found), reversed(texts), strict=True):
        values[name] = text  # the first of a repeated attribute wins, as in browsers
    element = _Element(tag, values)
    edits = []
    local_before = link.made_local
    for (name, name_start, name_end, value_start, value_end), value in zip(found, texts, strict=True):
        if value_start == value_end:
            continue
        if tag == "base" and name == "href":
            new_name = NEUTRALISED_PREFIX + "href"
            edits.append((name_start, name_end, new_name))
            if is_fetchable_reference(value):
                edits.append((value_start, value_end, _quoted(base, view)))
            continue
        new_value = _attribute_edit(element, tag, name, value, base, link)
        if new_value is not None:
            edits.append((value_start, value_end, _quoted(new_value, view)))
    if link.made_local > local_before and tag in ("link", "script"):
        for name, name_start, name_end, _vs, _ve in found:
            if name in NEUTRALISED_ATTRS:
                edits.append((name_start, name_end, NEUTRALISED_PREFIX + name))
    return edits


def _attribute_edit(
    element: _Element, tag: str, name: str, value: str, base: str, link: _Linker
) -> str | None:
    """The new value of one attribute, or None to leave it."""
    if name == "style":
        css = _rewrite_css_text(value, base, link)
        return css if css != value else None
    if tag == "meta" and name == "content":
        if (element.get("http-equiv") or "").lower() != "refresh":
            return None
        span = parse_meta_refresh(value)
        if not span or (new := link(span[2], base)) is None:
            return None
        return value[: span[0]] + new + value[span[1] :]
    if name not in _URL_ATTRS.get(tag, ()):
        return None
    if (tag, name) in HTML_LINK_ATTRS and link_kind(element, name) is None:
        return None
    if name in SRCSET_ATTRS:
        spans = []
        for start, end, url in parse_srcset(value):
            replacement = link(url, base)
            if replacement is not None:
                # A srcset URL ends at a space, or at a comma that ends it.
                replacement = replacement.replace(" ", "%20")
                if replacement.endswith(","):
                    replacement = replacement[:-1] + "%2C"
                spans.append((start, end, replacement))
        return _replace_spans(value, spans) if spans else None
    return link(value, base)
