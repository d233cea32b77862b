"""The CDXJ index checked against the WARC records it points at, line by line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from archiver.report import CDXJ_MISMATCH, UNREADABLE_FILE, Report, shell_word
from archiver.surt import surt
from archiver.warc.cdxj import cdxj_timestamp
from archiver.warc.integrity import Records
from archiver.warc.record_index import RecordEntry

IndexedAs = Callable[[RecordEntry], tuple[str, int | None] | None]
"""The MIME type and status the crawl indexes a record under, None if no row names it
(store/index_rebuild.indexed_as())."""


def check_cdxj(
    path: Path,
    records: Records,
    damaged: set[tuple[str, int]],
    report: Report,
    pending: Path | None = None,
    indexed_as: IndexedAs | None = None,
) -> None:
    """Every CDXJ line points at its record, and every response and revisit has its line, but
    a 304's revisit (server-not-modified), which the crawl leaves out of the index (see
    crawling.writer: replay plays the capture it confirmed instead).

    Lines pointing at ``damaged`` records are not reported again. ``pending``: the lines of an
    interrupted crawl not merged into the index yet (unsorted; those of records a crash cut
    short are dropped by its resume, so they are not reported either). ``indexed_as``: what
    each line's ``mime`` and ``status`` are to be (without it, its status is the record's).
    """
    if pending is not None and pending.is_file():
        try:
            _check_pending(pending, records, report, indexed_as)
        except OSError as exc:
            report.add(UNREADABLE_FILE, f"indexes/{pending.name}", f"cannot be read: {exc.strerror or exc}")
    if not path.is_file():
        if next(records.values("indexed = 0 AND NOT (record_type = 'revisit' AND status = 304)"), None):
            report.add(
                CDXJ_MISMATCH,
                "indexes/index.cdxj",
                f"the index is missing (archiver mirror {shell_word(path.parent.parent)} writes it again)",
            )
        return
    try:
        _check_lines(path, records, damaged, report, indexed_as)
    except OSError as exc:  # its permissions, or the disk: its lines are not checked
        report.add(UNREADABLE_FILE, "indexes/index.cdxj", f"cannot be read: {exc.strerror or exc}")
        return
    for entry in records.values("indexed = 0 AND NOT (record_type = 'revisit' AND status = 304)"):
        report.add(
            CDXJ_MISMATCH,
            f"{entry.file}@{entry.offset}",
            f"no CDXJ line for the {entry.record_type} of {entry.url}",
        )


def _check_lines(
    path: Path, records: Records, damaged: set[tuple[str, int]], report: Report, indexed_as: IndexedAs | None
) -> None:
    """Check each line of the index at ``path`` (check_cdxj())."""
    previous = ""
    unsorted = False
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            report.stats["CDXJ lines"] += 1
            where = f"indexes/index.cdxj:{number}"
            if line < previous and not unsorted:
                unsorted = True
                report.add(CDXJ_MISMATCH, where, "lines are not sorted")
            previous = line
            problem = _check_cdxj_line(
                line, records, damaged, indexed_as, rekey=f"archiver mirror {shell_word(path.parent.parent)}"
            )
            if problem:
                report.add(CDXJ_MISMATCH, where, problem)


def _check_pending(path: Path, records: Records, report: Report, indexed_as: IndexedAs | None) -> None:
    """Mark the records the pending lines of an interrupted crawl index, and report the lines
    a resume (or an export) would take as they are but that do not match their record: one
    that names no record is left by a crash (its resume drops it), as is a last line cut."""
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if line.endswith("\n") and line.strip():
                problem = _check_cdxj_line(line.rstrip("\n"), records, set(), indexed_as, unknown_ok=True)
                if problem:
                    report.add(CDXJ_MISMATCH, f"indexes/{path.name}:{number}", problem)


def _check_cdxj_line(
    line: str,
    records: Records,
    damaged: set[tuple[str, int]],
    indexed_as: IndexedAs | None,
    unknown_ok: bool = False,
    rekey: str = "",
) -> str | None:
    """What is wrong with one CDXJ line, or None; marks its record as indexed. ``unknown_ok``:
    a line that names no record is no problem. ``rekey``: the command that keys the index again
    (an earlier version keyed some URLs otherwise), said with a key that is not the URL's."""
    key_part, _, rest = line.partition(" ")
    timestamp, _, block = rest.partition(" ")
    try:
        fields = json.loads(block)
        key = (str(fields["filename"]), int(fields["offset"]))
        length = int(fields["length"])
    except (ValueError, KeyError, TypeError):
        return "not a CDXJ line (SURT, timestamp, JSON with filename, offset, length)"
    entry = records.get(key)
    if entry is None and (key in damaged or unknown_ok):
        return None
    if entry is None:
        return f"points at {key[0]}@{key[1]}, where no response, revisit or resource record starts"
    if not records.mark_indexed(key):
        return f"a second line for {key[0]}@{key[1]}"
    wrong = []
    if fields.get("url") != entry.url:
        wrong.append(f"url {fields.get('url')} is not the record's {entry.url}")
    if key_part != surt(entry.url):
        again = f" (pywb looks it up by that; key the index again with: {rekey})" if rekey else ""
        wrong.append(f"SURT {key_part} is not {surt(entry.url)}{again}")
    if timestamp != cdxj_timestamp(entry.date):
        wrong.append(f"timestamp {timestamp} is not the record's date {entry.date}")
    if fields.get("digest") != entry.payload_digest:
        wrong.append(f"digest {fields.get('digest')} is not {entry.payload_digest}")
    if entry.length and length != entry.length:
        wrong.append(f"length {length} is not {entry.length}")
    indexed = indexed_as(entry) if indexed_as is not None else None
    mime, status = indexed if indexed is not None else (fields.get("mime", ""), entry.status)
    if fields.get("mime", "") != mime:  # what searches by type find it by
        wrong.append(f"mime {fields.get('mime', '(none)')} is not {mime or '(none)'}")
    if fields.get("status") != (None if status is None else str(status)):  # what replay answers with
        wrong.append(f"status {fields.get('status', '(none)')} is not the record's {status or '(none)'}")
    return "; ".join(wrong) or None
