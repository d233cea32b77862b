"""The mirror's files on disk: written never through a symbolic link, each digested as written.

Every file written is recorded (path, SHA-256 and size of the bytes written,
and a note when the mirror did something a reader should know: a body cut at
the decoding limit, or kept as received) in the manifest's ``mirror_files``
table, which ``archiver verify`` checks the mirror against: by the crawl's
writer as it goes, or through a log of JSON lines per process of a rebuild
(JsonLog), gathered at its end.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from archiver.store.rows import MirrorFile
from archiver.warc.safe_join import safe_join

KNOWN_FOLDERS = 4096
"""Folders remembered as made (more are checked again: memory stays bounded)."""


class MirrorOutput:
    """Writes mirror files under ``root`` and hands each one's MirrorFile to ``record``.

    A folder is checked (safe_join: no symlink on the way) and made once, not
    once per file: most folders hold many files (a bounded set of them is kept).
    """

    def __init__(self, root: Path, record: Callable[[MirrorFile], None]) -> None:
        self.root = root
        self._folders: set[str] = set()
        self._record = record

    def _target(self, relative: str) -> Path:
        """Where ``relative`` goes, its folder made (never through a symbolic link)."""
        folder, _, name = relative.rpartition("/")
        if folder not in self._folders:
            safe_join(self.root, relative).parent.mkdir(parents=True, exist_ok=True)
            if len(self._folders) >= KNOWN_FOLDERS:
                self._folders.clear()
            self._folders.add(folder)
        return safe_join(self.root / folder, name) if folder else safe_join(self.root, name)

    def link(
        self, relative: str, source: Path, sha256: str, size: int, note: str | None = None
    ) -> int | None:
        """Make ``relative`` the file ``source`` (another snapshot's, or the mirror's before a
        rebuild, recorded as ``sha256`` and ``size``): a hard link where the file system allows,
        else a copy; returns its size, or None (nothing made) if ``source`` no longer holds what
        was recorded. ``note``: what a reader should know of it (see write())."""
        target = self._target(relative)
        try:
            if not source.is_file() or source.is_symlink() or file_digest(source) != (sha256, size):
                return None
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            try:
                os.link(source, target)
            except OSError:  # another file system, or one without hard links
                shutil.copyfile(source, target, follow_symlinks=False)
        except OSError:
            return None
        self._record(MirrorFile(relative, sha256, size, note))
        return size

    def write(
        self, relative: str, chunks: Iterable[bytes], note: Callable[[], str | None] | None = None
    ) -> int:
        """Write one file from ``chunks`` and log it; returns the bytes written.

        ``note`` is asked once the chunks are written (what they met is known by then). A file
        already there is replaced, never written through: it may be a link to another
        snapshot's file (see link()).
        """
        target = self._target(relative)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        digest = hashlib.sha256()
        written = 0
        with os.fdopen(os.open(target, flags, 0o644), "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                digest.update(chunk)
                written += len(chunk)
        self._record(MirrorFile(relative, digest.hexdigest(), written, note() if note else None))
        return written


class JsonLog:
    """The MirrorFile records of one process of a rebuild, as JSON lines in ``path``."""

    def __init__(self, path: Path) -> None:
        self._out = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def __call__(self, record: MirrorFile) -> None:
        self._out.write(json.dumps([record.path, record.sha256, record.size, record.note]) + "\n")

    def close(self) -> None:
        """Flush and close the log; safe to call twice."""
        self._out.close()


def read_logs(logs: Iterable[Path]) -> Iterator[MirrorFile]:
    """The files the logs of a build's processes recorded."""
    for log in logs:
        with open(log, encoding="utf-8") as lines:
            for line in lines:
                yield MirrorFile(*json.loads(line))


def file_digest(path: Path, chunk: int = 1024 * 1024) -> tuple[str, int]:
    """(hex SHA-256, size) of the file at ``path``, read a chunk at a time."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while data := fh.read(chunk):
            digest.update(data)
            size += len(data)
    return digest.hexdigest(), size
