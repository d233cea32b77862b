"""From a link's value in a mirrored document to what replaces it: the relative path of its
mirror file, or an absolute URL; with the memo of what a build has worked out already."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TypeVar

from archiver.links import base_contexts, resolve_reference
from archiver.mirror.local_paths import REFUSED_KEY
from archiver.paths import relative_url
from archiver.urls import ASCII_WHITESPACE, absolute_url, query_encoded, try_normalize

Resolver = Callable[[str], "str | None"]
"""Normalised absolute URL -> path of its archived file relative to mirror/, or None; the path
may end with ``#`` and a fragment (a redirect's Location named one), which then replaces the
link's own (file names never hold a ``#``: paths.escape_name writes it %23). A resolver
with a ``guessed`` count (mirror.local_paths.LocalPaths while the crawl runs) says which of its
answers may still change: those are remembered apart, with the guesses, which a memo hit hands
back to the resolver's ``noted()``, and for GUESSES_KEPT_FOR documents at most."""

MEMO_SIZE = 5_000
"""Entries a memo table keeps (the most recently used): bounded memory, still most hits."""
GUESSES_KEPT_FOR = 100
"""Documents after which a memo forgets what it remembered of guesses: a guess made stale by the
crawl meanwhile is still right (each page is checked at the end), but may cost a page's rewrite."""
Edits = tuple[tuple[int, int, str], ...]
Guesses = tuple[tuple[str, "str | None"], ...]
_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class Memo:
    """What a mirror build has worked out already, for the documents it rewrites with one resolver.

    Pages of one folder repeat their navigation, their neighbours and their
    assets, often as the very same tags. A reference with a path resolves the
    same against any base URL of one folder, and a relative path depends only
    on the document's folder, so both are remembered per (base URL's folder,
    document's folder): a reference's replacement, and a whole start tag's
    edits. References without a path (``?q``, ``#f``, empty) depend on the whole
    base URL: they, and the tags holding one, are never remembered. What the
    resolver only guessed (a link to a URL the crawl has not fetched yet) is
    remembered in tables of its own with the guesses it took, handed back to
    the resolver at each use, and forgotten every GUESSES_KEPT_FOR documents.
    """

    def __init__(self) -> None:
        self.references: _Recent[tuple[str, str, str], tuple[str | None, bool]] = _Recent()
        self.tags: _Recent[tuple[str, str, str, str, str], Edits] = _Recent()
        self.guessed_references: _Recent[tuple[str, str, str], tuple[tuple[str | None, bool], Guesses]]
        self.guessed_tags: _Recent[tuple[str, str, str, str, str], tuple[Edits, Guesses]]
        self.documents = 0
        self._forget_guesses()

    def begin_document(self) -> None:
        """Count a document; every GUESSES_KEPT_FOR, forget what was remembered of guesses."""
        self.documents += 1
        if self.documents % GUESSES_KEPT_FOR == 0:
            self._forget_guesses()

    def _forget_guesses(self) -> None:
        self.guessed_references = _Recent()
        self.guessed_tags = _Recent()


class _Recent(collections.OrderedDict[_Key, _Value]):
    """A table that keeps the MEMO_SIZE entries used last."""

    def find(self, key: _Key) -> _Value | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def keep(self, key: _Key, value: _Value) -> None:
        self[key] = value
        if len(self) > MEMO_SIZE:
            self.popitem(last=False)


class Linker:
    """Rewrites one URL reference found in a document whose file is ``here`` (see Memo)."""

    def __init__(
        self, here: str, resolve: Resolver, memo: Memo | None = None, page_url: str | None = None
    ) -> None:
        """``page_url``: the document's own URL, where a <base> may name another (see _work_out)."""
        self.here = here
        self.page_url = page_url
        self.page = try_normalize(page_url) if page_url is not None else None
        self.here_folder = here.rpartition("/")[0]
        self.resolve = resolve
        self.memo = memo
        self.made_local = 0
        """How many references were made local so far."""
        self.whole_base_uses = 0
        """How many references so far depended on the whole base URL (no path of their own)."""
        self.guesses = 0
        """How many references so far the resolver only guessed (see Resolver)."""
        self.guessed: list[tuple[str, str | None]] = []
        """Those guesses: (URL, the answer)."""
        self._base = ("", ("", ""))
        self._document: tuple[str, str | None] = ("", None)
        if memo is not None:
            memo.begin_document()

    def replay(self, guesses: Guesses) -> None:
        """Hand back to the resolver the guesses a remembered answer took (a memo hit)."""
        self.guesses += len(guesses)
        self.guessed.extend(guesses)
        noted = getattr(self.resolve, "noted", None)
        if noted is not None:
            noted(guesses)

    def base_contexts(self, base: str) -> tuple[str, str]:
        """links.base_contexts(base): (origin, folder), worked out once per document (its
        base rarely changes)."""
        if self._base[0] != base:
            self._base = (base, base_contexts(base))
        return self._base[1]

    def _base_document(self, base: str) -> str | None:
        """try_normalize(base), worked out once per document (a page of anchors asks it often)."""
        if self._document[0] != base:
            self._document = (base, try_normalize(base))
        return self._document[1]

    def base_folder(self, base: str) -> str:
        """url_folder(base)."""
        return self.base_contexts(base)[1]

    def __call__(self, value: str, base: str, encoding: str | None = None) -> str | None:
        """The replacement for ``value`` (a local path or an absolute URL), None to keep it.
        ``encoding``: the document's, which its query is written in (None for UTF-8, and CSS)."""
        # Its query written as the crawl requested it, before the memo looks it up: one text in
        # pages of two encodings is two URLs.
        if value[:1] == "#" and base == self.page_url:
            # A fragment of the page itself, as half the links of a documentation page: kept.
            self.whole_base_uses += 1
            return None
        value = query_encoded(value, encoding)
        if value.lstrip()[:1] in ("?", "#", ""):
            self.whole_base_uses += 1
            new, local = self._work_out(value, base)
        elif self.memo is None:
            new, local = self._work_out(value, base)
        else:
            new, local = self._remembered(value, base, self.memo)
        self.made_local += local
        return new

    def refused(self, value: str, base: str, encoding: str | None = None) -> bool:
        """Whether the URL of ``value`` is answered with an error, which Chromium does not use as
        a script, a stylesheet, a font or an object's data (the resolver's ``refused``, if it has
        one: mirror.local_paths). Asked of a link made local; a guess is noted as the others."""
        check: Callable[[str], bool] | None = getattr(self.resolve, "refused", None)
        if check is None:
            return False
        reference = query_encoded(value, encoding).strip(ASCII_WHITESPACE)
        url = resolve_reference(reference, base, self.base_contexts(base), remember=False)
        if url is None:
            return False
        guessed = getattr(self.resolve, "guessed", 0)
        answer = check(url)
        if getattr(self.resolve, "guessed", 0) != guessed:
            self.guesses += 1
            self.guessed.append((REFUSED_KEY + url, None))
        return answer

    def _remembered(self, value: str, base: str, memo: Memo) -> tuple[str | None, bool]:
        """_work_out(), from the memo when the reference was met in this folder context before.

        A local path is remembered for the reference without its fragment, which it
        only carries along: documentation pages link to many anchors of one page.
        """
        head, hash_sign, fragment = value.strip(ASCII_WHITESPACE).partition("#")
        key = (self.base_folder(base), self.here_folder, head)
        found = memo.references.find(key)
        # A path with a fragment of its own (a redirect's) was remembered for the whole value,
        # whose key is the head's when it has no fragment: it is no answer for other fragments.
        if found is not None and found[1] and "#" not in (found[0] or ""):
            return f"{found[0]}{hash_sign}{fragment}", True
        whole_key = (key[0], key[1], value)
        found = memo.references.find(whole_key)
        if found is None:
            guessed = memo.guessed_references.find(whole_key) if memo.guessed_references else None
            if guessed is not None:
                self.replay(guessed[1])
                return guessed[0]
            mark = len(self.guessed)
            found = self._work_out(value, base)
            if len(self.guessed) == mark:
                path = found[0] or ""
                stem = path[: len(path) - len(fragment) - len(hash_sign)]
                if found[1] and "#" not in stem:  # a fragment of the target's own is no link's
                    memo.references.keep(key, (stem, True))
                else:
                    memo.references.keep(whole_key, found)
            else:
                memo.guessed_references.keep(whole_key, (found, tuple(self.guessed[mark:])))
        return found

    def _work_out(self, value: str, base: str) -> tuple[str | None, bool]:
        reference = value.strip(ASCII_WHITESPACE)
        based = self._base_document(base) if reference[:1] == "#" and self.page is not None else None
        if based is not None and based != self.page:
            # A <base> naming another document takes a link of a fragment alone there, as
            # in the browser; the mirror's page keeps no <base>, so it is made explicit.
            url: str | None = based
        else:
            # The URL the crawl fetched for this link (kept by this module's memo, not the crawl's).
            url = resolve_reference(reference, base, self.base_contexts(base), remember=False)
        if url is None:
            return None, False
        guessed = getattr(self.resolve, "guessed", 0)
        target = self.resolve(url)
        if getattr(self.resolve, "guessed", 0) != guessed:
            self.guesses += 1
            self.guessed.append((url, target))
        if target is None:
            absolute = absolute_url(reference, base)
            return (absolute if absolute is not None and absolute != value else None), False
        target, hash_sign, fragment = target.partition("#")
        if not hash_sign:  # where a redirect's Location names no fragment, the link's stays
            _, hash_sign, fragment = reference.partition("#")
        return relative_url(self.here, target) + hash_sign + fragment, True
