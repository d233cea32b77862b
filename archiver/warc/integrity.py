"""WARC integrity: every file parses to its end, every record is whole and its digests match.

Files are read once, streaming (memory does not grow with their size); what
later checks need of each response and revisit record is kept in a small
:class:`RecordEntry`, never a body. Digests are checked the way ``warcio
check`` does: warcio's record loader with ``check_digests`` wraps the block
in a digest-verifying reader, and reading the block to its end settles it.
What an export asks of its WARC files, each record checked alone, is
verify/record_damage.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from archiver.content import mime_type
from archiver.errors import CorruptData, TornFile
from archiver.media_types import content_type_field
from archiver.numerals import whole_number
from archiver.redirects import REDIRECT_STATUSES, redirect_target
from archiver.report import (
    CORRUPT_GZIP,
    CRASH_TAIL,
    DANGLING_REVISIT,
    DIGEST_MISMATCH,
    DUPLICATE_RECORD_ID,
    LENGTH_MISMATCH,
    MISSING_HEADER,
    TORN_FILE,
    UNREADABLE_FILE,
    UNREADABLE_RECORD,
    Report,
)
from archiver.stop_signals import obey
from archiver.warc.members import CHUNK, MemberStream, Source, is_gzipped, member_end
from archiver.warc.reader import PARSE_ERRORS, RecordLoader
from archiver.warc.record_index import RecordEntry, RecordIndex
from archiver.warc.record_pairs import RecordPairs

WARC_SUFFIXES = (".warc", ".warc.gz")
MANDATORY = ("WARC-Record-ID", "WARC-Date", "WARC-Type", "Content-Length")
TARGETED_TYPES = frozenset({"response", "request", "revisit", "resource"})
REVISIT_HEADERS = ("WARC-Payload-Digest", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date")
RECORD_END = b"\r\n\r\n"


Records = RecordIndex
"""(file name, offset) -> entry, for every response, revisit and resource record of a scan."""

PAGE_BYTES = 64 * 1024 * 1024
"""Stored bytes of a page a scan hands to its page hook at most (a larger page is read again later)."""

PageHook = Callable[[RecordEntry, bytes, Any], None]
"""Called with each intact response record's entry, its stored payload and its HTTP headers, for
records ``wants_page`` chose: what completeness needs, without reading the record twice."""


class Originals(Protocol):
    """Where a revisit's original is looked for when these WARC files do not hold it: the
    snapshot a re-archive was made against (store/earlier.py's EarlierRecords)."""

    def check(self, entry: RecordEntry, where: str) -> bool:
        """Check the original of the revisit ``entry`` (at ``where``), reporting what is wrong
        with it; False if it is not there either, so the scan reports the revisit dangling."""


def warc_files(folder: Path) -> list[Path]:
    """The WARC files directly in ``folder``, sorted by name."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(WARC_SUFFIXES))


def _parse_error(exc: Exception) -> str:
    """What a parse error says, in one line (warcio raises some with no message: their kind then)."""
    text = str(exc).strip()
    if isinstance(exc, AttributeError | TypeError):  # warcio tripped over what it did not expect
        return f"its headers are damaged (a mandatory one missing or cut): {text}"[:200]
    if not text:
        return "the record ends before its headers do" if isinstance(exc, EOFError) else type(exc).__name__
    return text.splitlines()[0][:200]


def _members_follow(source: Source, path: Path, offset: int) -> bool:
    """Whether a whole gzip member starts after ``offset`` (``source`` is moved to it if so)."""
    return source.seek_next_member(offset + 1) and member_end(path, source.position, 1) is not None


class Damaged(set[tuple[str, int]]):
    """(file name, offset) of records found damaged; with each record of a file that cannot be
    read at all (``files``), where its records are is unknown."""

    def __init__(self) -> None:
        super().__init__()
        self.files: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or (isinstance(key, tuple) and key[0] in self.files)


class _StopFile(Exception):
    """The rest of an uncompressed file cannot be located after a bad record."""


class WarcScan:
    """Integrity checks over WARC files, and the index of their response and revisit records."""

    def __init__(
        self,
        report: Report,
        records: RecordIndex,
        page: PageHook | None = None,
        wants_page: Callable[[int | None, str], bool] = lambda _status, _mime: False,
    ) -> None:
        """``records``: where to index the records (its owner closes it, which removes its scratch
        file). ``page``: called with each intact response record whose (status, MIME type)
        ``wants_page``."""
        self.report = report
        self.records = records
        """(file name, offset) -> entry, for every response, revisit and resource record."""
        self.damaged = Damaged()
        """(file name, offset) of records found damaged, and files that cannot be read (reported
        here already)."""
        self.unsound: set[tuple[str, int]] = set()
        """(file name, offset) of records read whole that fail a digest or lack a mandatory header
        (reported here already): with ``damaged``, every record that is not intact."""
        self.deferred: set[tuple[str, int]] = set()
        """Pages too large to hand to the page hook: (file, offset) of each (few)."""
        self._page = page
        self._wants_page = wants_page
        self._pairs = RecordPairs()
        self._kill_lines: dict[str, int] = {}
        self._loader = RecordLoader(verify_http=False)
        self._name = ""
        self.earlier: Originals | None = None
        """Where revisits of a re-archive are followed when their original is not here."""
        self.kill_line: Callable[[str], int] | None = None
        """For a crawl that was stopped or killed: the offset of a WARC file (by name) from
        which its records are what the kill left (store/committed.kill_line()), which a resume
        sets aside: reported as such (crash_tail), not as damage."""

    def scan(self, paths: Iterable[Path]) -> None:
        """Check every file, then what spans files (pairs, revisits)."""
        for path in paths:
            self.scan_file(path)
        self.finish()

    def scan_file(self, path: Path, name: str | None = None) -> None:
        """Read one WARC file to its end, reporting what is damaged."""
        name = name or path.name
        self.report.stats["WARC files"] += 1
        self.report.stats["bytes of WARC"] += path.stat().st_size
        try:
            with open(path, "rb") as fh:
                self._scan_open(fh, path, name)
        except OSError as exc:  # its permissions, or the disk: what it holds is not checked
            self.damaged.files.add(name)
            self.report.add(UNREADABLE_FILE, name, f"cannot be read: {exc.strerror or exc}")

    def _scan_open(self, fh: BinaryIO, path: Path, name: str) -> None:
        """scan_file() of the open file ``fh``."""
        gzipped = is_gzipped(fh.read(2))
        fh.seek(0)
        source = Source(fh, gzipped)
        resyncing = False
        while not source.at_end():
            obey()
            stream = source.next_stream()
            try:
                if self._scan_member(stream, name):
                    resyncing = False
            except TornFile as exc:
                self.damaged.add((name, exc.offset))
                if gzipped and _members_follow(source, path, exc.offset):
                    # Its header or data swallowed the members after it: damage, not a cut.
                    if not resyncing:
                        self.report.add(
                            CORRUPT_GZIP,
                            f"{name}@{exc.offset}",
                            "gzip member runs past the whole members after it: its header or data is damaged",
                        )
                    resyncing = True
                    continue
                if not resyncing and self.left_by_a_kill(name, exc.offset):
                    self.report.add(CRASH_TAIL, f"{name}@{exc.offset}", f"{exc.why}, past its last commit")
                elif not resyncing:
                    self.report.add(
                        TORN_FILE, f"{name}@{exc.offset}", f"{exc.why}: its last record is cut short"
                    )
                return
            except CorruptData as exc:
                # Each record is its own gzip member: skip to the next one and go on.
                self.damaged.add((name, exc.offset))
                if not resyncing:
                    self.report.add(CORRUPT_GZIP, f"{name}@{exc.offset}", exc.why)
                resyncing = True
                if not source.seek_next_member(exc.offset + 1):
                    return
            except _StopFile:
                return

    def left_by_a_kill(self, name: str, offset: int) -> bool:
        """Whether the record at ``offset`` of ``name`` is past the last commit of a stopped crawl."""
        if self.kill_line is None:
            return False
        if name not in self._kill_lines:
            self._kill_lines[name] = self.kill_line(name)
        return offset >= self._kill_lines[name]

    def _scan_member(self, stream: MemberStream, name: str) -> bool:
        """Check the records of one gzip member; True if they all parsed."""
        gzipped = stream.compressed
        self._name = name
        while not stream.at_end():
            offset = stream.start if gzipped else stream.raw_position()
            where = f"{name}@{offset}"
            try:
                record = self._loader.parse_record_stream(stream, known_format="warc", check_digests=True)
            except PARSE_ERRORS as exc:
                if not gzipped and stream.at_end():
                    raise TornFile(offset, "file ends inside a record") from None
                self.report.add(UNREADABLE_RECORD, where, _parse_error(exc))
                return self._give_up(stream, offset)
            headers = record.rec_headers
            url = headers.get_header("WARC-Target-URI") or ""
            length_header = headers.get_header("Content-Length") or ""
            if whole_number(length_header) is None:
                if not gzipped and stream.at_end():
                    raise TornFile(offset, "file ends inside a record")
                self.report.add(MISSING_HEADER, where, "no valid Content-Length")
                return self._give_up(stream, offset)
            raw = record.raw_stream
            kept = self._page_chunks(record)
            payload_length = 0
            while chunk := raw.read(CHUNK):
                payload_length += len(chunk)
                if kept is not None:
                    kept.append(chunk)
                    if len(kept) * CHUNK > PAGE_BYTES:
                        self.deferred.add((name, offset))
                        kept = None
            if getattr(raw, "limit", 0) > 0:
                if not gzipped:
                    raise TornFile(offset, "file ends inside a record")
                self.report.add(
                    LENGTH_MISMATCH, where, f"block is {raw.limit} bytes shorter than Content-Length"
                )
                return self._give_up(stream, offset)
            if stream.read(len(RECORD_END)) != RECORD_END:
                self.report.add(
                    LENGTH_MISMATCH, where, f"{url}: block does not end where Content-Length says"
                )
                return self._give_up(stream, offset)
            if gzipped and stream.at_end():
                assert stream.end is not None
                length = stream.end - offset
            else:
                length = stream.raw_position() - offset if not gzipped else 0
            entry = self._check_record(record, name, offset, length, url, payload_length)
            if kept is not None and entry is not None and entry.intact and self._page is not None:
                self._page(entry, b"".join(kept), record.http_headers)
        return True

    def _page_chunks(self, record: Any) -> list[bytes] | None:
        """A list to keep the payload of a record the page hook wants in, else None."""
        if self._page is None or record.rec_headers.get_header("WARC-Type") != "response":
            return None
        http = record.http_headers
        if http is None:
            return None
        status = http.get_statuscode()
        mime = mime_type(content_type_field(http.headers))
        return [] if self._wants_page(whole_number(status), mime) else None

    def _give_up(self, stream: MemberStream, offset: int) -> bool:
        self.damaged.add((self._name, offset))
        if not stream.compressed:
            raise _StopFile
        stream.drain()
        return False

    def _check_record(
        self, record: object, name: str, offset: int, length: int, url: str, payload_length: int
    ) -> RecordEntry | None:
        """Check one whole record; its entry, if it is indexed."""
        headers = record.rec_headers  # type: ignore[attr-defined]
        record_type = headers.get_header("WARC-Type") or ""
        where = f"{name}@{offset}"
        self.report.stats["records"] += 1
        required = list(MANDATORY)
        if record_type in TARGETED_TYPES:
            required.append("WARC-Target-URI")
        if record_type in ("response", "request"):  # what guards the HTTP head: the crawl writes it
            required.append("WARC-Block-Digest")
        if record_type == "revisit":
            required.extend(REVISIT_HEADERS)
        missing = [h for h in required if not headers.get_header(h)]
        if missing:
            self.report.add(MISSING_HEADER, where, f"{record_type} {url}: no {', '.join(missing)}")
        checker = record.digest_checker  # type: ignore[attr-defined]
        intact = not missing and checker.passed is not False
        if not intact:
            self.unsound.add((name, offset))
        if checker.passed is False:
            self.report.add(DIGEST_MISMATCH, where, f"{url}: {'; '.join(checker.problems)}")
        record_id = headers.get_header("WARC-Record-ID") or ""
        date = headers.get_header("WARC-Date") or ""
        if record_id and not self.records.first_id(record_id):
            self.report.add(DUPLICATE_RECORD_ID, where, record_id)
        truncated = headers.get_header("WARC-Truncated")
        if truncated:
            self.report.stats["declared truncations"] += 1
        if record_type == "request":
            response_id = headers.get_header("WARC-Concurrent-To") or ""
            self._pairs.request(response_id, (name, offset), url, date, self.report)
        elif record_type == "resource":
            entry = RecordEntry(
                file=name,
                offset=offset,
                length=length,
                url=url,
                record_type=record_type,
                date=date,
                payload_digest=headers.get_header("WARC-Payload-Digest"),
                status=None,
                mime=mime_type(headers.get_header("Content-Type")),
                intact=intact,
            )
            self.records.add(entry)
            return entry
        if record_type in ("response", "revisit"):
            self._pairs.response(record_id, (name, offset), url, date, self.report)
            http = record.http_headers  # type: ignore[attr-defined]
            status = whole_number(http.get_statuscode()) if http is not None else None
            revisit = record_type == "revisit"
            location = http.get_header("Location") if status in REDIRECT_STATUSES else None
            entry = RecordEntry(
                file=name,
                offset=offset,
                length=length,
                url=url,
                record_type=record_type,
                date=date,
                payload_digest=headers.get_header("WARC-Payload-Digest"),
                status=status,
                mime=mime_type(content_type_field(http.headers)) if http is not None else "",
                refers_url=(headers.get_header("WARC-Refers-To-Target-URI") or "") if revisit else None,
                refers_date=(headers.get_header("WARC-Refers-To-Date") or "") if revisit else None,
                truncated=truncated,
                intact=intact,
                payload_length=payload_length,
                redirect_to=redirect_target(location, url),
            )
            self.records.add(entry)
            return entry
        return None

    def finish(self) -> None:
        """Checks that need every file read: unpaired records, revisits' originals (in a previous
        snapshot too: see ``earlier``)."""
        self._pairs.finish(self.report)
        self.unsound |= self._pairs.mispaired
        self.records.index_by_target()
        for entry in self.records.values("record_type = 'revisit'"):
            if entry.refers_to is None:
                continue
            self.report.stats["revisits"] += 1
            key = self.records.response_at(*entry.refers_to)
            original = self.records.get(key) if key is not None else None
            digest = original.payload_digest if original is not None else None
            where = f"{entry.file}@{entry.offset}"
            if digest is None and self.earlier is not None and self.earlier.check(entry, where):
                continue
            if digest is None:
                self.report.add(
                    DANGLING_REVISIT,
                    where,
                    f"{entry.url}: no record of {entry.refers_to[0]} at {entry.refers_to[1]}",
                )
            elif digest != entry.payload_digest:
                self.report.add(
                    DANGLING_REVISIT,
                    where,
                    f"{entry.url}: original {entry.refers_to[0]} has digest {digest}, "
                    f"not {entry.payload_digest}",
                )
