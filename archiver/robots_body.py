"""What of a robots.txt's bytes its rules are read from, one rule for the crawl that reads them
and for the manifest rebuilt from the WARC files that reads them again (pure).

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
