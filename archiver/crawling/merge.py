"""Merge: the parts that crawl nodes wrote (``DIR/nodes/NODE``), joined into the snapshot's
own manifest, CDXJ index and crawl.json, so that mirror and verify read a shared crawl as if
one process had made it.

Each node writes its own part rather than sharing one manifest: SQLite is for one
writer at a time, a node on another machine may not even see the others' folders
until they are copied together, and a node that dies must leave nothing half
written in what the others use. Every name is unique to its node (WARC files
are ``PREFIX-NODE-...``), so the folders of several machines join by plain copying.

A URL may have a row in several parts: the node that claimed it wrote ``queued``, the
node that took it wrote its outcome, others met it as a link they skipped, and a
node that died may have fetched it before another fetched it again. The merged row
is the one that says most, by ``RANK``: a capture, then a failure, then a skip
decided when the URL was taken (limits, robots.txt, an exclude), then queued, then a
skip decided where the link was met (scope, depth, nofollow); of two captures, the
later (a robots.txt asked again by another node: the answer whose rules the crawl
used last, as a crawl of one process keeps it).

The crawl's cookies are one jar (what a later run of the crawl starts with): every node's,
a cookie that several nodes hold taken from the part saved last.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from archiver.errors import SnapshotError, SnapshotLocked
from archiver.report import shell_word
from archiver.scope import BYTE_LIMIT, EXCLUDED, PAGE_LIMIT, ROBOTS, ROBOTS_UNREACHABLE
from archiver.store.crawl_record import FINISHED, INTERRUPTED, CrawlRecord
from archiver.store.lock import snapshot_lock
from archiver.store.manifest import Manifest
from archiver.store.merged_parts import NODES, fingerprint
from archiver.store.row_columns import FIELDS
from archiver.store.rows import FAILED, QUEUED
from archiver.store.snapshot import CRASH_TAILS, Snapshot, mend_part, require_folder
from archiver.store.totals import summary
from archiver.warc.cdxj import merge_into_index

log = logging.getLogger("archiver")

TAKEN_REASONS = (PAGE_LIMIT, BYTE_LIMIT, ROBOTS, ROBOTS_UNREACHABLE, EXCLUDED)


def _rank(table: str) -> str:
    reasons = ", ".join(f"'{reason}'" for reason in TAKEN_REASONS)
    return (
        f"CASE {table}.outcome WHEN 'fetched' THEN 0 WHEN 'redirected' THEN 0 WHEN 'failed' THEN 1 "
        f"WHEN 'skipped' THEN (CASE WHEN {table}.reason IN ({reasons}) THEN 2 ELSE 4 END) "
        f"WHEN '{QUEUED}' THEN 3 ELSE 5 END"
    )


RANK = _rank("urls")
_COLUMNS = ", ".join(FIELDS)
_TAKEN = ", ".join(
    # The rendered page a page was first loaded as a frame of stays, whichever part noted it.
    f"{f} = COALESCE(excluded.{f}, urls.{f})" if f == "framed_by" else f"{f} = excluded.{f}"
    for f in FIELDS
    if f != "url"
)
_UPSERT = (
    f"INSERT INTO main.urls ({_COLUMNS}) SELECT {_COLUMNS} FROM part.urls WHERE true "
    f"ON CONFLICT(url) DO UPDATE SET {_TAKEN} "
    f"WHERE {_rank('excluded')} < {RANK} "
    f"OR ({_rank('excluded')} = 0 AND {RANK} = 0 AND excluded.fetched_at > urls.fetched_at)"
)


def not_merged(root: Path, merged: list[str]) -> list[str]:
    """The crawl nodes with a part in ``root`` that a merge which joined ``merged`` left out."""
    return [name for name in Snapshot(root).node_names() if name not in merged]


def left_out(names: list[str], root: Path) -> str:
    """The one line that tells the user a merge left the parts of crawl nodes ``names`` out of the
    snapshot ``root``: verify fails on it until they are joined.

    >>> print(left_out(["a", "b"], Path("snap")))  # doctest: +NORMALIZE_WHITESPACE
    the merge left out the parts of crawl nodes a, b (see why above): snap lacks them,
    and archiver verify says so; once they are mended: archiver merge snap
    """
    them = "them" if len(names) > 1 else "it"
    what = f"parts of crawl nodes {', '.join(names)}" if len(names) > 1 else f"part of crawl node {names[0]}"
    mended = "they are" if len(names) > 1 else "it is"
    return (
        f"the merge left out the {what} (see why above): {root} lacks {them}, and archiver verify "
        f"says so; once {mended} mended: archiver merge {shell_word(root)}"
    )


def merge_nodes(root: Path, repair: bool = False, done: bool = False) -> tuple[list[str], list[str]]:
    """Join every node part of the shared crawl in ``root`` into its manifest, index and
    crawl.json; returns the parts joined, and warnings (a part left out because its node still
    runs, or because it has WARC records but lost its manifest). With ``repair``, a part's
    manifest lost or damaged is first written again from its node's WARC files
    (crawling/repair.py), and joined. ``done``: Redis holds no URL of the crawl queued or in
    flight (the last node's merge), so the crawl is finished though a node was lost on the way.

    A part whose node was killed is recovered first, as a resumed crawl recovers
    (crawling/resume.py): what it wrote past its last commit is cut off its WARC files. A part
    whose manifest is damaged, or whose records are not where its rows say (bytes inserted or
    removed since), is left out, as --resume refuses it, its WARC files untouched.
    """
    from archiver.crawling import resume as resuming
    from archiver.crawling.repair import rebuild_lost_part

    require_folder(root)
    snapshot = Snapshot(root)
    names = snapshot.node_names()
    if not names:
        raise SnapshotError(
            f"{root} holds no crawl node parts (nodes/*/crawl.json): archiver merge joins the parts "
            "of a crawl that several processes shared (archiver crawl --frontier redis://...)"
        )
    warnings: list[str] = []
    with snapshot_lock(root, "archiver merge"), contextlib.ExitStack() as held:
        data = snapshot.read_crawl_json()
        prefix = str((data.get("settings") or {}).get("warc_prefix") or "archiver")
        merging = root / "manifest.sqlite3.merging"
        merging.unlink(missing_ok=True)
        manifest = Manifest.open(merging)
        parts: dict[str, Any] = {}
        rebuilt: list[str] = []
        try:
            for name in names:
                part = snapshot.node_part(name)
                try:
                    held.enter_context(snapshot_lock(part.root, "archiver merge"))
                except SnapshotLocked:
                    warnings.append(f"crawl node {name} is still running: its part is left out for now")
                    continue
                Manifest.roll_back_killed_write(part.manifest_path)  # before it is read, read-only
                if repair:  # a manifest lost or damaged is written again from the WARC files
                    written = rebuild_lost_part(part, name, prefix, data.get("settings") or {})
                    rebuilt += [name] if written else []
                    warnings += written
                if resuming.manifest_lost(part, f"{prefix}-{name}"):
                    # Recovery would cut every record its manifest no longer names.
                    warnings.append(
                        f"crawl node {name}'s part has WARC records but no manifest: it is left out "
                        f"(its WARC files are kept as they are); {mend_part(root)}"
                    )
                    continue
                damage = Manifest.damage_in(part.manifest_path)
                if damage:  # joined, it would stop the merge or bring damaged rows in
                    warnings.append(
                        f"crawl node {name}'s part is left out: {damage} (its WARC files are kept "
                        f"as they are); {mend_part(root)}"
                    )
                    continue
                moved = resuming.records_out_of_place(part)
                if moved:
                    # Its rows would name other bytes, and recovery would cut the records moved.
                    warnings.append(
                        f"crawl node {name}'s part is left out: {moved}; its rows would name other "
                        "bytes (its WARC files are kept as they are; archiver verify lists what else "
                        "is wrong)"
                    )
                    continue
                part_data = part.read_crawl_json()
                record = CrawlRecord(part, part_data)
                if part_data.get("status") not in (FINISHED, INTERRUPTED):  # killed while running
                    with Manifest.open(part.manifest_path) as part_manifest:
                        warnings += resuming.recover(part, f"{prefix}-{name}", part_manifest, record)
                    record.data.update(status=INTERRUPTED)
                    record.save()
                _join(manifest, part)
                parts[name] = {
                    "manifest": fingerprint(part),
                    "status": record.data.get("status"),
                    "runs": record.data.get("runs"),
                }
            manifest.resolve_redirects()
            if rebuilt and _ended(data, parts, done):
                warnings += _outcomes_lost(manifest, rebuilt)
            _join_cookies(manifest, [snapshot.node_part(name) for name in parts])
            totals = summary(manifest)
        finally:
            manifest.close()
        for stale in (root / "manifest.sqlite3-wal", root / "manifest.sqlite3-shm"):
            stale.unlink(missing_ok=True)
        os.replace(merging, snapshot.manifest_path)
        _merge_indexes(snapshot, list(parts))
        _note(snapshot, data, parts, totals, complete=len(parts) == len(names), done=done)
    for warning in warnings:
        log.warning(warning)
    return list(parts), warnings


def _ended(data: dict[str, Any], parts: dict[str, Any], done: bool) -> bool:
    """Whether the crawl (crawl.json's ``data``, the ``parts`` joined) fetches nothing more: Redis
    said no URL is outstanding (``done``), a merge found so before, or every node finished."""
    return (
        done or data.get("status") == FINISHED or all(part["status"] == FINISHED for part in parts.values())
    )


def _outcomes_lost(manifest: Manifest, rebuilt: list[str]) -> list[str]:
    """Record as failed, saying why, each URL of an ended crawl that ``manifest`` holds as queued
    once the manifests of the nodes ``rebuilt`` were written again from their WARC files: its
    outcome was in a lost manifest alone and left no record (it failed, or was kept out, by
    robots.txt or a limit), and no node will fetch it, so queued would call the crawl unfinished
    and send the user to a resume that cannot be; returns the warning saying so, if any."""
    nodes = ", ".join(rebuilt)
    reason = (
        f"its outcome was lost with the manifest of crawl node {nodes} and no record holds it (it "
        "failed or was skipped); a new crawl of the URL fetches it"
    )
    lost = manifest.connection.execute(
        "UPDATE urls SET outcome = ?, reason = ? WHERE outcome = ?", (FAILED, reason, QUEUED)
    ).rowcount
    manifest.commit()
    if not lost:
        return []
    return [
        f"{lost} URLs whose outcome only the lost manifest of crawl node {nodes} held are recorded failed"
    ]


def _join(manifest: Manifest, part: Snapshot) -> None:
    """Fold the rows of ``part`` into ``manifest``, keeping for each URL the row that says most."""
    if not part.manifest_path.is_file():
        return
    db = manifest.connection
    Manifest.open(part.manifest_path).close()  # gives an older part the columns added since
    db.execute("ATTACH DATABASE ? AS part", (str(part.manifest_path),))
    try:
        db.execute(_UPSERT)
        db.commit()
    finally:
        db.execute("DETACH DATABASE part")


def _join_cookies(manifest: Manifest, parts: list[Snapshot]) -> None:
    """Keep in ``manifest`` the cookie jar of all ``parts``: each node's requests sent the cookies
    its answers set, and the crawl holds them all (the part saved last wins a cookie held twice)."""
    from archiver.crawling.kept_state import COOKIES
    from archiver.crawling.saved_cookies import joined_cookies

    jars = []
    for part in sorted(parts, key=lambda part: fingerprint(part)[1]):
        if part.manifest_path.is_file():
            with Manifest.open(part.manifest_path, readonly=True) as kept:
                saved = kept.state(COOKIES)
            if saved is not None:
                jars.append(saved)
    if jars:
        manifest.keep_state(COOKIES, joined_cookies(jars))
        manifest.commit()


def _merge_indexes(snapshot: Snapshot, names: list[str]) -> None:
    """The snapshot's CDXJ index: every line of the parts', sorted (rebuilt whole each merge)."""
    snapshot.index_dir.mkdir(exist_ok=True)
    pending = snapshot.index_dir / "index.cdxj.merging"
    with open(pending, "w", encoding="utf-8") as out:
        for name in names:
            part = snapshot.node_part(name)
            for path in (part.cdxj_path, part.cdxj_pending_path):  # pending: a node killed
                if path.is_file():
                    with open(path, encoding="utf-8") as lines:
                        for line in lines:
                            if line.strip():
                                out.write(line if line.endswith("\n") else line + "\n")
    snapshot.cdxj_path.unlink(missing_ok=True)
    merge_into_index(pending, snapshot.cdxj_path)


def _note(
    snapshot: Snapshot,
    data: dict[str, Any],
    parts: dict[str, Any],
    totals: dict[str, Any],
    complete: bool,
    done: bool,
) -> None:
    """crawl.json of the whole crawl: the parts merged, their commands and crash tails, the totals.

    The crawl is finished when every part is joined, no URL is left queued, and either Redis said
    no URL is outstanding (``done``; a merge that found so before: no node joins a finished
    crawl) or every node finished its part. A node killed leaves its part interrupted, while the
    others fetched what it held: its part says so, not the crawl."""
    controls: list[Any] = []
    tails: list[Any] = []
    for name in parts:
        part_data = snapshot.node_part(name).read_crawl_json()
        controls += [{**entry, "node": name} for entry in part_data.get("controls") or []]
        for tail in part_data.get(CRASH_TAILS) or []:
            kept = tail.get("kept_in")
            tails.append({**tail, "node": name, "kept_in": f"nodes/{name}/{kept}" if kept else None})
    finished = complete and not totals["queued"] and _ended(data, parts, done)
    data.update(
        {
            NODES: parts,
            "controls": sorted(controls, key=lambda entry: str(entry.get("applied"))),
            "status": FINISHED if finished else INTERRUPTED,
            "stats": {k: v for k, v in totals.items() if k != "errors"},
        }
    )
    if tails:
        data[CRASH_TAILS] = tails
    snapshot.write_crawl_json(json.loads(json.dumps(data)))
