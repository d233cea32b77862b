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
about:blank frame it wrote: UTF-8 too in Chromium), and so are those of a frame of a data: URL
whose type names UTF-8, which the crawl learnt from the browser's requests (the charset of the
frame's document). A frame of a blob: URL, whose document the DOM keeps in its srcdoc too, and
of a data: URL whose type names another charset (Shift_JIS in a windows-1252 page) is read in
its own, at its own URL, by Chromium and so here (frame_documents.py): the stylesheets it alone
links too. A snapshot of an older crawl is read the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

import lxml.html

from archiver.content import CSS_TYPE, HTML_TYPES, SVG_TYPE, decode_stream
from archiver.encodings import stylesheet_names_its_encoding, web_codec
from archiver.errors import UnknownEncoding
from archiver.findings import document_encoding, findings, parse_page, root_findings
from archiver.frame_documents import BLOB_CHARSET
from archiver.link_requests import SRCDOC, Hint, read_in, says
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

Reading = tuple[str | None, Mapping[str, str]]
"""What a document that refers to stylesheets tells of them: the encoding it was read in (None:
it has none), and the URLs its frames' documents alone link, by the encoding (a codec) those
are read in: an iframe srcdoc's UTF-8, a data: or blob: URL's the charset of its type."""
NO_READING: Reading = (None, MappingProxyType({}))
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

    >>> encoding_for("http://h/s.css", ("cp1252", {"http://h/f.css": "utf-8"}))
    'cp1252'
    >>> encoding_for("http://h/f.css", ("cp1252", {"http://h/f.css": "utf-8"}))
    'utf-8'
    """
    encoding, by_frames = reading
    return by_frames.get(linked, encoding)


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
    """encoding_of() ``document``, and the URLs its frames' documents alone link, by the encoding
    they are read in: its iframes' srcdoc documents' in the page as fetched and, given
    ``dom_of``, the frames' of its rendered DOM. Raises UnknownEncoding as encoding_of() does, and
    if that DOM cannot be read."""
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
        return encoding, NO_READING[1]
    linked = dict.fromkeys(_srcdoc_links(body, document.url, document.content_type, content_type), "utf-8")
    if dom_of is not None and document.dom_warc_file is not None:
        try:
            dom = dom_of(document)
        except Exception as exc:  # whatever the damage, what its frames link is not known
            raise UnknownEncoding(
                document.url, f"its rendered DOM: {type(exc).__name__}: {str(exc)[:200]}"
            ) from None
        if dom is None:
            raise UnknownEncoding(document.url, "the record of its rendered DOM cannot be read")
        linked.update(_rendered_frame_encodings(dom, document.url))
    return encoding, linked


def _srcdoc_links(body: bytes, url: str, mime: str, content_type: str | None) -> frozenset[str]:
    """The URLs the srcdoc documents of the HTML page ``body`` at ``url`` alone link."""
    if _SRCDOC.search(body) is None:
        return frozenset()
    return _said_srcdoc(findings(body, url, mime, content_type)[4])


def _rendered_frame_encodings(dom: bytes, url: str) -> dict[str, str]:
    """The URLs the frames of the rendered DOM ``dom`` of the page at ``url`` alone link, by the
    encoding Chromium reads them in: its srcdoc documents' (UTF-8), and the documents' of its
    frames of data: and blob: URLs (their types' charsets, _frames_as_read()), but what its own
    documents link too.

    >>> inner = '<link rel=stylesheet href=b.css><iframe srcdoc="<link rel=stylesheet href=s.css>">'
    >>> dom = f"<iframe src='blob:http://h/1' srcdoc='{inner}'></iframe>".encode()
    >>> _rendered_frame_encodings(dom, "http://h/")
    {'http://h/s.css': 'utf-8'}
    >>> noted = dom.replace(b"src=", b"data-archived-charset=UTF-8 src=")
    >>> _rendered_frame_encodings(noted, "http://h/")  # no relative URL resolves at a blob: URL
    {}
    >>> inner = inner.replace("href=", "href=http://h/")
    >>> dom = f"<iframe src='blob:http://h/1' srcdoc='{inner}'></iframe>".encode()
    >>> sorted(_rendered_frame_encodings(dom.replace(b"src=", b"data-archived-charset=UTF-8 src="), "http://h/").items())
    [('http://h/b.css', 'utf-8'), ('http://h/s.css', 'utf-8')]
    >>> sorted(_rendered_frame_encodings(dom.replace(b"src=", b"data-archived-charset=Shift_JIS src="), "http://h/").items())
    [('http://h/b.css', 'web-shift_jis'), ('http://h/s.css', 'utf-8')]
    >>> data = "data:application/xhtml+xml;charset=utf-8,%3Clink rel=%22stylesheet%22 href=%22http://h/x.css%22/%3E"
    >>> _rendered_frame_encodings(f"<iframe src='{data}'></iframe>".encode(), "http://h/")
    {'http://h/x.css': 'utf-8'}
    >>> own = b"<link rel=stylesheet href=x.css>"
    >>> _rendered_frame_encodings(own + f"<iframe src='{data}'></iframe>".encode(), "http://h/")
    {}
    """
    if _SRCDOC.search(dom) is None and _DATA_FRAME.search(dom) is None:
        return {}
    root = parse_page(dom, DOM_CONTENT_TYPE)
    if root is None:
        return {}
    built: dict[str, str] = {}
    _frames_as_read(root, built)
    _title, _base, found, _nofollow, hints = root_findings(root, url, "utf-8")
    encodings = {link: encoding for link, encoding in built.items() if link not in found}
    encodings.update(_said_read_in(hints))  # what its own link too is its own
    return encodings


def _frames_as_read(root: lxml.etree._Element, built: dict[str, str], depth: int = 0) -> bool:
    """Make the srcdoc of each iframe of ``root`` (a document of a rendered DOM, ``depth``
    srcdoc documents deep) hold what Chromium reads as a srcdoc document, or as the document of a
    blob: URL the DOM keeps there (findings reads that one at its URL, in the charset the DOM
    notes: frame_documents.py); True if one changed. Add to ``built`` the links of the documents
    of its frames of data: URLs, by the encoding (a codec) their types name.

    The document of a frame of a data: URL, which the DOM keeps in that src alone, is no srcdoc
    document: its base URL is its own data: URL, against which no relative URL resolves (unless
    a <base> of its own names an http(s) URL), so its links are read there. A DOM of an older
    crawl noted no charset of a blob: URL's document: only the frames it holds stay there, and
    its own links are read in its page's encoding, as that crawl read them."""
    changed = False
    for iframe in root.iter("iframe"):
        src = (iframe.get("src") or "").strip()
        srcdoc = iframe.get("srcdoc")
        if srcdoc is None:
            data = _data_document(src)
            if data is not None:
                body, charset = data
                document = parse_page(body, f"text/html; charset={charset}")
                if document is not None:
                    built.update(dict.fromkeys(root_findings(document, src, charset)[2], charset))
            continue
        inner = parse_page(srcdoc.encode("utf-8"), DOM_CONTENT_TYPE) if depth < MAX_SRCDOC_DEPTH else None
        if inner is None:
            continue
        inner_changed = _frames_as_read(inner, built, depth + 1)
        if src.lower().startswith("blob:") and iframe.get(BLOB_CHARSET) is None:
            # The DOM of an older crawl, which noted no charset: what the blob: URL's document
            # links is read in its page's, but what the srcdoc frames it holds link.
            frames = list(inner.iter("iframe"))
            kept = "".join(lxml.html.tostring(f, encoding="unicode", with_tail=False) for f in frames)
            iframe.set("srcdoc", kept)
            changed = True
        elif inner_changed:
            iframe.set("srcdoc", lxml.html.tostring(inner, encoding="unicode"))
            changed = True
    return changed


def _data_document(src: str) -> tuple[bytes, str] | None:
    """The HTML document of the data: URL ``src`` and the encoding (a codec) Chromium reads it
    in, that its type names (None for any other URL, and for one whose type names none: it is
    read in its page's then, as the page's own links are).

    >>> _data_document("data:text/html;charset=UTF-8,%3Cp%3Ecaf%C3%A9")
    (b'<p>caf\\xc3\\xa9', 'utf-8')
    >>> _data_document("data:text/html;base64,PHA+"), _data_document("blob:http://h/1")
    (None, None)
    """
    found = data_document(src)
    return None if found is None or found[1] is None else (found[0], found[1])


def data_document(src: str) -> tuple[bytes, str | None] | None:
    """The HTML document of the data: URL ``src`` and the encoding (a codec) its type names (None
    if it names none); None for any other URL, or one of another type. The URL is read by the
    standard library's data: URL handler (RFC 2397: percent-escapes, base64).

    >>> data_document("data:text/html,%3Cp%3Ex"), data_document("data:image/png,x")
    ((b'<p>x', None), None)
    """
    if src[:5].lower() != "data:":
        return None
    import urllib.request  # its import costs every crawl's start; a data: frame is rare

    try:
        with urllib.request.urlopen(src) as document:
            if document.headers.get_content_type() not in HTML_TYPES:
                return None
            charset = web_codec(document.headers.get_content_charset())
            body: bytes = document.read()
    except (ValueError, OSError):  # no comma, a bad type: no document Chromium reads
        return None
    return body, charset


def _said_read_in(hints: dict[str, Hint]) -> dict[str, str]:
    """The URLs of ``hints`` (a rendered DOM's findings) that its frames' documents alone ask
    for, by the encoding (a codec) those are read in: a srcdoc document's UTF-8 (SRCDOC), a blob:
    URL's the one noted (READ_IN)."""
    said = {link: read_in(hint[3]) for link, hint in hints.items()}
    said.update(dict.fromkeys(_said_srcdoc(hints), "utf-8"))
    return {link: codec for link, codec in said.items() if codec is not None}


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
    read = stored_page(manifest, records, row, previous, quiet=quiet)
    return None if read is None else read[:2]


def stored_page(
    manifest: Manifest,
    records: WarcReader,
    row: ManifestRow,
    previous: Previous | None = None,
    *,
    quiet: bool = True,
) -> tuple[bytes, str | None, str | None, tuple[str, ...]] | None:
    """stored_body(), the value of the answer's Refresh header (None: none), which names a
    link of a page (findings.with_refresh()), and its X-Robots-Tag values, which may forbid
    following its links."""
    if row.warc_file is None or row.warc_offset is None:
        return None
    try:
        stored, own_headers = payload_record(manifest, records, row, previous)
        content_type = content_type_field(own_headers.headers) if own_headers else None
        coding = own_headers.get_header("Content-Encoding") if own_headers else None
        refresh = own_headers.get_header("Refresh") if own_headers else None
        pairs = own_headers.headers if own_headers else []
        robots = tuple(value for name, value in pairs if name.lower() == "x-robots-tag")
        body = decode_stream(stored.raw_stream, coding).body
        read_to_end(stored)
        return body, content_type, refresh, robots
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
