"""crawl.json: its record of the crawl is whole, and its statistics are the manifest's.

A crawl (and a merge of a shared one) writes its statistics from the manifest
(store/totals.summary) as it ends, so a crawl that stopped or finished says
what the manifest counts; one still running (or killed) may say less, but each
figure is still of its kind (a count, a table of counts, a list).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archiver.errors import UnsafePathError
from archiver.report import CRAWL_JSON_MISMATCH, Report
from archiver.store.crawl_record import FINISHED, INTERRUPTED, RUNNING, damaged_lists
from archiver.store.manifest import Manifest
from archiver.store.snapshot import CRASH_TAILS
from archiver.store.totals import summary
from archiver.warc.safe_join import safe_join

WHERE = "crawl.json"
STATUSES = (RUNNING, FINISHED, INTERRUPTED)


def check_crawl_json(data: dict[str, Any], manifest: Manifest, root: Path, report: Report) -> None:
    """Report what of crawl.json's record (``data``) is of the wrong kind or disagrees with
    ``manifest``, and the crash tails it notes that are no longer kept in the snapshot ``root``."""
    status = data.get("status")
    if status not in STATUSES:
        report.add(CRAWL_JSON_MISMATCH, WHERE, f"status {status!r} is none of {', '.join(STATUSES)}")
    damaged = damaged_lists(data)
    for key in damaged:
        report.add(CRAWL_JSON_MISMATCH, WHERE, f"{key} {_shown(data[key])} is not a list of objects")
    if CRASH_TAILS not in damaged:
        for tail in data.get(CRASH_TAILS, []):
            _check_crash_tail(tail, root, report)
    if "stats" not in data:
        if status in (FINISHED, INTERRUPTED):
            report.add(CRAWL_JSON_MISMATCH, WHERE, f"a crawl {status} with no stats")
        return
    stats = data["stats"]
    expected = json.loads(json.dumps({k: v for k, v in summary(manifest).items() if k != "errors"}))
    if not isinstance(stats, dict):
        report.add(CRAWL_JSON_MISMATCH, WHERE, f"stats {_shown(stats)} is not an object")
        return
    for name, value in expected.items():
        found = stats.get(name)
        if not _same_kind(found, value):
            report.add(CRAWL_JSON_MISMATCH, WHERE, f"stats.{name} {_shown(found)} is not {_kind_of(value)}")
        elif status != RUNNING and found != value:  # a run's end wrote them from the manifest
            report.add(
                CRAWL_JSON_MISMATCH,
                WHERE,
                f"stats.{name} is {_shown(found)}; the manifest counts {_shown(value)}",
            )


def _same_kind(found: Any, value: Any) -> bool:
    if isinstance(value, bool) or isinstance(found, bool):
        return type(found) is type(value)
    if isinstance(value, int):
        return isinstance(found, int)
    if isinstance(value, dict):
        return isinstance(found, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in found.values()
        )
    return isinstance(found, type(value))


def _kind_of(value: Any) -> str:
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, dict):
        return "an object of counts"
    if isinstance(value, list):
        return "a list"
    return f"of type {type(value).__name__}"


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_crash_tail(tail: dict[str, Any], root: Path, report: Report) -> None:
    """The bytes a resume cut off a WARC file are where crawl.json says it kept them."""
    kept_in, length = tail.get("kept_in"), tail.get("length")
    cut = f"{length} bytes cut from {tail.get('file')}@{tail.get('offset')}"
    try:
        path = safe_join(root, str(kept_in))
        size = path.stat().st_size if path.is_file() else None
    except (OSError, UnsafePathError):
        size = None
    if size is None:
        report.add(CRAWL_JSON_MISMATCH, str(kept_in), f"the crash tail crawl.json notes ({cut}) is not kept")
    elif size != length:
        report.add(CRAWL_JSON_MISMATCH, str(kept_in), f"holds {size} bytes; crawl.json notes {cut}")
