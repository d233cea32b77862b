"""Referrer policies (W3C Referrer Policy): which Referer a browser sends for a request a page
makes, as the page, its elements and its answer's headers choose. Pure rules, no I/O.

A page's policy is its answer's ``Referrer-Policy`` header, which a
``<meta name="referrer">`` overrides; an element's ``referrerpolicy`` attribute,
or ``rel="noreferrer"`` on a link, overrides both for the request it makes. With
none, the default is strict-origin-when-cross-origin. From https to http no
policy but unsafe-url, origin and origin-when-cross-origin sends anything.

>>> referer("https://h/a?q", "https://cdn/x.png"), referer("https://h/a?q", "https://h/x", "no-referrer")
('https://h/', None)
>>> header_policy("no-referrer, same-origin, bogus"), meta_policy("never")
('same-origin', 'no-referrer')
"""

from __future__ import annotations

from collections.abc import Iterable

from archiver.urls import host_of

NO_REFERRER = "no-referrer"
DEFAULT = "strict-origin-when-cross-origin"
POLICIES = frozenset(
    {
        NO_REFERRER,
        "no-referrer-when-downgrade",
        "same-origin",
        "origin",
        "strict-origin",
        "origin-when-cross-origin",
        DEFAULT,
        "unsafe-url",
    }
)
LEGACY_META = {
    "never": NO_REFERRER,
    "default": DEFAULT,
    "always": "unsafe-url",
    "origin-when-crossorigin": "origin-when-cross-origin",
}
"""Values a <meta name="referrer"> may still give (HTML, 4.2.5.2), and the policies they mean."""
MAX_REFERRER = 4096
"""A longer referrer URL is sent as its origin alone (the Referrer Policy spec allows it; Chromium
and Firefox do so)."""
POLICY_ELEMENTS = frozenset({"a", "area", "img", "iframe", "link", "script"})
"""Elements whose ``referrerpolicy`` attribute chooses the policy of the request they make."""
NOREFERRER_ELEMENTS = frozenset({"a", "area"})
"""Elements whose ``rel="noreferrer"`` sends their link's request with no Referer."""


def header_policy(values: Iterable[str] | str | None) -> str:
    """The policy a ``Referrer-Policy`` header gives (each of ``values`` a comma-separated
    list: the last policy known wins, unknown ones are ignored); '' if it gives none."""
    if values is None:
        return ""
    if isinstance(values, str):
        values = (values,)
    found = ""
    for value in values:
        for token in value.split(","):
            token = token.strip().lower()
            if token in POLICIES:
                found = token
    return found


def meta_policy(content: str | None) -> str:
    """The policy a ``<meta name="referrer" content=...>`` gives ('' if none: it is ignored)."""
    value = (content or "").strip().lower()
    value = LEGACY_META.get(value, value)
    return value if value in POLICIES else ""


def element_policy(tag: str, attributes: dict[str, str] | object) -> str:
    """The policy an element gives the request it makes: ``rel="noreferrer"`` on a link,
    else its ``referrerpolicy`` attribute ('' if neither)."""
    get = getattr(attributes, "get", None)
    if get is None:
        return ""
    if tag in NOREFERRER_ELEMENTS and "noreferrer" in (get("rel") or "").lower().split():
        return NO_REFERRER
    if tag in POLICY_ELEMENTS:
        value = (get("referrerpolicy") or "").strip().lower()
        if value in POLICIES:
            return value
    return ""


def _origin(url: str) -> str:
    return url[: url.index("://") + 3] + host_of(url)


def referer(page: str | None, target: str, policy: str = "") -> str | None:
    """The Referer a browser sends for ``target`` requested from ``page`` (both normalised; a
    ``page`` of None or NO_REFERRER: none) under ``policy`` ('' for the default,
    strict-origin-when-cross-origin). For a hop of a redirect, ``target`` is that hop and
    ``page`` what the hop before left of it (hop_referrer()): the policy is applied again.

    >>> referer("https://h/a?q=1", "https://h/b"), referer("https://h/a", "http://h/b")
    ('https://h/a?q=1', None)
    >>> referer("http://h/a", "https://other/b"), referer("https://h/a", "http://h/b", "origin")
    ('http://h/', 'https://h/')
    """
    if not page or page == NO_REFERRER or policy == NO_REFERRER:
        return None
    origin = _origin(page) + "/"
    whole = page if len(page) <= MAX_REFERRER else origin
    same_origin = _origin(target) + "/" == origin
    downgrade = page.startswith("https:") and not target.startswith("https:")
    if policy == "unsafe-url":
        return whole
    if policy == "origin":
        return origin
    if policy == "origin-when-cross-origin":
        return whole if same_origin else origin
    if policy == "same-origin":
        return whole if same_origin else None
    if downgrade:
        return None
    if policy == "no-referrer-when-downgrade":
        return whole
    if policy == "strict-origin":
        return origin
    return whole if same_origin else origin  # strict-origin-when-cross-origin


def hop_referrer(source: str | None, hop: str, policy: str = "") -> str | None:
    """What the request after ``hop``, a URL that redirects, makes its Referer from, when ``hop``
    made its own from ``source`` under ``policy``: the Referer ``hop`` was sent, NO_REFERRER if
    none; None for a request with no referrer (a seed's). Fetch ("determine request's referrer"
    at each hop) and Chromium reduce a request's referrer at each hop, so what one hop leaves
    out no later hop sends, whatever policy a redirect's header gives after it: from https, a
    hop over http sends nothing, nor does any after it; one to another origin sends the origin
    alone, and so does one that comes back.

    >>> hop_referrer("https://h/a?q", "https://cdn/x"), hop_referrer("https://h/a?q", "http://h/b")
    ('https://h/', 'no-referrer')
    >>> referer(hop_referrer("https://h/a?q", "http://h/b"), "https://h/c", "unsafe-url") is None
    True
    """
    if source is None:
        return None
    return referer(source, hop, policy) or NO_REFERRER


def policy_sending(sent: str | None, page: str, target: str) -> str | None:
    """A policy under which ``page`` sends the Referer ``sent`` for ``target`` (referer()): what a
    browser's request is asked again under, from the document that linked it rather than from
    the Referer it sent (which may be that document's origin alone); the default ('') where it
    fits. None if no policy sends that Referer from ``page`` (a stylesheet's or a frame's URL).

    >>> policy_sending("http://h/", "http://h/a", "http://h/s"), policy_sending(None, "http://h/a", "http://h/s")
    ('origin', 'no-referrer')
    >>> policy_sending("http://h/a", "http://h/a", "http://cdn/s")
    'unsafe-url'
    >>> policy_sending("http://h/s.css", "http://h/a", "http://h/f") is None
    True
    """
    if sent is None:
        return NO_REFERRER
    for policy in ("", "unsafe-url", "origin"):
        if referer(page, target, policy) == sent:
            return policy
    return None
