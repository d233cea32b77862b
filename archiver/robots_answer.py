"""How a robots.txt answer is read: what its status gives, and what of its bytes its rules are
read from; one rule for the crawl that reads it and for the manifest rebuilt from the WARC files
that reads it again (pure).

>>> robots_body(b"Disallow: /a\\nDisallow: /private", cut=True)
b'Disallow: /a\\n'
"""

from __future__ import annotations

ROBOTS_MAX_BYTES = 512 * 1024
"""Bytes of a robots.txt received and read for its rules (RFC 9309 2.5 asks a parser to read
at least 500 KiB, and lets a crawler stop there): the rest is neither received nor read."""


def robots_body(decoded: bytes, cut: bool = False) -> bytes:
    """What of a robots.txt's ``decoded`` body its rules are read from: its first ROBOTS_MAX_BYTES,
    and of a body longer than that (or ``cut``: more followed what was decoded) its whole lines
    alone: the line the limit cuts would be read as far as it went, a rule the site never wrote
    (``Disallow: /`` of ``Disallow: /private``, which keeps the whole site out), or a sitemap it
    never named.

    >>> robots_body(b"Disallow: /a\\nDisallow: /b")
    b'Disallow: /a\\nDisallow: /b'
    """
    if not cut and len(decoded) <= ROBOTS_MAX_BYTES:
        return decoded
    read = decoded[:ROBOTS_MAX_BYTES]
    return read[: max(read.rfind(b"\n"), read.rfind(b"\r")) + 1]


RULES = "rules"
"""A robots.txt answer whose body holds the rules (RFC 9309, 2.3.1.1)."""
UNAVAILABLE = "unavailable"
"""A robots.txt answer that says there is none: no rules, everything allowed (2.3.1.3)."""
UNREACHABLE = "unreachable"
"""A robots.txt answer that says nothing of it: everything disallowed until it answers (2.3.1.4)."""
NO_SUCH_HOST = -1
"""The status fetch_robots gives a robots.txt whose host has no address (the resolver's NXDOMAIN)
or no name a request can carry (errors.NoSuchHost): no server is there to have rules, so it is
unavailable, and each URL of the host fails as its robots.txt did, with the reason that says why,
where "robots.txt unreachable" would send the user to --ignore-robots for nothing. It is asked
again as soon as one out of reach is (HostPolicy.robots_keep), should the name come to resolve."""


def robots_answer(status: int | None) -> str:
    """What a robots.txt fetch answered ``status`` gives (RULES, UNAVAILABLE, UNREACHABLE), as
    RFC 9309 (section 2.3.1) and Google's robots.txt documentation read each class of status;
    ``status`` None: no whole answer came (none at all, a body cut short, a broken one).

    - 2xx: its rules.
    - 3xx: a redirect is followed (RecordedFetch, up to --max-redirects hops, 10 unless told,
      and never fewer than the five RFC 9309 asks: redirects.robots_redirects()); the status of
      one given up (a loop, too many hops), or of a 3xx that leads nowhere (no Location, a 300,
      a 304), is unavailable, as Google reads a chain past its hops: as a 404.
    - 4xx: unavailable, but 429 ("not now", not "none here"), which Google reads as a 5xx.
    - NO_SUCH_HOST: unavailable.
    - 5xx, and no whole answer (Google: timeouts, resets, chunking errors): unreachable.

    RFC 9309 is silent on every other status, and RFC 9110 (section 15) speaks for it: a code
    outside 100-599 is invalid, and a client SHOULD process it as a 5xx. The crawl reads such
    codes as Chromium reads them (``HTTP/1.1 2000``, ``HTTP/1.1 20x``: 20, ``HTTP/1.1 0``), and
    none says the host has no robots.txt, nor that its body holds the rules: unreachable, so
    nothing of the host is fetched against rules it may have, and it is asked again later. A 1xx
    as the final answer is no answer (the crawl skips interim answers, and fails a 101 as no
    HTTP): unreachable as well. Zeros before a code are no part of it (``0404`` is a 404).

    >>> {s: robots_answer(s) for s in (200, 299, 301, 304, 404)}, robots_answer(NO_SUCH_HOST)
    ({200: 'rules', 299: 'rules', 301: 'unavailable', 304: 'unavailable', 404: 'unavailable'}, 'unavailable')
    >>> {robots_answer(s) for s in (429, 503, 599, None, 0, 20, 99, 100, 103, 600, 999, 2000, 2**31 - 1)}
    {'unreachable'}
    """
    if status == NO_SUCH_HOST:
        return UNAVAILABLE
    if status is None or not 200 <= status < 500 or status == 429:
        return UNREACHABLE
    return RULES if status < 300 else UNAVAILABLE
