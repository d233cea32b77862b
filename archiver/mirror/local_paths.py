"""Where each URL's links lead in the mirror: its file, the file its redirect chain ends at, or none.

LocalPaths answers the rewriter's question (rewrite.Resolver) from the
manifest: a captured URL's ``local_path`` (given when its capture was stored,
mirror/plan.py), through redirect chains, with ``#`` and the fragment the
chain's last Location to name one gave (the link's own fragment gives way to
it, as in a browser). A finished crawl's answers are final.

While the crawl runs, a page is written before every URL it links to is
fetched, and before the crawl has even recorded the links it finds on it.
LocalPaths then ``guesses``: a URL queued, or not recorded yet but within the
crawl's scope, most likely gets its natural path (paths.guessed_type for its
type); a skipped one stays absolute; each guess is noted, so the crawl can rewrite at its end the pages one of
whose guesses turned out wrong (a link that failed, redirected, or was placed
elsewhere), and only those.

A script, a stylesheet (an @import too), a font and an object's data answered
with an error (content.error_status()) are no use to Chromium, which runs,
applies or shows none of them, where it shows an image so answered (measured):
``refused(url)`` tells the mirror which links of those kinds are so answered,
through their redirects. Of a URL not fetched yet it guesses not, noted under
REFUSED_KEY and the URL; ``settled()`` answers a guess of either kind finally.

>>> from archiver.store.manifest import Manifest, ManifestRow
>>> from archiver.scope import Scope
>>> with Manifest.open(":memory:") as manifest:
...     manifest.upsert(ManifestRow("http://h/", "seed", 0, "fetched", local_path="h/index.html"))
...     manifest.upsert(ManifestRow("http://h/old", "link", 1, "redirected", redirect_to="http://h/"))
...     manifest.upsert(ManifestRow("http://h/next", "link", 1, "queued"))
...     paths = LocalPaths(manifest.connection, guessing=Scope.from_seeds(["http://h/"]))
...     [paths(url) for url in ("http://h/old", "http://h/next", "http://x/")], paths.guesses
(['h/index.html', 'h/next.html', None], {'http://h/next': 'h/next.html', 'http://x/': None})
"""

from __future__ import annotations

import collections
import contextlib
import sqlite3
from collections.abc import Iterable, Iterator

from archiver.content import error_status
from archiver.paths import guessed_type, url_to_path
from archiver.redirects import follow_chain
from archiver.scope import Scope
from archiver.store.rows import FETCHED, QUEUED, REDIRECTED, SKIPPED
from archiver.urls import earlier_form

FINAL_CACHE = 16384
"""Final answers kept in RAM (a bounded cache; the manifest has them all)."""
_ROW = "SELECT outcome, local_path, redirect_to, redirect_fragment, status FROM urls WHERE url = ?"
_Row = tuple[str, "str | None", "str | None", "str | None", "int | None"]
REFUSED_KEY = "refused "
"""What a guess of refused() is noted under, before the URL (a URL holds no space)."""
REFUSED = "refused"
"""The answer settled() gives a REFUSED_KEY guess whose URL turned out refused (None if not)."""
_HOP_OUTCOMES = (REDIRECTED, "failed")
"""Rows whose redirect_to is a hop of a chain (manifest.IS_REDIRECT): a failed redirect (a loop,
a chain too long) still says where it pointed."""


class LocalPaths:
    """The mirror file of a URL (``paths(url)``), read from the manifest; see the module docstring."""

    def __init__(self, db: sqlite3.Connection, *, guessing: Scope | None = None) -> None:
        """``guessing``: the crawl's scope, while it runs (None: a finished crawl's answers)."""
        self._db = db
        self.guessing = guessing
        self.guesses: dict[str, str | None] = {}
        """URL -> what was answered for it, for each answer that may still change (guessing)."""
        self.guessed = 0
        """Answers given so far that were guesses (the rewriter's memo keeps them apart)."""
        self._final: collections.OrderedDict[str, str | None] = collections.OrderedDict()
        self._own: tuple[str, str] | None = None

    def drafting(self, url: str, path: str) -> None:
        """Say which page is being written, and where: its links to itself lead to ``path``
        (a guess, as any answer the writer has not settled yet).

        Also forgets the guesses of the page before.
        """
        self._own = (url, path)
        self.guesses = {}

    @contextlib.contextmanager
    def one_read(self) -> Iterator[None]:
        """Answer everything asked meanwhile (a page's links) in one read transaction of the
        manifest, not one each: each takes the manifest's read lock and, the writer having
        committed since, reads its pages again."""
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    def noted(self, guesses: Iterable[tuple[str, str | None]]) -> None:
        """Note guesses given before for another page, which the rewriter's memo used again."""
        for url, path in guesses:
            self.guessed += 1
            self.guesses[url] = path

    def __call__(self, url: str) -> str | None:
        if self._own is not None and url == self._own[0]:
            # A guess too: the writer may place the page elsewhere (a file of the same payload),
            # and a memo that took this answer for final would give it to other pages.
            self.guessed += 1
            self.guesses[url] = self._own[1]
            return self._own[1]
        found = self._final.get(url, self)
        if found is not self:
            self._final.move_to_end(url)
            return found  # type: ignore[return-value]
        path, final = self._answer(url)
        if final:
            self._final[url] = path
            if len(self._final) > FINAL_CACHE:
                self._final.popitem(last=False)
        else:
            self.guessed += 1
            self.guesses[url] = path
        return path

    def refused(self, url: str) -> bool:
        """Whether ``url`` is answered with an error where its redirects end (see the module
        docstring); a URL not fetched yet is guessed not to be, and noted."""
        end, row = self._end(url)
        if row is not None and row[0] == FETCHED:
            return error_status(row[4])
        if self.guessing is not None and end is not None and (row is None or row[0] in (QUEUED, SKIPPED)):
            self.guessed += 1
            self.guesses[REFUSED_KEY + url] = None
        return False

    def settled(self, key: str) -> str | None:
        """The final answer to what was guessed under ``key`` (a URL, or a REFUSED_KEY and a URL),
        as it was noted: a path (or None), REFUSED (or None)."""
        if key.startswith(REFUSED_KEY):
            return REFUSED if self.refused(key[len(REFUSED_KEY) :]) else None
        return self(key)

    def _end(self, url: str, fragments: list[str] | None = None) -> tuple[str | None, _Row | None]:
        """Where ``url``'s redirects end (itself if it is no hop of a chain; None for a loop, or a
        chain too long), and that URL's row; the fragments their Locations name go to ``fragments``."""
        row = self._row(url)
        if row is None or row[2] is None or row[0] not in _HOP_OUTCOMES:
            return url, row
        named = fragments if fragments is not None else []
        end = follow_chain(url, lambda at: self._next_hop(at, named)).final
        return end, (None if end is None else self._row(end))

    def _answer(self, url: str) -> tuple[str | None, bool]:
        """(path or None, whether that answer is final)."""
        fragments: list[str] = []
        end, row = self._end(url, fragments)
        if end is None:  # a loop, or a chain too long
            return None, True
        path, final = self._answer_at(end, row)
        if path is not None and fragments:
            path += "#" + fragments[-1]  # a later Location's fragment replaces an earlier one's
        return path, final

    def _answer_at(self, url: str, row: _Row | None) -> tuple[str | None, bool]:
        """_answer() of a URL that is no hop of a chain, whose manifest row is ``row``."""
        if row is None:
            if self.guessing is None:
                return None, True
            if self.guessing.skip_reason(url, 0) is not None:  # its depth is not known here
                return None, False
            return url_to_path(url, guessed_type(url)), False
        outcome, local_path = row[0], row[1]
        if outcome == FETCHED:
            return local_path, True
        if self.guessing is None or outcome not in (QUEUED, SKIPPED):
            return None, True  # failed: it stays absolute
        if outcome == QUEUED:
            return url_to_path(url, guessed_type(url)), False
        return None, False  # skipped here, it may still be queued from another page

    def _row(self, url: str) -> _Row | None:
        """The manifest row of ``url`` (as an earlier version kept it, if need be: earlier_form())."""
        row: _Row | None
        row = self._db.execute(_ROW, (url,)).fetchone()
        if row is None and (earlier := earlier_form(url)) is not None:
            row = self._db.execute(_ROW, (earlier,)).fetchone()
        return row

    def _next_hop(self, url: str, fragments: list[str]) -> str | None:
        """Where ``url`` redirects, None if nowhere; the fragment its Location names goes to ``fragments``."""
        row = self._row(url)
        if row is None or row[2] is None or row[0] not in _HOP_OUTCOMES:
            return None
        if row[3] is not None:
            fragments.append(row[3])
        return str(row[2])
