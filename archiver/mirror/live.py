"""The mirror written during the crawl: each capture's file as the writer stores it, and at the end
only the pages whose links changed state written again.

The writer places each capture (mirror/plan.py) as it stores it and writes
its file: a page or stylesheet from the draft a worker made while parsing it
(mirror/document.py draft(), links resolved by what the crawl knew then:
mirror/local_paths.py), anything else from the body in hand. A page's links
to URLs not fetched yet were guesses; the page is noted with them, and
finish() writes again, from its WARC record, only the pages one of whose
guesses turned out wrong (a link that failed, redirected, or was placed
elsewhere), then renders index.html. A page whose record can no longer be read
then (damaged since it was stored) keeps the file the crawl wrote for it, as a
rebuild does (mirror/kept.py). The result is byte for byte what
``archiver mirror`` rebuilds from the WARC files.

Drafting costs more than the rebuild from the WARC files would: a page's links
are looked up as the crawl stands, many of them guesses asked again page
after page. That is free while the crawl waits on the network, and costs the
crawl its speed when it waits on the CPU (a fast server). There the crawl
calls defer(): nothing more is written during the crawl, and finish()
rebuilds the whole mirror, in several processes, as ``archiver mirror`` does.
"""

from __future__ import annotations

import json
import sqlite3
import time

from archiver.content import PARSED_TYPES
from archiver.errors import WriteError, cannot_write
from archiver.mirror.build import FATAL_ERRNOS, PENDING, rebuild, redirects_resolved
from archiver.mirror.document import Draft, chunks_of, decoded, link_unchanged, note_of
from archiver.mirror.index_page import write_index
from archiver.mirror.kept import keep_in_place, kept_line
from archiver.mirror.local_paths import LocalPaths
from archiver.mirror.output import MirrorOutput
from archiver.mirror.plan import PathPlan, coding_of, payload_key
from archiver.mirror.record_files import RecordFiles
from archiver.mirror.stats import MirrorStats
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.rows import FETCHED, ManifestRow
from archiver.store.schema import has_table
from archiver.store.snapshot import Snapshot
from archiver.warc.capture import Capture
from archiver.warc.reader import WarcReader


class LiveMirror:
    """The writer's side of the mirror: place(), then finish() once the crawl is done."""

    def __init__(
        self,
        snapshot: Snapshot,
        manifest: Manifest,
        *,
        share_pages: bool = True,
        previous: Previous | None = None,
    ) -> None:
        """``share_pages``: False when the crawl renders pages in a browser (see plan.payload_key).
        ``previous``: a re-archive's previous snapshot, whose unchanged files are linked, not written."""
        self.snapshot = snapshot
        self.previous = previous
        self.share_pages = share_pages
        db = manifest.connection
        # Captures stored by a crawl that did not write its mirror as it went (an older
        # version, --no-mirror before a resume, or a crawl that deferred it): finish()
        # rebuilds the whole mirror.
        # The path plan alone is no sign of a live mirror: a rebuild killed as it planned
        # leaves one too, with no pending table (it drops that, and defer() drops both).
        live = PathPlan.exists(db) and has_table(db, PENDING)
        self.deferred = not live and (
            db.execute(
                "SELECT 1 FROM urls WHERE outcome = ? AND warc_file IS NOT NULL LIMIT 1", (FETCHED,)
            ).fetchone()
            is not None
        )
        """Nothing is written during the crawl: finish() rebuilds the whole mirror (see defer())."""
        self._db = db
        if not self.deferred:
            self.plan = PathPlan(db)
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {PENDING} (url TEXT PRIMARY KEY, guesses TEXT) WITHOUT ROWID"
            )
            db.commit()
        self.output = MirrorOutput(snapshot.mirror_dir, manifest.record_mirror_file)
        self.stats = MirrorStats()
        self.failed: list[str] = []
        """Paths whose file could not be written (their rows get no local_path at the end)."""

    def defer(self) -> None:
        """Write nothing more during the crawl: finish() rebuilds the whole mirror from the WARC
        files. Call it between two of the writer's transactions: its tables go at once, so a
        crawl resumed after a crash rebuilds the mirror too."""
        if self.deferred:
            return
        self.deferred = True
        try:
            self.plan.drop()
            self._db.execute(f"DROP TABLE IF EXISTS {PENDING}")
            self._db.commit()
        except sqlite3.Error as exc:  # a full disk: the crawl stops, resumable
            raise WriteError(f"cannot write the manifest {self.snapshot.manifest_path}: {exc}") from None

    def place(self, row: ManifestRow, capture: Capture, draft: Draft | None) -> str | None:
        """Place the capture of ``row`` (fetched, with a response or revisit record) and write its
        file; returns its local path (None once deferred). Raises WriteError when the disk is full."""
        if self.deferred:
            return None
        encoding = capture.header("content-encoding")
        placed = self.plan.place(
            row.url,
            row.content_type,
            payload_key(
                row.url,
                row.content_type,
                row.payload_digest,
                row.length,
                row.truncated,
                self.share_pages,
                status=row.status,
            ),
            coding_of(encoding),
        )
        if placed.shared:
            self.stats.shared += 1
            return placed.path
        mime = row.content_type
        try:
            if mime in PARSED_TYPES:
                if draft is None or draft.path != placed.path:
                    self._pending(row.url, None)  # written at the end
                else:
                    size = (
                        link_unchanged(self.previous, self.output, row, placed.path, draft.body)
                        if draft.note is None
                        else None
                    )
                    if size is None:
                        size = self.output.write(placed.path, (draft.body,), lambda: draft.note)
                    self.stats.count(mime, size)
                    # Its links to itself are right: it was placed where it was drafted for.
                    guesses = {url: path for url, path in draft.guesses.items() if url != row.url}
                    if guesses:
                        self._pending(row.url, json.dumps(guesses, separators=(",", ":")))
            elif (
                linked := link_unchanged(self.previous, self.output, row, placed.path, None, encoding)
            ) is not None:
                self.stats.count(mime, linked)
            else:
                capture.body.seek(0)
                decoding = decoded(chunks_of(capture.body), encoding)
                self.stats.count(mime, self.output.write(placed.path, decoding, lambda: note_of(decoding)))
        except OSError as exc:
            if exc.errno in FATAL_ERRNOS:
                raise cannot_write(self.snapshot.mirror_dir / placed.path, exc) from None
            self.stats.errors.append(f"{row.url}: {exc}")
            self.failed.append(placed.path)
        return placed.path

    def rendered(self, url: str) -> None:
        """Note that the page of ``url`` was rendered in a browser: its file is written from its DOM
        at the end."""
        if not self.deferred:
            self._pending(url, None)

    def _pending(self, url: str, guesses: str | None) -> None:
        self._db.execute(f"INSERT OR REPLACE INTO {PENDING} VALUES (?, ?)", (url, guesses))

    def finish(self, index: bool = True) -> MirrorStats:
        """Write again the pages whose guesses were wrong, then index.html (a crawl that is done)."""
        started = time.monotonic()
        with Manifest.open(self.snapshot.manifest_path) as manifest:
            if self.deferred:
                manifest.connection.execute(f"DROP TABLE IF EXISTS {PENDING}")
                return rebuild(self.snapshot, manifest, index=index)
            stats = self.stats
            final = LocalPaths(manifest.connection)
            written = MirrorStats()
            output = MirrorOutput(self.snapshot.mirror_dir, manifest.record_mirror_file)
            with WarcReader(self.snapshot.warc_dir) as records:
                files = RecordFiles(records, manifest, final, written, self.previous)
                pages = manifest.connection.execute(
                    f"SELECT p.url, p.guesses FROM {PENDING} AS p JOIN urls ON urls.url = p.url "
                    "ORDER BY urls.local_path"
                )
                for url, guesses in pages:
                    if guesses is not None and all(
                        final.settled(link) == used for link, used in json.loads(guesses).items()
                    ):
                        continue
                    row = manifest.get(url)
                    if row is None or row.local_path is None:
                        continue
                    before = (written.pages, written.stylesheets, written.bytes)
                    why = None
                    try:
                        files.write(output, row, row.local_path)
                    except OSError as exc:
                        if exc.errno in FATAL_ERRNOS:
                            raise cannot_write(self.snapshot.mirror_dir / row.local_path, exc) from None
                        why = str(exc)
                    except Exception as exc:  # noqa: BLE001 - one damaged record must not stop the end
                        why = f"{type(exc).__name__}: {str(exc)[:200]}"
                    if why is not None and not self._keep(manifest, row.url, row.local_path, why):
                        stats.errors.append(f"{row.url}: {why}")
                        self.failed.append(row.local_path)
                    if guesses is None:  # the page's first file
                        stats.pages += written.pages - before[0]
                        stats.stylesheets += written.stylesheets - before[1]
                        stats.bytes += written.bytes - before[2]
                    elif why is None:
                        stats.rewritten += 1
            db = manifest.connection
            db.executemany(
                "UPDATE urls SET local_path = NULL WHERE local_path = ?", ((path,) for path in self.failed)
            )
            db.execute(f"DROP TABLE IF EXISTS {PENDING}")
            PathPlan(db).drop()
            db.commit()
            stats.redirects = redirects_resolved(manifest)
            if index:
                write_index(self.snapshot, manifest)
        stats.seconds = time.monotonic() - started
        return stats

    def _keep(self, manifest: Manifest, url: str, path: str, why: str) -> bool:
        """Leave the file the crawl wrote at ``path`` for the page of ``url``, whose record could
        not be read again (``why``), as it is (kept.keep_in_place), said in one line of
        ``stats.kept``; False if there is none to keep (nothing written for it yet, or changed)."""
        size = keep_in_place(
            manifest.connection, self.snapshot.mirror_dir, manifest.record_mirror_file, path, why
        )
        if size is None:
            return False
        self.stats.kept.append(kept_line(url, path, why))
        return True
