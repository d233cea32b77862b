"""Where the records a manifest committed end in a WARC file: one rule for every reader of a
stopped crawl's snapshot.

The writer appends a batch's records, flushes them, then commits their rows, so a kill leaves
whole committed records followed by records no row names, the last maybe cut short. Resume
cuts the file back to the end of its committed records, and verify and export call what lies
past that end a crash's tail, not damage. They must draw the line at the same byte, or verify
calls intact what resume cuts (or the other way round): committed_end() draws it for all.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from archiver.errors import SnapshotError
from archiver.store.manifest import Manifest
from archiver.warc.members import is_gzipped, member_end, torn_offset

CAPTURE_MEMBERS = 2
"""A capture is a response (or revisit) record followed by its request, one gzip member each."""
DOM_MEMBERS = 1
"""A rendered DOM is one resource record."""


@dataclass(frozen=True)
class LastNamed:
    """The last record a manifest row names in one WARC file."""

    offset: int
    members: int
    """How many gzip members from ``offset`` the committed record spans (CAPTURE_MEMBERS or
    DOM_MEMBERS)."""


@dataclass(frozen=True)
class CommittedEnd:
    """Where the committed records of one WARC file end."""

    end: int
    """Offset just past the last committed record (of the warcinfo record when no row names
    one), or where the file is damaged when ``damaged``."""
    damaged: bool
    """The file ends, or stops inflating, before the records the manifest names end: a kill
    never leaves that (records are flushed before their rows are committed), so it was
    damaged since, and the URLs from ``end`` on are to be fetched again."""


def last_named(manifest: Manifest, warc_file: str, before: int | None = None) -> LastNamed | None:
    """The last record (capture or rendered DOM) a row names in ``warc_file`` (of those that
    start before offset ``before``, if given), or None.

    Raises SnapshotError if an offset in the manifest is no number.
    """
    capture = manifest.last_capture_offset(warc_file, before)
    dom = manifest.last_dom_offset(warc_file, before)
    if dom is not None and (capture is None or dom > capture):
        return LastNamed(dom, DOM_MEMBERS)
    return None if capture is None else LastNamed(capture, CAPTURE_MEMBERS)


def committed_end(path: Path, manifest: Manifest) -> CommittedEnd:
    """Where the records of WARC file ``path`` that the manifest's rows account for end.

    A file torn (cut short, or damaged so that it stops inflating) inside a committed capture,
    its last or an earlier one, is cut back to the start of that capture, which is fetched
    again with every one after it: keeping its response alone would leave a capture with no
    request.
    """
    last = last_named(manifest, path.name)
    if last is None:
        return CommittedEnd(member_end(path, 0, 1) or 0, False)
    end = member_end(path, last.offset, last.members)
    if end is not None:
        return CommittedEnd(end, False)
    torn = torn_offset(path)
    whole_to = path.stat().st_size if torn is None else torn
    torn_in = last_named(manifest, path.name, before=whole_to)
    if torn_in is not None and member_end(path, torn_in.offset, torn_in.members) is None:
        whole_to = torn_in.offset
    return CommittedEnd(min(last.offset, whole_to), True)


def kill_line(path: Path, manifest: Manifest) -> int:
    """The offset of WARC file ``path`` from which a record no row names, or one cut short, is
    what a kill left (a crash_tail), not damage: committed_end(), where the file is intact up
    to it. Nothing is excused (sys.maxsize) in a damaged file, in a manifest whose offsets are no
    numbers, or in an uncompressed file, which the crawl never writes."""
    try:
        with open(path, "rb") as fh:
            if not is_gzipped(fh.read(2)):
                return sys.maxsize
        committed = committed_end(path, manifest)
    except (OSError, SnapshotError):
        return sys.maxsize
    return sys.maxsize if committed.damaged else committed.end
