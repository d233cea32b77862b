"""What ``archiver control TARGET`` talks to: a snapshot folder where one process crawls (its
control file), or a crawl shared through Redis (named by its Redis URL and --crawl-id, or by
its snapshot folder, whose crawl.json names both)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver.crawling.control import parse_command
from archiver.crawling.control_file import ControlFile
from archiver.crawling.resume_options import given_again_in
from archiver.errors import ConfigError, SnapshotError
from archiver.report import resume_command
from archiver.store.crawl_record import RUNNING
from archiver.store.lock import is_locked
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, QUEUED, SKIPPED
from archiver.store.snapshot import Snapshot

STOPPED_UNSAID = "stopped before its end"
"""The state of a crawl no process runs that never said it ended (killed): it is resumable."""


@dataclass(frozen=True)
class Target:
    """A crawl to control: a folder, or a Redis URL and a crawl name."""

    folder: Path | None = None
    frontier: str | None = None
    crawl_id: str | None = None

    @classmethod
    def parse(cls, text: str, crawl_id: str | None) -> Target:
        """The target ``archiver control`` was given (ConfigError or SnapshotError if it is none)."""
        if "://" in text:
            if not crawl_id:
                raise ConfigError("a Redis target needs --crawl-id NAME")
            return cls(frontier=text, crawl_id=crawl_id)
        snapshot = Snapshot(Path(text))
        if not snapshot.crawl_json_path.is_file():
            raise SnapshotError(f"{text} holds no crawl (no crawl.json)")
        settings = snapshot.read_crawl_json().get("settings") or {}
        if settings.get("frontier") and settings.get("crawl_id"):
            return cls(Path(text), str(settings["frontier"]), str(crawl_id or settings["crawl_id"]))
        return cls(folder=Path(text))


def issue(target: Target, name: str, argument: str | None) -> None:
    """Give the crawl ``target`` the command ``name`` (checked first: ConfigError if bad)."""
    name, argument = parse_command(name, argument)
    if target.frontier is not None:
        asyncio.run(_redis(target, name, argument))
        return
    assert target.folder is not None
    if not is_locked(target.folder):
        raise SnapshotError(
            f"no crawl is running in {target.folder} "
            f"(continue it with: {resume_command(target.folder, given_again_in(target.folder))})"
        )
    ControlFile(Snapshot(target.folder).control_path).issue(name, argument)


def status(target: Target) -> dict[str, Any]:
    """The crawl's counts: published by its running processes, or saved in crawl.json at its end."""
    if target.frontier is not None:
        found = asyncio.run(_redis(target, "status", None))
        if found is None:
            raise SnapshotError(f"Redis at {target.frontier} holds no crawl named {target.crawl_id}")
        return dict(found)
    assert target.folder is not None
    snapshot = Snapshot(target.folder)
    if is_locked(target.folder):
        published = ControlFile(snapshot.control_path).status()
        if published is not None:
            return published
        return {"state": "starting"}
    data = snapshot.read_crawl_json()
    if data.get("status") == RUNNING:
        # No process holds its lock: it ended without a word (killed, the power cut), its counts
        # never saved; the manifest has them, as far as it committed.
        return _counted(snapshot)
    stats = data.get("stats") or {}
    return {
        "state": str(data.get("status") or "unknown"),
        "fetched": stats.get("fetched", 0),
        "failed": stats.get("failed", 0),
        "skipped": stats.get("skipped", 0),
        "queued": stats.get("queued", 0),
        "in_flight": 0,
        "bytes": stats.get("bytes", 0),
    }


def _counted(snapshot: Snapshot) -> dict[str, Any]:
    """status() of a crawl that ended before it could save its counts, from its manifest."""
    counts: dict[str, int] = {}
    captured = 0
    if snapshot.manifest_path.is_file():
        with Manifest.open(snapshot.manifest_path, readonly=True) as manifest:
            counts = manifest.count_by("outcome")
            captured = manifest.captured_bytes()
    return {
        "state": STOPPED_UNSAID,
        "fetched": counts.get(FETCHED, 0),
        "failed": counts.get(FAILED, 0),
        "skipped": counts.get(SKIPPED, 0),
        "queued": counts.get(QUEUED, 0),
        "in_flight": 0,
        "bytes": captured,
    }


async def _redis(target: Target, name: str, argument: str | None) -> Any:
    from archiver.crawling import redis_control
    from archiver.crawling.redis_state import connect, redis_error

    assert target.frontier is not None and target.crawl_id is not None
    crawl = connect(target.frontier, target.crawl_id)
    try:
        if name == "status":
            return await redis_control.crawl_status(crawl)
        if not await crawl.client.exists(crawl.key("settings")):
            raise SnapshotError(f"Redis at {target.frontier} holds no crawl named {target.crawl_id}")
        await redis_control.issue(crawl, name, argument)
        return None
    except redis_error() as exc:
        raise ConfigError(f"cannot reach the crawl's Redis at {target.frontier}: {exc}") from None
    finally:
        await crawl.close()
