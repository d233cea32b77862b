"""The CDXJ index written again from the WARC files, the record of truth, when it is lost or damaged.

The crawl appends a line for each capture as it stores it, then merges them
into ``indexes/index.cdxj`` and marks the file as it left it (cdxj.mark_keyed).
An index that is missing, or that changed since (a line edited, the file cut
short or overwritten), no longer says where replay tools (pywb, ReplayWeb.page)
find each capture. ``archiver mirror`` checks an index so changed as verify
checks it (an earlier version's lines keyed again first: cdxj.rekey_index) and,
if it is missing or does not match, writes it again here: one line for each
response, revisit and rendered DOM that the manifest names, read as verify
reads them (a 304's revisit gets none, as when the crawl wrote it). A record
the manifest does not name (a crash's tail, which a resume cuts off) is left
out, as the crawl leaves it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from archiver.content import mime_type
from archiver.report import CDXJ_MISMATCH, Report
from archiver.store.manifest import Manifest
from archiver.warc.cdxj import cdxj_line, mark_keyed, marked_keyed, rekey_index, write_sorted
from archiver.warc.cdxj_check import check_cdxj
from archiver.warc.dom import page_of
from archiver.warc.integrity import WarcScan, warc_files
from archiver.warc.record_index import RecordEntry, RecordIndex


@dataclass(frozen=True)
class IndexMended:
    """What mend_index() did to the index."""

    rekeyed: int = 0
    """Lines an earlier version keyed otherwise, keyed again (cdxj.rekey_index)."""
    rebuilt: int | None = None
    """Lines of the index written again from the WARC files; None if it was kept."""


def mend_index(index: Path, pending: Path, warc_dir: Path, manifest: Manifest) -> IndexMended:
    """Key again an earlier version's lines of ``index``, then, unless it stands as the crawl
    left it (its mark names it), check it against the WARC files of ``warc_dir`` as verify does
    (``pending``: the lines of an interrupted crawl not merged yet) and write it again from them
    if it is missing or does not match."""
    if index.is_file() and marked_keyed(index):
        return IndexMended()
    rekeyed = rekey_index(index) if index.is_file() else 0
    with RecordIndex() as records:
        scan = WarcScan(Report(), records)
        scan.scan(warc_files(warc_dir))
        report = Report()
        check_cdxj(index, records, scan.damaged, report, pending, lambda entry: indexed_as(entry, manifest))
        if index.is_file() and not report.counts[CDXJ_MISMATCH]:
            return IndexMended(rekeyed)
        return IndexMended(rekeyed, rebuild_index(index, records, manifest))


def rebuild_index(index: Path, records: RecordIndex, manifest: Manifest) -> int:
    """Write ``index`` again from the ``records`` of the WARC files that ``manifest`` names
    (sorted, atomically), and mark it; returns its line count."""
    lines = (
        line
        for entry in records.values("NOT (record_type = 'revisit' AND status = 304)")
        if (line := _line_of(entry, manifest)) is not None
    )
    index.parent.mkdir(parents=True, exist_ok=True)
    count = write_sorted(lines, index)
    mark_keyed(index)
    return count


def indexed_as(entry: RecordEntry, manifest: Manifest) -> tuple[str, int | None] | None:
    """The MIME type and status the crawl indexes ``entry`` under (crawling/writer.py), or None
    if no row names its record: the type the answer was taken as (sniffed where its header named
    none), not the record's header; a revisit's is ``warc/revisit``, a rendered DOM's
    ``text/html`` with no status."""
    if entry.record_type == "resource":
        if page_of(entry.url) is None or manifest.dom_at(entry.file, entry.offset) is None:
            return None
        return "text/html", None
    row = manifest.capture_at(entry.file, entry.offset)
    if row is None:
        return None
    return ("warc/revisit" if entry.record_type == "revisit" else mime_type(row.content_type)), row.status


def _line_of(entry: RecordEntry, manifest: Manifest) -> str | None:
    """The CDXJ line of ``entry`` as the crawl wrote it, or None if no row names its record."""
    indexed = indexed_as(entry, manifest)
    if indexed is None:
        return None
    mime, status = indexed
    return cdxj_line(
        entry.url,
        entry.date,
        mime=mime,
        status=status,
        digest=entry.payload_digest or "",
        length=entry.length,
        offset=entry.offset,
        filename=entry.file,
    )
