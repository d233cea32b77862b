"""A mirror rebuild shared by forked processes (mirror/build.py decides when: many files).

Rewriting is pure Python and file creation waits on the disk, so a second core
halves the build. Each process builds every n-th block of the files (the
builder's parts); children read the plan committed before the fork, open their
own manifest and WARC files, and send back what they wrote, or the one line
that stopped them. Interrupted (Ctrl-C, SIGTERM), the parent ends its children.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any, Protocol

from archiver.errors import WriteError
from archiver.memory import release_free_memory
from archiver.mirror.stats import MirrorStats
from archiver.stop_signals import stop_signals_held
from archiver.store.forked import forked_helper_started


class PartBuilder(Protocol):
    """What a build shared by processes asks of the builder (build._Builder)."""

    stats: MirrorStats

    def build(self, root: Path, part: int = 0, parts: int = 1) -> set[str]:
        """Write part ``part`` of ``parts`` of the files under ``root``; the paths that failed."""
        ...

    def reopen(self) -> None:
        """Open the manifest and the WARC files again, in a forked process."""
        ...

    def close(self) -> None:
        """Close what reopen() opened."""
        ...


def build_in_processes(builder: PartBuilder, root: Path, parts: int) -> set[str]:
    """builder.build() split over ``parts`` processes (this one and parts - 1 forked ones);
    returns the paths that failed."""
    context = multiprocessing.get_context("fork")
    release_free_memory()  # or each child starts with its share of what this one freed
    children = []
    for part in range(1, parts):
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(
            target=_build_part, args=(builder, root, part, parts, sender, os.getpid()), daemon=True
        )
        with stop_signals_held():
            child.start()
        sender.close()
        children.append((child, receiver))
    try:
        return _gather(builder, root, parts, children)
    except BaseException:  # Ctrl-C, SIGTERM: the children (which ignore both) go too
        for child, _ in children:
            child.kill()
            child.join()
        raise


def _gather(builder: PartBuilder, root: Path, parts: int, children: list[tuple[Any, Any]]) -> set[str]:
    """Build part 0 here, then gather what the children built."""
    fatal = None
    try:
        failed = builder.build(root, 0, parts)
    except WriteError as exc:
        fatal, failed = exc, set()
    for child, receiver in children:
        try:
            outcome = receiver.recv()
        except EOFError:
            outcome = ("fatal", f"a mirror process ended with code {child.exitcode}")
        child.join()
        if outcome[0] == "fatal":
            fatal = fatal or WriteError(outcome[1])
            continue
        _, stats, child_failed = outcome
        builder.stats.add(stats)
        failed |= child_failed
    if fatal is not None:
        raise fatal
    return failed


def _build_part(builder: PartBuilder, root: Path, part: int, parts: int, sender: Any, parent: int) -> None:
    """A forked process's share of build_in_processes(): results go back through ``sender``."""
    forked_helper_started(parent)  # interrupted or killed, the parent ends its children
    builder.reopen()  # connections and open files are never shared across a fork
    try:
        failed = builder.build(root, part, parts)
    except WriteError as exc:
        sender.send(("fatal", str(exc)))
    except Exception as exc:  # noqa: BLE001 - said by the parent in one line, not a traceback here
        sender.send(("fatal", f"a mirror process failed: {type(exc).__name__}: {str(exc)[:200]}"))
    else:
        sender.send(("ok", builder.stats, failed))
    finally:
        builder.close()
