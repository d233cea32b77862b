"""Repair: the captures found damaged inside a WARC file, fetched again by ``crawl --resume --repair``.

A resume reads the end of each WARC file alone (store/committed.py): a record
of an earlier capture changed on disk since, its file's last capture intact,
is found only by reading every record, as verify does, which costs a read of
the whole snapshot; so a resume does it when asked. Asked, each capture
holding a damaged record (its response or revisit, its request, its rendered
DOM), and each revisit referring to a damaged response, is set aside in
damaged-records/ (out of warc/, so no tool indexes it) and its URL queued
again (a rendered DOM's page is rendered again). Its bytes in the WARC file
are replaced by a metadata record of the same length (a gzip member padded
by its header's comment) that says where they went: the records after it
stay where the manifest and the CDXJ index say, so nothing intact is fetched
again, and the WARC files hold one capture of each URL.

A damaged warcinfo record (the first of each file) holds no URL to fetch: it
is set aside the same way, and a warcinfo record written again from crawl.json
stands in its place, of the same length.

Each repair is noted in crawl.json (``repairs``) before its URL is queued
again, and the note's record is written over the damaged bytes after: a
repair a crash cut short is finished by the next one, which writes every
noted record again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from isal import isal_zlib

from archiver.crawling.resume import drop_cdxj_lines, drop_uncommitted_cdxj, manifest_lost
from archiver.report import Report
from archiver.store.crawl_record import CrawlRecord
from archiver.store.earlier import EarlierRecords
from archiver.store.manifest import Manifest
from archiver.store.previous import open_previous
from archiver.store.rebuild import (
    crawl_seeds,
    find_again,
    found_by_nothing,
    rebuild_manifest,
    rebuild_part_manifest,
    set_aside_manifest,
)
from archiver.store.snapshot import REPAIRS, Snapshot
from archiver.warc.files import SUFFIX, crawl_info, warc_paths, warcinfo
from archiver.warc.integrity import WarcScan
from archiver.warc.reader import WarcReader
from archiver.warc.record_index import RecordIndex
from archiver.warc.records import WARC_FIELDS_TYPE, encode_record, new_record_id, warc_date
from archiver.warc.safe_join import safe_join

GZIP_COMMENT_HEADER = b"\x1f\x8b\x08\x10\x00\x00\x00\x00\x00\xff"
"""A gzip member's header with a comment (FLG.FCOMMENT), no time, unknown OS."""
COPY_CHUNK = 1024 * 1024
WARCINFO = "warcinfo"
"""DamagedCapture.why of a file's warcinfo record, and the key of what a repair's note writes in
its place (files.crawl_info())."""


@dataclass(frozen=True)
class DamagedCapture:
    """The bytes of one capture (or rendered DOM) that hold a damaged record."""

    file: str
    offset: int
    """Where the capture's first record starts (its row's offset)."""
    length: int
    """Its bytes, up to the next record a row names (or the file's end)."""
    url: str
    why: str = "is damaged"
    """What is wrong: it is damaged, or it is a revisit whose original is."""


def repair(snapshot: Snapshot, prefix: str, manifest: Manifest, record: CrawlRecord) -> list[str]:
    """Set aside the damaged captures of the WARC files and queue their URLs again; returns a
    warning for each repair, and for each damage no fetch can repair (a warcinfo record's)."""
    _write_noted(snapshot, manifest, record)
    damaged, unrepairable = _damaged_captures(snapshot, prefix, manifest)
    # A file's warcinfo holds no URL to fetch: it is written again from crawl.json instead. The
    # crawl writes one form of WARC file, a gzip member a record (files.SUFFIX), and only those
    # are read here (warc_paths): the record standing in is such a member.
    infos = [
        DamagedCapture(name, 0, _warcinfo_length(snapshot, manifest, name), "", WARCINFO)
        for name, offset in unrepairable
        if offset == 0
    ]
    warnings = [
        f"{name}@{offset}: a damaged record no URL's capture holds: not repaired"
        for name, offset in unrepairable
        if (name, offset) not in {(info.file, info.offset) for info in infos}
    ]
    damaged += infos
    notes = []
    for capture in list(damaged):
        note = _repair_note(snapshot, capture)
        if capture.why == WARCINFO:
            note.update(warcinfo=_crawl_info(snapshot, prefix), date=_file_date(capture.file) or note["date"])
        if placeholder_member(note) is None:  # a capture shorter than the record saying so
            damaged.remove(capture)
            warnings.append(
                f"{capture.file}@{capture.offset}: the capture of {capture.url} is damaged and "
                f"too short to stand a record in for it: not repaired"
            )
            continue
        _set_aside(snapshot, capture, note)
        notes.append(note)
    record.note(REPAIRS, notes)  # before the rows: a crash in between is finished by _write_noted
    requeued = _forget(snapshot, manifest, {(capture.file, capture.offset) for capture in damaged})
    for note in notes:
        _write_placeholder(snapshot, note)
    for capture in damaged:
        if capture.why == WARCINFO:
            warnings.append(
                f"{capture.file}@0: the file's warcinfo record is damaged: set aside in "
                f"{snapshot.damaged_records_dir.name}/, written again from crawl.json"
            )
            continue
        again = "fetched again" if capture.url in requeued else "rendered again"
        warnings.append(
            f"{capture.file}@{capture.offset}: the capture of {capture.url} {capture.why}: set aside in "
            f"{snapshot.damaged_records_dir.name}/, {again}"
        )
    return warnings


def _warcinfo_length(snapshot: Snapshot, manifest: Manifest, name: str) -> int:
    """Bytes of the warcinfo record that begins the WARC file ``name``: up to its first capture
    (or the file's end)."""
    first = manifest.next_record_offset(name, 0)
    return first if first is not None else safe_join(snapshot.warc_dir, name).stat().st_size


def _crawl_info(snapshot: Snapshot, prefix: str) -> dict[str, str]:
    """What the crawl's warcinfo records say of it (files.crawl_info()), from crawl.json."""
    saved = snapshot.read_crawl_json().get("settings") or {}
    seeds = saved.get("seeds") if isinstance(saved, dict) else None
    agent = saved.get("user_agent") if isinstance(saved, dict) else None
    named = [str(seed) for seed in seeds] if isinstance(seeds, list) else []
    return crawl_info(prefix, named, str(agent or ""), saved if isinstance(saved, dict) else None)


def _file_date(name: str) -> str | None:
    """The WARC-Date of the warcinfo record of the file ``name``: its creation, which its name
    holds to the second (``PREFIX-YYYYmmddHHMMSS-SERIAL.warc.gz``); None if it holds none."""
    stamp = name.removesuffix(SUFFIX).rsplit("-", 2)
    try:
        return warc_date(datetime.strptime(stamp[-2], "%Y%m%d%H%M%S").replace(tzinfo=UTC))
    except (IndexError, ValueError):
        return None


def rebuild_lost_manifest(snapshot: Snapshot, prefix: str, settings: dict[str, Any]) -> list[str]:
    """If the manifest is lost (gone while the WARC files hold records) or damaged, set it aside
    and write it again from the WARC files (store/rebuild.py), found again from the seeds of
    ``settings`` (the crawl's, as crawl.json keeps them) under their scope; returns a warning
    saying so, or nothing if the manifest stands."""
    return _written_again(
        snapshot,
        prefix,
        lambda: rebuild_manifest(snapshot, prefix, settings, crawl_seeds(settings)),
        "the crawl goes on from them",
    )


def find_again_once_fetched(snapshot: Snapshot, settings: dict[str, Any]) -> None:
    """After the crawl of a repair: if the manifest written again from the WARC files left
    captures found by nothing (the links of a page whose record was damaged could not be read,
    nor a stylesheet it links be read in its encoding), find again how each URL was found, now
    that the repair fetched those pages again; else a second repair would be needed to do it."""
    with Manifest.open(snapshot.manifest_path) as manifest:
        if not found_by_nothing(manifest):
            return
        previous = open_previous(snapshot)
        with WarcReader(snapshot.warc_dir) as reader, previous or contextlib.nullcontext():
            find_again(manifest, reader, previous, settings, crawl_seeds(settings))
        manifest.commit()


def rebuild_lost_part(part: Snapshot, node: str, crawl_prefix: str, settings: dict[str, Any]) -> list[str]:
    """If the manifest of crawl node ``node``'s ``part`` of a shared crawl (``crawl_prefix``,
    ``settings``: the crawl's) is lost or damaged, set it aside and write it again from the
    node's WARC files (store/rebuild.py); returns a warning saying so, or nothing if it stands."""
    prefix = f"{crawl_prefix}-{node}"
    return [
        f"crawl node {node}'s part: {warning}"
        for warning in _written_again(
            part,
            prefix,
            lambda: rebuild_part_manifest(part, prefix, crawl_prefix, settings),
            "it is joined",
        )
    ]


def _written_again(snapshot: Snapshot, prefix: str, rebuild: Callable[[], int], then: str) -> list[str]:
    """Set the manifest of ``snapshot`` aside and ``rebuild`` it (which returns the captures it
    wrote) if it is lost or damaged; the warning that says so, ending with what happens ``then``."""
    lost = manifest_lost(snapshot, prefix)
    damage = None if lost else Manifest.damage_in(snapshot.manifest_path)
    if not lost and damage is None:
        return []
    kept = set_aside_manifest(snapshot)
    captures = rebuild()
    if kept is None:
        was = "the manifest was lost"
    else:  # damaged, or a file with no crawl in it (a kill or a full disk as it was made)
        was = f"{damage or 'the manifest held nothing'} (set aside as {kept})"
    return [f"{was}: written again from the WARC files, {captures} captures; {then}"]


def _damaged_captures(
    snapshot: Snapshot, prefix: str, manifest: Manifest
) -> tuple[list[DamagedCapture], list[tuple[str, int]]]:
    """The captures of the crawl's WARC files that hold a record not intact (read as verify reads
    them), and the revisits that refer to such a capture's response, or to a damaged one of the
    previous snapshot of a re-archive (fetched again, the body is stored whole); and the damaged
    records that no capture holds."""
    paths = {path.name: path for path in warc_paths(snapshot.warc_dir, prefix)}
    found: dict[tuple[str, int], DamagedCapture] = {}
    unrepairable = []
    report = Report()
    earlier = EarlierRecords.of(snapshot, report)
    with RecordIndex() as records:
        scan = WarcScan(report, records)
        scan.earlier = earlier
        try:
            scan.scan(paths.values())
        finally:
            if earlier is not None:
                earlier.close()
        for name, offset in sorted(scan.damaged | scan.unsound):
            capture = _capture_holding(manifest, paths[name], offset)
            if capture is None:
                unrepairable.append((name, offset))
            else:
                found[(capture.file, capture.offset)] = capture
        # A revisit of a response fetched again would refer to a record that is gone.
        originals = {}
        for capture in found.values():
            row = manifest.capture_at(capture.file, capture.offset)
            if row is not None and row.record_type == "response" and row.fetched_at:
                originals[(row.url, row.fetched_at)] = capture
        damaged_before = earlier.damaged if earlier is not None else set()
        for entry in records.values("record_type = 'revisit'") if originals or damaged_before else ():
            refers_to = entry.refers_to
            if (refers_to in originals or refers_to in damaged_before) and (
                entry.file,
                entry.offset,
            ) not in found:
                capture = _capture_holding(manifest, paths[entry.file], entry.offset)
                if capture is not None and capture.offset == entry.offset:
                    why = "refers to a damaged record"
                    found[(capture.file, capture.offset)] = dataclasses.replace(capture, why=why)
    return sorted(found.values(), key=lambda c: (c.file, c.offset)), unrepairable


def _capture_holding(manifest: Manifest, path: Path, offset: int) -> DamagedCapture | None:
    """The capture (or rendered DOM) whose bytes hold the record at ``offset`` of ``path``: the
    last a row names from there back; None before the first (the warcinfo record)."""
    starts = [
        start
        for start in (
            manifest.last_capture_offset(path.name, offset + 1),
            manifest.last_dom_offset(path.name, offset + 1),
        )
        if start is not None
    ]
    if not starts:
        return None
    start = max(starts)
    row = manifest.capture_at(path.name, start) or manifest.dom_at(path.name, start)
    if row is None:
        return None
    end = manifest.next_record_offset(path.name, start)
    length = (end if end is not None else path.stat().st_size) - start
    return DamagedCapture(path.name, start, length, row.url)


def _repair_note(snapshot: Snapshot, capture: DamagedCapture) -> dict[str, Any]:
    """The note of the repair of ``capture`` (crawl.json's ``repairs``): where its bytes are, where
    they are kept, and the record that stands in for them."""
    kept = snapshot.damaged_records_dir / f"{capture.file}.{capture.offset}.damaged"
    return {
        "file": capture.file,
        "offset": capture.offset,
        "length": capture.length,
        "url": capture.url,
        "kept_in": str(kept.relative_to(snapshot.root)),
        "record_id": new_record_id(),
        "date": warc_date(datetime.now(UTC)),
    }


def _set_aside(snapshot: Snapshot, capture: DamagedCapture, note: dict[str, Any]) -> None:
    """Copy the capture's bytes where ``note`` says they are kept (synced to disk)."""
    kept = safe_join(snapshot.root, note["kept_in"])
    kept.parent.mkdir(exist_ok=True)
    partial = kept.with_name(kept.name + ".partial")
    with open(safe_join(snapshot.warc_dir, capture.file), "rb") as source, open(partial, "wb") as target:
        source.seek(capture.offset)
        left = capture.length
        while left and (chunk := source.read(min(COPY_CHUNK, left))):
            target.write(chunk)
            left -= len(chunk)
        target.flush()
        os.fsync(target.fileno())
    os.replace(partial, kept)


def _write_noted(snapshot: Snapshot, manifest: Manifest, record: CrawlRecord) -> None:
    """Finish each repair crawl.json notes, which a crash may have cut short: its URL queued
    again (a row naming the noted capture would name the record that stands in for it), then
    its record written again over the bytes it replaces."""
    notes = [
        note
        for note in record.data.get(REPAIRS) or []
        if (path := safe_join(snapshot.warc_dir, str(note.get("file")))).is_file()
        and path.stat().st_size >= int(note["offset"]) + int(note["length"])
    ]
    _forget(snapshot, manifest, {(str(note["file"]), int(note["offset"])) for note in notes})
    for note in notes:
        _write_placeholder(snapshot, note)


def _forget(snapshot: Snapshot, manifest: Manifest, places: set[tuple[str, int]]) -> set[str]:
    """Queue again the URLs whose captures are at ``places`` (file, offset) and drop their index
    lines; returns the URLs queued (a rendered DOM's page is rendered again instead)."""
    requeued = {url for place in places for url in manifest.requeue_capture(*place)}
    manifest.commit()
    drop_cdxj_lines(snapshot.cdxj_path, lambda place: place in places)
    drop_uncommitted_cdxj(snapshot.cdxj_pending_path, manifest)
    return requeued


def _write_placeholder(snapshot: Snapshot, note: dict[str, Any]) -> None:
    """Write the record that stands in for the damaged bytes ``note`` names, over them."""
    member = placeholder_member(note)
    if member is None:
        return
    with open(safe_join(snapshot.warc_dir, note["file"]), "r+b") as warc:
        warc.seek(int(note["offset"]))
        warc.write(member)
        warc.flush()
        os.fsync(warc.fileno())


def placeholder_member(note: dict[str, Any]) -> bytes | None:
    """A gzip member of ``note["length"]`` bytes holding a metadata record that says which
    capture stood there and where its bytes are kept (or, for a file's warcinfo, the warcinfo
    record written again); None if no such record fits.

    >>> note = {"file": "a.warc.gz", "offset": 9, "length": 2000, "url": "http://h/",
    ...         "kept_in": "damaged-records/a.warc.gz.9.damaged", "record_id": "<urn:uuid:1>",
    ...         "date": "2026-01-02T03:04:05.000000Z"}
    >>> member = placeholder_member(note)
    >>> len(member), b"WARC-Type: metadata" in isal_zlib.decompress(member, 16 + isal_zlib.MAX_WBITS)
    (2000, True)
    >>> member = placeholder_member({**note, "offset": 0, "warcinfo": {"isPartOf": "crawl"}})
    >>> len(member), b"WARC-Type: warcinfo" in isal_zlib.decompress(member, 16 + isal_zlib.MAX_WBITS)
    (2000, True)
    """
    if isinstance(note.get(WARCINFO), dict):  # the file's warcinfo, written again
        fields, head = warcinfo(note["file"], note["record_id"], note["date"], note[WARCINFO])
        member = encode_record(fields, WARC_FIELDS_TYPE, head)
    else:
        text = (
            f"The capture of {note['url']} that stood here was found damaged and fetched again; "
            f"its bytes are kept in {note['kept_in']}.\r\n"
        )
        fields = [
            ("WARC-Type", "metadata"),
            ("WARC-Record-ID", note["record_id"]),
            ("WARC-Date", note["date"]),
        ]
        member = encode_record(fields, "text/plain", text.encode())
    block = isal_zlib.decompress(member, 16 + isal_zlib.MAX_WBITS)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = deflate.compress(block) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(block), len(block) & 0xFFFFFFFF)
    padding = int(note["length"]) - len(GZIP_COMMENT_HEADER) - 1 - len(deflated) - len(trailer)
    if padding < 0:
        return None
    return GZIP_COMMENT_HEADER + b" " * padding + b"\x00" + deflated + trailer
