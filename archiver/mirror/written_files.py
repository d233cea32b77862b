"""What the mirror build wrote, asked of each file before ``archiver serve`` serves it.

The build records each mirror file's SHA-256 and size in the manifest (table ``mirror_files``),
and those of the snapshot's index.html (index_page.INDEX_STATE). A
file changed since (edited, cut short, put there by hand) is not the archive: served as it is,
a person browsing would take it for what was archived, and nothing would say otherwise. So
serve refuses it with a 500 and one line in its log, naming the file and what to do; verify
names the same file (``changed_mirror_file``). A file found as written is hashed again only
once it changed on disk (its size, inode, modification or status change time: the last, which
no program can set back, tells an edit whose modification time was put back), so browsing costs
one read of a page. A file found changed is checked again at each request: a crawl writes a
file before it records what it wrote, and a verdict taken between the two is no verdict.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import sqlite3
from pathlib import Path

from archiver.errors import SnapshotError
from archiver.mirror.index_page import INDEX_STATE
from archiver.mirror.output import file_digest
from archiver.store.manifest import Manifest
from archiver.store.snapshot import Snapshot

VERDICTS_KEPT = 10_000
"""Files found as written that are remembered (by path and how they stand on disk)."""


class WrittenFiles:
    """The mirror files a snapshot's manifest records, each served file checked against them.

    A snapshot with no manifest, or one written before the mirror's files were recorded,
    records nothing to check against: its files are served unchecked.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._written: collections.OrderedDict[tuple[str, int, int, int, int], None] = (
            collections.OrderedDict()
        )
        """Files found as the build wrote them, by path and how they stood on disk then."""

    async def changed(self, relative: str, path: Path) -> str | None:
        """Why the file at ``path`` (``relative`` to the snapshot: index.html, or under mirror/)
        is not what the mirror build wrote there, or None if it is (or nothing was recorded to
        tell)."""
        stat = await asyncio.to_thread(os.stat, path)
        key = (relative, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
        if key in self._written:
            self._written.move_to_end(key)
            return None
        verdict = await asyncio.to_thread(self._check, relative, path)
        if verdict is None:
            self._written[key] = None
            if len(self._written) > VERDICTS_KEPT:
                self._written.popitem(last=False)
        return verdict

    def _check(self, relative: str, path: Path) -> str | None:
        try:
            recorded = self._recorded(relative)
        except (SnapshotError, sqlite3.DatabaseError) as exc:
            return f"the manifest that records what was written cannot be read ({exc})"
        if recorded is None:
            return None
        if not recorded:
            return "the mirror build did not write it"
        sha256, size = recorded[0]
        found, found_size = file_digest(path)
        if (found, found_size) != (sha256, size):
            return f"it changed since the mirror build wrote it ({found_size} bytes, {size} written)"
        return None

    def _recorded(self, relative: str) -> list[tuple[str, int]] | None:
        """[(sha256, size)] the build recorded for ``relative`` ([] if none); None if the
        snapshot records no file at all (no manifest, or one from before files were recorded).
        Raises SnapshotError if what it recorded of index.html is damaged."""
        if not Manifest.begun(self._snapshot.manifest_path):
            return None
        try:
            with Manifest.open(self._snapshot.manifest_path, readonly=True) as manifest:
                if relative == self._snapshot.index_html.name:
                    return _index_written(manifest)
                return manifest.connection.execute(
                    "SELECT sha256, size FROM mirror_files WHERE path = ?",
                    (relative.removeprefix("mirror/"),),
                ).fetchall()
        except sqlite3.OperationalError:  # written before the mirror's files were recorded
            return None


def _index_written(manifest: Manifest) -> list[tuple[str, int]] | None:
    """[(sha256, size)] of the index.html the build wrote; None if it recorded none (a snapshot
    from before). Raises SnapshotError if the record is damaged (verify names it too)."""
    kept = manifest.state(INDEX_STATE)
    if kept is None:
        return None
    try:
        written = json.loads(kept)
        return [(str(written["sha256"]), int(written["size"]))]
    except (ValueError, KeyError, TypeError):
        raise SnapshotError(f"its note of index.html is damaged: {kept[:80]!r}") from None
