"""Where the manifest's rows say their records are in the WARC files, for those that read or
cut the files back (resume, verify, committed.py): the row of a record, whether any row names a
record, the last record named in a file, and the rows requeued when a file is cut back.
"""

from __future__ import annotations

import sqlite3

from archiver.store.row_columns import checked_offset, read_row
from archiver.store.rows import QUEUED, ManifestRow


class CaptureOffsets:
    """The manifest's questions about WARC offsets (store.manifest.Manifest has them)."""

    _db: sqlite3.Connection
    _selected: str
    checks_types: bool

    def capture_at(self, warc_file: str, offset: int) -> ManifestRow | None:
        """The row whose response or revisit record is at ``offset`` of ``warc_file``, if any."""
        found = self._db.execute(
            f"SELECT {self._selected} FROM urls WHERE warc_file = ? AND warc_offset = ? LIMIT 1",
            (warc_file, offset),
        ).fetchone()
        return read_row(found, self.checks_types) if found else None

    def dom_at(self, warc_file: str, offset: int) -> ManifestRow | None:
        """The row whose rendered DOM's record is at ``offset`` of ``warc_file``, if any."""
        found = self._db.execute(
            f"SELECT {self._selected} FROM urls WHERE dom_warc_file = ? AND dom_warc_offset = ? LIMIT 1",
            (warc_file, offset),
        ).fetchone()
        return read_row(found, self.checks_types) if found else None

    def has_capture_at(self, warc_file: str, offset: int) -> bool:
        """True if a row names the record at ``offset`` of ``warc_file`` as its capture or its DOM."""
        for file_column, offset_column in (
            ("warc_file", "warc_offset"),
            ("dom_warc_file", "dom_warc_offset"),
        ):
            found = self._db.execute(
                f"SELECT 1 FROM urls WHERE {file_column} = ? AND {offset_column} = ? LIMIT 1",
                (warc_file, offset),
            ).fetchone()
            if found is not None:
                return True
        return False

    def requeue_cut(self, warc_file: str, offset: int) -> list[str]:
        """Queue again the URLs whose capture lies at or past ``offset`` of ``warc_file`` (a
        damaged file was cut back there), and forget the rendered DOMs there (their pages are
        rendered again); returns the URLs queued, not committed yet."""
        urls = self._requeue("warc_file = ? AND warc_offset >= ?", (warc_file, offset))
        self._db.execute(
            "UPDATE urls SET dom_warc_file = NULL, dom_warc_offset = NULL, dom_warc_length = NULL "
            "WHERE dom_warc_file = ? AND dom_warc_offset >= ?",
            (warc_file, offset),
        )
        return urls

    def requeue_capture(self, warc_file: str, offset: int) -> list[str]:
        """Queue again the URL whose capture is at ``offset`` of ``warc_file`` (its record was
        set aside, damaged), or forget the rendered DOM there (its page is rendered again);
        returns the URLs queued, not committed yet."""
        self._db.execute(
            "UPDATE urls SET dom_warc_file = NULL, dom_warc_offset = NULL, dom_warc_length = NULL "
            "WHERE dom_warc_file = ? AND dom_warc_offset = ?",
            (warc_file, offset),
        )
        return self._requeue("warc_file = ? AND warc_offset = ?", (warc_file, offset))

    def _requeue(self, where: str, place: tuple[str, int]) -> list[str]:
        """Queue again the URLs of the rows ``where`` says, their outcome and capture forgotten."""
        urls = [url for (url,) in self._db.execute(f"SELECT url FROM urls WHERE {where}", place)]
        self._db.execute(
            f"UPDATE urls SET outcome = '{QUEUED}', reason = NULL, status = NULL, content_type = NULL, "
            "length = NULL, payload_digest = NULL, fetched_at = NULL, title = NULL, redirect_to = NULL, "
            "final_url = NULL, warc_file = NULL, warc_offset = NULL, warc_length = NULL, "
            "record_type = NULL, truncated = 0, local_path = NULL, dom_warc_file = NULL, "
            f"dom_warc_offset = NULL, dom_warc_length = NULL, render_error = NULL WHERE {where}",
            place,
        )
        return urls

    def next_record_offset(self, warc_file: str, after: int) -> int | None:
        """Offset of the first record a row names (a capture or a rendered DOM) in ``warc_file``
        past offset ``after``, or None."""
        found = self._db.execute(
            "SELECT MIN(offset) FROM (SELECT warc_offset AS offset FROM urls WHERE warc_file = ? "
            "AND warc_offset > ? UNION ALL SELECT dom_warc_offset FROM urls WHERE dom_warc_file = ? "
            "AND dom_warc_offset > ?)",
            (warc_file, after, warc_file, after),
        ).fetchone()
        return checked_offset(found[0], f"WARC offset in {warc_file}") if found else None

    def last_capture_offset(self, warc_file: str, before: int | None = None) -> int | None:
        """Offset of the last response or revisit record a row names in ``warc_file`` (of those
        that start before offset ``before``, if given)."""
        return self._last_offset("warc", warc_file, before)

    def last_dom_offset(self, warc_file: str, before: int | None = None) -> int | None:
        """Offset of the last rendered-DOM record a row names in ``warc_file`` (of those that
        start before offset ``before``, if given)."""
        return self._last_offset("dom_warc", warc_file, before)

    def _last_offset(self, columns: str, warc_file: str, before: int | None) -> int | None:
        # Asked for all, MAX() also meets an offset that is no number (text sorts last), said so.
        below = "" if before is None else f" AND {columns}_offset < {int(before)}"
        found = self._db.execute(
            f"SELECT MAX({columns}_offset) FROM urls WHERE {columns}_file = ?{below}", (warc_file,)
        ).fetchone()
        what = "WARC offset" if columns == "warc" else "rendered DOM's WARC offset"
        return checked_offset(found[0], f"{what} in {warc_file}") if found else None
