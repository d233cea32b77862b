"""The offline mirror: a function of the WARC files and the manifest, rebuilt whole.

build_mirror() maps every capture in the manifest to a local path first (so a
page can link to a file written after it, or to the final file of a redirect
chain), then reads each record at its offset, in WARC order, and writes it
under mirror/: HTML and CSS rewritten, everything else copied as received,
content-encoding undone. It builds into a fresh folder that replaces mirror/
at the end, so a rebuild never mixes old files with new, and a crash leaves the
previous mirror in place. It renders index.html last. Its summary is a line
such as 'mirror: 212 files (180 pages, 3 stylesheets, 29 other), 4.1 MB, 37
redirects; 0 errors; 0.8 s'.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.content import (
    CSS_TYPE,
    DEFAULT_DECODE_LIMIT,
    HTML_TYPES,
    MAX_MARKUP,
    PARSED_TYPES,
    Decoding,
    bounded_document,
    content_codings,
    mime_type,
)
from archiver.errors import SnapshotError, WriteError
from archiver.links import charset_from_content_type
from archiver.mirror.index_page import write_index
from archiver.mirror.output import MirrorOutput, read_logs
from archiver.mirror.plan import PathPlan
from archiver.mirror.rewrite import Memo, rewrite_css_bytes, rewrite_html
from archiver.mirror.scripts import neutralise_scripts
from archiver.store.lock import snapshot_lock
from archiver.store.manifest import Manifest, ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.store.stored import payload_record
from archiver.warc.dom import page_of
from archiver.warc.reader import WarcReader

REWRITE_LIMIT = DEFAULT_DECODE_LIMIT
"""HTML and CSS are rewritten in memory: decoded past this, the rest is left out (and noted)."""
DECODED_FILE_LIMIT = 256 * 1024**2
"""Bytes a content-encoded file of another type is decoded to at most (the rest is not expanded:
servers encode text, and a small body that inflates past this is a bomb)."""
ASSET_LIMIT = 4 * 1024**3
"""Bytes copied at most for a file stored as it is (no Content-Encoding)."""
CHUNK = 256 * 1024
_FATAL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
MAX_WORKERS = 4
PARALLEL_FROM = 500
"""Files planned from which the build is shared by several processes."""
PART_BLOCK = 64
BUILD_FOLDER = ".mirror.partial"
OLD_FOLDER = ".mirror.old"


@dataclass
class MirrorStats:
    """What a mirror build wrote."""

    pages: int = 0
    stylesheets: int = 0
    other: int = 0
    bytes: int = 0
    redirects: int = 0
    """Redirecting URLs whose links lead to a local file."""
    shared: int = 0
    """Captures that share the file of an identical one (/dir/ and /dir/index.html)."""
    errors: list[str] = field(default_factory=list)
    """One line per capture that could not be written (URL: why)."""
    seconds: float = 0.0

    def add(self, other: MirrorStats) -> None:
        """Count what another process of the same build wrote."""
        self.pages += other.pages
        self.stylesheets += other.stylesheets
        self.other += other.other
        self.bytes += other.bytes
        self.errors.extend(other.errors)

    @property
    def files(self) -> int:
        return self.pages + self.stylesheets + self.other

    def summary(self) -> str:
        """One line for the terminal."""
        line = (
            f"mirror: {self.files} files ({self.pages} pages, {self.stylesheets} stylesheets, "
            f"{self.other} other), {self.bytes / 1e6:.1f} MB, {self.redirects} redirects, "
            f"{self.shared} shared; "
            f"{len(self.errors)} errors; {self.seconds:.1f} s"
        )
        return "\n".join([line, *(f"  {error}" for error in self.errors[:20])])


def _log_of(build_root: Path, part: int) -> Path:
    """The log of the files part ``part`` of a build writes (beside the build folder)."""
    return build_root.parent / f"{BUILD_FOLDER}-files-{part}.jsonl"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


class _Builder:
    """One mirror build: the path plan, the resolver, and the files written."""

    def __init__(self, snapshot: Snapshot, manifest: Manifest) -> None:
        self.snapshot = snapshot
        self.manifest = manifest
        self.records = WarcReader(snapshot.warc_dir)
        self.plan = PathPlan(manifest.connection)
        self.stats = MirrorStats()
        self.memo = Memo()

    def content_encoding(self, warc_file: str, offset: int, length: int) -> str | None:
        """The Content-Encoding of the response or revisit record at ``offset`` of ``warc_file``."""
        try:
            headers = self.records.record(warc_file, offset, length or None).http_headers
        except Exception:  # noqa: BLE001 - a damaged record is reported when it is written
            return None
        return headers.get_header("Content-Encoding") if headers else None

    def resolve(self, url: str) -> str | None:
        """The local file of ``url``: its own, or that of its redirect chain's end."""
        return self.plan.resolve(url)

    def build(self, root: Path, part: int = 0, parts: int = 1) -> set[str]:
        """Write this part's planned files under ``root``; returns the URLs that failed.

        Files are written in path order, so the pages of a folder come one
        after the other and share the memo of what their links became (see
        rewrite.Memo). Part k of n takes every n-th block of PART_BLOCK of them.
        """
        failed: set[str] = set()
        files = MirrorOutput(root, _log_of(root, part))
        try:
            for index, (row, path) in enumerate(self.manifest.captures_by_path(PathPlan.TABLE)):
                if (index // PART_BLOCK) % parts != part:
                    continue
                try:
                    self._write_capture(files, row, path)
                except OSError as exc:
                    if exc.errno in _FATAL_ERRNOS:
                        raise WriteError(f"cannot write the mirror: {exc.strerror}") from None
                    self.stats.errors.append(f"{row.url}: {exc}")
                    failed.add(row.url)
                except Exception as exc:  # noqa: BLE001 - one damaged record must not stop the build
                    self.stats.errors.append(f"{row.url}: {type(exc).__name__}: {str(exc)[:200]}")
                    failed.add(row.url)
        finally:
            files.close()
        return failed

    def build_in_processes(self, root: Path, parts: int) -> set[str]:
        """build() split over ``parts`` processes (this one and parts - 1 forked ones).

        Rewriting is pure Python and file creation waits on the disk, so a
        second core halves the build. Children read the plan made before the
        fork and open their own manifest and WARC files.
        """
        context = multiprocessing.get_context("fork")
        children = []
        for part in range(1, parts):
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(target=self._build_part, args=(root, part, parts, sender), daemon=True)
            child.start()
            sender.close()
            children.append((child, receiver))
        fatal = None
        try:
            failed = self.build(root, 0, parts)
        except WriteError as exc:
            fatal, failed = exc, set()
        for child, receiver in children:
            try:
                outcome = receiver.recv()
            except EOFError:
                outcome = ("fatal", f"a mirror process ended with code {child.exitcode}")
            child.join()
            if outcome[0] == "fatal":
                fatal = fatal or WriteError(outcome[1])
                continue
            _, stats, child_failed = outcome
            self.stats.add(stats)
            failed |= child_failed
        if fatal is not None:
            raise fatal
        return failed

    def _build_part(self, root: Path, part: int, parts: int, sender: Any) -> None:
        """A forked process's share of build_in_processes(): results go back through ``sender``."""
        # Connections and open files are never shared across a fork.
        self.manifest = Manifest.open(self.snapshot.manifest_path, readonly=True)
        self.plan = PathPlan(self.manifest.connection)
        self.records = WarcReader(self.snapshot.warc_dir)
        self.stats = MirrorStats()
        try:
            failed = self.build(root, part, parts)
        except WriteError as exc:
            sender.send(("fatal", str(exc)))
        else:
            sender.send(("ok", self.stats, failed))
        finally:
            self.records.close()
            self.manifest.close()

    def _payload_record(self, row: ManifestRow) -> tuple[Any, Any]:
        """(record holding the payload, the row's own HTTP headers) for a response or revisit."""
        return payload_record(self.manifest, self.records, row)

    def _write_capture(self, files: MirrorOutput, row: ManifestRow, path: str) -> None:
        if row.dom_warc_file is not None and row.dom_warc_offset is not None:
            self._write_rendered(files, row, path)
            return
        payload_record, own_headers = self._payload_record(row)
        content_type = own_headers.get_header("Content-Type") if own_headers else None
        # A revisit's own headers say how its (identical, still encoded) payload was encoded.
        encoding = own_headers.get_header("Content-Encoding") if own_headers else None
        stream = payload_record.raw_stream
        chunks = iter(lambda: stream.read(CHUNK), b"")
        mime = row.content_type or mime_type(content_type)
        if mime in PARSED_TYPES:
            decoding = Decoding(chunks, encoding, REWRITE_LIMIT)
            body, capped = bounded_document(b"".join(decoding), mime)
            if (decoding.cut or capped) and mime in HTML_TYPES:
                body = _without_cut_tag(body)
            charset = charset_from_content_type(content_type)
            if mime == CSS_TYPE:
                body = rewrite_css_bytes(body, row.url, charset, self.resolve, path, self.memo)
                self.stats.stylesheets += 1
            else:
                body = rewrite_html(body, row.url, charset, self.resolve, path, self.memo)
                self.stats.pages += 1
            self.stats.bytes += files.write(path, (body,), lambda: _note(decoding, capped))
            return
        limit = DECODED_FILE_LIMIT if content_codings(encoding) else ASSET_LIMIT
        decoding = Decoding(chunks, encoding, limit)
        self.stats.other += 1
        self.stats.bytes += files.write(path, decoding, lambda: _note(decoding))

    def _write_rendered(self, files: MirrorOutput, row: ManifestRow, path: str) -> None:
        """A page rendered in a browser: its DOM, links rewritten, scripts made inert (see scripts.py)."""
        assert row.dom_warc_file is not None and row.dom_warc_offset is not None
        record = self.records.record(row.dom_warc_file, row.dom_warc_offset, row.dom_warc_length)
        if (
            record.rec_type != "resource"
            or page_of(record.rec_headers.get_header("WARC-Target-URI") or "") != row.url
        ):
            raise ValueError(f"no rendered DOM of {row.url} at {row.dom_warc_file}@{row.dom_warc_offset}")
        html = record.raw_stream.read(REWRITE_LIMIT + 1)
        if len(html) > REWRITE_LIMIT:  # the crawl keeps no DOM this large
            raise ValueError(f"the rendered DOM of {row.url} is larger than {REWRITE_LIMIT} bytes")
        html, capped = bounded_document(html, "text/html")
        if capped:
            html = _without_cut_tag(html)
        html = rewrite_html(html, row.url, "utf-8", self.resolve, path, self.memo)
        self.stats.pages += 1
        note = f"cut at {MAX_MARKUP:,} tags: the rendered DOM holds more" if capped else None
        self.stats.bytes += files.write(path, (neutralise_scripts(html),), lambda: note)


def _note(decoding: Decoding, capped: bool = False) -> str | None:
    """What the mirror's file lacks, said for the manifest and index.html; None if nothing."""
    notes = [decoding.problem] if decoding.problem else []
    if decoding.cut:
        notes.append(f"cut at {decoding.limit // 1024**2} MiB: the body decodes to more")
    if capped:
        notes.append(f"cut at {MAX_MARKUP:,} tags or url(): the document holds more")
    return "; ".join(notes) or None


def _without_cut_tag(body: bytes) -> bytes:
    """A page cut at the decoding limit without the tag the cut split (no ">" after its "<"):
    the rewriter does not see an unclosed tag, so a link in it would stay as the site wrote it."""
    start = body.rfind(b"<")
    return body[:start] if start != -1 and body.find(b">", start) == -1 else body


def build_mirror(snapshot_root: Path, *, index: bool = True, workers: int | None = None) -> MirrorStats:
    """Rebuild ``snapshot_root``/mirror from its WARC files and manifest, then index.html.

    Works on the snapshot of an interrupted crawl too (queued URLs are simply
    not in the mirror yet). Sets each row's ``local_path`` in the manifest:
    the file written for it, or NULL (redirects, failures, skips). ``workers``
    processes share the writing (default: one per CPU, up to MAX_WORKERS, for
    PARALLEL_FROM files or more). Holds the snapshot's writer lock while it builds.
    """
    started = time.monotonic()
    snapshot = Snapshot(Path(snapshot_root))
    if not snapshot.manifest_path.is_file():
        raise SnapshotError(f"{snapshot.root} is not a snapshot (no manifest.sqlite3)")
    build_root = snapshot.root / BUILD_FOLDER
    old_root = snapshot.root / OLD_FOLDER
    with snapshot_lock(snapshot.root, "archiver mirror"), Manifest.open(snapshot.manifest_path) as manifest:
        builder = _Builder(snapshot, manifest)
        builder.plan.make(builder.records.holds, builder.content_encoding)
        if workers is None:
            workers = min(os.cpu_count() or 1, MAX_WORKERS) if builder.plan.planned >= PARALLEL_FROM else 1
        logs = [_log_of(build_root, part) for part in range(max(workers, 1))]
        for stale in snapshot.root.glob(_log_of(build_root, 0).name.replace("-0.", "-*.")):
            stale.unlink()  # left by a build that was killed
        try:
            _remove(build_root)
            build_root.mkdir()
            if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
                failed = builder.build_in_processes(build_root, workers)
            else:
                logs = logs[:1]
                failed = builder.build(build_root)
        finally:
            builder.records.close()
        builder.stats.redirects = builder.plan.resolved_redirects()
        builder.stats.shared = builder.plan.shared()
        _remove(old_root)
        if snapshot.mirror_dir.is_symlink():
            snapshot.mirror_dir.unlink()
        elif snapshot.mirror_dir.exists():
            snapshot.mirror_dir.rename(old_root)
        build_root.rename(snapshot.mirror_dir)
        _remove(old_root)
        builder.plan.store_local_paths(failed)
        manifest.replace_mirror_files(read_logs(logs))
        for log in logs:
            log.unlink()
        if index:
            write_index(snapshot, manifest)
    builder.stats.seconds = time.monotonic() - started
    return builder.stats
