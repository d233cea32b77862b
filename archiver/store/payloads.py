"""The WARC writer's indexes of stored payloads (warc.files.PayloadIndex), which make a body stored
before a revisit of its record: this snapshot's, kept in the manifest (StoredPayloads), and a
re-archive's, which looks in the previous snapshots too (PreviousPayloads)."""

from __future__ import annotations

import functools

from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.warc.files import PayloadIndex


class StoredPayloads:
    """The WARC writer's index of stored payloads (warc.PayloadIndex), kept in the manifest.

    The writer upserts a capture's row right after its record, on the same
    connection, so the manifest already answers for every payload stored,
    this run or an earlier one, and RAM does not grow with the crawl.
    """

    def __init__(self, manifest: Manifest) -> None:
        self._manifest = manifest

    def find(self, digest: str, url: str) -> tuple[str, str] | None:
        return self._manifest.first_capture(digest, url)

    def add(self, digest: str, url: str, date: str) -> None:
        pass  # the capture's manifest row records it


CHECKED_ORIGINALS = 65_536
"""Originals whose check a re-archive's writer remembers (the most recent): bounded memory; one
forgotten is read again if met again."""


class PreviousPayloads:
    """The writer's PayloadIndex of a re-archive: payloads stored by this crawl first, then by the
    previous snapshots, so an unchanged body becomes a revisit of the record that holds it.

    A previous snapshot's record is read whole once (Original.check) before a revisit refers
    to it: one damaged or gone would leave the revisit with no payload, while the crawl has
    the body in hand to store.
    """

    def __init__(self, own: PayloadIndex, previous: Previous) -> None:
        self._own = own
        self._previous = previous
        self._whole = functools.lru_cache(maxsize=CHECKED_ORIGINALS)(self._original_is_whole)

    def find(self, digest: str, url: str) -> tuple[str, str] | None:
        found = self._own.find(digest, url)
        if found is not None:
            return found
        original = self._previous.original(digest)
        if original is None or not self._whole(original.url, original.date, digest):
            return None
        return original.url, original.date

    def _original_is_whole(self, url: str, date: str, digest: str) -> bool:
        original = self._previous.at(url, date)
        return original is not None and original.payload_digest == digest and original.check() is None

    def add(self, digest: str, url: str, date: str) -> None:
        self._own.add(digest, url, date)
