"""The encodings of the documents a crawl read, by URL: what a stylesheet one of them refers to
is read in when it names none of its own (CSS's "environment encoding": its page's encoding, or
that of the stylesheet whose @import names it).

A stylesheet is read in the encoding of the document its queue item names as its referrer, the
first that found it (the manifest's parent, through its redirects): mirror and verify read it
the same way after the crawl, from that document's record. Only encodings other than UTF-8 are
kept (UTF-8 is what a document with none is read in), the latest ENCODINGS_KEPT of them: a
stylesheet is fetched soon after its page. A crawl resumed, or a URL fetched by another node of
a shared crawl, may not know its referrer's: it is then read as UTF-8, and verify says which
link that missed.

>>> referrers = ReferrerEncodings()
>>> referrers.keep("http://h/", "cp1252"); referrers.keep("http://h/u", "utf-8")
>>> referrers.get("http://h/"), referrers.get("http://h/u"), referrers.get(None)
('cp1252', None, None)
"""

from __future__ import annotations

import collections

ENCODINGS_KEPT = 20_000


class ReferrerEncodings:
    """The encodings of the documents read most recently, by URL (see the module docstring)."""

    def __init__(self, kept: int = ENCODINGS_KEPT) -> None:
        self._kept = kept
        self._encodings: collections.OrderedDict[str, str] = collections.OrderedDict()

    def keep(self, url: str, encoding: str | None) -> None:
        """Note that the document at ``url`` was read in ``encoding`` (None: it has none)."""
        if encoding is None or encoding == "utf-8":
            return
        self._encodings[url] = encoding
        self._encodings.move_to_end(url)
        if len(self._encodings) > self._kept:
            self._encodings.popitem(last=False)

    def get(self, referrer: str | None) -> str | None:
        """The encoding the document ``referrer`` was read in, if kept and not UTF-8."""
        return self._encodings.get(referrer) if referrer is not None else None
