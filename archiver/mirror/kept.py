"""A mirror file kept from the mirror before a rebuild, when its capture's record can no longer be read.

The WARC files are the record of truth, but a record damaged since the crawl (bytes
flipped, moved or cut) can no longer give its file back, and the rebuild replaces mirror/
whole. The file the crawl wrote for it is then the best copy left: kept, when it still
holds what the manifest's ``mirror_files`` says was written, with a note saying why.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from archiver.errors import UnsafePathError
from archiver.mirror.output import MirrorOutput
from archiver.store.safe_join import safe_join

KEPT = "kept as the crawl wrote it"
CANNOT_BE_READ = "its WARC record cannot be read"


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
    note = f"{KEPT}: {CANNOT_BE_READ} ({why})"
    if noted and not noted.startswith(KEPT):
        note = f"{noted}; {note}"  # what the file lacked, it still lacks
    return files.link(path, source, sha256, size, note)
