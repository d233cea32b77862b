"""WARC files: a snapshot's warc/ folder written record by record, with warcinfo and rollover.

Each record is its own gzip member (see records.py), so every record has an
offset and a length a reader can seek to. A capture whose payload was stored
before, under another URL, becomes a revisit (the PayloadIndex says where).

>>> import dataclasses, io, tempfile
>>> capture = Capture("http://h/", datetime(2026, 1, 2, tzinfo=UTC), "GET / HTTP/1.1", [], "200 OK",
...                   "HTTP/1.1", [("Content-Type", "text/plain")], io.BytesIO(b"hi"), 2,
...                   "sha1:YIVV7ELYGQTASQUNN5I3FRNPJQF542SC")
>>> with tempfile.TemporaryDirectory() as folder, WarcFiles(Path(folder), "t", 10**9) as warcs:
...     first = warcs.write_capture(capture)
...     second = warcs.write_capture(dataclasses.replace(capture, url="http://h/b"))
>>> first.record_type, second.record_type, first.warc_file.startswith("t-")
('response', 'revisit', True)
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

from archiver import __version__
from archiver.errors import WriteError
from archiver.numerals import whole_number
from archiver.warc import records
from archiver.warc.capture import Capture
from archiver.warc.exchange import (
    Exchange,
    not_modified_record,
    request_record,
    response_fields,
    response_head,
    revisit_record,
)
from archiver.warc.records import warc_date

SUFFIX = ".warc.gz"


SETTINGS_FIELD = "archiver-settings"
"""The warcinfo field naming the crawl's settings as crawl.json keeps them (JSON on one line):
a crawl.json lost is given back from them (store/crawl_json_rebuild.py)."""
NOT_IN_WARCINFO = ("output", "frontier")
"""Settings a WARC file, which travels, does not name: the snapshot's folder on this machine,
and a shared crawl's Redis URL (it may hold a password)."""


def crawl_info(
    prefix: str, seeds: list[str], user_agent: str, settings: dict[str, Any] | None = None
) -> dict[str, str]:
    """What a crawl's warcinfo records say of it, beside the software that wrote them: with
    ``settings`` (crawl.json's, which hold no password or credential header), those too."""
    info = {
        "isPartOf": prefix,
        "description": "crawl of " + " ".join(seeds),
        "http-header-user-agent": user_agent,
    }
    if settings is not None:
        named = {name: value for name, value in settings.items() if name not in NOT_IN_WARCINFO}
        info[SETTINGS_FIELD] = json.dumps(named, sort_keys=True, separators=(",", ":"))
    return info


def warcinfo(name: str, record_id: str, date: str, info: dict[str, str]) -> tuple[records.Fields, bytes]:
    """The WARC header fields and the block of the warcinfo record that begins the file ``name``,
    saying ``info`` (crawl_info()) after what wrote it."""
    said = {
        "software": f"archiver/{__version__}",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "hostname": socket.gethostname(),
        **info,
    }
    fields = [
        ("WARC-Type", "warcinfo"),
        ("WARC-Record-ID", record_id),
        ("WARC-Filename", name),
        ("WARC-Date", date),
    ]
    return fields, records.warc_fields(said.items())


def warc_paths(folder: Path, prefix: str) -> list[Path]:
    """The WARC files a crawl with ``prefix`` wrote in ``folder``, in name order.

    Each is named <prefix>-<UTC time>-<serial>.warc.gz; the writer, resume and
    the serial of the next file all find them here.
    """
    return sorted(folder.glob(f"{prefix}-*{SUFFIX}"))


@dataclass(frozen=True)
class Written:
    """Where a capture's response (or revisit) record went."""

    warc_file: str
    offset: int
    length: int
    record_type: str
    """response or revisit."""
    payload_digest: str
    date: str


class PayloadIndex(Protocol):
    """Where the first capture of a payload is found, so an identical one becomes a revisit."""

    def find(self, digest: str, url: str) -> tuple[str, str] | None:
        """The URL and WARC-Date of a response record that stored ``digest``, if any, of a URL
        other than ``url``: the row of ``url`` is replaced by that of the capture in hand, and
        its revisit would refer to a record no row names any more."""

    def add(self, digest: str, url: str, date: str) -> None:
        """Note a response record just written with ``digest``."""


class MemoryPayloads:
    """A PayloadIndex in a dict (crawls use the manifest instead, so RAM does not grow)."""

    def __init__(self) -> None:
        self._stored: dict[str, tuple[str, str]] = {}

    def find(self, digest: str, url: str) -> tuple[str, str] | None:
        found = self._stored.get(digest)
        return found if found is not None and found[0] != url else None

    def add(self, digest: str, url: str, date: str) -> None:
        self._stored.setdefault(digest, (url, date))


def still_at(path: Path, held: os.stat_result) -> bool:
    """Whether the file ``held`` (its os.stat when opened) is still the one at ``path``: not
    removed, nor replaced by another."""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


class WarcFiles:
    """The warc/ folder of a snapshot: one open file at a time, rolled over near max_size.

    A new file is started on every open, so a file torn by a crash is never
    appended to. Not thread-safe: the writer stage owns it.
    """

    def __init__(
        self,
        folder: Path,
        prefix: str,
        max_size: int,
        info: dict[str, str] | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        make_id: Callable[[], str] | None = None,
        payloads: PayloadIndex | None = None,
    ) -> None:
        self.folder = folder
        self.prefix = prefix
        self.max_size = max_size
        self.info = info or {}
        self._clock = clock or (lambda: datetime.now(UTC))
        self._make_id = make_id or records.new_record_id
        self._file: IO[bytes] | None = None
        self._name = ""
        self._durable = 0
        """Offset up to which the open file is known whole on disk (its last flush)."""
        self._serial = self._last_serial()
        self._payloads = payloads or MemoryPayloads()

    def __enter__(self) -> WarcFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _last_serial(self) -> int:
        serials = []
        for path in warc_paths(self.folder, self.prefix):
            serial = whole_number(path.name[: -len(SUFFIX)].rsplit("-", 1)[-1])
            if serial is not None:
                serials.append(serial)
        return max(serials, default=0)

    def _ensure_open(self) -> IO[bytes]:
        if self._file is not None and self._file.tell() >= self.max_size:
            self._close_file()
        if self._file is None:
            self._serial += 1
            stamp = self._clock().strftime("%Y%m%d%H%M%S")
            self._name = f"{self.prefix}-{stamp}-{self._serial:05d}{SUFFIX}"
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._file = open(self.folder / self._name, "xb")  # noqa: SIM115
            except OSError as exc:
                raise WriteError(f"cannot create {self.folder / self._name}: {exc}") from None
            self._durable = 0
            self._write_warcinfo()
        return self._file

    def _write_warcinfo(self) -> None:
        fields, block = warcinfo(self._name, self._make_id(), warc_date(self._clock()), self.info)
        self._write(fields, records.WARC_FIELDS_TYPE, block)

    def _write(
        self, fields: records.Fields, content_type: str, head: bytes, body: IO[bytes] | None = None
    ) -> tuple[int, int]:
        assert self._file is not None
        offset = self._file.tell()
        try:
            records.write_record(self._file, fields, content_type, head, body)
        except OSError as exc:
            raise self._fail(exc) from None
        return offset, self._file.tell() - offset

    def write_capture(self, capture: Capture, exchange: Exchange | None = None) -> Written:
        """Write a response (or revisit) record and its request record for ``capture``.

        ``exchange``: the two records already encoded (by a worker process); a
        payload stored before still makes the response a revisit. A 304 (``capture.not_modified``)
        is a server-not-modified revisit.
        """
        self._ensure_open()
        date = warc_date(capture.date)
        not_modified = capture.not_modified is not None
        previous = None if not_modified else self._payloads.find(capture.payload_digest, capture.url)
        revisit = not_modified or (previous is not None and capture.body_length > 0 and not capture.truncated)
        if not_modified:
            response_id = exchange.response_id if exchange else self._make_id()
            offset, length = self._append(
                exchange.response if exchange else not_modified_record(capture, response_id)
            )
            request = exchange.request if exchange else None
        elif revisit:
            assert previous is not None
            response_id = exchange.response_id if exchange else self._make_id()
            offset, length = self._append(revisit_record(capture, response_id, *previous))
            request = exchange.request if exchange else None
        elif exchange:
            response_id = exchange.response_id
            offset, length = self._append(exchange.response)
            request = exchange.request
        else:  # streamed from the body, which may be large
            response_id = self._make_id()
            offset, length = self._write(
                response_fields(capture, response_id),
                records.RESPONSE_TYPE,
                response_head(capture),
                capture.body,
            )
            request = None
        self._append(request or request_record(capture, response_id, self._make_id()))
        if not revisit and capture.body_length > 0 and not capture.truncated:
            self._payloads.add(capture.payload_digest, capture.url, date)
        return Written(
            warc_file=self._name,
            offset=offset,
            length=length,
            record_type="revisit" if revisit else "response",
            payload_digest=capture.payload_digest,
            date=date,
        )

    def write_member(self, member: bytes) -> tuple[str, int, int]:
        """Append a record already encoded as a gzip member; its (file, offset, length)."""
        self._ensure_open()
        offset, length = self._append(member)
        return self._name, offset, length

    def make_id(self) -> str:
        """A fresh WARC-Record-ID (the one injected in tests, if any)."""
        return self._make_id()

    def _append(self, member: bytes) -> tuple[int, int]:
        assert self._file is not None
        offset = self._file.tell()
        try:
            self._file.write(member)
        except OSError as exc:
            raise self._fail(exc) from None
        return offset, len(member)

    def _fail(self, exc: OSError) -> WriteError:
        """After a failed write (a full disk...), cut the file back to its last flush and close it.

        Records since that flush may be half on disk; the writer rolls back their
        manifest rows, so a write error never leaves a torn record nor a row
        pointing past the end. The next write (of a resumed crawl) starts a new file.
        """
        name, durable = self._name, self._durable
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()  # its buffer cannot be written either; the file is closed anyway
            self._file = None
        with contextlib.suppress(OSError):
            if durable:
                os.truncate(self.folder / name, durable)
            else:
                (self.folder / name).unlink()  # not even its warcinfo record made it
        return WriteError(f"cannot write {name}: {exc.strerror or exc}")

    def flush(self) -> None:
        """Write what is buffered; from here on those records are whole on disk. Raises
        WriteError if the open file is no longer at its path (see _gone)."""
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as exc:
                raise self._fail(exc) from None
            if (gone := self._gone()) is not None:
                raise gone
            self._durable = self._file.tell()

    def _gone(self) -> WriteError | None:
        """The WriteError of an open file removed (or replaced) since it was opened, after it is
        closed; else None. Written on, its records would go to a file no one can read again,
        while the manifest named them as stored: the crawl would end as done with them lost."""
        assert self._file is not None
        path = self.folder / self._name
        if still_at(path, os.fstat(self._file.fileno())):
            return None
        self._close_file()
        return WriteError(
            f"{path} was removed while the crawl wrote it: its records are lost"
            " (resumed with --repair, the crawl fetches them again)"
        )

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None

    def close(self) -> None:
        """Close the open file; safe to call twice."""
        self._close_file()
