"""What a stylesheet archived without an encoding of its own is read in, read back from a
snapshot: the encoding of the document that refers to it (findings.document_encoding()).

That document is the stylesheet's manifest parent, through the redirects that led to it: the
first page (or stylesheet, by its @import, or SVG image) that found it, which the crawl read it for
(crawling/referrers.py). Browsers read a stylesheet once per page that loads it, in that
page's encoding; a mirror has one file of it, read as its first referrer reads it. The mirror
and verify read it alike.

A stylesheet that page's iframe srcdoc document links (and the page itself does not) is read in
UTF-8, the srcdoc document's encoding, as Chromium reads it: the page's links say so
(link_requests.SRCDOC), as they told the crawl. So do those of its rendered DOM, where the frames
its scripts built are kept in their iframes' srcdoc (an <iframe srcdoc> a script made, an
about:blank frame it wrote: UTF-8 too in Chromium; not one of a blob: URL, which the DOM keeps
so too, unless its type named UTF-8, but the srcdoc frames it holds still), and so are those of
a frame of a data: URL whose type names UTF-8, which the crawl learnt from the browser's
requests (the charset of the frame's document). A snapshot of an older crawl is read the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import lxml.html

from archiver.content import CSS_TYPE, HTML_TYPES, SVG_TYPE, decode_stream
from archiver.encodings import stylesheet_names_its_encoding, web_codec
from archiver.errors import UnknownEncoding
from archiver.findings import document_encoding, findings, parse_page, root_findings
from archiver.link_requests import SRCDOC, Hint, says
from archiver.links import MAX_SRCDOC_DEPTH, charset_from_content_type
from archiver.media_types import content_type_field
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.rows import FETCHED, ManifestRow
from archiver.store.stored import payload_record
from archiver.warc.dom import DOM_CONTENT_TYPE
from archiver.warc.reader import WarcReader, read_to_end

MAX_IMPORTS = 8
"""@import levels followed up to a page (a stylesheet's referrer's own referrer...)."""
MAX_HOPS = 32
"""Redirects followed back to the URL a document referred to."""

_REFERRERS = frozenset({*HTML_TYPES, CSS_TYPE, SVG_TYPE})
"""The documents that refer to stylesheets: pages, stylesheets (@import), SVG images."""
_SRCDOC = re.compile(rb"srcdoc", re.IGNORECASE)
"""Found in a page whose srcdoc documents may link stylesheets (their links are read then)."""
_DATA_FRAME = re.compile(rb"data:(?:text/html|application/xhtml)", re.IGNORECASE)
"""Found in a rendered DOM that may frame a data: URL's document (its links are read then)."""
BLOB_CHARSET = "data-archived-charset"
"""The attribute in which a rendered DOM notes the charset the document of a frame of a blob:
URL was read in (crawling/page_scripts/dom.js)."""

Reading = tuple[str | None, frozenset[str]]
"""What a document that refers to stylesheets tells of them: the encoding it was read in (None:
it has none), and the URLs its iframes' srcdoc documents alone link (read in UTF-8, theirs)."""
NO_READING: Reading = (None, frozenset())
RowOf = Callable[[str], ManifestRow | None]
"""The manifest row of a URL, if it has one."""
BodyOf = Callable[[ManifestRow], tuple[bytes, str | None] | None]
"""The payload of a fetched row, decoded as the crawl decoded it, and its Content-Type header;
None if it cannot be read."""
DomOf = Callable[[ManifestRow], bytes | None]
"""The rendered DOM of a page's row that has one (warc/dom.py); None if it cannot be read (or
what reading it raised)."""


def referrer_encoding(
    row: ManifestRow,
    row_of: RowOf,
    body_of: BodyOf,
    imports: int = MAX_IMPORTS,
    dom_of: DomOf | None = None,
) -> str | None:
    """The encoding the stylesheet of ``row`` is read in when it names none: that of the document
    that refers to it (None if it has none or is no page or stylesheet, and for one a srcdoc
    document links: the stylesheet is then UTF-8). Raises UnknownEncoding if that document's
    record cannot be read: read as UTF-8, the stylesheet could be other text than the crawl read.
    ``dom_of``: see referrer_reading()."""
    document, linked = referred_by(row, row_of)
    return encoding_for(linked, referrer_reading(document, row_of, body_of, imports, dom_of))


def encoding_for(linked: str, reading: Reading) -> str | None:
    """The encoding a stylesheet the document of ``reading`` links as ``linked`` is read in.

    >>> encoding_for("http://h/s.css", ("cp1252", frozenset({"http://h/f.css"})))
    'cp1252'
    >>> encoding_for("http://h/f.css", ("cp1252", frozenset({"http://h/f.css"}))) is None
    True
    """
    encoding, srcdoc_links = reading
    return None if linked in srcdoc_links else encoding


def encoding_of(
    document: ManifestRow | None,
    row_of: RowOf,
    body_of: BodyOf,
    imports: int = MAX_IMPORTS,
    dom_of: DomOf | None = None,
) -> str | None:
    """The encoding the crawl read the document of the row ``document`` in (a stylesheet in its
    own referrer's, if it names none, up to ``imports`` levels up); None if it has none. Raises
    UnknownEncoding if its record (or a referrer's it depends on) cannot be read. ``dom_of``: see
    referrer_reading()."""
    return referrer_reading(document, row_of, body_of, imports, dom_of)[0]


def referrer_reading(
    document: ManifestRow | None,
    row_of: RowOf,
    body_of: BodyOf,
    imports: int = MAX_IMPORTS,
    dom_of: DomOf | None = None,
) -> Reading:
    """encoding_of() ``document``, and the URLs its iframes' srcdoc documents alone link, in the
    page as fetched and, given ``dom_of``, in its rendered DOM (which matters only to a page not
    read in UTF-8). Raises UnknownEncoding as encoding_of() does, and if that DOM cannot be read."""
    if document is None or document.outcome != FETCHED or document.content_type not in _REFERRERS:
        return NO_READING
    try:
        read = body_of(document)
    except Exception as exc:  # whatever the damage, what it was read in is not known
        raise UnknownEncoding(document.url, f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if read is None:
        raise UnknownEncoding(document.url, "its record cannot be read")
    body, content_type = read
    own = None
    if document.content_type == CSS_TYPE and imports > 0:
        try:
            own = referrer_encoding(document, row_of, body_of, imports - 1, dom_of)
        except UnknownEncoding:
            # Its referrer's encoding matters only if it names none of its own.
            if not stylesheet_names_its_encoding(body, charset_from_content_type(content_type)):
                raise
    encoding = document_encoding(body, document.content_type, content_type, own)
    if document.content_type not in HTML_TYPES:
        return encoding, frozenset()
    linked = _srcdoc_links(body, document.url, document.content_type, content_type)
    if dom_of is not None and document.dom_warc_file is not None and encoding != "utf-8":
        try:
            dom = dom_of(document)
        except Exception as exc:  # whatever the damage, what its frames link is not known
            raise UnknownEncoding(
                document.url, f"its rendered DOM: {type(exc).__name__}: {str(exc)[:200]}"
            ) from None
        if dom is None:
            raise UnknownEncoding(document.url, "the record of its rendered DOM cannot be read")
        linked |= _rendered_srcdoc_links(dom, document.url)
    return encoding, linked


def _srcdoc_links(body: bytes, url: str, mime: str, content_type: str | None) -> frozenset[str]:
    """The URLs the srcdoc documents of the HTML page ``body`` at ``url`` alone link."""
    if _SRCDOC.search(body) is None:
        return frozenset()
    return _said_srcdoc(findings(body, url, mime, content_type)[4])


def _rendered_srcdoc_links(dom: bytes, url: str) -> frozenset[str]:
    """_srcdoc_links() of the rendered DOM ``dom`` of the page at ``url``, its frames read as
    Chromium reads them (_frames_as_read()), and the URLs the UTF-8 documents of its frames of
    data: URLs link that its own documents do not.

    >>> inner = '<link rel=stylesheet href=b.css><iframe srcdoc="<link rel=stylesheet href=s.css>">'
    >>> dom = f"<iframe src='blob:http://h/1' srcdoc='{inner}'></iframe>".encode()
    >>> sorted(_rendered_srcdoc_links(dom, "http://h/"))
    ['http://h/s.css']
    >>> dom = dom.replace(b"src=", b"data-archived-charset=UTF-8 src=")
    >>> sorted(_rendered_srcdoc_links(dom, "http://h/"))
    ['http://h/b.css', 'http://h/s.css']
    >>> data = "data:application/xhtml+xml;charset=utf-8,%3Clink rel=%22stylesheet%22 href=%22http://h/x.css%22/%3E"
    >>> sorted(_rendered_srcdoc_links(f"<iframe src='{data}'></iframe>".encode(), "http://h/"))
    ['http://h/x.css']
    >>> own = b"<link rel=stylesheet href=x.css>"
    >>> sorted(_rendered_srcdoc_links(own + f"<iframe src='{data}'></iframe>".encode(), "http://h/"))
    []
    """
    if _SRCDOC.search(dom) is None and _DATA_FRAME.search(dom) is None:
        return frozenset()
    root = parse_page(dom, DOM_CONTENT_TYPE)
    if root is None:
        return frozenset()
    data_links: set[str] = set()
    _frames_as_read(root, data_links)
    _title, _base, found, _nofollow, hints = root_findings(root, url, "utf-8")
    said = _said_srcdoc(hints)
    return said | frozenset(data_links.difference(found))  # what the page links too is its own


def _frames_as_read(root: lxml.html.HtmlElement, data_links: set[str], depth: int = 0) -> bool:
    """Make the srcdoc of each iframe of ``root`` (a document of a rendered DOM, ``depth``
    srcdoc documents deep) hold what Chromium reads in UTF-8, as a srcdoc document; True if one
    changed. The DOM keeps the document of a frame of a blob: URL in its srcdoc too (beside that
    src): Chromium reads it in the charset the DOM notes (BLOB_CHARSET: its type's, else its
    page's), so unless that is UTF-8 only the frames it holds stay (an iframe srcdoc there is
    UTF-8 all the same). The document of a frame of a data: URL whose type names UTF-8, which the
    DOM keeps in that src alone, is no srcdoc document: its base URL is that data: URL, against
    which no relative URL resolves (unless a <base> of its own names an http(s) URL), so its
    links are read there, and added to ``data_links``."""
    changed = False
    for iframe in root.iter("iframe"):
        src = (iframe.get("src") or "").strip()
        srcdoc = iframe.get("srcdoc")
        if srcdoc is None:
            document = _utf8_data_document(src)
            data = parse_page(document, DOM_CONTENT_TYPE) if document is not None else None
            if data is not None:
                data_links.update(root_findings(data, src, "utf-8")[2])
            continue
        inner = parse_page(srcdoc.encode("utf-8"), DOM_CONTENT_TYPE) if depth < MAX_SRCDOC_DEPTH else None
        if inner is None:
            continue
        inner_changed = _frames_as_read(inner, data_links, depth + 1)
        if src.lower().startswith("blob:") and web_codec(iframe.get(BLOB_CHARSET)) != "utf-8":
            frames = inner.iter("iframe")
            iframe.set(
                "srcdoc", "".join(lxml.html.tostring(f, encoding="unicode", with_tail=False) for f in frames)
            )
            changed = True
        elif inner_changed:
            iframe.set("srcdoc", lxml.html.tostring(inner, encoding="unicode"))
            changed = True
    return changed


def _utf8_data_document(src: str) -> bytes | None:
    """The HTML document of the data: URL ``src`` if its type names UTF-8 (None for any other
    URL): Chromium reads such a frame's document, and a stylesheet it links, in UTF-8. The URL is
    read by the standard library's data: URL handler (RFC 2397: percent-escapes, base64).

    >>> _utf8_data_document("data:text/html;charset=UTF-8,%3Cp%3Ecaf%C3%A9").decode()
    '<p>café'
    >>> _utf8_data_document("data:text/html;base64,PHA+"), _utf8_data_document("blob:http://h/1")
    (None, None)
    """
    if src[:5].lower() != "data:":
        return None
    import urllib.request  # its import costs every crawl's start; a data: frame is rare

    try:
        with urllib.request.urlopen(src) as document:
            if document.headers.get_content_type() not in HTML_TYPES:
                return None
            if web_codec(document.headers.get_content_charset()) != "utf-8":
                return None
            body: bytes = document.read()
    except (ValueError, OSError):  # no comma, a bad type: no document Chromium reads as UTF-8
        return None
    return body


def _said_srcdoc(hints: dict[str, Hint]) -> frozenset[str]:
    """The URLs of ``hints`` (a document's findings) that srcdoc documents alone ask for."""
    return frozenset(link for link, hint in hints.items() if says(hint[3], SRCDOC))


def stored_body(
    manifest: Manifest,
    records: WarcReader,
    row: ManifestRow,
    previous: Previous | None = None,
    *,
    quiet: bool = True,
) -> tuple[bytes, str | None] | None:
    """A BodyOf over a snapshot: the payload of ``row``'s record decoded as the crawl decoded it
    (up to its limit), and its Content-Type; None if it has none or (``quiet``) it cannot be
    read. Not ``quiet``, what reading it raised is raised. The record is read to its end (its
    digests settled, its head's charset among what they vouch for) before either is given."""
    if row.warc_file is None or row.warc_offset is None:
        return None
    try:
        stored, own_headers = payload_record(manifest, records, row, previous)
        content_type = content_type_field(own_headers.headers) if own_headers else None
        coding = own_headers.get_header("Content-Encoding") if own_headers else None
        body = decode_stream(stored.raw_stream, coding).body
        read_to_end(stored)
        return body, content_type
    except Exception:
        if not quiet:
            raise
        return None  # a damaged record is reported where it is read for itself


def referrer_key(row: ManifestRow) -> str:
    """What referrer_encoding() of ``row`` depends on, to remember it by: its parent, and
    whether a redirect led to it (the chain is followed back from that parent)."""
    return f"{row.found_by == 'redirect'} {row.parent}"


def referred_by(row: ManifestRow, row_of: RowOf) -> tuple[ManifestRow | None, str]:
    """The row of the document whose link led to ``row`` (its parent, or, for where a redirect
    led, the parent of the chain's first URL), and the URL it linked (that first URL)."""
    for _hop in range(MAX_HOPS):
        parent = row_of(row.parent) if row.parent else None
        if parent is None or row.found_by != "redirect":
            return parent, row.url
        row = parent
    return None, row.url
