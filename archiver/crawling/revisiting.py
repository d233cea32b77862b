"""The fetch of a re-archive: conditional requests built from a previous snapshot's records.

``Revisiting`` wraps the Fetcher behind the same seam. A URL the previous
snapshot archived whole with a 200 is asked for with the validators its
record kept (If-None-Match from the ETag, If-Modified-Since from
Last-Modified). A 304 comes back as a capture holding the URL's stored
status and headers (updated by the 304's) and payload, read from the
previous snapshot, with the 304 itself in ``not_modified``: the crawler
parses the page and follows its links as if it had been sent again, the
mirror writes it, and the WARC keeps the 304 as a server-not-modified revisit
of the URL's stored response. A 304 whose validator names another version
than the one asked about confirms nothing: the URL is asked for again,
without conditions. A 200 whose payload the previous snapshot holds becomes
a revisit in the writer (store/payloads.py PreviousPayloads).

The previous snapshot is read in one thread of its own: its SQLite
connection and WARC file handle are never used by two threads at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from archiver.crawling.fetch import Fetch, Fetcher, FetchOutcome
from archiver.crawling.fetch_request import FetchRequest
from archiver.store.previous import CHUNK, READ_ERRORS, Previous, Stored, updated_headers
from archiver.warc.capture import Capture, NotModified
from archiver.warc.records import sha1_digest


class Revisiting:
    """A Fetch that asks the server whether what ``previous`` holds changed; see the module docstring."""

    def __init__(self, fetcher: Fetcher, previous: Previous) -> None:
        self.fetcher = fetcher
        self.previous = previous
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="previous")

    def close(self) -> None:
        """Stop the thread that reads the previous snapshot; safe to call twice."""
        self._thread.shutdown(wait=True)

    async def _in_thread(self, function: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, function, *args)

    async def fetch(self, request: FetchRequest, tries: int = 0) -> FetchOutcome:
        """One try of ``request``, conditional when the previous snapshot holds its URL (see
        Fetch.fetch).

        Cancelled, the try is abandoned, as Fetch.fetch's is.
        """
        found: tuple[Stored, dict[str, str]] | None = await self._in_thread(
            self.previous.validators, request.url
        )
        if found is None:
            return await self.fetcher.fetch(request, tries)
        stored, conditions = found
        outcome = await self.fetcher.fetch(dataclasses.replace(request, conditions=conditions), tries)
        capture = outcome.capture
        if capture is None or capture.status != 304 or outcome.error:
            return outcome
        confirmed: Capture | None = None
        if not names_another_version(capture.response_headers, stored.headers):
            confirmed = await self._in_thread(self._confirmed, capture, stored)
        capture.body.close()
        if confirmed is None:
            # The stored record cannot be read back after all, or the 304 is of another
            # version: ask for the page itself.
            return await self.fetcher.fetch(request, outcome.tries)
        return dataclasses.replace(outcome, capture=confirmed)

    def _confirmed(self, answer: Capture, stored: Stored) -> Capture | None:
        """The capture of a 304 to a conditional request for what ``stored`` holds: its status,
        headers (updated by the 304's) and payload, with the 304 kept in ``not_modified``.
        None if it cannot be read."""
        original = stored.original
        try:
            _, _, body = original.read()
        except READ_ERRORS:
            return None
        digest = hashlib.sha1()
        while chunk := body.read(CHUNK):
            digest.update(chunk)
        if sha1_digest(digest) != original.payload_digest:  # damaged in a way gzip did not see
            body.close()
            return None
        length = body.tell()
        body.seek(0)
        return dataclasses.replace(
            answer,
            status_line=stored.status_line,
            response_headers=updated_headers(stored.headers, answer.response_headers),
            body=body,
            body_length=length,
            payload_digest=original.payload_digest,
            truncated=None,
            not_modified=NotModified(
                answer.status_line, answer.response_headers, original.url, original.date
            ),
            sniffed=None,
        ).sniffed_type()


def names_another_version(answer: list[tuple[str, str]], stored: list[tuple[str, str]]) -> bool:
    """Whether a 304's validators name another version than the stored response's: a strong ETag
    other than the stored one (compared strongly: a stored weak one is another), a weak ETag
    whose tag is not the stored one's (compared weakly), or, without an ETag, another
    Last-Modified. Such a 304 updates no stored response (RFC 9111, section 4.3.4).

    >>> names_another_version([("ETag", '"v2"')], [("ETag", '"v1"')])
    True
    >>> names_another_version([("ETag", 'W/"v2"'), ("Date", "x")], [("ETag", '"v1"')])
    True
    >>> names_another_version([("ETag", 'W/"v1"')], [("ETag", '"v1"')])
    False
    >>> names_another_version([("Last-Modified", "Tue")], [("Last-Modified", "Mon")])
    True
    """
    given = {name.lower(): value.strip() for name, value in answer}
    held = {name.lower(): value.strip() for name, value in stored}
    etag = given.get("etag")
    if etag:
        if etag.startswith("W/"):
            return etag.removeprefix("W/") != (held.get("etag") or "").removeprefix("W/")
        return etag != held.get("etag")
    modified = given.get("last-modified")
    return bool(modified) and modified != held.get("last-modified")


class PreviousSnapshots:
    """The previous snapshot of a re-archive, opened once for the writer's thread and once for
    the fetch's (neither shares a SQLite connection or a file across threads); empty otherwise."""

    def __init__(self, root: Path | None) -> None:
        self.writer = Previous(root) if root is not None else None
        self._for_fetch = Previous(root) if root is not None else None
        self._revisiting: Revisiting | None = None

    def fetch(self, fetcher: Fetcher) -> Fetch:
        """The crawl's Fetch: conditional requests when there is a previous snapshot."""
        if self._for_fetch is None:
            return fetcher
        self._revisiting = Revisiting(fetcher, self._for_fetch)
        return self._revisiting

    def __enter__(self) -> PreviousSnapshots:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._revisiting is not None:
            self._revisiting.close()
        for previous in (self.writer, self._for_fetch):
            if previous is not None:
                previous.close()

    async def __aenter__(self) -> PreviousSnapshots:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def previous_snapshots(previous: str | Path | None) -> PreviousSnapshots:
    """The previous snapshot of a re-archive (--previous), or none."""
    return PreviousSnapshots(Path(previous) if previous is not None else None)
