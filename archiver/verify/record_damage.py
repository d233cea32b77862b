"""The damaged records of some WARC files, each record checked alone: what an export asks before
it packs them, without verify's index of every record (record_damage)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from archiver.report import (
    CORRUPT_GZIP,
    DIGEST_MISMATCH,
    LENGTH_MISMATCH,
    MISSING_HEADER,
    TORN_FILE,
    UNREADABLE_RECORD,
    Problem,
    Report,
)
from archiver.store.committed import kill_line
from archiver.store.manifest import Manifest
from archiver.store.rows import QUEUED
from archiver.warc.integrity import WarcScan
from archiver.warc.record_index import RecordEntry, RecordIndex

RECORD_DAMAGE = (CORRUPT_GZIP, TORN_FILE, UNREADABLE_RECORD, MISSING_HEADER, LENGTH_MISMATCH, DIGEST_MISMATCH)
"""What leaves a record unreadable or untrue, found in its file alone (not what spans files:
pairs, revisits' originals)."""


def record_damage(paths: Iterable[Path], manifest: Callable[[], Manifest]) -> list[Problem]:
    """The damaged records of the WARC files ``paths`` (the first few of each kind): what a
    stopped crawl left past its last commit is no damage (crawl --resume sets it aside).
    ``manifest`` gives the snapshot's, called only for a file cut short."""

    by_name = {path.name: path for path in paths}

    def kill_line_of(name: str) -> int:
        if not manifest().count_by("outcome").get(QUEUED):  # finished: nothing is excused
            return sys.maxsize
        return kill_line(by_name[name], manifest())

    report = Report()
    scan = WarcScan(report, _Unindexed())
    scan.kill_line = kill_line_of
    for path in by_name.values():
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
