"""The documents an iframe holds in its srcdoc attribute, and what its iframe tells of them.

A srcdoc document lives at its page's base URL, UTF-8 whatever its page's encoding; a rendered
DOM keeps there too the document of a frame of a blob: URL, which lives at that URL, in the
charset the DOM notes (BLOB_CHARSET). The crawl's links, the mirror and verify read them alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

import lxml.etree
import lxml.html

from archiver.content import bounded_document
from archiver.encodings import web_codec
from archiver.links import is_fetchable_reference
from archiver.urls import ASCII_WHITESPACE, absolute_url


def srcdocs(iframes: Iterable[lxml.etree._Element]) -> list[str]:
    """The documents ``iframes`` hold in their srcdoc attributes (their text, unescaped)."""
    return [text for iframe in iframes if (text := iframe.get("srcdoc")) is not None]


def sandboxes(iframe: lxml.etree._Element) -> bool:
    """Whether the sandbox attribute of ``iframe`` leaves the document it holds no origin (its
    tokens, ASCII case-insensitive, do not allow-same-origin): Chromium sends its CORS requests
    with Origin: null.

    >>> [sandboxes(lxml.html.fragment_fromstring(f"<iframe {a}></iframe>")) for a in ("", "sandbox",
    ...     "sandbox='allow-scripts'", "sandbox='allow-scripts ALLOW-SAME-ORIGIN'")]
    [False, True, True, False]
    """
    value = iframe.get("sandbox")
    tokens = value.translate(_ASCII_LOWER).split() if value is not None else ()
    return value is not None and "allow-same-origin" not in tokens


class Attributes(Protocol):
    """An element's attributes, read as lxml's elements give them."""

    def get(self, name: str, default: str | None = None, /) -> str | None: ...


BLOB_CHARSET = "data-archived-charset"
"""The attribute in which a rendered DOM notes the charset the document of a frame of a blob: URL
was read in (crawling/page_scripts/dom.js), which it keeps in the frame's srcdoc, beside that src."""


class FrameDocument(NamedTuple):
    """A document an iframe holds in its srcdoc attribute."""

    text: str
    sandboxed: bool
    """Whether the iframe's sandbox leaves it no origin (sandboxes())."""
    own_url: str | None = None
    """For the document of a frame of a blob: URL a rendered DOM keeps (its BLOB_CHARSET noted):
    that URL, where it lives, against which no relative URL resolves (a <base> of its own naming
    an http(s) URL aside), as in Chromium; None for a srcdoc document, at its page's base URL."""
    charset: str = "utf-8"
    """The encoding (a codec) it was read in: a srcdoc document's UTF-8, a blob: URL's the one
    noted."""


def srcdoc_documents(iframes: Iterable[lxml.etree._Element]) -> list[FrameDocument]:
    """The srcdoc documents of ``iframes`` (srcdocs()), each with what its iframe tells of it.

    >>> blob = '<iframe src="blob:http://h/1" data-archived-charset="Shift_JIS" srcdoc="x"></iframe>'
    >>> srcdoc_documents([lxml.html.fragment_fromstring(blob)])
    [FrameDocument(text='x', sandboxed=False, own_url='blob:http://h/1', charset='web-shift_jis')]
    """
    found = []
    for iframe in iframes:
        text = iframe.get("srcdoc")
        if text is None:
            continue
        own_url = blob_document_url(iframe)
        if own_url is None:
            found.append(FrameDocument(text, sandboxes(iframe)))
        else:
            charset = web_codec(iframe.get(BLOB_CHARSET)) or "utf-8"
            found.append(FrameDocument(text, sandboxes(iframe), own_url, charset))
    return found


def blob_document_url(iframe: Attributes) -> str | None:
    """The blob: URL where the document a rendered DOM keeps in the srcdoc of ``iframe`` lives
    (its BLOB_CHARSET noted beside that src); None for a srcdoc document of its own."""
    src = (iframe.get("src") or "").strip(ASCII_WHITESPACE)
    return src if iframe.get(BLOB_CHARSET) is not None and src[:5].lower() == "blob:" else None


def resolves_to_nothing(value: str, base: str) -> bool:
    """Whether the link ``value``, in the document of a blob: or data: URL (at ``base``: no <base>
    of its own naming an http(s) URL), is a relative one, which resolves to nothing there: Chromium
    loads nothing for it, a url() of its CSS or an @import among them. Kept as it is in the srcdoc
    the mirror holds that document in, it would resolve against the page's file instead.

    >>> [resolves_to_nothing(v, "blob:http://h/1") for v in ("a.png", "/a.png", "http://h/a.png", "")]
    [True, True, False, False]
    >>> resolves_to_nothing("a.png", "http://h/"), resolves_to_nothing("a.png", "data:text/html,x")
    (False, True)
    """
    return (
        base[:5].lower() in OWN_URL_SCHEMES
        and is_fetchable_reference(value)
        and absolute_url(value, base) is None
    )


OWN_URL_SCHEMES = ("blob:", "data:")
"""The schemes of the URLs of documents that live at a URL of their own, against which no relative
URL resolves: a frame of a blob: URL a rendered DOM keeps in a srcdoc, the document of a frame of a
data: URL the mirror keeps in one (mirror/document_edits.py)."""


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def srcdoc_body(text: str) -> bytes:
    """A srcdoc document as the bytes it is read from: UTF-8 (its encoding, whatever its page's),
    cut at MAX_MARKUP tags as a page is (its tags are no tags of its page: the page's cut did not
    count them)."""
    return bounded_document(text.encode("utf-8", "surrogatepass"), "text/html")[0]
