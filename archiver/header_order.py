"""The order of a request's headers, Chromium's: servers and the firewalls before them tell a
browser from other clients by it, and a request in another order may be answered otherwise.
Pure rules, no I/O.

Chromium 156 sends (after Host and Connection, which aiohttp writes first) an element's Origin
(a font's, a crossorigin image's, a module script's), a header a script set (X-Requested-With
of an XMLHttpRequest), Upgrade-Insecure-Requests, User-Agent, a prefetch's Sec-Purpose,
Accept, a script's Origin (a fetch()'s), Referer, Accept-Encoding, Accept-Language, and Cookie
last (aiohttp's cookie jar writes it last). A header of the user's own (--header) or of a
conditional request comes after those it does not replace, before the Cookie.

>>> list(in_chromium_order({"Referer": "r", "Accept": "a", "User-Agent": "u", "X-Token": "t"}))
['User-Agent', 'Accept', 'Referer', 'X-Token']
"""

from __future__ import annotations

from collections.abc import Mapping

from archiver.request_headers import Negotiation

ELEMENT_ORIGIN = "an element's origin"
"""Where the Origin of an element's CORS request goes (a font's, a crossorigin image's): first."""
SCRIPT_ORIGIN = "a script's origin"
"""Where the Origin of a script's request goes (a fetch()'s): after the Accept."""
CHROMIUM_ORDER = (
    ELEMENT_ORIGIN,
    "x-requested-with",
    "upgrade-insecure-requests",
    "user-agent",
    "sec-purpose",
    "accept",
    SCRIPT_ORIGIN,
    "referer",
    "accept-encoding",
    "accept-language",
)
"""Where each header goes (lowercased); the Origin goes in one of two places (origin_place())."""
_RANK = {name: rank for rank, name in enumerate(CHROMIUM_ORDER)}


def origin_place(pairs: Negotiation) -> str:
    """Where the Origin of a request asked with ``pairs`` goes: first where it came before the
    Accept (an element's CORS request: Blink names its origin as it makes it), else after the
    Accept (a script's fetch(): the network service names it as it sends it).

    >>> origin_place((("Origin", "o"), ("Accept", "*/*"))), origin_place((("Accept", "*/*"), ("Origin", "o")))
    ("an element's origin", "a script's origin")
    """
    names = [name.lower() for name, _ in pairs]
    if "origin" in names and "accept" in names and names.index("origin") < names.index("accept"):
        return ELEMENT_ORIGIN
    return SCRIPT_ORIGIN


def in_chromium_order(headers: Mapping[str, str], origin: str = SCRIPT_ORIGIN) -> dict[str, str]:
    """``headers`` in the order Chromium sends them (the module docstring's), ``origin`` saying
    where an Origin goes (origin_place()); the others keep theirs, after them.

    >>> list(in_chromium_order({"Accept": "*/*", "Origin": "o", "User-Agent": "u"}, ELEMENT_ORIGIN))
    ['Origin', 'User-Agent', 'Accept']
    """
    last = len(CHROMIUM_ORDER)

    def rank(name: str) -> int:
        lower = name.lower()
        return _RANK[origin] if lower == "origin" else _RANK.get(lower, last)

    return dict(sorted(headers.items(), key=lambda item: rank(item[0])))
