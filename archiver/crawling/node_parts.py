"""NodeParts: whether a crawl node's part of the shared folder holds the outcome of a URL.

A node stores an item's outcome in its own manifest, then releases the item's
lease in Redis. A node given up between the two (killed, or stalled past
--node-timeout) has its leases given back to the queue, outcome stored or not.
Whoever takes such an item looks in that node's part first: a final row there
(captured, failed, or skipped when taken) means the URL is done, and fetching
it again would give it a second record. The part is read once no process writes
it any more: while its lock is held, the node given up may still be storing
what it had in hand (it stops as soon as Redis tells it it was given up).

A part on another machine (not copied here yet) cannot be read: the item is
then fetched again, and the merge keeps one row for the URL.
"""

from __future__ import annotations

import contextlib
import sqlite3
from enum import Enum

from archiver.crawling.merge import TAKEN_REASONS
from archiver.store.lock import is_locked
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED
from archiver.store.snapshot import Snapshot


class Stored(Enum):
    """What a node's part says of a URL."""

    YES = "yes"
    """A final row: the URL is done."""
    NO = "no"
    """No final row, and nobody writes the part (or it is not here): the URL is to be fetched."""
    BUSY = "busy"
    """A process holds the part's lock: it may still store the URL's outcome."""


class NodeParts:
    """The parts of the shared folder ``root``, read for what their nodes stored; ``own`` is this
    node's name (its part is read at once: what an earlier run under the name stored)."""

    def __init__(self, root: Snapshot, own: str) -> None:
        self._root = root
        self._own = own
        self._open: dict[str, Manifest] = {}

    def stored(self, node: str, url: str, *, even_if_busy: bool = False) -> Stored:
        """Whether ``node``'s part holds the outcome of ``url``. ``even_if_busy``: read it though
        its lock is held (by a later run under that name: the node given up is gone)."""
        part = self._root.node_part(node)
        if not part.manifest_path.is_file():
            return Stored.NO
        if node != self._own and not even_if_busy and is_locked(part.root):
            return Stored.BUSY
        try:
            row = self._manifest(node, part).get(url)
        except sqlite3.Error:  # a part too damaged to read: the merge says so; fetch it again
            return Stored.NO
        if row is None:
            return Stored.NO
        final = row.outcome in (FETCHED, REDIRECTED, FAILED) or (
            row.outcome == SKIPPED and row.reason in TAKEN_REASONS
        )
        return Stored.YES if final else Stored.NO

    def _manifest(self, node: str, part: Snapshot) -> Manifest:
        manifest = self._open.get(node)
        if manifest is None:
            manifest = self._open[node] = Manifest.open(part.manifest_path, readonly=True)
        return manifest

    def close(self) -> None:
        """Close the manifests read; safe to call twice."""
        for manifest in self._open.values():
            with contextlib.suppress(sqlite3.Error):
                manifest.close()
        self._open.clear()
