"""What one fetch asks for: a URL and how a browser would ask for it (FetchRequest).

The crawler makes one from a queue item (QueueItem.request()); the fetcher turns it into
headers and cookies (crawling/fetch.py), its URL into the one aiohttp is given (request_url()),
and a fetcher that wraps another one (a re-archive's, crawling/revisiting.py) passes it on,
changed with dataclasses.replace().
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from yarl import URL

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
    max_bytes: int | None = None
    """Bytes of its body read at most, if fewer than --max-file-size: what the crawl reads of a
    robots.txt or a sitemap, whose server may send no end (the rest is not received)."""


def request_url(url: str) -> URL:
    """What aiohttp is given to request ``url`` (a normalised URL) as it is written.

    yarl drops an empty query (``/p?`` becomes ``/p``), which is another URL than
    ``/p`` with an answer of its own: its ``?`` is kept in the path, which aiohttp
    writes into the request line as it is.

    >>> request_url("http://h/p?").raw_path_qs, request_url("http://h/p?q").raw_path_qs
    ('/p?', '/p?q')
    """
    target = URL(url, encoded=True)
    if url.endswith("?") and not target.raw_query_string:
        return URL.build(
            scheme=target.scheme, authority=target.raw_authority, path=target.raw_path + "?", encoded=True
        )
    return target
