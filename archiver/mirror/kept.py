"""A mirror file kept as the crawl wrote it, when its capture's record can no longer be read.

The WARC files are the record of truth, but a record damaged since the crawl (bytes
flipped, moved or cut) can no longer give its file back. The file the crawl wrote for it is
then the best copy left: kept, when it still holds what the manifest's ``mirror_files`` says
was written, with a note saying why. A rebuild replaces mirror/ whole, and keeps it from the
mirror before (keep_before); a crawl's last pass writes pages again in place, and keeps it
where it is (keep_in_place).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from archiver.errors import UnsafePathError
from archiver.mirror.output import MirrorOutput, file_digest
from archiver.store.rows import MirrorFile
from archiver.warc.safe_join import safe_join

KEPT = "kept as the crawl wrote it"
CANNOT_BE_READ = "its WARC record cannot be read"


def kept_line(url: str, path: str, why: str) -> str:
    """The line that names a file kept for ``url`` (MirrorStats.kept)."""
    return f"{url}: kept mirror/{path} as the crawl wrote it; {CANNOT_BE_READ} ({why})"


def _note(noted: str | None, why: str) -> str:
    """The note of a file kept (``why``: what the record met), after what the file lacked already."""
    note = f"{KEPT}: {CANNOT_BE_READ} ({why})"
    if noted and not noted.startswith(KEPT):
        note = f"{noted}; {note}"  # what the file lacked, it still lacks
    return note


def keep_before(
    db: sqlite3.Connection, plan: str, mirror_dir: Path, files: MirrorOutput, url: str, path: str, why: str
) -> int | None:
    """Make ``path`` of the build the file ``mirror_dir`` held for ``url`` before (its row's
    ``before`` in the rebuild's table ``plan``), if it still holds what was written; returns its
    size, or None if there is none to keep. Its note says why (``why``: what the record met),
    after what the file lacked already."""
    found = db.execute(
        f"SELECT f.path, f.sha256, f.size, f.note FROM {plan} AS p JOIN mirror_files AS f "
        "ON f.path = p.before WHERE p.url = ?",
        (url,),
    ).fetchone()
    if found is None:
        return None
    before, sha256, size, noted = found
    try:
        source = safe_join(mirror_dir, before)
    except UnsafePathError:
        return None
    return files.link(path, source, sha256, size, _note(noted, why))


def keep_in_place(
    db: sqlite3.Connection, mirror_dir: Path, record: Callable[[MirrorFile], None], path: str, why: str
) -> int | None:
    """Leave the file at ``path`` of ``mirror_dir`` as it is, if it still holds what
    ``mirror_files`` says was written there, and ``record`` it with its note saying why; returns
    its size, or None if there is none to keep."""
    found = db.execute("SELECT sha256, size, note FROM mirror_files WHERE path = ?", (path,)).fetchone()
    if found is None:
        return None
    sha256, size, noted = found
    try:
        source = safe_join(mirror_dir, path)
        if not source.is_file() or source.is_symlink() or file_digest(source) != (sha256, size):
            return None
    except (OSError, UnsafePathError):
        return None
    record(MirrorFile(path, sha256, size, _note(noted, why)))
    return int(size)
