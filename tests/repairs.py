"""A snapshot that loses something, is repaired, and is compared with the crawl it was: the
sequence the repair tests share (the commands run as a user runs them, in a process of their own)."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conftest import Site, manifest_rows

from archiver.crawling.resume_options import given_again_in
from archiver.store.rows import ManifestRow

KEPT = (
    "outcome",
    "reason",
    "status",
    "content_type",
    "length",
    "payload_digest",
    "fetched_at",
    "title",
    "redirect_to",
    "final_url",
    "warc_file",
    "warc_offset",
    "warc_length",
    "record_type",
    "local_path",
)
"""What a rebuilt row gives back as the crawl wrote it. How a URL was found (found_by, parent,
depth) is found again from the seeds level by level: a page two pages link to may name the
other as its parent, at the depth that one gives it."""
FOUND = ("found_by", "parent", "depth")
"""How a row says its URL was found."""


def run_archiver(*args: str) -> subprocess.CompletedProcess[str]:
    """``archiver ARGS...`` run in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120
    )


def mirror_bytes(root: Path) -> dict[str, bytes]:
    """Every file of the snapshot's mirror, by path. (Not index.html: a mirror build writes the
    crawl's end in its heading, which the crawl, writing it before it noted its end, does not.)"""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in (root / "mirror").rglob("*")
        if path.is_file()
    }


def facts(rows: dict[str, ManifestRow]) -> dict[str, tuple[object, ...]]:
    """What each row of ``rows`` says of its capture (KEPT), by URL."""
    return {url: tuple(getattr(row, name) for name in KEPT) for url, row in rows.items()}


def found(rows: dict[str, ManifestRow]) -> dict[str, tuple[object, ...]]:
    """How each URL of ``rows`` was found (FOUND)."""
    return {url: tuple(getattr(row, name) for name in FOUND) for url, row in rows.items()}


def lose_manifest(root: Path) -> None:
    """The manifest deleted, with SQLite's files beside it."""
    for path in root.glob("manifest.sqlite3*"):
        path.unlink()


@dataclass(frozen=True)
class Repaired:
    """The rows of a snapshot before it lost something, and after crawl --resume --repair."""

    before: dict[str, ManifestRow]
    after: dict[str, ManifestRow]
    stderr: str
    """What the repair said."""


def _repair(root: Path) -> list[str]:
    """``archiver crawl --resume ROOT --repair`` as a user runs it: with what the crawl's messages
    say it takes again (a --chromium that is not the one found on PATH)."""
    return ["crawl", "--resume", str(root), "--repair", "--quiet", *shlex.split(given_again_in(root))]


async def lose_and_repair(
    root: Path,
    site: Site,
    lose: Callable[[Path], None] = lose_manifest,
    *,
    exit_code: int = 0,
    same_mirror: bool = True,
) -> Repaired:
    """Make ``root`` lose what ``lose`` deletes, run ``archiver crawl --resume ROOT --repair``, and
    check that it ends with ``exit_code`` (4: the crawl too met a URL that failed), that it
    fetched nothing, that each row's facts are as the crawl wrote them, that the mirror is the
    same (with ``same_mirror``) and that verify passes."""
    before = manifest_rows(root, for_crawlers=True)
    mirror, hits = mirror_bytes(root), dict(site.hits)
    lose(root)
    repaired = await asyncio.to_thread(run_archiver, *_repair(root))
    assert repaired.returncode == exit_code, repaired.stderr
    assert dict(site.hits) == hits
    after = manifest_rows(root, for_crawlers=True)
    assert facts(after) == facts(before)
    if same_mirror:
        assert mirror_bytes(root) == mirror
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
    return Repaired(before, after, repaired.stderr)


async def repair_cuts_where_the_crawl_cut(
    site: Site, root: Path, before: dict[str, ManifestRow], kept: int
) -> None:
    """Lose the manifest of ``root`` (a crawl of ``site`` whose page / had more than ``kept``
    links, its rows ``before`` by path) and repair it: the same rows come back, the page's row
    says again where its links were cut, the first link past the cut is not fetched, verify
    passes."""
    lose_manifest(root)
    repaired = await asyncio.to_thread(run_archiver, *_repair(root))
    assert repaired.returncode == 0, repaired.stderr
    after = {url.removeprefix(site.url("")): row for url, row in manifest_rows(root).items()}
    assert sorted(after) == sorted(before)
    assert after["/"].reason == before["/"].reason
    assert site.hits.get(f"/p{kept}", 0) == 0
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
