"""The rendered DOM of a page as a WARC resource record, tied to the page's response.

A page rendered in a browser keeps two things: the exchange as the server sent
it (the response record, which pywb or ReplayWeb.page replay with its
scripts), and the document those scripts built (this record), which becomes
the page's file in the offline mirror.

The record's WARC-Target-URI is ``urn:dom:`` + the page URL, the
``urn:<kind>:<url>`` form browsertrix-crawler gives its own records about a page
(``urn:text:``, ``urn:pageinfo:``, ``urn:view:``). A record whose target were
the page URL itself would compete with the response in replay tools, which
serve the capture closest in time; under its own URN it is indexed (cdxj-indexer
keys it by that URN) and never served in place of the page. WARC-Concurrent-To
names the response (or revisit) record of the page it was rendered from, and
WARC-Page-Charset the encoding the browser read the page in (``Shift_JIS``):
the DOM is kept as UTF-8, but the queries of its links are written in the
page's own encoding, as the browser wrote them. WARC-Page-Frames names the
pages, found otherwise (a link of another page first), that the render loaded
as frames (ManifestRow.framed_by): what they asked for ran in this render, and
a manifest written again from the WARC files learns it from nothing else.

>>> import gzip
>>> member = dom_record(RenderedDom("http://h/", DATE, b"<p>x</p>", "<urn:uuid:r>"), "<urn:uuid:d>")
>>> print(gzip.decompress(member).decode().split("\\r\\n\\r\\n")[0].replace("\\r\\n", "\\n"))
WARC/1.1
WARC-Date: 2026-01-02T03:04:05.000000Z
WARC-Type: resource
WARC-Record-ID: <urn:uuid:d>
WARC-Target-URI: urn:dom:http://h/
WARC-Payload-Digest: sha1:VJACE4T6MGCHDW522T7IDNT3FMVOPRWL
WARC-Concurrent-To: <urn:uuid:r>
WARC-Block-Digest: sha1:VJACE4T6MGCHDW522T7IDNT3FMVOPRWL
Content-Type: text/html; charset=utf-8
Content-Length: 8
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from archiver.warc import records

DOM_PREFIX = "urn:dom:"
CHARSET_FIELD = "WARC-Page-Charset"
FRAMES_FIELD = "WARC-Page-Frames"
"""The URLs, between spaces (a URL holds none), of the pages found otherwise loaded as its frames."""
DOM_CONTENT_TYPE = "text/html; charset=utf-8"
DATE = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
"""A fixed date for examples."""


def dom_target(page_url: str) -> str:
    """The WARC-Target-URI of the DOM record of ``page_url``."""
    return DOM_PREFIX + page_url


def page_of(target: str) -> str | None:
    """The page URL a DOM record's target names, or None if it is no DOM record's.

    >>> page_of("urn:dom:http://h/a"), page_of("http://h/a")
    ('http://h/a', None)
    """
    return target[len(DOM_PREFIX) :] if target.startswith(DOM_PREFIX) else None


@dataclass(frozen=True)
class RenderedDom:
    """A page's document as a browser left it, serialised as UTF-8 HTML."""

    page_url: str
    date: datetime
    """When the DOM was taken."""
    html: bytes
    concurrent_to: str | None
    """WARC-Record-ID of the page's response (or revisit) record."""
    charset: str | None = None
    """The encoding the browser read the page in (document.characterSet), if known."""
    frames: tuple[str, ...] = ()
    """The pages, found otherwise, the render loaded as frames and first noted as framed by it."""


def dom_record(dom: RenderedDom, record_id: str) -> bytes:
    """The resource record of ``dom``, as one gzip member."""
    fields = [
        ("WARC-Date", records.warc_date(dom.date)),
        ("WARC-Type", "resource"),
        ("WARC-Record-ID", record_id),
        ("WARC-Target-URI", dom_target(dom.page_url)),
        # The block is the payload: warcio and cdxj-indexer give resources this digest too.
        ("WARC-Payload-Digest", records.sha1_digest(hashlib.sha1(dom.html))),
    ]
    if dom.concurrent_to:
        fields.append(("WARC-Concurrent-To", dom.concurrent_to))
    if dom.charset:
        fields.append((CHARSET_FIELD, dom.charset))
    if dom.frames:
        fields.append((FRAMES_FIELD, " ".join(dom.frames)))
    return records.encode_record(fields, DOM_CONTENT_TYPE, dom.html)
