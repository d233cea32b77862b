"""Reads of the snapshot a crawl is writing, made while it writes it: in a thread of their own,
over a read-only view of its manifest and its WARC files (and a re-archive's previous snapshot,
where its revisits' bodies are). A resumed crawl reads back what it read before (a referrer's
encoding, a sitemap) rather than fetch it again."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable
from typing import Self, TypeVar

from archiver.store.manifest import Manifest
from archiver.store.previous import Previous, open_previous
from archiver.store.snapshot import Snapshot
from archiver.warc.reader import WarcReader

Read = TypeVar("Read")


class SnapshotReads:
    """The thread and the open files the reads of one snapshot share (opened at the first read,
    which most crawls never make)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="archiver-read-back")
        self._manifest: Manifest | None = None
        self._records: WarcReader | None = None
        self._previous: Previous | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    async def read(self, look: Callable[[Manifest, WarcReader, Previous | None], Read]) -> Read:
        """``look(manifest, records, previous)`` run in the reads' thread; cancelled, its answer
        is dropped."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._look, look)

    def _look(self, look: Callable[[Manifest, WarcReader, Previous | None], Read]) -> Read:
        if self._manifest is None:
            self._manifest = Manifest.open(self._snapshot.manifest_path, readonly=True)
            self._records = WarcReader(self._snapshot.warc_dir)
            self._previous = open_previous(self._snapshot)
        assert self._records is not None
        return look(self._manifest, self._records, self._previous)

    def close(self) -> None:
        """Release the thread, files and connection; safe to call twice."""
        with contextlib.suppress(RuntimeError):  # closed already: its thread takes no more
            self._thread.submit(self._release).result()  # in the thread that opened them
        self._thread.shutdown(wait=True)

    def _release(self) -> None:
        if self._records is not None:
            self._records.close()
        if self._manifest is not None:
            self._manifest.close()
        if self._previous is not None:
            self._previous.close()
        self._manifest = self._records = self._previous = None
