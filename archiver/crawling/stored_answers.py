"""Answers for a browser, read back from the snapshot: a URL the crawl captured is never fetched twice.

A page rendered in a browser asks for its document, its stylesheets, scripts,
images and data. Each is captured through the crawler first (or was already),
then answered from its committed record in the WARC, exactly as stored:
status, headers and body, with the Content-Encoding undone (a browser takes a
fulfilled body as it is given). Records are read in one thread of their own,
off the event loop; small answers that repeat from page to page (stylesheets,
scripts, fonts) are kept in a bounded cache.

>>> async def example(answers, url):
...     row = answers.row(url)  # the committed manifest row, or None
...     return await answers.answer(row) if row and row.warc_file else None
"""

from __future__ import annotations

import asyncio
import collections
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from archiver.content import decode_body, mime_type
from archiver.media_types import content_type_field
from archiver.numerals import whole_number
from archiver.store.manifest import Manifest
from archiver.store.previous import READ_ERRORS, open_previous
from archiver.store.rows import ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.store.stored import payload_record
from archiver.warc.exchange import TRANSFER_ENCODING_RENAMED
from archiver.warc.reader import WarcReader, read_to_end

log = logging.getLogger("archiver.crawl")

BODY_LIMIT = 32 * 1024**2
"""Bodies larger than this (decoded) are not handed to a browser: the request fails there."""
CACHE_BYTES = 16 * 1024**2
CACHE_ENTRY_BYTES = 1024**2
DECODED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
"""Headers that describe the body as sent, not as handed over (decoded, whole)."""


@dataclass(frozen=True)
class Answer:
    """What a browser is told for one URL: the stored response."""

    status: int
    """As stored: one outside 100-599 too (0, 20, 2000), which Chromium shows a page as it came;
    200 for a status line that names none, as Chromium reads it."""
    reason: str
    """The reason phrase of its status line as Chromium shows it (statusText): as stored, '' for
    a status line that names none (``HTTP/1.1 200``) or whose status is no number (stored as
    200, as Chromium reads it). The crawl stores a status line with no status as ``200 OK``."""
    headers: list[tuple[str, str]]
    body: bytes
    mime: str
    """The bare MIME type of its Content-Type ('' if none)."""
    record_id: str | None
    """WARC-Record-ID of the response or revisit record it comes from."""


def _answer(raw: bytes, headers: object, own_id: str | None) -> Answer | None:
    """The Answer of a stored response whose payload is ``raw``, decoded; None if it decodes
    to more than BODY_LIMIT."""
    status_line = headers.statusline if headers is not None else ""  # type: ignore[attr-defined]
    code, _space, reason = status_line.partition(" ")
    status = whole_number(code)
    pairs = list(headers.headers) if headers is not None else []  # type: ignore[attr-defined]
    encoding = next((v for k, v in pairs if k.lower() == "content-encoding"), None)
    decoded = decode_body(raw, encoding, BODY_LIMIT)
    if decoded.cut:
        return None
    # Undone, the body goes without the headers that described it as sent; a coding the
    # decoder does not know is handed over as stored, with its header, for the browser to try.
    body = decoded.body if decoded.problem is None else raw
    dropped = DECODED_HEADERS if decoded.problem is None else DECODED_HEADERS - {"content-encoding"}
    kept = [
        (name, value)
        for name, value in pairs
        if name != TRANSFER_ENCODING_RENAMED and name.lower() not in dropped
    ]
    content_type = content_type_field(pairs)
    return Answer(
        status=200 if status is None else status,
        reason=reason if status is not None else "",
        headers=kept,
        body=body,
        mime=mime_type(content_type),
        record_id=own_id,
    )


class StoredAnswers:
    """Manifest rows and stored responses of the snapshot being written, read-only.

    Sees what the writer has committed (the manifest is in WAL mode), never
    more: ask for a URL once the crawler says it is settled.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self._manifest = Manifest.open(snapshot.manifest_path, readonly=True)
        # The reading thread has its own connection and reader: none is shared across threads.
        self._thread_manifest = Manifest.open(snapshot.manifest_path, readonly=True)
        self._records = WarcReader(snapshot.warc_dir)
        # A re-archive's revisit refers to a record of the previous snapshot, read there.
        self._previous = open_previous(snapshot)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="archiver-answers")
        self._cache: collections.OrderedDict[str, Answer] = collections.OrderedDict()
        self._cached_bytes = 0
        self.reads = 0
        """Records read from the WARC files (not from the cache)."""

    def row(self, url: str) -> ManifestRow | None:
        """The committed manifest row of ``url``, if any."""
        return self._manifest.get(url)

    async def answer(self, row: ManifestRow) -> Answer | None:
        """The stored response of ``row`` (which has a record); None if it cannot be handed over."""
        cached = self._cache.get(row.url)
        if cached is not None:
            self._cache.move_to_end(row.url)
            return cached
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(self._thread, self._read, row)
        if answer is not None and len(answer.body) <= CACHE_ENTRY_BYTES and row.url not in self._cache:
            self._cache[row.url] = answer
            self._cached_bytes += len(answer.body)
            while self._cached_bytes > CACHE_BYTES:
                _url, dropped = self._cache.popitem(last=False)
                self._cached_bytes -= len(dropped.body)
        return answer

    def _read(self, row: ManifestRow) -> Answer | None:
        """The answer of ``row``, checked before it is given: its records read to their ends.

        A browser is handed a body whole, in one message, so there is no answer to abort once
        given; and the body is read whole into memory anyway. Reading on to the end of each
        record costs only its closing bytes, and settles its digests and its gzip member's CRC
        (WarcReader.head()): a record read streamed (past WHOLE_READ_BYTES) may be read to its
        last byte without meeting its CRC, the one check of its WARC headers (the record ID the
        rendered DOM's record names). A damaged record is no answer: the request fails there,
        as for a record that is missing.
        """
        self.reads += 1
        assert row.warc_file is not None and row.warc_offset is not None
        try:
            own = self._records.record(row.warc_file, row.warc_offset, row.warc_length)
            if own.rec_type == "revisit":  # the payload is the original's; the headers its own
                read_to_end(own)
                stored, headers = payload_record(self._thread_manifest, self._records, row, self._previous)
            else:
                stored, headers = own, own.http_headers
            raw = stored.raw_stream.read(BODY_LIMIT + 1)
            if len(raw) > BODY_LIMIT:
                return None
            read_to_end(stored)
            return _answer(raw, headers, own.rec_headers.get_header("WARC-Record-ID"))
        except READ_ERRORS as exc:  # missing, damaged or not a record (ValueError among them)
            log.warning("cannot read back %s for a browser: %s", row.url, exc)
            return None

    def close(self) -> None:
        """Release the thread, files and connections; safe to call twice."""
        self._thread.shutdown(wait=True)
        self._records.close()
        self._manifest.close()
        self._thread_manifest.close()
        if self._previous is not None:
            self._previous.close()
