"""The Origin and the credentials of a browser's CORS-mode requests (a font, a module script, an
element with a crossorigin attribute, a fetch()), as Fetch gives them and Chromium sends them,
through redirects too. Pure rules, no I/O.

>>> cors_negotiation("http://site.test", "http://cdn.test/f.woff2", "font")
(('Origin', 'http://site.test'),)
>>> credentialed("same-origin", "http://site.test", "http://cdn.test/f.woff2")
False
"""

from __future__ import annotations

from archiver.request_headers import Negotiation
from archiver.urls import host_of

ELEMENT_CORS_DESTINATIONS = frozenset({"font", "image", "media", "track", "script", "style"})
"""Destinations of the CORS-mode requests an element makes (a font a stylesheet names, a module
script, an element with a crossorigin attribute), which Chromium sends with an Origin even to
their document's own origin (it names the origin on the request itself, as Fetch does for a
request other than a GET); a fetch() (also one preloaded) of its own origin goes without."""


def cors_negotiation(client: str, url: str, destination: str = "") -> Negotiation:
    """The Origin a browser sends with a CORS-mode request (a font, a module script, an element
    with a crossorigin attribute, a fetch()) of ``destination`` (link_requests.request_destination(),
    '' if not known) for ``url`` (normalised) made by a document of the origin ``client``
    (origin_of(); ``null`` once tainted): that origin, if another than the URL's, or if an
    element asks (ELEMENT_CORS_DESTINATIONS). A server that answers such requests for the
    origins it allows alone refuses one without it; one that refuses an Origin it does not
    allow (S3 does) refuses the browser too.

    >>> cors_negotiation("http://site.test", "http://cdn.test/f.woff2")
    (('Origin', 'http://site.test'),)
    >>> cors_negotiation("http://site.test", "http://site.test/f.woff2", "font")
    (('Origin', 'http://site.test'),)
    >>> cors_negotiation("http://site.test", "http://site.test/data.json", "fetch")
    ()
    """
    if client != origin_of(url) or destination in ELEMENT_CORS_DESTINATIONS:
        return (("Origin", client),)
    return ()


def with_cors(pairs: Negotiation, client: str, url: str, destination: str) -> Negotiation:
    """``pairs`` (destination_negotiation()'s) with the Origin cors_negotiation() gives, before
    them: the request is an element's (a preload's, a stylesheet's font, a crossorigin image),
    whose Origin Chromium names first; a script's fetch() names it after its Accept (the
    browser's order is kept: header_order.origin_place() reads it back).

    >>> with_cors((("Accept", "*/*"),), "http://a", "http://b/f.woff2", "font")
    (('Origin', 'http://a'), ('Accept', '*/*'))
    """
    return cors_negotiation(client, url, destination) + pairs


def origin_of(url: str) -> str:
    """The origin of a normalised URL, serialised as an Origin header gives it.

    >>> origin_of("http://h:8/a?b")
    'http://h:8'
    """
    return url[: url.index("://") + 3] + host_of(url)


def redirected_client(client: str, url: str, target: str) -> str:
    """The origin a CORS-mode request of the origin ``client`` has once ``url`` redirects it to
    ``target``: ``null`` (Fetch's tainted origin) once it went from another origin than its own
    to a third, which it keeps; else its own. Chromium sends ``Origin: null`` from then on, and
    its credentials (those for the same origin alone) go nowhere.

    >>> redirected_client("http://a", "http://a/f", "http://b/f")
    'http://a'
    >>> redirected_client("http://a", "http://b/f", "http://a/f")
    'null'
    """
    here = origin_of(url)
    return "null" if here != origin_of(target) and client != here else client


def credentialed(cors: str, client: str | None, url: str) -> bool:
    """Whether a request for ``url`` in the CORS mode ``cors`` (link_requests.cors_mode(): '' for no-cors
    or a navigation) of the origin ``client`` sends cookies and keeps those its answer sets
    (Fetch's credentials mode): same-origin ones only to their client's own origin, while it
    was never tainted.

    >>> credentialed("same-origin", "http://a", "http://a/f")
    True
    >>> credentialed("same-origin", "http://a", "http://b/f")
    False
    >>> credentialed("", None, "http://b/i.png"), credentialed("omit", "http://a", "http://a/m.json")
    (True, False)
    """
    if cors in ("", "include"):
        return True
    return cors == "same-origin" and client == origin_of(url)


def hop_negotiation(pairs: Negotiation, client: str, target: str) -> Negotiation:
    """What a CORS-mode request sent with ``pairs`` is sent with to ``target``, where a redirect
    leads it, its origin now ``client`` (redirected_client()'s): an Origin of ``client`` where
    the hop before sent one (Chromium keeps the Origin an element's request names, to the page's
    own origin too), else where cors_negotiation() sends one.

    >>> hop_negotiation((("Accept", "*/*"), ("Origin", "http://a")), "http://a", "http://a/f2")
    (('Accept', '*/*'), ('Origin', 'http://a'))
    >>> hop_negotiation((("Accept", "*/*"),), "http://a", "http://a/d2.json")
    (('Accept', '*/*'),)
    """
    if any(name.lower() == "origin" for name, _ in pairs):  # in its place: header_order.origin_place()
        return tuple((name, client if name.lower() == "origin" else value) for name, value in pairs)
    return pairs + cors_negotiation(client, target)
