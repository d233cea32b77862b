"""Revisits of a re-archive followed into the previous snapshot they refer to.

A re-archive's revisits refer to response records of the snapshot it was
made against (crawl.json's ``previous``). When that snapshot is there, each
such revisit's original is looked up in its manifest and read back, its
payload digest checked. The completeness check reads an original only once
it passed (:meth:`EarlierRecords.original`), as it reads only the intact
records of the snapshot itself: it decodes a page up to the crawl's limit,
never reaching the end of a larger record, where its digests are settled.
When the snapshot is gone (or, for a chain of re-archives, an earlier
snapshot of the chain that holds originals), verify says so once
(missing_previous): the mirror stands alone, but the WARC files do not, as a
replay tool needs the originals' payloads.
"""

from __future__ import annotations

from pathlib import Path

from archiver.errors import SnapshotError
from archiver.report import DANGLING_REVISIT, MISSING_PREVIOUS, Report
from archiver.store.previous import Original, Previous, previous_path
from archiver.store.snapshot import Snapshot
from archiver.warc.record_index import RecordEntry


class EarlierRecords:
    """The previous snapshot of a re-archive, for WarcScan.finish(); call close() at the end."""

    def __init__(self, path: Path, report: Report) -> None:
        self.path = path
        self.report = report
        self.previous: Previous | None = None
        self.missing = 0
        """Revisits whose original could not be looked for: the previous snapshot is gone."""
        self.damaged: set[tuple[str, str]] = set()
        """(URL, date) of the originals check() found damaged, or of another digest (reported)."""
        try:
            self.previous = Previous(path)
        except SnapshotError:  # gone, or no snapshot any more: said once, at close()
            self.previous = None

    @classmethod
    def of(cls, snapshot: Snapshot, report: Report) -> EarlierRecords | None:
        """The previous snapshot ``snapshot`` names in its crawl.json, if it names one."""
        path = previous_path(snapshot)
        return cls(path, report) if path is not None else None

    def check(self, entry: RecordEntry, where: str) -> bool:
        """Check the original of the revisit ``entry`` in the previous snapshot; False if it is not
        there either (the caller reports it dangling)."""
        assert entry.refers_to is not None
        if self.previous is None:
            self.missing += 1
            return True
        original = self.previous.at(*entry.refers_to)
        if original is None:
            gone = self.previous.gone_in_chain()
            if gone is None:
                return False
            self.path = gone  # an earlier snapshot of the chain is gone: said once, at close()
            self.missing += 1
            return True
        self.report.stats["revisits of the previous snapshot"] += 1
        if original.payload_digest != entry.payload_digest:
            problem: str | None = f"has digest {original.payload_digest}, not {entry.payload_digest}"
        else:
            problem = original.check()
        if problem is not None:
            self.damaged.add(entry.refers_to)
            self.report.add(
                DANGLING_REVISIT,
                where,
                f"{entry.url}: original {original.url} in {self.path}: {problem}",
            )
        return True

    def original(self, url: str, date: str) -> Original | None:
        """The original of a revisit that refers to ``url`` at ``date`` in the previous snapshot,
        once check() found it whole with its digest: None if it is not there or is damaged."""
        if self.previous is None or (url, date) in self.damaged:
            return None
        return self.previous.at(url, date)

    def close(self) -> None:
        """Report a missing previous snapshot (once), and close it; safe to call twice."""
        if self.missing:
            self.report.add(
                MISSING_PREVIOUS,
                str(self.path),
                f"{self.missing} revisits refer to records of this snapshot, which is not there",
            )
            self.missing = 0
        if self.previous is not None:
            self.previous.close()
            self.previous = None
