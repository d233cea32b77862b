"""Stylesheets made local: the url(), @import and image-set() targets of a stylesheet (in its
own encoding), and of the CSS a page or an SVG image holds, rewritten by a Linker: a URL is
read as CSS reads it (its escapes undone) and written back escaped where CSS needs it.

>>> resolve = {"http://h/i.png": "h/i.png"}.get
>>> rewrite_css("a{background:url(/i.png)} b{background:url('x(1).png')}", "http://h/s/a.css", resolve)
"a{background:url(../i.png)} b{background:url('http://h/s/x(1).png')}"
"""

from __future__ import annotations

from archiver.encodings import (
    CSS_CHARSET_RULE,
    REPLACEMENT,
    sniff_bom,
    stylesheet_encoding,
    utf16_bom,
    web_codec,
    web_label,
)
from archiver.frame_documents import resolves_to_nothing
from archiver.link_values import css_destination, css_unescaped, css_url_spans, iter_css_urls, written_css_url
from archiver.mirror.charsets import View
from archiver.mirror.linker import Linker, Memo, Resolver
from archiver.paths import url_to_path
from archiver.urls import try_normalize

REFUSED_URL = "about:invalid"
"""What an @import or a font's URL answered with an error is written as in the mirror: a URL
that loads nothing, with no request (Chromium applied and used nothing of the error's body)."""


def replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
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


def rewrite_css_text(text: str, base: str, link: Linker) -> str:
    """CSS ``text`` (a style attribute's, decoded) with its URLs made local or absolute."""
    spans = []
    for start, end, value in iter_css_urls(text):
        made_local = link.made_local
        new = link(value, base)
        if new is None and resolves_to_nothing(value, base):
            new = ""  # as in the document of a blob: URL it stood in: url("") loads nothing
        elif link.made_local > made_local and _refused(text, start, value, base, link):
            new = REFUSED_URL
        if new is not None:
            spans.append((start, end, written_css_url(new, text, start)))
    return replace_spans(text, spans) if spans else text


def css_edits(
    css: str, base: str, link: Linker, view: View, markup: bool = False
) -> list[tuple[int, int, str]]:
    """The (start, end, new) spans to replace in CSS text of the view (a stylesheet, a <style>):
    each URL is read once decoded (a CSS escape names a character, not a byte), then written
    back escaped as CSS reads it where it stood (``markup``: in XML; see written_css_url())."""
    spans = []
    scanned = view.scanned(css)
    for start, end in css_url_spans(scanned):
        value = css_unescaped(view.to_text(css[start:end]))
        made_local = link.made_local
        new = link(value, base)
        if new is None and resolves_to_nothing(value, base):
            new = ""  # as in the document of a blob: URL it stood in: url("") loads nothing
        elif link.made_local > made_local and _refused(scanned, start, value, base, link):
            new = REFUSED_URL
        if new is not None:
            spans.append((start, end, view.from_text(written_css_url(new, css, start, markup))))
    return spans


def _refused(css: str, start: int, value: str, base: str, link: Linker) -> bool:
    """Whether the URL ``value`` at ``start`` of ``css`` is an @import's or a font's that is
    answered with an error: Chromium applies no such stylesheet and uses no such font (it shows
    an image so answered: mirror.local_paths.LocalPaths.refused)."""
    return css_destination(css, start) != "image" and link.refused(value, base)


def own_path(url: str, content_type: str, resolve: Resolver) -> str:
    """Where the document itself is stored: as resolved, else its natural path."""
    return resolve(try_normalize(url) or url) or url_to_path(url, content_type)


def rewrite_css(text: str, css_url: str, resolve: Resolver, css_path: str | None = None) -> str:
    """CSS text with url() and @import targets made local (or absolute).

    >>> resolve = {"http://h/i.png": "h/i.png"}.get
    >>> rewrite_css("a{background:url(/i.png)}", "http://h/s/a.css", resolve)
    'a{background:url(../i.png)}'
    """
    here = css_path or own_path(css_url, "text/css", resolve)
    return rewrite_css_text(text, css_url, Linker(here, resolve))


def rewrite_css_bytes(
    body: bytes,
    css_url: str,
    encoding: str | None,
    resolve: Resolver,
    css_path: str | None = None,
    memo: Memo | None = None,
    referrer_encoding: str | None = None,
) -> bytes:
    """A stylesheet's bytes rewritten, in its own encoding (encodings.stylesheet_encoding()).
    ``encoding``: the charset of its HTTP Content-Type, if any, which its file then says itself
    (an @charset rule, or for UTF-16 a byte-order mark): read from disk, it has no header.
    ``referrer_encoding``: the encoding of the document that refers to it, which it is read in
    if it names none; its file then says that one in an @charset rule, so that it reads the
    same from any page of the mirror (pages in other encodings may link it too) and opened
    alone. Its bytes are kept, as a page's are, rather than written as UTF-8.

    ``memo``: shared by every document rewritten with this ``resolve``.
    """
    read_in = stylesheet_encoding(body, encoding, referrer_encoding)
    if read_in == REPLACEMENT:
        # Read as one U+FFFD: no URL to rewrite. Kept as received, saying so if its header did.
        rule = CSS_CHARSET_RULE.match(body.decode("latin-1"))
        said = rule is None or web_codec(rule.group(1)) != REPLACEMENT
        said = said and web_codec(encoding) == REPLACEMENT
        return f'@charset "{encoding}";'.encode("ascii", "replace") + body if said else body
    view = View(body, read_in)
    here = css_path or own_path(css_url, "text/css", resolve)
    spans = css_edits(view.text, css_url, Linker(here, resolve, memo), view)
    out = view.encode(replace_spans(view.text, spans)) if spans else body
    if sniff_bom(body) is not None:
        return out
    header_encoding = web_codec(encoding)
    if header_encoding is None:
        # Its own rule's, or its referrer's, or UTF-8: said all the same, for a page of the
        # mirror in another encoding would read it in that one.
        said_label, said_codec = web_label(read_in), read_in
    else:
        said_label, said_codec = str(encoding), header_encoding
    if (mark := utf16_bom(said_codec)) is not None:
        return mark + out
    if view.as_bytes and out.isascii():  # read alike in any encoding a rule could name
        return out
    rule = CSS_CHARSET_RULE.match(view.text)
    if rule is None:
        spans.append((0, 0, f'@charset "{said_label}";'))
    elif web_codec(rule.group(1)) != said_codec:
        spans.append((rule.start(1), rule.end(1), said_label))
    else:
        return out
    return view.encode(replace_spans(view.text, spans))
