"""crawl.json as a crawl keeps it: settings, each run's start and end, final statistics, crash tails.

>>> import tempfile
>>> from pathlib import Path
>>> snapshot = Snapshot(Path(tempfile.mkdtemp()))
>>> record = CrawlRecord.start(snapshot, {"seeds": ["http://h/"]}, resume=False)
>>> record.finish(stop_reason=None, fetched=1, seconds=0.5, stats={"urls": 1})
>>> snapshot.read_crawl_json()["status"]
'finished'
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from archiver import __version__
from archiver.errors import SnapshotError
from archiver.report import shell_word
from archiver.store.snapshot import CRASH_TAILS, REPAIRS, Snapshot

RUNNING = "running"
FINISHED = "finished"
INTERRUPTED = "interrupted"


def now() -> str:
    """The time now, as crawl.json says it: 2026-01-02T03:04:05Z."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class CrawlRecord:
    """The crawl.json of a crawl in progress, written through at each change."""

    def __init__(self, snapshot: Snapshot, data: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.data = data

    @classmethod
    def start(cls, snapshot: Snapshot, settings: dict[str, Any], *, resume: bool) -> CrawlRecord:
        """Note a run starting with ``settings`` (a resumed crawl keeps its earlier runs, and its
        run notes the settings it changed)."""
        data: dict[str, Any] = snapshot.read_crawl_json() if resume else {}
        _check_kept(snapshot, data)
        run: dict[str, Any] = {"started": now()}
        before = data.get("settings")
        if isinstance(before, dict):  # what this run changes (options given with --resume)
            run["changed"] = {k: v for k, v in settings.items() if k in before and before[k] != v}
        data["archiver_version"] = __version__
        data["settings"] = settings
        data.setdefault("started", now())
        data["runs"] = [*data.get("runs", []), run]
        data.update(finished=None, status=RUNNING)
        record = cls(snapshot, data)
        record.save()
        return record

    def save(self) -> None:
        self.snapshot.write_crawl_json(self.data)

    def note(self, key: str, entries: Iterable[dict[str, Any]]) -> None:
        """Add ``entries`` (not already there) to the list under ``key``, and save."""
        entries = list(entries)
        if not entries:
            return
        known = self.data.get(key)
        if not isinstance(known, list):
            known = self.data[key] = []
        for entry in entries:
            if entry not in known:
                known.append(entry)
        self.save()

    def finish(self, *, stop_reason: str | None, fetched: int, seconds: float, stats: dict[str, Any]) -> None:
        """Note the end of this run: finished, or interrupted (with why), and the snapshot's totals."""
        status = INTERRUPTED if stop_reason is not None else FINISHED
        self.data["runs"][-1].update(
            finished=now(), status=status, stop_reason=stop_reason, fetched=fetched, seconds=round(seconds, 3)
        )
        self.data.update(finished=now(), status=status, stats=stats)
        self.save()


KEPT_LISTS = ("runs", CRASH_TAILS, REPAIRS, "controls")
"""The lists of objects crawl.json keeps, which each run adds to (CrawlRecord.note)."""


def damaged_lists(data: dict[str, Any]) -> list[str]:
    """The keys of KEPT_LISTS whose value in ``data`` (crawl.json) is not a list of objects."""
    damaged = []
    for key in KEPT_LISTS:
        kept = data.get(key, [])
        if not isinstance(kept, list) or not all(isinstance(entry, dict) for entry in kept):
            damaged.append(key)
    return damaged


def _check_kept(snapshot: Snapshot, data: dict[str, Any]) -> None:
    """SnapshotError if what a run adds to would be lost: a list of crawl.json damaged since."""
    damaged = damaged_lists(data)
    if damaged:
        raise SnapshotError(
            f"{snapshot.crawl_json_path} is damaged: its {damaged[0]} are not a list of objects, and "
            f"a run would lose them (archiver verify {shell_word(snapshot.root)} says more)"
        )
