"""How a browser requests what an element of a page refers to: the request's destination
(Fetch's image, style, script, font...) and, in CORS mode, its credentials mode, as HTML's
elements and attributes decide them; and the Hint the crawl carries with each link found,
which adds the referrer policy and what a browser knows of the document asking.

links.py says where a page's references are; this says how each is asked for, which the
crawl repeats (request_headers.py's Accept, crawling/frontier.py's credentials).

>>> link = lxml.html.fragment_fromstring('<link rel="preload" as="font" href="f.woff2" crossorigin>')
>>> destination = request_destination(link, "href")
>>> destination, cors_mode(link, "href", destination)
('font', 'same-origin')
"""

from __future__ import annotations

from collections.abc import Iterable

import lxml.etree
import lxml.html

from archiver.frame_documents import sandboxes
from archiver.links import CSS_ATTRS, PRELOAD_DESTINATIONS, preload_as
from archiver.referrer_policy import element_policy, meta_policy

IMAGE_RELS = frozenset({"icon", "shortcut", "apple-touch-icon", "mask-icon", "image_src"})
"""<link rel=...> values whose target is an image."""


def request_destination(element: lxml.etree._Element, attribute: str | None) -> str:
    """The destination (Fetch's: image, style, script, font, media, track, manifest; 'fetch' for a preload
    as=fetch, whose destination is Fetch's empty one; 'prefetch' for a <link rel=prefetch>, an
    empty one asked for as request_headers.PREFETCH says) of the request a browser makes
    for a URL in ``attribute`` of ``element`` (None: a <style>'s text); '' for a document or one
    the element does not tell. A URL in CSS is taken for an image (see css_destination()).

    >>> request_destination(lxml.html.fragment_fromstring('<link rel="preload" as="font" href="f">'), "href")
    'font'
    """
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if attribute is None or attribute in CSS_ATTRS:
        return "image"
    if tag == "link":
        rels = set((element.get("rel") or "").lower().split())
        if attribute == "imagesrcset" or rels & IMAGE_RELS:
            return "image"
        if "stylesheet" in rels:
            return "style"
        if "manifest" in rels:
            return "manifest"
        if "modulepreload" in rels:
            return "script"
        if "preload" in rels:
            return PRELOAD_DESTINATIONS.get(preload_as(element), "")
        if "prefetch" in rels:
            return "prefetch"
        return ""
    if tag in ("img", "image", "feimage", "input") or attribute in ("poster", "background"):
        return "image"
    if tag == "source":
        return "image" if attribute == "srcset" else "media"  # <picture>'s, or <video>'s
    if tag == "script":
        return "script"
    if tag in ("video", "audio"):
        return "media"
    if tag == "track":
        return "track"  # a text track: asked for like a script's text, not like media
    return ""


CORS_ELEMENTS = frozenset({"img", "script", "link", "audio", "video"})
"""Elements whose ``crossorigin`` attribute makes their request a CORS-mode one."""
SAME_ORIGIN = "same-origin"
"""The credentials mode of most CORS-mode requests (Fetch's): cookies go to the page's own origin."""
INCLUDE = "include"
"""The credentials mode of a ``crossorigin=use-credentials`` element: cookies go wherever."""
OMIT = "omit"
"""The credentials mode of a web app manifest's request: cookies go nowhere."""


def _cors_setting(element: lxml.etree._Element, default: str) -> str:
    """The credentials mode an element's ``crossorigin`` attribute (HTML's CORS settings attribute)
    gives: ``use-credentials`` includes them, any other value (``anonymous``, '', a typo) keeps
    them to the page's origin; ``default`` if it has none."""
    value = element.get("crossorigin")
    if value is None:
        return default
    return INCLUDE if value.strip().lower() == "use-credentials" else SAME_ORIGIN


def source_owner(element: lxml.etree._Element) -> lxml.etree._Element | None:
    """The parent of ``element``, past the <source>s libxml2's parser nests the elements after
    them in (it knows no void <source>): the <picture>, <video> or <audio> of a <source>."""
    parent = element.getparent()
    while parent is not None and parent.tag == "source":
        parent = parent.getparent()
    return parent


def picture_of(element: lxml.etree._Element) -> lxml.etree._Element | None:
    """The <picture> ``element`` (a <source> or an <img>) is of, if any."""
    owner = source_owner(element)
    return owner if owner is not None and owner.tag == "picture" else None


def cors_mode(element: lxml.etree._Element, attribute: str | None, destination: str) -> str:
    """The credentials mode of the request a browser makes for a URL in ``attribute`` of
    ``element`` (None: a <style>'s text) in CORS mode, sending the page's Origin; '' for a
    request in no-cors mode (an image, a classic script, a preload without ``crossorigin``),
    whose credentials always go. In CORS mode: a font a stylesheet names (``destination``, as
    css_destination() gives it), a module script and a module preload (``same-origin`` unless
    their ``crossorigin`` says ``use-credentials``), a web app manifest (``omit``, alike), an
    element with a ``crossorigin`` attribute (a <source>'s or <track>'s: its media element's; a
    <picture>'s <source>: its <img>'s), but for a <video>'s poster, which is no-cors.

    >>> cors_mode(lxml.html.fragment_fromstring('<script type=module src=m.js></script>'), "src", "script")
    'same-origin'
    >>> img = lxml.html.fragment_fromstring('<img crossorigin=use-credentials src=a.png>')
    >>> cors_mode(img, "src", "image")
    'include'
    >>> cors_mode(lxml.html.fragment_fromstring('<img src=a.png>'), "src", "image")
    ''
    """
    if attribute is None or attribute in CSS_ATTRS:
        return SAME_ORIGIN if destination == "font" else ""
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if tag in ("source", "track"):
        owner = source_owner(element)
        if owner is not None and owner.tag == "picture":  # its <img> asks, for the source chosen
            owner = next(owner.iter("img"), owner)
        element = owner
        if element is None or not isinstance(element.tag, str):
            return ""
        tag = element.tag.lower()
    if attribute == "poster":
        return ""
    if tag not in CORS_ELEMENTS:
        return SAME_ORIGIN if destination == "font" else ""
    if tag == "script":
        module = (element.get("type") or "").strip().lower() == "module"
        return _cors_setting(element, SAME_ORIGIN if module else "")
    if tag == "link":
        rels = set((element.get("rel") or "").lower().split())
        if "manifest" in rels:
            return _cors_setting(element, OMIT)
        if "modulepreload" in rels:
            return _cors_setting(element, SAME_ORIGIN)
        # A preload (as=font, as=fetch too) is in CORS mode by its crossorigin alone, as in
        # Chromium: without, it is no-cors (and the font a stylesheet then asks for, in CORS
        # mode, is another request).
    return _cors_setting(element, "")


Hint = tuple[str, str, str, str]
"""(referrer policy, destination, CORS mode, document) of the request for a link: what its element
(or its page's <meta name="referrer">) gives ('' for neither), referrer_policy.py's,
request_destination()'s and cors_mode()'s (the credentials mode of a CORS-mode
request, '' for a no-cors one), and what a browser knows of the document that asks for it or
that it loads: words among NO_ORIGIN, FRAME, SANDBOXED and SRCDOC ('' for none)."""
NO_HINT: Hint = ("", "", "", "")
NO_ORIGIN = "opaque"
"""Asked for by a document with no origin (a srcdoc document its iframe sandboxes): a CORS-mode
request sends Origin: null, and no credentials of an origin."""
FRAME = "frame"
"""An iframe's or frame's document: its own requests are those of a document of its own."""
SANDBOXED = "sandboxed"
"""An iframe's document its sandbox leaves no origin (frame_documents.sandboxes()), nor its frames."""
SRCDOC = "srcdoc"
"""Asked for by an iframe's srcdoc document: a stylesheet it links that names no charset is read
in that document's encoding, UTF-8, as Chromium reads it, not in its page's."""


READ_IN = "read-in:"
"""Prefix of the word that names the encoding (a codec) Chromium read a frame's document built
from no http(s) URL of its own in, when that is neither UTF-8 (SRCDOC) nor its page's (a
blob: or data: URL whose type names Shift_JIS): a stylesheet it links that names no charset is
read in it."""


def read_in(document: str) -> str | None:
    """The codec a READ_IN word of the document words ``document`` names, if one does.

    >>> read_in("sandboxed read-in:web-shift_jis"), read_in("srcdoc")
    ('web-shift_jis', None)
    """
    for word in document.split():
        if word.startswith(READ_IN):
            return word[len(READ_IN) :] or None
    return None


def tells_reading(word: str) -> bool:
    """Whether the document word ``word`` tells what a stylesheet is read in (SRCDOC, READ_IN).

    >>> tells_reading("srcdoc"), tells_reading("read-in:web-shift_jis"), tells_reading("frame")
    (True, True, False)
    """
    return word == SRCDOC or word.startswith(READ_IN)


def says(document: str, word: str) -> bool:
    """Whether the document words ``document`` (a Hint's, a QueueItem's) hold ``word``.

    >>> says("frame sandboxed", SANDBOXED), says("", SRCDOC)
    (True, False)
    """
    return word in document.split()


def frame_words(element: lxml.etree._Element, attribute: str | None) -> str:
    """The document words of a Hint for a URL in ``attribute`` of ``element``: FRAME for the src of
    an iframe or frame, with SANDBOXED for an iframe that sandboxes it.

    >>> frame_words(lxml.html.fragment_fromstring("<iframe sandbox src=f></iframe>"), "src")
    'frame sandboxed'
    """
    tag = element.tag if isinstance(element.tag, str) else ""
    if attribute != "src" or tag not in ("iframe", "frame"):
        return ""
    return f"{FRAME} {SANDBOXED}" if tag == "iframe" and sandboxes(element) else FRAME


def policy_sandboxes(policies: Iterable[str]) -> bool:
    """Whether a document's Content-Security-Policy header fields (``policies``) sandbox it without
    allow-same-origin, leaving it no origin as an iframe's sandbox does: Chromium sends its CORS
    requests, and its frames', with Origin: null. Each field may hold several policies (comma),
    all enforced; a policy's first directive of a name counts (Report-Only fields enforce
    nothing, and a <meta> policy cannot sandbox).

    >>> policy_sandboxes(["default-src 'self'; sandbox allow-scripts"]), policy_sandboxes(["SANDBOX"])
    (True, True)
    >>> policy_sandboxes(["sandbox allow-scripts Allow-Same-Origin", "img-src *"])
    False
    """
    for field in policies:
        for policy in field.split(","):
            seen: set[str] = set()
            for directive in policy.split(";"):
                name, *tokens = directive.lower().split() or [""]
                if name == "sandbox" and name not in seen and "allow-same-origin" not in tokens:
                    return True
                seen.add(name)
    return False


def meta_referrer(metas: Iterable[lxml.etree._Element]) -> str:
    """The referrer policy the <meta name="referrer"> elements of a page give: the last valid one
    (each sets the page's policy as it is met), '' if none."""
    found = ""
    for meta in metas:
        if (meta.get("name") or "").strip().lower() == "referrer":
            found = meta_policy(meta.get("content")) or found
    return found


def cors_font(destination: str) -> str:
    """The CORS mode of a request for a URL in CSS of ``destination``: a font's is CORS-mode,
    its credentials for the page's origin alone (cors_mode())."""
    return SAME_ORIGIN if destination == "font" else ""


REQUEST_ATTRIBUTES = ("rel", "as", "crossorigin", "type", "referrerpolicy", "sandbox")
"""What element_request()'s rules read of an element, with its tag: the same values, the same request."""
_REQUEST_NAMES = frozenset(REQUEST_ATTRIBUTES)
_OWNED = frozenset({"source", "track"})
"""Elements whose request their media element's attributes decide (cors_mode())."""
Request = tuple[str, str, str, str]
"""(referrer policy, destination, CORS mode, document words): a Hint as its element gives it."""


def element_request(
    element: lxml.etree._Element, attribute: str, known: dict[tuple[str | None, ...], Request]
) -> Request:
    """How a browser requests a URL in ``attribute`` (no CSS attribute) of ``element``: its
    element_policy() ('' for none), request_destination(), cors_mode() and frame_words().

    Remembered in ``known`` (one page's) for the elements alike in their tag and
    REQUEST_ATTRIBUTES: most of a page's links are <a href>s with none of them, asked
    once instead of a few hundred times. A <source>'s or <track>'s is not remembered.

    >>> known = {}
    >>> [element_request(lxml.html.fragment_fromstring(tag), "href", known)
    ...  for tag in ('<a href=a>', '<a href=b>', '<link rel=stylesheet href=s>', '<a rel=noreferrer href=c>')]
    [('', '', '', ''), ('', '', '', ''), ('', 'style', '', ''), ('no-referrer', '', '', '')]
    >>> len(known)
    3
    """
    tag = element.tag
    if tag in _OWNED:
        return _request(element, attribute)
    if _REQUEST_NAMES.isdisjoint(element.keys()):
        key: tuple[str | None, ...] = (tag, attribute)
    else:
        key = (tag, attribute, *map(element.get, REQUEST_ATTRIBUTES))
    found = known.get(key)
    if found is None:
        found = known[key] = _request(element, attribute)
    return found


def _request(element: lxml.etree._Element, attribute: str) -> Request:
    destination = request_destination(element, attribute)
    return (
        element_policy(element.tag, element.attrib),
        destination,
        cors_mode(element, attribute, destination),
        frame_words(element, attribute),
    )
