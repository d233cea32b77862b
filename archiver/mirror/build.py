"""``archiver mirror``: the offline mirror rebuilt whole from the WARC files and the manifest.

The crawl writes the mirror as it goes (mirror/live.py); this rebuilds the
same bytes from the record of truth. It places every capture again in WARC
order (the order the crawl placed them in, so each gets the same path:
mirror/plan.py), then reads each record at its offset and writes its file
(mirror/document.py: HTML, CSS and SVG rewritten, everything else copied as
received, content-encoding undone), shared by forked processes when there are
many (mirror/processes.py). It builds into a fresh folder that
replaces mirror/ at the end, so a rebuild never mixes old files with new, and
a crash leaves the previous mirror in place. It renders index.html last, and
keys again the CDXJ lines an earlier version keyed otherwise (cdxj.rekeyed), or writes
the index again from the WARC files if it is lost or damaged (store/index_rebuild.py). Its
summary is a line such as 'mirror: 212 files (180 pages, 3 stylesheets, 29
other), 3.9 MiB, 37 redirects; 0 errors; 0.8 s'.
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import shutil
import time
from pathlib import Path

from archiver.config_rules import NEVER
from archiver.content import PARSED_TYPES
from archiver.errors import SnapshotError, UnsafePathError, cannot_write
from archiver.mirror.index_page import write_index
from archiver.mirror.kept import keep_before, kept_line
from archiver.mirror.linker import Memo
from archiver.mirror.local_paths import LocalPaths
from archiver.mirror.output import JsonLog, MirrorOutput, read_logs
from archiver.mirror.plan import PathPlan, payload_key
from archiver.mirror.processes import build_in_processes
from archiver.mirror.record_files import RecordFiles
from archiver.mirror.stats import MirrorStats
from archiver.redirects import NO_PAGE_STATUSES
from archiver.stop_signals import obey
from archiver.store.index_rebuild import mend_index
from archiver.store.lock import snapshot_lock
from archiver.store.manifest import Manifest
from archiver.store.previous import missing_previous, open_previous
from archiver.store.rows import FETCHED, IS_REDIRECT, ManifestRow
from archiver.store.snapshot import Snapshot, require_folder
from archiver.warc.reader import WarcReader
from archiver.warc.safe_join import safe_join

__all__ = ["MirrorStats", "build_mirror", "redirects_resolved"]

FATAL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
"""Errors writing a file that stop a build (or a crawl): the next file would fail alike."""
MAX_WORKERS = 4
PARALLEL_FROM = 500
"""Files planned from which the build is shared by several processes."""
PART_BLOCK = 64
BUILD_FOLDER = ".mirror.partial"
OLD_FOLDER = ".mirror.old"
TABLE = "mirror_plan"
"""The rebuild's scratch table: (url, path, shared, before) of every capture placed; ``before``:
the file the mirror had for it (its local_path before the rebuild), kept if its record is lost."""
PENDING = "mirror_pending"
"""The live mirror's pages to look at again at the end of the crawl (mirror/live.py): (url,
guesses as JSON, or NULL: no file written yet). A rebuild drops it: it supersedes the live mirror."""
CAPTURED = ("response", "revisit")
"""Record types of a capture that has a mirror file (the crawl places exactly these, when fetched)."""


def is_mirrored(row: ManifestRow) -> bool:
    """True for a row whose capture has a mirror file: fetched, with a response or revisit record,
    but an answer that holds no page (redirects.NO_PAGE_STATUSES: a 204, a 205, a 304 nobody
    asked for), which a browser does not show."""
    return (
        row.outcome == FETCHED
        and row.status not in NO_PAGE_STATUSES
        and row.record_type in CAPTURED
        and row.warc_file is not None
        and row.warc_offset is not None
    )


def _log_of(build_root: Path, part: int) -> Path:
    """The log of the files part ``part`` of a build writes (beside the build folder)."""
    return build_root.parent / f"{BUILD_FOLDER}-files-{part}.jsonl"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def redirects_resolved(manifest: Manifest) -> int:
    """Redirecting URLs whose chain ends at a file of the mirror."""
    resolve = LocalPaths(manifest.connection)
    urls = [url for (url,) in manifest.connection.execute(f"SELECT url FROM urls WHERE {IS_REDIRECT}")]
    return sum(1 for url in urls if resolve(url))


def _shares_pages(snapshot: Snapshot) -> bool:
    """False if the crawl rendered pages in a browser (--browser auto or always): then no two
    pages share a file (plan.payload_key), as when the crawl placed them."""
    try:
        settings = snapshot.read_crawl_json().get("settings") or {}
    except SnapshotError:
        return True
    return not isinstance(settings, dict) or settings.get("browser", NEVER) == NEVER


class _Builder:
    """One mirror build: the replayed plan, the resolver, and the files written."""

    def __init__(self, snapshot: Snapshot, manifest: Manifest) -> None:
        self.snapshot = snapshot
        self.manifest = manifest
        self.stats = MirrorStats()
        self.files = RecordFiles(
            WarcReader(snapshot.warc_dir),
            manifest,
            LocalPaths(manifest.connection),
            self.stats,
            open_previous(snapshot),
        )
        self.planned = 0

    def plan(self) -> None:
        """Place every capture again, in WARC order, and set each row's local_path; committed."""
        db = self.manifest.connection
        plan = PathPlan(db, fresh=True, read_coding=self.files.content_encoding)
        share_pages = _shares_pages(self.snapshot)
        db.executescript(
            f"DROP TABLE IF EXISTS {TABLE}; DROP TABLE IF EXISTS {PENDING}; "
            f"CREATE TABLE {TABLE} (url TEXT PRIMARY KEY, path TEXT NOT NULL, shared INTEGER NOT NULL, "
            "before TEXT);"
        )
        batch: list[tuple[str, str, bool, str | None]] = []
        for row in self.manifest.captures():
            assert row.warc_file is not None and row.warc_offset is not None
            if not is_mirrored(row):
                continue
            # A record the WARC file no longer reaches is placed all the same: the file the
            # crawl wrote for it is kept (keep()), else its links are left absolute (relink()).
            held = self.files.records.holds(row.warc_file, row.warc_offset, row.warc_length or 0)
            # A page rendered in a browser is mirrored from its own DOM, never shared.
            payload = (
                None
                if row.dom_warc_file
                else payload_key(
                    row.url,
                    row.content_type,
                    row.payload_digest,
                    row.length,
                    row.truncated,
                    share_pages,
                    status=row.status,
                )
            )
            placed = plan.place(
                row.url,
                row.content_type,
                payload,
                None,
                f"{row.warc_file} {row.warc_offset} {row.warc_length or 0}",
            )
            batch.append((row.url, placed.path, placed.shared, row.local_path))
            self.stats.shared += placed.shared
            self.planned += held and not placed.shared
            if len(batch) >= 1000:
                db.executemany(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?)", batch)
                batch.clear()
        db.executemany(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?, ?, ?)", batch)
        db.execute("UPDATE urls SET local_path = NULL WHERE local_path IS NOT NULL")
        db.execute(
            f"UPDATE urls SET local_path = (SELECT path FROM {TABLE} AS p WHERE p.url = urls.url) "
            f"WHERE url IN (SELECT url FROM {TABLE})"
        )
        plan.drop()
        db.commit()

    def build(
        self,
        root: Path,
        part: int = 0,
        parts: int = 1,
        *,
        where: str = "NOT shared",
        log_part: int | None = None,
    ) -> set[str]:
        """Write this part's files under ``root``; returns the paths that failed.

        Files are written in path order, so the pages of a folder come one
        after the other and share the memo of what their links became (see
        linker.Memo). Part k of n takes every n-th block of PART_BLOCK of them.
        ``where``: which of the plan's files (a condition on its columns); ``log_part``: the
        log they go to, if not the part's own.
        """
        failed: set[str] = set()
        log_path = _log_of(root, part if log_part is None else log_part)
        log = JsonLog(log_path)
        files = MirrorOutput(root, log)
        try:
            for index, (row, path) in enumerate(self.manifest.captures_by_path(TABLE, where)):
                if (index // PART_BLOCK) % parts != part:
                    continue
                obey()
                try:
                    self.files.write(files, row, path)
                except OSError as exc:
                    if exc.errno in FATAL_ERRNOS:
                        raise cannot_write(self.snapshot.mirror_dir / path, exc) from None
                    if not self.keep(files, row, path, str(exc)):
                        self.stats.errors.append(f"{row.url}: {exc}")
                        failed.add(path)
                except Exception as exc:  # noqa: BLE001 - one damaged record must not stop the build
                    why = f"{type(exc).__name__}: {str(exc)[:200]}"
                    if not self.keep(files, row, path, why):
                        self.stats.errors.append(f"{row.url}: {why}")
                        failed.add(path)
        finally:
            try:
                log.close()
            except OSError as exc:  # its last lines met a full disk: the build stops as above
                raise cannot_write(log_path, exc) from None
        return failed

    def keep(self, files: MirrorOutput, row: ManifestRow, path: str, why: str) -> bool:
        """kept.keep_before() for ``row``, whose record could not be read (``why``): counted, and
        said in one line of ``stats.kept``; False if there is no file to keep."""
        size = keep_before(
            self.manifest.connection, TABLE, self.snapshot.mirror_dir, files, row.url, path, why
        )
        if size is None:
            return False
        self.stats.count(row.content_type, size)
        self.stats.kept.append(kept_line(row.url, path, why))
        return True

    def relink(self, root: Path, failed: set[str], log_part: int) -> set[str]:
        """Write again the pages and stylesheets built, now that the files at ``failed`` paths
        could not be written: their URLs have no file, and links to them stay absolute, as wget
        and HTTrack leave a link to what they could not save (they led to no file). What was
        written of a failed file goes. Returns the paths that failed this time."""
        db = self.manifest.connection
        db.executemany("UPDATE urls SET local_path = NULL WHERE local_path = ?", ((path,) for path in failed))
        db.executemany(f"DELETE FROM {TABLE} WHERE path = ?", ((path,) for path in failed))
        for path in failed:
            with contextlib.suppress(OSError, UnsafePathError):
                safe_join(root, path).unlink()
        counted = self.files.stats
        self.files.resolve, self.files.memo, self.files.stats = LocalPaths(db), Memo(), MirrorStats()
        pages = ", ".join(f"'{mime}'" for mime in sorted(PARSED_TYPES))
        try:
            where = f"NOT shared AND (urls.content_type IN ({pages}) OR urls.dom_warc_file IS NOT NULL)"
            return self.build(root, where=where, log_part=log_part)
        finally:
            self.files.stats = counted

    def reopen(self) -> None:
        """Open the manifest and the WARC files again, in a forked process (processes.py):
        connections and open files are never shared across a fork."""
        self.manifest = Manifest.open(self.snapshot.manifest_path, readonly=True)
        self.stats = MirrorStats()
        self.files = RecordFiles(
            WarcReader(self.snapshot.warc_dir),
            self.manifest,
            LocalPaths(self.manifest.connection),
            self.stats,
            open_previous(self.snapshot),
        )

    def close(self) -> None:
        """Close the WARC files and the manifest; safe to call twice."""
        self.files.close()
        self.manifest.close()


def build_mirror(snapshot_root: Path, *, index: bool = True, workers: int | None = None) -> MirrorStats:
    """Rebuild ``snapshot_root``/mirror from its WARC files and manifest, then index.html.

    Works on the snapshot of an interrupted crawl too (queued URLs are simply
    not in the mirror yet). Sets each row's ``local_path`` in the manifest:
    the file written for it, or NULL (redirects, failures, skips). ``workers``
    processes share the writing (default: one per CPU, up to MAX_WORKERS, for
    PARALLEL_FROM files or more). Holds the snapshot's writer lock while it builds.
    """
    require_folder(Path(snapshot_root))
    snapshot = Snapshot(Path(snapshot_root))
    snapshot.check_manifest()
    gone = missing_previous(snapshot)
    if gone is not None:
        # Its unchanged files are written from that snapshot's records: a rebuild would lose them.
        raise SnapshotError(
            f"{snapshot.root} is a re-archive against {gone}, which is not there: the mirror "
            "cannot be rebuilt without it, and is left as it was"
        )
    with (
        snapshot_lock(snapshot.root, "archiver mirror"),
        Manifest.open(snapshot.manifest_path, existing=True) as manifest,
    ):
        stats = rebuild(snapshot, manifest, index=index, workers=workers, refuse_empty=True)
        manifest.checkpoint()  # the path plan's table is dropped: its space is given back
        # An earlier version's index keyed some URLs where pywb does not look them up; one lost
        # or damaged since the crawl wrote it is written again from the WARC files.
        mended = mend_index(snapshot.cdxj_path, snapshot.cdxj_pending_path, snapshot.warc_dir, manifest)
        stats.rekeyed, stats.reindexed = mended.rekeyed, mended.rebuilt
        return stats


def rebuild(
    snapshot: Snapshot,
    manifest: Manifest,
    *,
    index: bool = True,
    workers: int | None = None,
    refuse_empty: bool = False,
) -> MirrorStats:
    """build_mirror() for a caller that holds the snapshot's lock and its manifest open.

    ``refuse_empty``: a SnapshotError, the mirror left as it was, when the manifest names
    no record the WARC files hold (an empty manifest, or another snapshot's).
    """
    started = time.monotonic()
    build_root = snapshot.root / BUILD_FOLDER
    old_root = snapshot.root / OLD_FOLDER
    builder = _Builder(snapshot, manifest)
    builder.plan()
    if refuse_empty and builder.planned == 0:
        builder.files.records.close()
        raise SnapshotError(
            f"nothing to mirror in {snapshot.root}: its manifest names no record its WARC files "
            "hold (the mirror is left as it was)"
        )
    if workers is None:
        workers = min(os.cpu_count() or 1, MAX_WORKERS) if builder.planned >= PARALLEL_FROM else 1
    logs = [_log_of(build_root, part) for part in range(max(workers, 1))]
    for stale in snapshot.root.glob(_log_of(build_root, 0).name.replace("-0.", "-*.")):
        stale.unlink()  # left by a build that was killed
    try:
        _remove(build_root)
        build_root.mkdir()
        if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            failed = build_in_processes(builder, build_root, workers)
        else:
            logs = logs[:1]
            failed = builder.build(build_root)
        if failed:  # pages written before may link to them: written again, those links absolute
            logs.append(_log_of(build_root, len(logs)))
            failed |= builder.relink(build_root, failed, len(logs) - 1)
        obey()  # the last moment a stop leaves the mirror before as it was
    except BaseException:  # a full disk, Ctrl-C, SIGTERM: the mirror before stays as it was
        with contextlib.suppress(OSError):
            _remove(build_root)
            for log in logs:
                log.unlink(missing_ok=True)
        raise
    finally:
        builder.files.close()
    _remove(old_root)
    if snapshot.mirror_dir.is_symlink():
        snapshot.mirror_dir.unlink()
    elif snapshot.mirror_dir.exists():
        snapshot.mirror_dir.rename(old_root)
    build_root.rename(snapshot.mirror_dir)
    _remove(old_root)
    db = manifest.connection
    db.executemany("UPDATE urls SET local_path = NULL WHERE local_path = ?", ((path,) for path in failed))
    db.execute(f"DROP TABLE {TABLE}")
    manifest.replace_mirror_files(read_logs(logs))
    for log in logs:
        log.unlink()
    builder.stats.redirects = redirects_resolved(manifest)
    if index:
        write_index(snapshot, manifest)
    builder.stats.seconds = time.monotonic() - started
    return builder.stats
