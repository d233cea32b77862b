"""The writer stage owns the disk: one consumer of a bounded queue writes WARC,
CDXJ, manifest and mirror, so records are never interleaved and fast fetchers wait.

Blocking work (appending records, SQLite, mirror files, and encoding the
records no worker process encoded) runs in one thread, a batch at a time, off
the event loop. Each capture's mirror file is written as its capture is
stored (mirror/live.py), from the draft a worker made of it when it was parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from archiver.content import PARSED_TYPES, mime_type
from archiver.errors import WriteError
from archiver.mirror.build import is_mirrored
from archiver.mirror.document import Draft
from archiver.mirror.live import LiveMirror
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.warc.capture import Capture
from archiver.warc.cdxj import cdxj_line, merge_into_index
from archiver.warc.dom import RenderedDom, dom_record, dom_target
from archiver.warc.exchange import Exchange
from archiver.warc.files import WarcFiles, still_at
from archiver.warc.records import sha1_digest, warc_date

BATCH_ITEMS = 256
BATCH_WINDOW = 0.02
"""Seconds the writer waits for a batch to gather when few items are queued."""


@dataclass(frozen=True)
class RenderNote:
    """What rendering a page in a browser gave, for its manifest row and the WARC."""

    url: str
    reason: str | None = None
    """Why it was rendered, when that was decided after its row was written (else None: kept)."""
    error: str | None = None
    dom: RenderedDom | None = None
    """The rendered DOM, stored as a resource record (None when rendering failed)."""
    title: str | None = None
    """The rendered DOM's title (a script may set it), which replaces the served page's (None: kept)."""
    links_cut: str | None = None
    """The reason the page's row records when its rendered DOM had more links than the crawl
    follows (scope.links_kept()), which replaces its static parse's (None: its reason stays)."""


@dataclass(frozen=True)
class WriteItem:
    """One unit of work for the writer: a URL's final row, its capture, and URLs it met."""

    row: ManifestRow | None
    """The row to store (its WARC location is filled in here when there is a capture)."""
    capture: Capture | None = None
    met: Sequence[ManifestRow] = ()
    """New rows (queued or skipped) for URLs first met on this page; they replace no row but a
    skipped one, or a queued one of a URL queued again to wait out a failed try."""
    exchange: Exchange | None = None
    """The capture's records, already encoded by a worker process (else the writer encodes them)."""
    render: RenderNote | None = None
    done: asyncio.Future[None] | None = None
    """Set once the batch holding this item is committed (see Writer.committed())."""
    draft: Draft | None = None
    """The capture's mirror file as drafted when it was parsed (HTML, CSS and SVG)."""
    framed: tuple[str, str] | None = None
    """(a page's URL, a rendered page's URL): the page, found otherwise, was loaded as a frame
    of that rendered page (Manifest.framed()), noted before the URLs its scripts ask for."""


class WriteQueue(Protocol):
    """What the crawler needs of the writer: a queue to hand each URL's outcome to."""

    async def put(self, item: WriteItem) -> None:
        """Queue ``item``; waits while the writer is behind. Raises WriteError once it has failed."""

    async def committed(self) -> None:
        """Wait until everything queued before is committed."""

    def reads_body(self, content_type: str | None) -> bool:
        """Whether storing a capture whose records come encoded reads its body."""


class Writer:
    """The single consumer that stores captures and manifest rows.

    Use ``await writer.put(item)`` from the crawl, run ``writer.run()`` as a
    task, and ``await writer.close()`` at the end.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        warcs: WarcFiles,
        manifest: Manifest,
        queue_size: int = 64,
        on_commit: Callable[[list[str]], None] | None = None,
        mirror: LiveMirror | None = None,
    ) -> None:
        """``mirror``: the mirror written as captures are stored."""
        self.snapshot = snapshot
        self.warcs = warcs
        self.manifest = manifest
        self.mirror = mirror
        self.on_commit = on_commit
        """Called on the event loop with the URLs whose final rows a batch just committed."""
        self._frames: dict[str, list[str]] = {}
        """The pages noted (WriteItem.framed) as loaded as frames of each page whose render is not
        stored yet: they go in its DOM record (warc/dom.py)."""
        self._state: Callable[[], dict[str, str]] | None = None
        self._kept_state: dict[str, str] = {}
        self._state_due: dict[str, str] = {}
        self._state_gone: list[str] = []
        self.error: WriteError | None = None
        self._queue: asyncio.Queue[WriteItem | None] = asyncio.Queue(maxsize=queue_size)
        self._pending_cdxj = snapshot.cdxj_pending_path
        self._manifest_file = os.stat(snapshot.manifest_path)
        """The manifest's file as the crawl opened it (see _commit)."""
        self._closed = False
        self._defer_mirror = False
        self.items_enqueued = 0
        """Items put so far."""
        self.items_committed = 0
        """Items whose batch is committed so far: they are written in the order they were put,
        so the first ``items_committed`` items put are stored (a Redis frontier releases their leases)."""

    def reads_body(self, content_type: str | None) -> bool:
        """Whether storing a capture whose records come encoded reads its body: only to copy it to
        the mirror as received (a file other than a page or stylesheet, while the mirror is
        written during the crawl)."""
        copies = self.mirror is not None and not self.mirror.deferred
        return copies and mime_type(content_type) not in PARSED_TYPES

    def defer_mirror(self) -> None:
        """Have the mirror built after the crawl (LiveMirror.defer()), from the next batch on."""
        self._defer_mirror = True

    async def committed(self) -> None:
        """Wait until everything queued before this call is committed (records, rows, CDXJ).

        Cancelled, nothing is lost: the items are written all the same.
        """
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self.put(WriteItem(None, done=done))
        await asyncio.shield(done)

    async def put(self, item: WriteItem) -> None:
        """Queue ``item``; waits while the queue is full (backpressure)."""
        if self.error is not None:
            if item.capture is not None:
                item.capture.body.close()
            raise self.error
        await self._queue.put(item)
        self.items_enqueued += 1

    def keep_state(self, state: Callable[[], dict[str, str]], kept: dict[str, str]) -> None:
        """Keep ``state`` with the rows: what the crawl holds beside them ({name: text}: its
        cookies, its renders), read on the event loop before each batch and committed with it
        where it changed (Manifest.keep_state), an entry it no longer gives forgotten, so a crawl
        resumed after a kill holds what the one killed held when its rows were stored. ``kept``:
        those of its entries the manifest holds already (a resumed crawl's)."""
        self._state = state
        self._kept_state = dict(kept)

    async def run(self) -> None:
        """Consume items until close(); a WriteError is kept in .error and re-raised.

        Cancelled, it stops after the batch in hand is written.
        """
        while True:
            item = await self._queue.get()
            cancelled = False
            if item is not None and self._queue.qsize() < self._queue.maxsize // 2:
                # Let a batch gather: each costs a thread hop, a flush and a commit.
                try:
                    await asyncio.sleep(BATCH_WINDOW)
                except asyncio.CancelledError:
                    cancelled = True  # the item in hand is written first
            batch = [item]
            while not self._queue.empty() and len(batch) < BATCH_ITEMS:
                batch.append(self._queue.get_nowait())
            done = None in batch
            items = [i for i in batch if i is not None]
            if self._state is not None:
                state = self._state()
                self._state_due = {k: v for k, v in state.items() if self._kept_state.get(k) != v}
                self._state_gone = [name for name in self._kept_state if name not in state]
            try:
                await asyncio.to_thread(self._write_batch, items)
                self._kept_state.update(self._state_due)
                for name in self._state_gone:
                    del self._kept_state[name]
                self.items_committed += len(items)
            except Exception as exc:
                # Any failure stops the crawl: a crawl must never "finish" with records lost.
                self.error = (
                    exc
                    if isinstance(exc, WriteError)
                    else WriteError(f"the writer failed: {type(exc).__name__}: {exc}")
                )
                self._drain(items)
                raise self.error from None
            finally:
                for _ in batch:
                    self._queue.task_done()
            self._settle(items)
            if cancelled:
                raise asyncio.CancelledError
            if done:
                return

    def _settle(self, items: list[WriteItem]) -> None:
        if self.on_commit is not None:
            self.on_commit([item.row.url for item in items if item.row is not None])
        for item in items:
            if item.done is not None and not item.done.done():
                item.done.set_result(None)

    def _drain(self, failed: list[WriteItem]) -> None:
        """After a failure: drop what is queued; whoever waits on an item hears the error."""
        dropped = list(failed)
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is not None:
                dropped.append(item)
                if item.capture is not None:
                    item.capture.body.close()
            self._queue.task_done()
        for item in dropped:
            if item.done is not None and not item.done.done():
                item.done.set_exception(self.error or WriteError("the writer failed"))

    def _write_batch(self, items: list[WriteItem]) -> None:
        # Records reach the file before the manifest and the CDXJ name them, and every
        # batch is committed, so a crash (even kill -9) loses at most the fetches in
        # flight; what it leaves past the last commit, resume cuts off (crawling/resume.py).
        # A failed batch is rolled back: its rows, its CDXJ lines (else the index, merged at
        # the end, would name records that resume cuts) and records not flushed yet
        # (WarcFiles._fail).
        if self._defer_mirror and self.mirror is not None:
            self.mirror.defer()  # between two transactions: no batch is half in hand
        lines = []
        pending_size = self._pending_size()
        try:
            for item in items:
                line = self._write_item(item)
                if line:
                    lines.append(line)
            self.warcs.flush()
            if lines:
                try:
                    with open(self._pending_cdxj, "a", encoding="utf-8") as f:
                        f.write("\n".join(lines) + "\n")
                except OSError as exc:
                    raise WriteError(f"cannot write {self._pending_cdxj}: {exc.strerror}") from None
            for name, value in self._state_due.items():
                self.manifest.keep_state(name, value)
            for name in self._state_gone:
                self.manifest.forget_state(name)
            self._commit()
        except BaseException:
            self.manifest.rollback()
            with contextlib.suppress(OSError):
                if self._pending_cdxj.exists():
                    os.truncate(self._pending_cdxj, pending_size)
            raise
        finally:
            for item in items:
                if item.capture is not None:
                    item.capture.body.close()

    def _pending_size(self) -> int:
        try:
            return self._pending_cdxj.stat().st_size
        except FileNotFoundError:
            return 0

    def _commit(self) -> None:
        """Commit the rows of the batch in hand. Refused if the manifest was removed under the
        crawl: SQLite would go on writing the file it holds open, gone from the folder, and the
        crawl end as done with every row lost."""
        path = self.snapshot.manifest_path
        if not still_at(path, self._manifest_file):
            raise WriteError(
                f"{path} was removed while the crawl wrote it: its rows are lost"
                " (resumed with --repair, the crawl writes it again from the WARC files)"
            )
        try:
            self.manifest.commit()
        except Exception as exc:  # sqlite3 raises its own tree for a full disk
            raise WriteError(f"cannot write the manifest {self.snapshot.manifest_path}: {exc}") from None

    def _write_item(self, item: WriteItem) -> str | None:
        line = None
        row = item.row
        if row is not None and item.capture is not None:
            written = self.warcs.write_capture(item.capture, item.exchange)
            row = dataclasses.replace(
                row,
                warc_file=written.warc_file,
                warc_offset=written.offset,
                warc_length=written.length,
                record_type=written.record_type,
                payload_digest=written.payload_digest,
                fetched_at=written.date,
            )
            if self.mirror is not None and is_mirrored(row):
                row = dataclasses.replace(row, local_path=self.mirror.place(row, item.capture, item.draft))
            if item.capture.not_modified is None:
                # A 304's revisit gets no line: replay tools (pywb, ReplayWeb.page) play a revisit
                # whose own status is 3xx as itself, an empty 304; without its line they play the
                # URL's capture in the previous snapshot, which the 304 confirmed.
                line = cdxj_line(
                    row.url,
                    written.date,
                    mime="warc/revisit" if written.record_type == "revisit" else mime_type(row.content_type),
                    status=row.status,
                    digest=written.payload_digest,
                    length=written.length,
                    offset=written.offset,
                    filename=written.warc_file,
                )
        try:
            if item.framed is not None:
                self.manifest.framed(*item.framed)
                self._frames.setdefault(item.framed[1], []).append(item.framed[0])
            if item.met:
                self.manifest.insert_new(item.met)
            if row is not None:
                self.manifest.upsert(row)
            if item.render is not None:
                line = self._write_render(item.render) or line
        except WriteError:
            raise
        except Exception as exc:
            raise WriteError(f"cannot write the manifest {self.snapshot.manifest_path}: {exc}") from None
        return line

    def _write_render(self, note: RenderNote) -> str | None:
        """Store a rendered DOM (if any) and the page's render columns; its CDXJ line."""
        frames = tuple(self._frames.pop(note.url, ()))
        if note.dom is None:
            self.manifest.set_render(note.url, note.reason, note.error, links_cut=note.links_cut)
            return None
        # The frames it loaded go in its record too: a manifest written again learns them there.
        dom = dataclasses.replace(note.dom, frames=frames)
        file, offset, length = self.warcs.write_member(dom_record(dom, self.warcs.make_id()))
        self.manifest.set_render(
            note.url, note.reason, note.error, (file, offset, length), note.title, note.links_cut
        )
        if self.mirror is not None:
            self.mirror.rendered(note.url)
        return cdxj_line(
            dom_target(note.url),
            warc_date(note.dom.date),
            mime="text/html",
            status=None,
            digest=sha1_digest(hashlib.sha1(note.dom.html)),
            length=length,
            offset=offset,
            filename=file,
        )

    async def close(self) -> None:
        """Write what is queued, then close WARC, CDXJ and manifest; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.warcs.close()
            self.manifest.resolve_redirects()
            self._commit()
            try:
                await asyncio.to_thread(merge_into_index, self._pending_cdxj, self.snapshot.cdxj_path)
            except OSError as exc:  # a full disk: the pending lines stay, for the resumed crawl's merge
                raise WriteError(f"cannot write {self.snapshot.cdxj_path}: {exc.strerror or exc}") from None
        finally:
            self.manifest.close()

    async def finish(self) -> None:
        """Ask run() to stop once everything queued before is written."""
        await self._queue.put(None)
