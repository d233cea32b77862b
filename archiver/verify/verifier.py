"""archiver verify: read a snapshot cold and prove it complete and intact.

Four checks, each in its own module, all reporting into one
:class:`~archiver.report.Report`:

    integrity      WARC files parse, digests match, records pair up   (warc/integrity.py)
    consistency    manifest agrees with the WARC records              (consistency.py)
                   CDXJ index agrees with them                        (warc/cdxj_check.py)
                   crawl.json's statistics are the manifest's         (crawl_json.py)
    completeness   every link is recorded                             (completeness.py)
                   every redirect ends, no body is cut short          (crawl_endings.py)
    mirror         every file holds what the build wrote              (mirror_files.py)
                   every local link of the mirror names a file        (mirror_links.py)
                   index.html is as the mirror build wrote it         (mirror_files.py)

A folder of bare WARC files (no manifest) gets the integrity check alone.

>>> import tempfile
>>> verify_snapshot(Path(tempfile.mkdtemp()))
Traceback (most recent call last):
...
archiver.errors.SnapshotError: ... is not a snapshot: no manifest.sqlite3, crawl.json or WARC files; give ...
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from archiver.errors import SnapshotError
from archiver.mirror.local_paths import LocalPaths
from archiver.report import (
    COMPLETENESS,
    CONSISTENCY,
    INTEGRITY,
    MIRROR,
    MISSING_MANIFEST,
    MISSING_SETTINGS,
    UNMERGED_NODE,
    Report,
    shell_word,
)
from archiver.scope import Scope
from archiver.stop_signals import stop_signals_held
from archiver.store.committed import kill_line
from archiver.store.earlier import EarlierRecords
from archiver.store.forked import forked_helper_started
from archiver.store.index_rebuild import indexed_as
from archiver.store.lock import unchanging
from archiver.store.manifest import Manifest
from archiver.store.merged_parts import stale_parts
from archiver.store.rows import QUEUED
from archiver.store.snapshot import NOT_A_SNAPSHOT, Snapshot, mend_part, require_folder
from archiver.verify.completeness import LinkCheck, crawl_scope
from archiver.verify.consistency import check_manifest
from archiver.verify.crawl_json import check_crawl_json
from archiver.verify.mirror_files import check_index_page, check_mirror_files
from archiver.verify.mirror_links import check_mirror as check_mirror_links
from archiver.verify.mirror_names import check_mirror_names
from archiver.warc.cdxj_check import check_cdxj
from archiver.warc.integrity import WarcScan, warc_files
from archiver.warc.record_index import RecordIndex


def verify_snapshot(root: Path, check_mirror: bool = True) -> Report:
    """Verify the snapshot (or bare WARC folder) at ``root``; raises SnapshotError if it is neither.

    ``report.ok`` says whether it is complete and intact; ``report.render_text()`` says what is not.
    """
    require_folder(root)
    snapshot = Snapshot(root)
    report = Report()
    is_snapshot = any(
        path.exists() for path in (snapshot.manifest_path, snapshot.crawl_json_path, snapshot.warc_dir)
    )
    if not is_snapshot:
        bare = warc_files(root)
        if not bare:
            raise SnapshotError(
                f"{root} is not a snapshot: no manifest.sqlite3, crawl.json or WARC files; {NOT_A_SNAPSHOT}"
            )
        report.checks.append(INTEGRITY)
        with RecordIndex() as records:
            WarcScan(report, records).scan(bare)
        return report
    with unchanging(root, "archiver verify"):  # a crawl writing it would seem half done
        return _verify(snapshot, report, check_mirror)


def _unmerged(snapshot: Snapshot, node: str) -> str:
    """Why crawl node ``node``'s part is not in the snapshot as it is now, and what joins it: a
    part whose manifest is lost or damaged is written again from its WARC files first."""
    part = snapshot.node_part(node).manifest_path
    if not Manifest.begun(part) or Manifest.damage_in(part) is not None:
        return f"its manifest is lost or damaged: {mend_part(snapshot.root)}"
    return f"not merged as it is now: run archiver merge {shell_word(snapshot.root)}"


def verify_locked(snapshot: Snapshot, check_mirror: bool = True) -> Report:
    """verify_snapshot() of a snapshot whose writer lock the caller holds (a repairing resume
    reads what verify finds before it writes)."""
    return _verify(snapshot, Report(), check_mirror)


def _verify(snapshot: Snapshot, report: Report, check_mirror: bool) -> Report:
    root = snapshot.root
    report.checks.append(INTEGRITY)
    for node in stale_parts(root):  # a shared crawl: its nodes' parts must all be merged
        report.add(UNMERGED_NODE, f"nodes/{node}", _unmerged(snapshot, node))
    paths = warc_files(snapshot.warc_dir)
    manifest = _open_manifest(snapshot, report)
    if manifest is None:
        with RecordIndex() as records:
            WarcScan(report, records).scan(paths)
        return report
    with manifest, RecordIndex() as records:
        crawl_json = _crawl_json(snapshot, report)
        links = LinkCheck(manifest, _scope(crawl_json, manifest, report), report)
        # The mirror's checks read only the manifest and mirror/: another process runs them
        # meanwhile (on a second core), while this one reads the WARC files.
        mirror = _MirrorChecks.start(snapshot) if check_mirror else None
        earlier = EarlierRecords.of(snapshot, report)
        try:
            scan = WarcScan(report, records, links.page, links.wants)
            scan.earlier = earlier
            if manifest.count_by("outcome").get(QUEUED):  # stopped or killed: what it left is no damage
                scan.kill_line = lambda name: kill_line(snapshot.warc_dir / name, manifest)
            links.earlier = earlier
            scan.scan(paths)
            report.checks.append(CONSISTENCY)
            check_manifest(
                manifest,
                records,
                {p.name: p.stat().st_size for p in paths},
                scan.damaged,
                report,
                snapshot.mirror_dir if check_mirror else None,
                scan.left_by_a_kill,
                scan.unsound,
            )
            check_cdxj(
                snapshot.cdxj_path,
                records,
                scan.damaged,
                report,
                snapshot.cdxj_pending_path,
                lambda entry: indexed_as(entry, manifest),
            )
            if crawl_json is not None:
                check_crawl_json(crawl_json, manifest, snapshot.root, report)
            report.checks.append(COMPLETENESS)
            links.finish(records, snapshot.warc_dir, scan.deferred)
        except BaseException:  # Ctrl-C, SIGTERM: the mirror's checks go too
            if mirror is not None:
                mirror.stop()
            raise
        finally:
            if earlier is not None:
                earlier.close()
        if mirror is not None:
            report.checks.append(MIRROR)
            report.merge(mirror.result())
    return report


def mirror_checks(snapshot: Snapshot) -> Report:
    """The mirror's checks: its files hold what was written, under names it can be copied
    with, and its local links resolve."""
    report = Report()
    with Manifest.open(snapshot.manifest_path, readonly=True) as manifest:
        manifest.checks_types = False  # the consistency check reports them
        check_mirror_files(manifest, snapshot.mirror_dir, report)
        check_mirror_names(manifest, report)
        check_index_page(manifest, snapshot.index_html, report)
        if snapshot.mirror_dir.is_dir() or snapshot.index_html.is_file():
            check_mirror_links(snapshot.root, report, LocalPaths(manifest.connection))
    return report


class _MirrorChecks:
    """mirror_checks() in a forked process (in this one where fork is not available)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._child: Any = None
        self._receiver: Any = None

    @classmethod
    def start(cls, snapshot: Snapshot) -> _MirrorChecks:
        checks = cls(snapshot)
        if "fork" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("fork")
            checks._receiver, sender = context.Pipe(duplex=False)
            checks._child = context.Process(
                target=_run_mirror_checks, args=(snapshot, sender, os.getpid()), daemon=True
            )
            with stop_signals_held():
                checks._child.start()
            sender.close()
        return checks

    def result(self) -> Report:
        """The child's report (or the checks run here, if it could not run them)."""
        if self._child is None:
            return mirror_checks(self.snapshot)
        try:
            outcome = self._receiver.recv()
        except EOFError:
            outcome = None
        except BaseException:
            self.stop()
            raise
        self._child.join()
        if isinstance(outcome, Exception):  # raised there: raised here, said as the command says it
            raise outcome
        return outcome if isinstance(outcome, Report) else mirror_checks(self.snapshot)

    def stop(self) -> None:
        """End the child (it ignores Ctrl-C and SIGTERM: its parent says what stopped)."""
        if self._child is not None:
            self._child.kill()
            self._child.join()


def _run_mirror_checks(snapshot: Snapshot, sender: Any, parent: int) -> None:
    forked_helper_started(parent)
    try:
        outcome: Report | Exception = mirror_checks(snapshot)
    except Exception as exc:  # a damaged manifest, an unreadable file: the parent says it, once
        outcome = exc
    try:
        sender.send(outcome)
    except Exception:  # an exception that does not pickle: the parent runs the checks itself
        sender.send(None)
    finally:
        sender.close()


def _open_manifest(snapshot: Snapshot, report: Report) -> Manifest | None:
    if not snapshot.manifest_path.is_file():
        report.add(MISSING_MANIFEST, "manifest.sqlite3", "the file is missing")
        return None
    try:
        manifest = Manifest.open(snapshot.manifest_path, readonly=True)
        manifest.checks_types = False  # a row of the wrong types is reported (bad_row), not raised
        manifest.count_by("outcome")  # reads the schema: fails now if it is not a manifest
        damage = manifest.damage()
    except sqlite3.Error as exc:
        report.add(MISSING_MANIFEST, "manifest.sqlite3", f"cannot be read: {exc}")
        return None
    if damage:  # its rows cannot be trusted, nor read to their end: the WARC files are checked alone
        manifest.close()
        for problem in damage:
            report.add(MISSING_MANIFEST, "manifest.sqlite3", f"damaged: {problem}")
        return None
    return manifest


def _crawl_json(snapshot: Snapshot, report: Report) -> dict[str, Any] | None:
    """What crawl.json holds; None (reported) when it cannot be read."""
    try:
        return snapshot.read_crawl_json()
    except SnapshotError as exc:
        report.add(MISSING_SETTINGS, "crawl.json", str(exc) or "not a JSON object")
        return None


def _settings(data: dict[str, Any] | None, report: Report) -> dict[str, Any] | None:
    """The crawl's settings from crawl.json's ``data``; None (reported) when there are none."""
    if data is None:
        return None
    settings = data.get("settings")
    if not isinstance(settings, dict) or not settings.get("seeds"):
        report.add(MISSING_SETTINGS, "crawl.json", "no settings with seeds")
        return None
    return settings


def _scope(data: dict[str, Any] | None, manifest: Manifest, report: Report) -> Scope:
    settings = _settings(data, report)
    try:
        return crawl_scope(settings, manifest)
    except (re.error, TypeError, ValueError) as exc:
        report.add(MISSING_SETTINGS, "crawl.json", f"settings do not make a scope: {exc}")
        return crawl_scope(None, manifest)
