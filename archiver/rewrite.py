"""Link rewriting for the offline mirror: a document's references (references.py) made local or absolute.

Every URL a page or stylesheet holds is handed to ``resolve(url)``, which
answers with the path (relative to mirror/) of the archived file, or None.
Archived targets become relative paths from the document's own file; the rest
become absolute URLs, so nothing points into the void. Fragments are kept.

Edits are spans replaced in the original text: everything else, malformed
markup included, stays byte for byte. Pages in an ASCII-compatible encoding
(UTF-8, Latin-1, Shift_JIS, GBK...) are edited as bytes, so their encoding is
kept exactly. Finding the references is references.py's work; a crawl does it
once, as it extracts links, and its mirror build only applies the edits.

>>> resolve = {"http://h/b": "h/b.html"}.get
>>> rewrite_html(b'<a href="/b#x">b</a><img src=c.png>', "http://h/a/", None, resolve,
...              page_path="h/a/index.html")
b'<a href="../b.html#x">b</a><img src="http://h/a/c.png">'
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .charsets import View
from .paths import relative_url, url_to_path
from .references import (
    CSS_VALUE,
    LITERAL,
    NEUTRAL,
    PARTS,
    SRCSET_VALUE,
    TEXT,
    VALUE,
    analyse_css,
    analyse_html,
    quoted,
)
from .urls import try_normalize

Resolver = Callable[[str], "str | None"]
"""Normalised absolute URL -> path of its archived file relative to mirror/, or None."""

MEMO_SIZE = 5_000
"""Entries a memo keeps (the most recently used): bounded memory, still most hits."""
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class Memo:
    """Where the URLs of a mirror build's documents lead, worked out once per document folder.

    Pages of one folder repeat their navigation, their neighbours and their
    assets. A relative path depends only on the document's folder and the
    URL's file, so it is remembered per (document's folder, URL).
    """

    def __init__(self) -> None:
        self.targets: _Recent[tuple[str, str], str] = _Recent()
        """(folder, URL) -> relative path, or "" when the URL is not archived."""


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
    """What each reference of a document whose file is ``here`` becomes."""

    def __init__(self, here: str, resolve: Resolver, memo: Memo | None) -> None:
        self.here = here
        self.folder = here.rpartition("/")[0]
        self.resolve = resolve
        self.memo = memo or Memo()

    def __call__(self, ref: Sequence[Any]) -> tuple[str | None, bool]:
        """(replacement or None to keep the reference, whether it is now local)."""
        url, absolute, suffix, same = ref
        key = (self.folder, url)
        path = self.memo.targets.find(key)
        if path is None:
            target = self.resolve(url)
            path = relative_url(self.here, target) if target else ""
            self.memo.targets.keep(key, path)
        if not path:
            return (None if same else absolute), False
        return path + suffix, True


def apply_edits(body: bytes, encoding: str, edits: Sequence[Sequence[Any]], here: str,
                resolve: Resolver, memo: Memo | None = None) -> bytes:
    """``body`` with the edits references.py found in it applied, read in ``encoding`` as it was.

    ``here`` is the document's own file (relative to mirror/); ``memo``: shared
    by every document edited with this ``resolve`` (a mirror build).
    """
    if not edits:
        return body
    view = View(body, encoding)
    link = _Linker(here, resolve, memo)
    spans: list[tuple[int, int, str]] = []
    group, group_local = None, False
    for edit in edits:
        kind, start, end = edit[0], edit[1], edit[2]
        if kind == LITERAL:
            spans.append((start, end, edit[3]))
            continue
        if edit[3] != group:
            group, group_local = edit[3], False
        if kind in (VALUE, TEXT):
            new, local = link(edit[4])
            group_local = group_local or local
            if new is not None:
                spans.append((start, end, quoted(new, view) if kind == VALUE else view.from_text(new)))
        elif kind == PARTS:
            new_value, local = _parts(edit[4], edit[5], edit[6], link)
            group_local = group_local or local
            if new_value is not None:
                spans.append((start, end, quoted(new_value, view)))
        elif kind == NEUTRAL and group_local:
            spans.append((start, end, edit[4]))
    return view.encode(_replace_spans(view.text, spans)) if spans else body


def _parts(
    mode: int, value: str, parts: Sequence[Sequence[Any]], link: _Linker
) -> tuple[str | None, bool]:
    """(new value of an attribute holding URLs among other text, or None; whether one became local)."""
    spans = []
    any_local = False
    for start, end, ref in parts:
        new, local = link(ref)
        any_local = any_local or local
        if new is None:
            continue
        if mode == SRCSET_VALUE:
            # A srcset URL ends at a space, or at a comma that ends it.
            new = new.replace(" ", "%20")
            if new.endswith(","):
                new = new[:-1] + "%2C"
        spans.append((start, end, new))
    if mode == CSS_VALUE:
        css = _replace_spans(value, spans) if spans else value
        return (css if css != value else None), any_local
    return (_replace_spans(value, spans) if spans else None), any_local


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


def _own_path(url: str, content_type: str, resolve: Resolver) -> str:
    """Where the document itself is stored: as resolved, else its natural path."""
    return resolve(try_normalize(url) or url) or url_to_path(url, content_type)


def rewrite_css(text: str, css_url: str, resolve: Resolver, css_path: str | None = None) -> str:
    """CSS text with url() and @import targets made local (or absolute).

    >>> resolve = {"http://h/i.png": "h/i.png"}.get
    >>> rewrite_css("a{background:url(/i.png)}", "http://h/s/a.css", resolve)
    'a{background:url(../i.png)}'
    """
    body = text.encode("utf-8", "surrogatepass")
    return rewrite_css_bytes(body, css_url, "utf-8", resolve, css_path).decode("utf-8", "surrogatepass")


def rewrite_css_bytes(
    body: bytes, css_url: str, encoding: str | None, resolve: Resolver, css_path: str | None = None,
    memo: Memo | None = None,
) -> bytes:
    """A stylesheet's bytes rewritten, in its own encoding (declared, BOM, else UTF-8).

    ``memo``: shared by every document rewritten with this ``resolve``.
    """
    found = analyse_css(body, css_url, encoding)
    here = css_path or _own_path(css_url, "text/css", resolve)
    return apply_edits(body, found.encoding, found.edits, here, resolve, memo)


def rewrite_html(
    body: bytes,
    page_url: str,
    encoding: str | None,
    resolve: Resolver,
    page_path: str | None = None,
    memo: Memo | None = None,
) -> bytes:
    """A page's bytes with every link made local (if archived) or absolute.

    ``encoding`` is the charset of the HTTP Content-Type, if any (see
    references.analyse_html). ``page_path`` is the page's own file (relative
    to mirror/); by default ``resolve(page_url)``. ``memo``: shared by every
    document rewritten with this ``resolve`` (a mirror build).
    """
    found = analyse_html(body, page_url, encoding)
    here = page_path or _own_path(page_url, "text/html", resolve)
    return apply_edits(body, found.encoding, found.edits, here, resolve, memo)
