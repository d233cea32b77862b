"""One writer per snapshot: every command that writes one holds an exclusive lock on it.

The lock is ``fcntl.flock`` on ``DIR/.lock``. The kernel releases it when the
holder's last descriptor closes, however the process ends, so a lock left by
``kill -9`` or a power cut never blocks anyone: there is nothing to clean up,
and the file stays. What the file says (pid, host, command, since) only names
the holder in the message of whoever is refused.

Held twice in one process (``archiver crawl`` holds it across the crawl and
the mirror build, each of which takes it too), the lock is counted, not taken
again: flock would refuse a second descriptor of the same process.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> with snapshot_lock(folder, "archiver mirror"):
...     with snapshot_lock(folder, "archiver mirror"):
...         (folder / LOCK_NAME).read_text().split(" command ")[1].strip()
'archiver mirror'
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from archiver.errors import SnapshotError, SnapshotLocked
from archiver.store.crawl_record import now
from archiver.store.snapshot import LOCK_NAME

_held: dict[str, tuple[int, int]] = {}
"""Real path of a lock file -> (descriptor, times taken) for the locks this process holds."""


@contextlib.contextmanager
def snapshot_lock(root: Path, command: str, *, create: bool = False) -> Iterator[None]:
    """Hold the snapshot ``root``'s writer lock while the block runs; SnapshotLocked if another has it.

    ``create``: make the folder if it does not exist (a new crawl); otherwise a
    missing folder is a SnapshotError.
    """
    path = _lock_path(root, create)
    key = os.path.realpath(path)
    if key in _held:
        descriptor, count = _held[key]
        _held[key] = (descriptor, count + 1)
    else:
        _held[key] = (_acquire(root, path, command), 1)
    try:
        yield
    finally:
        descriptor, count = _held[key]
        if count > 1:
            _held[key] = (descriptor, count - 1)
        else:
            del _held[key]
            os.close(descriptor)  # releases the lock; the file stays (unlinking it would race)


def _lock_path(root: Path, create: bool) -> Path:
    try:
        if create:
            root.mkdir(parents=True, exist_ok=True)
        if not root.is_dir():
            raise SnapshotError(f"{root} is not a snapshot folder")
    except OSError as exc:
        raise SnapshotError(f"cannot write to output folder {root}: {exc.strerror}") from None
    return root / LOCK_NAME


def _acquire(root: Path, path: Path, command: str) -> int:
    """Open and lock ``path``, then say in it who holds it; returns the descriptor."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise SnapshotError(f"cannot lock {root}: cannot open {path}: {exc.strerror}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(descriptor)
        os.close(descriptor)
        raise SnapshotLocked(f"snapshot {root} is being written by {holder}") from None
    except OSError as exc:
        os.close(descriptor)
        raise SnapshotError(f"cannot lock {root}: {exc.strerror}") from None
    text = f"pid {os.getpid()} host {socket.gethostname()} since {now()} command {command}\n"
    with contextlib.suppress(OSError):  # the lock holds even if the note cannot be written
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, text.encode(), 0)
    return descriptor


def _read_holder(descriptor: int) -> str:
    """'archiver crawl (pid 1234 on host) since 2026-...' from the lock file's note."""
    try:
        text = os.pread(descriptor, 4096, 0).decode("utf-8", "replace")
        fields = text.split(" command ", 1)
        words = fields[0].split()
        facts = dict(zip(words[::2], words[1::2], strict=False))
        command = fields[1].strip() if len(fields) > 1 else "another process"
        where = f"pid {facts['pid']}" + (
            f" on {facts['host']}" if facts.get("host") != socket.gethostname() else ""
        )
        return f"{command} ({where}) since {facts['since']}"
    except (OSError, KeyError, IndexError):
        return "another process"


def forget_inherited_locks() -> None:
    """In a forked child: close its copies of the lock descriptors its parent holds. The lock is
    one open file, which the parent's descriptor keeps locked; a copy kept by a child that
    outlived a ``kill -9`` of its parent held it on, and refused the resume."""
    for descriptor, _count in _held.values():
        with contextlib.suppress(OSError):
            os.close(descriptor)
    _held.clear()


@contextlib.contextmanager
def unchanging(root: Path, command: str) -> Iterator[None]:
    """Hold ``root``'s writer lock while a command reads the snapshot whole (export, verify), so
    no crawl or mirror build changes it meanwhile; SnapshotLocked if one does now. A snapshot
    we may not write (a read-only copy) nobody else writes either: it is read without."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(snapshot_lock(root, command))
        except SnapshotLocked:
            raise
        except SnapshotError:
            pass
        yield


def is_locked(root: Path) -> bool:
    """True if a process holds ``root``'s writer lock now (a crawl runs there); takes nothing."""
    path = root / LOCK_NAME
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)  # closing drops the shared lock taken, if it was
    return False
