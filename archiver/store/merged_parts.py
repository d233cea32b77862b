"""Which crawl nodes' parts the snapshot's manifest holds as they are now (crawling/merge.py joins them)."""

from __future__ import annotations

from pathlib import Path

from archiver.errors import SnapshotError
from archiver.store.snapshot import Snapshot

NODES = "nodes"
"""crawl.json key: {node: {manifest: [size, mtime_ns], status, runs}} of the parts merged."""


def fingerprint(part: Snapshot) -> list[int]:
    """[size, mtime in ns] of a part's manifest: verify tells from it a part changed since its merge."""
    try:
        stat = part.manifest_path.stat()
    except FileNotFoundError:
        return [0, 0]
    return [stat.st_size, stat.st_mtime_ns]


def stale_parts(root: Path) -> list[str]:
    """Nodes whose part is not in the snapshot's manifest as it is now (empty when all are)."""
    snapshot = Snapshot(root)
    try:
        merged = snapshot.read_crawl_json().get(NODES) or {}
    except SnapshotError:
        merged = {}
    stale = []
    for name in snapshot.node_names():
        entry = merged.get(name)
        if not isinstance(entry, dict) or entry.get("manifest") != fingerprint(snapshot.node_part(name)):
            stale.append(name)
    return stale
