"""The damaged records of some WARC files, each record checked alone: what an export asks before
it packs them, without verify's index of every record (record_damage). And where a stopped
crawl's last committed record lies in a file, past which a record cut short is what the kill
left, no damage (last_committed)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from archiver.errors import SnapshotError
from archiver.store.manifest import Manifest
from archiver.store.rows import QUEUED
from archiver.verify.integrity import WarcScan
from archiver.verify.record_index import RecordEntry, RecordIndex
from archiver.verify.report import (
    CORRUPT_GZIP,
    DIGEST_MISMATCH,
    LENGTH_MISMATCH,
    MISSING_HEADER,
    TORN_FILE,
    UNREADABLE_RECORD,
    Problem,
    Report,
)

RECORD_DAMAGE = (CORRUPT_GZIP, TORN_FILE, UNREADABLE_RECORD, MISSING_HEADER, LENGTH_MISMATCH, DIGEST_MISMATCH)
"""What leaves a record unreadable or untrue, found in its file alone (not what spans files:
pairs, revisits' originals)."""


def record_damage(paths: Iterable[Path], manifest: Callable[[], Manifest]) -> list[Problem]:
    """The damaged records of the WARC files ``paths`` (the first few of each kind): what a
    stopped crawl left past its last commit is no damage (crawl --resume sets it aside).
    ``manifest`` gives the snapshot's, called only for a file cut short."""

    def committed(name: str) -> int | None:
        if not manifest().count_by("outcome").get(QUEUED):  # finished: nothing is excused
            return sys.maxsize
        return last_committed(manifest(), name)

    report = Report()
    scan = WarcScan(report, _Unindexed())
    scan.last_committed = committed
    for path in paths:
        scan.scan_file(path)
    return [problem for kind in RECORD_DAMAGE for problem in report.examples.get(kind, [])]


class _Unindexed(RecordIndex):
    """A RecordIndex that keeps nothing: for a scan of each record alone, which writes no scratch
    file (a package being written may fill the disk)."""

    def __init__(self) -> None:  # no scratch file
        self._count = 0

    def add(self, entry: RecordEntry) -> None:
        self._count += 1

    def first_id(self, record_id: str) -> bool:
        return True

    def close(self) -> None:
        pass


def last_committed(manifest: Manifest, warc_file: str) -> int | None:
    """Offset of the last record (capture or rendered DOM) the manifest names in ``warc_file``."""
    try:
        found = [manifest.last_capture_offset(warc_file), manifest.last_dom_offset(warc_file)]
    except SnapshotError:  # an offset that is no number: reported as a bad row; nothing is excused
        return sys.maxsize
    return max((offset for offset in found if offset is not None), default=None)
