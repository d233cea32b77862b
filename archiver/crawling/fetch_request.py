"""What one fetch asks for: a URL and how a browser would ask for it (FetchRequest).

The crawler makes one from a queue item (QueueItem.request()); the fetcher turns it into
headers and cookies (crawling/fetch.py), and a fetcher that wraps another one (a re-archive's,
crawling/revisiting.py) passes it on, changed with dataclasses.replace().
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from archiver.request_headers import Negotiation


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A GET of ``url``, with what decides the headers and cookies it goes with."""

    url: str
    referrer: str | None = None
    """The page it was found on (its Referer, as ``referrer_policy`` gives it)."""
    negotiation: Negotiation = ()
    """The headers a browser chose its answer with (Accept...: request_headers.negotiation())."""
    referrer_policy: str = ""
    """The policy its Referer is sent under (referrer_policy.py); '' for the default."""
    requisite: bool = False
    """Something a page loads, not a link followed: SameSite judges it by ``site_for_cookies``."""
    site_for_cookies: str | None = None
    """The top-level page it is loaded for (None: its referrer); ``null`` for a request of a
    document of no origin, a link it leads to too (of no site: cross-site to SameSite)."""
    credentials: bool = True
    """Its credentials mode sends cookies (not so a cross-origin font): without, none is sent,
    and none its answer sets is kept."""
    conditions: Mapping[str, str] | None = None
    """Headers of a conditional request (a re-archive's If-None-Match, If-Modified-Since)."""
    hop_referrer: str | None = None
    """For a hop after a redirect, what its Referer is made from: the Referer the hop before was
    sent, or ``no-referrer`` (referrer_policy.hop_referrer()); None: made from ``referrer``."""
