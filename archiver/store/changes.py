"""What changed between two snapshots of a site: new, changed, unchanged and gone URLs.

A URL is *archived* in a snapshot when its manifest row names a record in
its WARC files (a response or a revisit: a page, a file, a redirect, an
error page the server answered). Between OLD and NEW, a URL is:

    new        archived in NEW, not in OLD (OLD never met it, or met it and archived nothing)
    gone       archived in OLD, not in NEW: NEW never met it, or met it and archived nothing
               (skipped, failed without an answer, still queued)
    unchanged  archived in both, with the same status, payload digest and redirect target
    changed    archived in both, and one of those differs

A 304 in NEW stands for OLD's response (its row has OLD's status and
digest), so it is unchanged. Both manifests are asked with SQL (OLD
attached to NEW's connection), so no list of URLs is held in memory.

>>> import tempfile
>>> from archiver.store.manifest import Manifest, ManifestRow
>>> def archived(url, digest):
...     return ManifestRow(url, "link", 1, "fetched", status=200, payload_digest=digest, warc_file="w")
>>> with tempfile.TemporaryDirectory() as name:
...     old, new = Path(name) / "old", Path(name) / "new"
...     with Manifest.open(old) as manifest:
...         manifest.upsert(archived("http://h/a", "sha1:A"))
...         manifest.upsert(archived("http://h/b", "sha1:B"))
...     with Manifest.open(new) as manifest:
...         manifest.upsert(archived("http://h/a", "sha1:A"))
...         manifest.upsert(archived("http://h/c", "sha1:C"))
...     with Changes(old, new) as changes:
...         changes.counts(), list(changes.urls("gone"))
({'new': 1, 'changed': 0, 'unchanged': 1, 'gone': 1}, ['http://h/b'])
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from archiver.errors import SnapshotError
from archiver.store.manifest import readonly_uri

KINDS = ("new", "changed", "unchanged", "gone")
"""The kinds of change, in the order they are shown."""

_SAME = "n.status IS o.status AND n.payload_digest IS o.payload_digest AND n.redirect_to IS o.redirect_to"
_BOTH = (
    "FROM main.urls AS n JOIN old.urls AS o ON o.url = n.url "
    "WHERE n.warc_file IS NOT NULL AND o.warc_file IS NOT NULL"
)
_QUERIES = {
    "new": "SELECT n.url FROM main.urls AS n WHERE n.warc_file IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM old.urls AS o WHERE o.url = n.url AND o.warc_file IS NOT NULL)",
    "changed": f"SELECT n.url {_BOTH} AND NOT ({_SAME})",
    "unchanged": f"SELECT n.url {_BOTH} AND {_SAME}",
    "gone": "SELECT o.url FROM old.urls AS o WHERE o.warc_file IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM main.urls AS n WHERE n.url = o.url AND n.warc_file IS NOT NULL)",
}


class Changes:
    """The changes from the manifest ``old`` to the manifest ``new``; use as a context manager.

    Raises SnapshotError when either cannot be read as a manifest.
    """

    def __init__(self, old: Path, new: Path) -> None:
        for path in (old, new):
            if not path.is_file():
                raise SnapshotError(f"{path} does not exist")
        try:
            self._db = sqlite3.connect(readonly_uri(new), uri=True)
            self._db.execute("ATTACH DATABASE ? AS old", (readonly_uri(old),))
            self._db.execute("SELECT 1 FROM main.urls, old.urls LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise SnapshotError(f"cannot compare {old} and {new}: {exc}") from None

    def __enter__(self) -> Changes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close both manifests; safe to call twice."""
        self._db.close()

    def counts(self) -> dict[str, int]:
        """How many URLs of each kind, in KINDS order."""
        return {
            kind: int(self._db.execute(f"SELECT COUNT(*) FROM ({query})").fetchone()[0])
            for kind, query in _QUERIES.items()
        }

    def urls(self, kind: str, limit: int | None = None) -> Iterator[str]:
        """The URLs of one kind (a key of KINDS), in URL order; the first ``limit`` of them."""
        bound = f" LIMIT {int(limit)}" if limit is not None else ""
        for (url,) in self._db.execute(f"{_QUERIES[kind]} ORDER BY 1{bound}"):
            yield url

    def text(self, old: str, new: str) -> Iterator[str]:
        """The report for people, line by line: the counts, then each new, changed and gone URL
        (the unchanged are counted, not listed)."""
        counts = self.counts()
        yield f"{old} -> {new}: " + ", ".join(f"{counts[kind]} {kind}" for kind in KINDS)
        for kind in ("new", "changed", "gone"):
            for url in self.urls(kind):
                yield f"{kind}  {url}"

    def json_text(self, old: str, new: str) -> Iterator[str]:
        """The report as one JSON object, in pieces (the lists of URLs are never held whole):
        the two snapshots ({"old": ..., "new": ...}: a key "new" of its own would name the
        list of new URLs too), counts, then the URLs of each kind."""
        snapshots = json.dumps({"old": old, "new": new})
        yield "{" + f'"snapshots": {snapshots}, "counts": {json.dumps(self.counts())}'

        for kind in KINDS:
            yield f', "{kind}": ['
            for number, url in enumerate(self.urls(kind)):
                yield (", " if number else "") + json.dumps(url)
            yield "]"
        yield "}\n"

    def summary(self, listed: int | None = None) -> dict[str, Any]:
        """The counts and the URLs of each kind (the first ``listed`` of each), JSON-ready."""
        return {
            "counts": self.counts(),
            **{kind: list(self.urls(kind, listed)) for kind in KINDS},
        }
