"""Link rewriting for the offline mirror: pure functions over HTML and SVG documents (their
CSS, and stylesheets, by stylesheets.py).

Every link a page holds (the attributes of links.HTML_LINK_ATTRS, srcset,
inline ``style`` and ``<style>`` ``url()``, meta refresh, the document of an
iframe's srcdoc, the answer's Refresh header, written in the page as the <meta
http-equiv=refresh> a browser reads it as; in SVG, the hrefs of svg.SVG_LINK_ATTRS) is resolved against
the page's base URL and handed to ``resolve(url)``, which answers with the
path (relative to mirror/) of the archived file, or None. Archived targets
become relative paths from the page's own file; the rest become absolute URLs,
so nothing points into the void. Fragments are kept. What would have a browser reach the
live web by itself, with no click of the reader's, is kept under a name no browser acts on
(document_edits.py): speculation rules, prefetch, prerender, preconnect and dns-prefetch hints,
the ping of links, a refresh to a page not archived. The WARC keeps the page as sent.

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
from archiver.link_values import parse_meta_refresh
from archiver.mirror.charsets import View
from archiver.mirror.document_edits import NEUTRALISED_PREFIX, document_base_at, document_edits
from archiver.mirror.linker import Linker, Memo, Resolver
from archiver.mirror.stylesheets import own_path, replace_spans
from archiver.mirror.xml_edits import stylesheet_pi_edits, xml_declaration_edits

# What may come before a doctype without making a browser read the page in quirks mode:
# white space, comments, an XML declaration. One character or one whole piece a step, so
# a page of "<!--" never closed costs one scan.
_DOCTYPE = re.compile(r"(?:\s|<!--.*?-->|<\?[^>]*>)*<!doctype[^>]*>", re.IGNORECASE | re.DOTALL)


def rewrite_html(
    body: bytes,
    page_url: str,
    encoding: str | None,
    resolve: Resolver,
    page_path: str | None = None,
    memo: Memo | None = None,
    xml: bool = False,
    page_charset: str | None = None,
    refresh: str | None = None,
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
    DOM, kept as UTF-8: findings.findings() reads it alike). ``refresh``: the value of the
    answer's Refresh header, if any (refresh_tag()).
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
    base, base_at = document_base_at(page_url, view)
    spans = document_edits(view, base, link, 0, base_at=base_at if base != page_url else 0, xml=xml)
    if xml:  # the stylesheets of its <?xml-stylesheet?> instructions, as an SVG image's
        spans.extend(stylesheet_pi_edits(view, base, link))
    elif refresh is not None and (tag := refresh_tag(refresh, base, link, view)) is not None:
        doctype = _DOCTYPE.match(view.text)
        at = doctype.end() if doctype else 0
        spans.append((at, at, tag))
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


def refresh_tag(refresh: str, base: str, link: Linker, view: View) -> str | None:
    """The <meta http-equiv=refresh> a page's file holds for the Refresh header its answer had
    (``refresh``, its value), its URL made local, in ``view``'s terms; None for a header that
    names no URL (Chromium then loads the page again: the file stays as it is). Put first in
    the page, as Chromium reads the header before any such element of the page. A refresh to
    a page not archived is kept under a name no browser acts on, as such an element is
    (document_edits._away_refresh_edits()).

    >>> link = Linker("h/a.html", {"http://h/b": "h/b.html"}.get)
    >>> refresh_tag("3;URL=/b", "http://h/a", link, View(b"", "utf-8"))
    '<meta http-equiv="refresh" content="3;URL=b.html">'
    >>> refresh_tag("0; url=/c", "http://h/a", link, View(b"", "utf-8"))
    '<meta data-archived-http-equiv="refresh" content="0; url=http://h/c">'
    """
    span = parse_meta_refresh(refresh)
    if span is None:
        return None
    local_before = link.made_local
    new = link(span[2], base, view.query_encoding)
    content = refresh if new is None else refresh[: span[0]] + new + refresh[span[1] :]
    name = "http-equiv" if link.made_local > local_before else NEUTRALISED_PREFIX + "http-equiv"
    return f'<meta {name}="refresh" content="{view.from_text(html.escape(content, quote=True))}">'


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
    spans = document_edits(view, url, link, 0, svg=True)
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
