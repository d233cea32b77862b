"""Redirects: which statuses redirect, and where a chain of recorded redirects ends.

One walk serves the manifest (each redirect's final URL), the mirror (a link
to a redirecting URL points at the file its chain ends at) and verify (every
chain ends at a recorded outcome). Each says what a hop is by the function it
passes; the walk, its loop check and its bound are the same for all.

>>> hops = {"http://h/a": "http://h/b", "http://h/b": "http://h/c"}
>>> follow_chain("http://h/a", hops.get).final
'http://h/c'
>>> follow_chain("http://h/a", {**hops, "http://h/c": "http://h/a"}.get)
Chain(urls=('http://h/a', 'http://h/b', 'http://h/c', 'http://h/a'), ending='loop')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from archiver.content import NOT_MODIFIED
from archiver.urls import absolute_url, header_url, try_normalize

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
"""HTTP statuses whose Location the crawler follows (and records as a hop)."""
UNASKED_NOT_MODIFIED = "a 304 to a request that asked for no revalidation: archived as sent, not mirrored"
"""The reason of a 304 to a request without If-None-Match or If-Modified-Since: it holds no page
(Chromium fails such a load), so the mirror has no file of it and links to it stay absolute."""
NO_CONTENT_STATUSES = frozenset({204, 205})
"""Answers that hold no page: a browser following a link to one stays on the page it was on."""
NO_PAGE_STATUSES = NO_CONTENT_STATUSES | {NOT_MODIFIED}
"""Statuses of captures the mirror has no file of (a 304 here is one nobody asked for): links to
them stay absolute, as to a URL not fetched, rather than lead to an empty page."""
WITHOUT_LOCATION = "without a Location: a page, as browsers show it"
"""What the reason of a redirect status sent without a Location says (redirect_nowhere()), by
which a manifest row tells it from one whose Location leads nowhere (leads_away_row())."""


def leads_away(status: int | None, location: str | None) -> bool:
    """True for an answer a browser takes for a redirect, whether or not it can follow it: a
    redirect status with a Location that is not empty. It shows no page of it: one it cannot
    follow (``javascript:``, a bad host) is an error. Any other 3xx is a page it shows, as
    Chromium does (HttpResponseHeaders::IsRedirect: a 301 without a Location, a 300, a 305).

    >>> leads_away(302, "/b"), leads_away(302, "javascript:x"), leads_away(302, " "), leads_away(300, "/b")
    (True, True, False, False)
    """
    return status in REDIRECT_STATUSES and bool(location and location.strip())


def leads_away_row(status: int | None, reason: str | None) -> bool:
    """leads_away() of a manifest row that is no followed redirect (its outcome is not
    ``redirected``): the Location it lacked is in its reason (redirect_nowhere()).

    >>> leads_away_row(302, redirect_nowhere(302, None, "http://h/a"))
    False
    >>> leads_away_row(302, redirect_nowhere(302, "javascript:x", "http://h/a")), leads_away_row(200, None)
    (True, False)
    """
    return status in REDIRECT_STATUSES and WITHOUT_LOCATION not in (reason or "")


def redirect_target(location: str | None, url: str) -> str | None:
    """The normalised URL a ``Location`` header (as received, one character per byte) of an
    answer for ``url`` leads to, read as browsers read its bytes; None if it names none.

    >>> redirect_target("/caf\\xc3\\xa9", "http://h/a"), redirect_target(" ", "http://h/a")
    ('http://h/caf%C3%A9', None)
    """
    return try_normalize(header_url(location), url) if location and location.strip() else None


def redirect_nowhere(status: int, location: str | None, url: str) -> str | None:
    """Why an answer of a redirect status for ``url`` leads nowhere the crawl goes, for its
    manifest row: without a Location it is a page, as browsers show it (its links followed);
    with one naming no http or https URL (``javascript:``, ``ftp:``, a bad host) it is archived as
    sent, a browser's error; None for any other answer. A 304 that
    comes here answers a request with no condition (a re-archive's own turns into the capture it
    confirms): UNASKED_NOT_MODIFIED. A 204 or 205 holds no page to go to.

    >>> redirect_nowhere(302, "javascript:void(0)", "http://h/a")
    "a 302 to 'javascript:void(0)', no http or https URL: archived as sent, not followed"
    >>> redirect_nowhere(302, "/b", "http://h/a") is None, redirect_nowhere(200, None, "http://h/a")
    (True, None)
    """
    if status == NOT_MODIFIED:
        return UNASKED_NOT_MODIFIED
    if status in NO_CONTENT_STATUSES:
        return f"a {status}: no page (a browser stays where it was): archived as sent, not mirrored"
    if status not in REDIRECT_STATUSES or redirect_target(location, url) is not None:
        return None
    if location is None or not location.strip():
        return f"a {status} {WITHOUT_LOCATION}"
    shown = location if len(location) <= 100 else location[:100] + "..."
    return f"a {status} to {shown!r}, no http or https URL: archived as sent, not followed"


def redirect_failure(target: str, chain: Sequence[str], hops: int, max_redirects: int) -> str | None:
    """Why a redirect to ``target`` ends its chain as a failure, the crawl's rule for every path
    (a fetch, a browser's capture, a manifest rebuilt): a loop if ``target`` was asked already in
    ``chain`` (the URLs of the chain so far, the redirecting one among them), too many once
    ``hops`` redirects were followed to reach the one redirecting now; None if it is followed.

    >>> redirect_failure("http://h/a", ["http://h/a", "http://h/b"], 1, 20)
    'redirect loop'
    >>> redirect_failure("http://h/c", ["http://h/a", "http://h/b"], 1, 1)
    'too many redirects (more than 1)'
    >>> redirect_failure("http://h/c", ["http://h/a", "http://h/b"], 1, 2) is None
    True
    """
    if target in chain:
        return "redirect loop"
    if hops >= max_redirects:
        return f"too many redirects (more than {max_redirects})"
    return None


ROBOTS_MIN_REDIRECTS = 5
"""Redirects of a robots.txt followed whatever --max-redirects says: RFC 9309 (2.3.1.2) asks a
crawler to follow at least five, and lets it take the robots.txt as unavailable past them."""


def robots_redirects(max_redirects: int) -> int:
    """Redirects of a robots.txt followed (by the crawl, and as a rebuilt manifest reads them)
    under --max-redirects ``max_redirects``: never fewer than ROBOTS_MIN_REDIRECTS.

    >>> robots_redirects(2), robots_redirects(10)
    (5, 10)
    """
    return max(max_redirects, ROBOTS_MIN_REDIRECTS)


def redirect_fragment(location: str | None, url: str) -> str | None:
    """The fragment a ``Location`` header of an answer for ``url`` names (without its ``#``, as a
    browser writes it), which the URL the redirect leads to takes (RFC 9110 section 10.2.2: a
    Location without one keeps the fragment the request's link had); None if it names none.

    >>> redirect_fragment("/b#sec", "http://h/a"), redirect_fragment("/b", "http://h/a#x")
    ('sec', None)
    """
    href = absolute_url(header_url(location), url) if location else None
    return href.partition("#")[2] if href is not None and "#" in href else None


MAX_CHAIN_HOPS = 100
"""Hops walked at most: chains that meet can be longer than --max-redirects, never this long."""

ENDS = "ends"
"""The chain reaches a URL that redirects no further."""
LOOP = "loop"
"""The chain comes back to a URL already in it."""
TOO_LONG = "too long"
"""The chain goes on past MAX_CHAIN_HOPS."""


@dataclass(frozen=True)
class Chain:
    """The URLs of one redirect chain, from its first, and how it ends."""

    urls: tuple[str, ...]
    """The first URL, then each one reached; for a loop, the URL met again comes last."""
    ending: str
    """ENDS, LOOP or TOO_LONG."""

    @property
    def final(self) -> str | None:
        """The URL the chain ends at; None for a loop or a chain too long."""
        return self.urls[-1] if self.ending == ENDS else None

    @property
    def hops(self) -> int:
        """Redirects followed."""
        return len(self.urls) - 1


def follow_chain(start: str, next_url: Callable[[str], str | None], max_hops: int = MAX_CHAIN_HOPS) -> Chain:
    """Walk the chain from ``start``: ``next_url(url)`` is where ``url`` redirects, None if nowhere."""
    urls = [start]
    seen = {start}
    current = start
    for _ in range(max_hops):
        target = next_url(current)
        if target is None:
            return Chain(tuple(urls), ENDS)
        if target in seen:
            return Chain((*urls, target), LOOP)
        urls.append(target)
        seen.add(target)
        current = target
    return Chain(tuple(urls), ENDS if next_url(current) is None else TOO_LONG)
