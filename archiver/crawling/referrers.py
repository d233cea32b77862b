"""The encodings of the documents a crawl read, by URL: what a stylesheet one of them refers to
is read in when it names none of its own (CSS's "environment encoding": its page's encoding, or
that of the stylesheet whose @import names it, or the SVG image's whose instruction does).

A stylesheet is read in the encoding of the document its queue item names as its referrer, the
first that found it (the manifest's parent, through its redirects): mirror and verify read it
the same way after the crawl, from that document's record (store/referrers.py). The latest
ENCODINGS_KEPT encodings are kept; one this crawl process did not read (a crawl resumed, a
page read long ago) is read back from the snapshot being written (SnapshotEncodings), where
its document is committed by then. The nodes of a shared crawl share the encodings they read
that are not UTF-8 (``share``: crawling/redis_encodings.py), where they look up those they did
not read.

>>> import asyncio
>>> referrers = ReferrerEncodings()
>>> referrers.keep("http://h/", "cp1252"); referrers.keep("http://h/u", "utf-8")
>>> asyncio.run(referrers.of("http://h/")), referrers.get("http://h/u"), referrers.get(None)
('cp1252', None, None)
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable

from archiver.content import DEFAULT_DECODE_LIMIT
from archiver.crawling.snapshot_reads import SnapshotReads
from archiver.errors import UnknownEncoding
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.referrers import encoding_of, stored_body
from archiver.store.stored import rendered_dom
from archiver.warc.reader import WarcReader

log = logging.getLogger("archiver")

ENCODINGS_KEPT = 50_000

LookUp = Callable[[str], Awaitable[str | None]]
"""The encoding the document at a URL was read in, read back from the snapshot (None: it has
none); raises UnknownEncoding if it cannot be read back."""
Share = Callable[[str, str], Awaitable[None]]
"""Tell the other processes of a crawl that the document at a URL was read in an encoding."""


class ReferrerEncodings:
    """The encodings of the documents read most recently, by URL (see the module docstring)."""

    def __init__(
        self, look_up: LookUp | None = None, kept: int = ENCODINGS_KEPT, share: Share | None = None
    ) -> None:
        """``look_up``: where an encoding not kept is read back from; ``share``: where the
        encodings this process reads other than UTF-8 go for the others (read())."""
        self._look_up = look_up
        self._share = share
        self._kept = kept
        self._encodings: collections.OrderedDict[str, str | None] = collections.OrderedDict()
        """By URL: the encoding its document was read in (None: it has none, or it cannot be
        read back)."""
        self._reading: dict[str, asyncio.Future[None]] = {}
        """Read-backs under way, by URL: each document is read back once, however many ask."""

    def keep(self, url: str, encoding: str | None) -> None:
        """Note that the document at ``url`` was read in ``encoding`` (None: it has none)."""
        if encoding is not None:
            self._remember(url, encoding)

    def _remember(self, url: str, encoding: str | None) -> None:
        self._encodings[url] = encoding
        self._encodings.move_to_end(url)
        if len(self._encodings) > self._kept:
            self._encodings.popitem(last=False)

    async def read(self, url: str, encoding: str | None) -> None:
        """keep(), and share an encoding other than UTF-8 with the crawl's other processes:
        before the document's links are queued, so whoever fetches them finds it."""
        self.keep(url, encoding)
        if self._share is not None and encoding is not None and encoding != "utf-8":
            await self._share(url, encoding)

    def get(self, referrer: str | None) -> str | None:
        """The encoding the document ``referrer`` was read in, if kept and not UTF-8."""
        encoding = self._encodings.get(referrer) if referrer is not None else None
        return None if encoding == "utf-8" else encoding

    async def of(self, referrer: str | None) -> str | None:
        """get(), or, for a document not kept, its encoding read back from the snapshot.

        What is read back is kept, a document with no encoding too, so each is read back once
        a run. One whose record cannot be read is said once (a warning): the stylesheets that
        refer to it and name no encoding are read as UTF-8, maybe not as the crawl that read
        that document would have read them, and archiver verify names them.
        """
        if referrer is None or referrer in self._encodings or self._look_up is None:
            return self.get(referrer)
        reading = self._reading.get(referrer)
        if reading is None:  # the stylesheets of one page often ask for it together
            reading = self._reading[referrer] = asyncio.ensure_future(
                self._read_back(referrer, self._look_up)
            )
        await asyncio.shield(reading)  # one caller cancelled leaves the read to the others
        return self.get(referrer)

    async def _read_back(self, referrer: str, look_up: LookUp) -> None:
        try:
            try:
                encoding = await look_up(referrer)
            except UnknownEncoding as exc:
                log.warning("%s; a stylesheet it refers to that names no encoding is read as UTF-8", exc)
                encoding = None
            self._remember(referrer, encoding)
        finally:
            del self._reading[referrer]


class SnapshotEncodings(SnapshotReads):
    """ReferrerEncodings' look-up: the encoding of a document the snapshot being written holds,
    read back (read-only, in a thread of its own) as store/referrers.py reads it: a revisit of
    a re-archive's previous snapshot is read there, as the mirror and verify read it."""

    async def __call__(self, url: str) -> str | None:
        return await self.read(
            lambda manifest, records, previous: _encoding(manifest, records, previous, url)
        )


def _encoding(manifest: Manifest, records: WarcReader, previous: Previous | None, url: str) -> str | None:
    """The encoding the crawl read the document ``url`` in, read back from the snapshot."""
    return encoding_of(
        manifest.get(url),
        manifest.get,
        lambda row: stored_body(manifest, records, row, previous, quiet=False),
        dom_of=lambda page: rendered_dom(records, page, DEFAULT_DECODE_LIMIT)[0],
    )
