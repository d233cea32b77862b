"""Consistency: the manifest and the mirror agree with the WARC files (the CDXJ index: warc/cdxj_check.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

from archiver.content import NOT_MODIFIED, mime_type
from archiver.media_types import may_be_taken_as
from archiver.report import (
    BAD_ROW,
    CRASH_TAIL,
    MISSING_CAPTURE,
    MISSING_MIRROR_FILE,
    MISSING_REASON,
    MISSING_WARC_FILE,
    STRAY_REASON,
    UNLISTED_RECORD,
    UNREADABLE_FILE,
    WRONG_LOCATION,
    WRONG_REDIRECT,
    Report,
)
from archiver.scope import (
    BAD_PUNYCODE,
    BYTE_LIMIT,
    EXCLUDED,
    NOFOLLOW,
    OUT_OF_SCOPE,
    PAGE_LIMIT,
    PATH_REPEATS,
    ROBOTS,
    ROBOTS_UNREACHABLE,
    TOO_DEEP,
)
from archiver.scope import TOO_LONG as URL_TOO_LONG
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED, ManifestRow
from archiver.warc.dom import dom_target, page_of
from archiver.warc.integrity import Records
from archiver.warc.record_index import RecordEntry


def check_manifest(
    manifest: Manifest,
    records: Records,
    warc_sizes: Mapping[str, int],
    damaged: set[tuple[str, int]],
    report: Report,
    mirror_dir: Path | None,
    left_by_a_kill: Callable[[str, int], bool] = lambda _file, _offset: False,
    unsound: AbstractSet[tuple[str, int]] = frozenset(),
) -> None:
    """Every row's facts hold: its WARC record, its reason, its mirrored file.

    ``warc_sizes``: the size of each WARC file there is, by name. ``damaged`` locations were
    reported by the integrity check already. ``unsound`` ones too (records read whole that fail
    a digest): what they say of their capture is the damage reported, not the row's to match,
    so only the URL they are of is checked; a row judged wrong by it would have the repair
    write the manifest again while the record is damaged, its page's links unread.
    ``mirror_dir`` None skips the mirrored files. ``left_by_a_kill(file, offset)``: whether a
    record is past the last commit of a stopped crawl (a crash_tail, not an unlisted record).
    """
    mirror_root = mirror_dir.resolve() if mirror_dir is not None else None
    for row in manifest.rows():
        report.stats["manifest rows"] += 1
        wrong = row.wrong_types()
        if wrong:  # what it says cannot be looked up: said once, as it is
            report.add(BAD_ROW, row.url, "; ".join(wrong))
            continue
        if row.outcome in (SKIPPED, FAILED) and not row.reason:
            report.add(MISSING_REASON, row.url, f"{row.outcome} with no reason")
        if row.outcome in (FETCHED, REDIRECTED) and row.reason in _NOT_FETCHED:
            report.add(STRAY_REASON, row.url, f"{row.outcome} (status {row.status}), said {row.reason!r}")
        if row.outcome in (FETCHED, REDIRECTED) and not row.warc_file:
            report.add(MISSING_CAPTURE, row.url, f"{row.outcome} (status {row.status})")
        if row.warc_file:
            _check_location(row, records, warc_sizes, damaged, unsound, report)
            records.claim((row.warc_file, row.warc_offset or 0))
        if row.dom_warc_file:
            _check_dom_location(row, records, warc_sizes, damaged, report)
            records.claim((row.dom_warc_file, row.dom_warc_offset or 0))
        if row.local_path and mirror_dir is not None and mirror_root is not None:
            _check_local_path(row, mirror_dir, mirror_root, report)
    for entry in records.values("claimed = 0"):
        page = page_of(entry.url) if entry.record_type == "resource" else None
        found = manifest.get(page or entry.url)
        if found is None or not (found.dom_warc_file if page else found.warc_file):
            state = "no row" if found is None else f"its row ({found.outcome}) names no record"
            kill = left_by_a_kill(entry.file, entry.offset)
            report.add(
                CRASH_TAIL if kill else UNLISTED_RECORD,
                f"{entry.file}@{entry.offset}",
                f"{entry.record_type} for {entry.url}: {state}",
            )


_NOT_FETCHED = frozenset(
    {OUT_OF_SCOPE, EXCLUDED, TOO_DEEP, PAGE_LIMIT, BYTE_LIMIT, ROBOTS, ROBOTS_UNREACHABLE, NOFOLLOW}
    | {URL_TOO_LONG, BAD_PUNYCODE, PATH_REPEATS}
)
"""The reasons a URL is not fetched for (scope.py): a row of a URL fetched never holds one alone."""

_CAPTURE_FACTS = ("payload_digest", "fetched_at", "warc_offset", "warc_length", "record_type")
"""What the writer records of each capture with its WARC file (crawling.writer)."""


def _check_location(
    row: ManifestRow,
    records: Records,
    warc_sizes: Mapping[str, int],
    damaged: set[tuple[str, int]],
    unsound: AbstractSet[tuple[str, int]],
    report: Report,
) -> None:
    assert row.warc_file is not None
    where = f"{row.url} -> {row.warc_file}@{row.warc_offset}"
    if row.warc_file not in warc_sizes:
        report.add(MISSING_WARC_FILE, where, f"warc/{row.warc_file} does not exist")
        return
    key = (row.warc_file, row.warc_offset or 0)
    if key in damaged:
        return
    entry = records.get(key)
    if entry is None:
        report.add(
            WRONG_LOCATION, where, _nothing_at(key[1], warc_sizes[row.warc_file], "response or revisit")
        )
        return
    if key in unsound:  # its other facts are the damage the integrity check reported
        if entry.url != row.url:
            report.add(WRONG_LOCATION, where, f"record is for {entry.url}")
        return
    # What the crawl wrote of every capture: a row without it lost it since.
    wrong = [f"row names no {name}" for name in _CAPTURE_FACTS if getattr(row, name) is None]
    if entry.url != row.url:
        wrong.append(f"record is for {entry.url}")
    if row.fetched_at is not None and entry.date != row.fetched_at:
        wrong.append(f"record's date {entry.date} is not {row.fetched_at}")
    if row.payload_digest and entry.payload_digest != row.payload_digest:
        wrong.append(f"record digest {entry.payload_digest} is not {row.payload_digest}")
    if row.warc_length is not None and entry.length and entry.length != row.warc_length:
        wrong.append(f"record length {entry.length} is not {row.warc_length}")
    stored = _payload_length(entry, records, unsound)
    if row.length is not None and stored is not None and stored != row.length:
        wrong.append(f"record's payload is {stored} bytes, not {row.length}")
    if entry.record_type == "response":  # a cut the crawl made (--max-file-size) is declared
        if row.truncated and entry.truncated is None:
            wrong.append("row says its body was cut short; the record holds it whole")
        elif not row.truncated and entry.truncated == "length":
            wrong.append("record's body is cut at --max-file-size; the row says it is whole")
    if row.record_type and entry.record_type != row.record_type:
        wrong.append(f"record is a {entry.record_type}, not a {row.record_type}")
    # A 304's revisit holds the 304 itself; its row, the response it confirmed.
    if row.status is not None and entry.status not in (None, 304) and entry.status != row.status:
        wrong.append(f"record's HTTP status {entry.status} is not {row.status}")
    # The row says what the answer was taken as: a type sniffed from its body where its header
    # named none, or one images are sent as by mistake (media_types.sniffed_as()).
    taken = mime_type(row.content_type) if row.content_type else ""
    if taken and entry.mime and not may_be_taken_as(entry.mime, taken):
        wrong.append(f"record's content type {entry.mime} is not {row.content_type}")
    if wrong:
        report.add(WRONG_LOCATION, where, "; ".join(wrong))
    # Where a redirect leads is its record's Location, as the crawl resolved it (the mirror links
    # by it). A 304's revisit holds the 304's head, not the Location of the answer it confirmed.
    if entry.status != NOT_MODIFIED and entry.redirect_to != row.redirect_to:
        record, named = (f"to {url}" if url else "nowhere" for url in (entry.redirect_to, row.redirect_to))
        report.add(WRONG_REDIRECT, row.url, f"its record's Location leads {record}, its row {named}")


def _payload_length(
    entry: RecordEntry, records: Records, unsound: AbstractSet[tuple[str, int]]
) -> int | None:
    """Bytes of the payload ``entry`` holds (a revisit's: its original's, when it is here); None
    when it cannot be told (its original fails a digest: ``unsound``)."""
    if entry.record_type != "revisit":
        return entry.payload_length
    key = records.response_at(*entry.refers_to) if entry.refers_to else None
    original = records.get(key) if key and key not in unsound else None
    return original.payload_length if original is not None else None


def _check_dom_location(
    row: ManifestRow,
    records: Records,
    warc_sizes: Mapping[str, int],
    damaged: set[tuple[str, int]],
    report: Report,
) -> None:
    """The row's rendered DOM is a resource record for urn:dom:<its URL>, where the row says."""
    assert row.dom_warc_file is not None
    where = f"{row.url} (rendered DOM) -> {row.dom_warc_file}@{row.dom_warc_offset}"
    if row.dom_warc_file not in warc_sizes:
        report.add(MISSING_WARC_FILE, where, f"warc/{row.dom_warc_file} does not exist")
        return
    key = (row.dom_warc_file, row.dom_warc_offset or 0)
    if key in damaged:
        return
    entry = records.get(key)
    if entry is None or entry.record_type != "resource":
        report.add(WRONG_LOCATION, where, _nothing_at(key[1], warc_sizes[row.dom_warc_file], "resource"))
        return
    wrong = []
    if entry.url != dom_target(row.url):
        wrong.append(f"record is for {entry.url}")
    if row.dom_warc_length is not None and entry.length and entry.length != row.dom_warc_length:
        wrong.append(f"record length {entry.length} is not {row.dom_warc_length}")
    if wrong:
        report.add(WRONG_LOCATION, where, "; ".join(wrong))


def _nothing_at(offset: int, size: int, kind: str) -> str:
    """Why no record of ``kind`` is found at ``offset`` of a file of ``size`` bytes."""
    if offset >= size:
        return f"the file ends at {size} bytes, before this record: it was cut short"
    return f"no {kind} record starts there"


def _check_local_path(row: ManifestRow, mirror_dir: Path, mirror_root: Path, report: Report) -> None:
    """The row's mirror file is there, inside mirror/ (``mirror_root``: mirror/ resolved, once)."""
    assert row.local_path is not None
    target = mirror_dir / row.local_path
    report.stats["mirrored files"] += 1
    try:
        inside = mirror_root in target.resolve().parents
        there = target.is_file()
    except OSError as exc:  # a folder on its way that cannot be read
        report.add(UNREADABLE_FILE, f"mirror/{row.local_path}", f"cannot be read: {exc.strerror or exc}")
        return
    if not inside or not there:
        why = "is outside mirror/" if not inside else "does not exist"
        report.add(MISSING_MIRROR_FILE, row.url, f"mirror/{row.local_path} {why}")
