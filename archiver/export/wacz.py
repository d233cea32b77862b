"""A snapshot as a WACZ 1.1.1 file: its WARCs, a compressed CDXJ index, its pages and a
datapackage with the SHA-256 of each, as ReplayWeb.page and py-wacz read it.

Written from what the snapshot knows already: the WARC files are copied as
they are (ZIP_STORED: each record is its own gzip member, and a reader seeks
to one by its offset), the index is the snapshot's own sorted CDXJ cut into
gzip blocks (zipnum.py), the pages and their titles come from the manifest
(pages.py). Nothing is read twice but the WARCs, hashed as they are copied,
so memory stays at a block whatever the snapshot's size. A re-archive's
package also holds the records of earlier snapshots its revisits refer to,
copied as they are into one more WARC file and indexed with the rest
(originals.py), so it replays on its own. The file is written under a
temporary name beside FILE and renamed when whole.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     export_wacz(Path(folder), Path(folder) / "x.wacz")
Traceback (most recent call last):
...
archiver.errors.SnapshotError: ... is not a snapshot (no manifest.sqlite3 and crawl.json); give ...
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import heapq
import io
import itertools
import json
import os
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from archiver import __version__
from archiver.errors import ArchiverError, ExportError, SnapshotError, WriteError
from archiver.export.originals import EarlierOriginals
from archiver.export.pages import PAGES_HEADER, snapshot_pages
from archiver.export.zipnum import DATA_NAME, write_blocks
from archiver.report import shell_word
from archiver.sizes import human_bytes
from archiver.stop_signals import obey
from archiver.store.crawl_json_rebuild import check_crawl_json
from archiver.store.lock import unchanging
from archiver.store.manifest import Manifest
from archiver.store.snapshot import NOT_A_SNAPSHOT, Snapshot, require_folder
from archiver.verify.record_damage import record_damage
from archiver.warc.cdxj import KEEP_BYTES, keyed_otherwise, rekeyed, write_sorted
from archiver.warc.files import SUFFIX

WACZ_VERSION = "1.1.1"
COPY_CHUNK = 1024 * 1024
ORIGINALS_NAME = "originals-of-earlier-snapshots"
"""Name of the package's WARC file of the records of earlier snapshots (before .warc.gz)."""


@dataclass
class WaczSummary:
    """What an export wrote."""

    path: Path
    warc_files: int = 0
    pages: int = 0
    captures: int = 0
    """CDXJ lines: response and revisit records indexed."""
    originals: int = 0
    """Records of earlier snapshots copied in, which the snapshot's revisits refer to."""
    bytes: int = 0
    """Size of the WACZ file."""
    seconds: float = 0.0
    resources: list[dict[str, Any]] = field(default_factory=list)
    """The datapackage's resources: name, path, hash, bytes."""

    def summary(self) -> str:
        """One line for the user."""
        copied = f" ({self.originals} of them copied from earlier snapshots)" if self.originals else ""
        return (
            f"wrote {self.path}: {self.pages} pages, {self.captures} captures in {self.warc_files} WARC "
            f"files{copied}, {human_bytes(self.bytes)} in {self.seconds:.1f} s"
        )


class _Hashing:
    """A file-like sink that hashes and counts what passes into a ZIP entry (or nowhere)."""

    def __init__(self, out: IO[bytes] | None = None) -> None:
        self._out = out
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self._out.write(data) if self._out is not None else len(data)


def export_wacz(root: Path, target: Path, *, force: bool = False) -> WaczSummary:
    """Write the snapshot in ``root`` to the WACZ file ``target`` (replaced only with ``force``).

    Raises SnapshotError when ``root`` is no snapshot or another process writes it, or its
    package would not replay (a WARC file its index names is gone; an earlier snapshot that
    holds originals of its revisits is gone, or such an original is damaged), ExportError when
    ``target`` exists (without ``force``) or cannot be written.
    """
    started = time.monotonic()
    require_folder(root)
    snapshot = Snapshot(root)
    if not snapshot.crawl_json_path.is_file():
        check_crawl_json(snapshot)  # a crawl's WARC files are there: the error says what mends it
        raise SnapshotError(
            f"{root} is not a snapshot (no manifest.sqlite3 and crawl.json); {NOT_A_SNAPSHOT}"
        )
    snapshot.check_manifest()  # lost or damaged: the WARC files give it back
    if target.resolve().is_relative_to(snapshot.root.resolve()):
        # It could replace a WARC file or the manifest, and the next export would pack it.
        raise ExportError(f"{target} is inside the snapshot {root}; write the WACZ file elsewhere")
    if target.exists() and not force:
        raise ExportError(f"{target} exists; give --force to replace it")
    if target.is_dir():
        raise ExportError(f"{target} is a folder; name the .wacz file to write")
    if target.exists() and not target.is_file():
        # A device or a pipe: --force would put the package in its place (as root, /dev/null's).
        raise ExportError(f"{target} is not a regular file; name the .wacz file to write")
    with unchanging(snapshot.root, "archiver export"):
        summary = WaczSummary(target)
        temporary = _temporary_beside(target)
        try:
            with zipfile.ZipFile(temporary, "w", allowZip64=True) as wacz:
                _write_package(snapshot, wacz, summary)
            os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's 0600 would keep it from others
            obey()  # the last moment a stop leaves no file behind
            os.replace(temporary, target)
        except OSError as exc:
            raise _cannot_write(target, exc) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    summary.bytes = target.stat().st_size
    summary.seconds = time.monotonic() - started
    return summary


def _cannot_write(target: Path, exc: OSError) -> ArchiverError:
    """A full disk (or a file past its size limit) is a write error, the rest bad input (a
    folder that is missing or not ours): the exit codes tell them apart."""
    error = WriteError if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) else ExportError
    return error(f"cannot write {target}: {exc.strerror or exc}")


def _umask() -> int:
    """The process's umask (read by setting it, then set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temporary_beside(target: Path) -> Path:
    try:
        descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _cannot_write(target, exc) from None
    os.close(descriptor)
    return Path(name)


def _write_package(snapshot: Snapshot, wacz: zipfile.ZipFile, summary: WaczSummary) -> None:
    """Every part of the package, datapackage.json and its digest last."""
    with contextlib.ExitStack() as stack:
        originals = stack.enter_context(EarlierOriginals(snapshot))
        opened: list[Manifest] = []

        def manifest_once() -> Manifest:
            if not opened:
                opened.append(stack.enter_context(Manifest.open(snapshot.manifest_path, readonly=True)))
            return opened[0]

        # Refused here, before anything is written, if a record is damaged or an original is
        # out of reach.
        warcs = sorted(snapshot.warc_dir.glob(f"*{SUFFIX}"))
        _check_records(snapshot, warcs, manifest_once)
        if originals.may_be_needed():
            originals.gather(manifest_once())
        packed = set()
        for path in warcs:
            with _read(path) as source:
                _add(wacz, summary, f"archive/{path.name}", source, stored=True)
            summary.warc_files += 1
            packed.add(path.name)
        copied = _add_originals(wacz, summary, originals, packed)
        # The blocks go to a scratch file first: a ZIP entry's size must be known to choose ZIP64.
        named: set[str] = set()
        with _cdxj_lines(snapshot, copied) as lines, tempfile.TemporaryFile() as blocks:
            idx = write_blocks(_counted(lines, summary, named), blocks)
            blocks.seek(0)
            _add(wacz, summary, f"indexes/{DATA_NAME}", blocks, stored=True)
        manifest = manifest_once()
        _check_index(snapshot, summary, named - packed, manifest)
        _add_bytes(wacz, summary, "indexes/index.idx", "".join(line + "\n" for line in idx).encode())
        first = _add_pages(wacz, summary, manifest)
    datapackage = _datapackage(snapshot, summary, first)
    wacz.writestr(_info("datapackage.json"), datapackage)
    digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(datapackage).hexdigest()}
    wacz.writestr(_info("datapackage-digest.json"), json.dumps(digest, indent=2).encode())


def _check_records(snapshot: Snapshot, warcs: list[Path], manifest: Callable[[], Manifest]) -> None:
    """SnapshotError naming the first damaged record of ``warcs``: a package's hashes would vouch
    for records no tool can read back as they were written (what a stopped crawl left past its
    last commit is no damage: it names no record of the index)."""
    try:
        damage = record_damage(warcs, manifest)
    except OSError as exc:
        raise SnapshotError(f"cannot read {snapshot.warc_dir}: {exc.strerror or exc}") from None
    if damage:
        first = damage[0]
        more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
        raise SnapshotError(
            f"{snapshot.warc_dir}/{first.where}: {first.detail}{more}; the snapshot is damaged and "
            f"is not packed (archiver verify {shell_word(snapshot.root)} says more)"
        )


def _add_originals(
    wacz: zipfile.ZipFile, summary: WaczSummary, originals: EarlierOriginals, packed: set[str]
) -> Path | None:
    """The records of earlier snapshots the revisits refer to, as one more WARC file of the
    package (named apart from the snapshot's own); returns their CDXJ lines' scratch file."""
    if not originals.count:
        return None
    name, serial = ORIGINALS_NAME + SUFFIX, 1
    while name in packed:  # a file of the snapshot's own warc/ by that name, however unlikely
        serial += 1
        name = f"{ORIGINALS_NAME}-{serial}{SUFFIX}"
    head = originals.warcinfo(name)
    info = _info(f"archive/{name}", stored=True)
    info.file_size = len(head) + originals.bytes  # so the entry is ZIP64 when it must be
    with wacz.open(info, "w") as entry:
        sink = _Hashing(entry)
        sink.write(head)
        index = originals.copy(sink.write, name, len(head))
    summary.resources.append(_resource(f"archive/{name}", sink))
    summary.warc_files += 1
    summary.originals = originals.count
    packed.add(name)
    return index


def _read(path: Path) -> IO[bytes]:
    """``path`` of the snapshot, open to read; SnapshotError if it cannot be (not the target's fault)."""
    try:
        return open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise SnapshotError(f"cannot read {path}: {exc.strerror or exc}") from None


def _info(name: str, stored: bool = False, mtime: float | None = None) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, time.gmtime(mtime)[:6] if mtime else time.gmtime()[:6])
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    return info


def _add(wacz: zipfile.ZipFile, summary: WaczSummary, name: str, source: IO[bytes], stored: bool) -> None:
    """Copy ``source`` into the entry ``name``, hashing it on the way; list it as a resource."""
    size = os.fstat(source.fileno()).st_size
    info = _info(name, stored, os.fstat(source.fileno()).st_mtime)
    info.file_size = size  # so the entry is ZIP64 when it must be
    with wacz.open(info, "w") as entry:
        sink = _Hashing(entry)
        while chunk := source.read(COPY_CHUNK):
            sink.write(chunk)
    summary.resources.append(_resource(name, sink))


def _add_bytes(wacz: zipfile.ZipFile, summary: WaczSummary, name: str, data: bytes) -> None:
    wacz.writestr(_info(name), data)
    sink = _Hashing()
    sink.write(data)
    summary.resources.append(_resource(name, sink))


def _resource(path: str, sink: _Hashing) -> dict[str, Any]:
    # Frictionless (which py-wacz validates with) wants lowercase names.
    return {
        "name": os.path.basename(path).lower(),
        "path": path,
        "hash": "sha256:" + sink.sha256.hexdigest(),
        "bytes": sink.size,
    }


@contextlib.contextmanager
def _cdxj_lines(snapshot: Snapshot, copied: Path | None = None) -> Iterator[Iterator[str]]:
    """The snapshot's CDXJ lines in order, without newlines; with the lines a crawl killed
    before its end left unmerged (index.cdxj.pending), merged in, sorted on disk, and those of
    the records ``copied`` from earlier snapshots (a sorted file), merged as they are read.
    Lines an earlier version keyed otherwise are keyed as replay tools look them up, and sorted
    again (cdxj.rekeyed)."""
    pending = snapshot.index_dir / "index.cdxj.pending"
    with contextlib.ExitStack() as stack:
        parts: list[Iterable[str]] = []
        for path in (snapshot.cdxj_path, pending):
            if path.exists():
                text = io.TextIOWrapper(_read(path), encoding="utf-8", errors=KEEP_BYTES)
                parts.append(stack.enter_context(text))
        lines: Iterable[str] = itertools.chain.from_iterable(parts)
        if pending.exists() or keyed_otherwise(snapshot.cdxj_path):
            merged = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "index.cdxj"
            write_sorted((rekeyed(line.rstrip("\n")) for line in lines if line.strip()), merged)
            lines = stack.enter_context(open(merged, encoding="utf-8", errors=KEEP_BYTES))
        if copied is not None:
            lines = heapq.merge(lines, stack.enter_context(open(copied, encoding="utf-8", errors=KEEP_BYTES)))
        yield (line.rstrip("\n") for line in lines if line.strip())


def _counted(lines: Iterator[str], summary: WaczSummary, named: set[str]) -> Iterator[str]:
    """``lines``, counted, with the WARC files they name added to ``named``."""
    for line in lines:
        summary.captures += 1
        try:
            line.encode("utf-8")  # bytes that are not text: the index is damaged
            named.add(str(json.loads(line.split(" ", 2)[2])["filename"]))
        except (IndexError, KeyError, TypeError, ValueError):  # UnicodeEncodeError is a ValueError
            named.add("")  # a line no replay tool can follow
            continue
        yield line


def _check_index(snapshot: Snapshot, summary: WaczSummary, missing: set[str], manifest: Manifest) -> None:
    """SnapshotError if the package would not replay: its index names WARC files the snapshot
    lacks (or lines that name none), or is empty while the manifest names captures."""
    if missing:
        shown = ", ".join(sorted(name or "(a line with no file name)" for name in missing)[:3])
        raise SnapshotError(
            f"{snapshot.cdxj_path} names WARC files that are not in {snapshot.warc_dir}: {shown}; "
            f"the snapshot is damaged (archiver verify {shell_word(snapshot.root)} says more)"
        )
    if summary.captures == 0:
        captures = sum(manifest.count_by("outcome", captured=True).values())
        if captures:
            raise SnapshotError(
                f"{snapshot.cdxj_path} is missing or empty, yet the manifest names {captures} captures; "
                f"write it again from the WARC files with: archiver mirror {shell_word(snapshot.root)}"
            )


def _add_pages(wacz: zipfile.ZipFile, summary: WaczSummary, manifest: Manifest) -> dict[str, str] | None:
    """Write pages/pages.jsonl; returns the first page's url and ts (the main page)."""
    first = None
    with wacz.open(_info("pages/pages.jsonl"), "w") as entry:
        sink = _Hashing(entry)
        sink.write((json.dumps(PAGES_HEADER) + "\n").encode())
        for page in snapshot_pages(manifest):
            first = first or {"url": page.url, "ts": page.ts}
            sink.write((page.to_json() + "\n").encode("utf-8"))
            summary.pages += 1
    summary.resources.append(_resource("pages/pages.jsonl", sink))
    return first


def _datapackage(snapshot: Snapshot, summary: WaczSummary, first: dict[str, str] | None) -> bytes:
    settings = snapshot.read_crawl_json().get("settings") or {}
    seeds = settings.get("seeds") or []
    package: dict[str, Any] = {
        "profile": "data-package",
        "resources": summary.resources,
        "wacz_version": WACZ_VERSION,
        "software": f"archiver {__version__}",
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "title": "archive of " + " ".join(seeds) if seeds else snapshot.root.name,
    }
    if first:
        package["mainPageURL"] = first["url"]
        package["mainPageDate"] = first["ts"]
    return json.dumps(package, indent=2).encode()
