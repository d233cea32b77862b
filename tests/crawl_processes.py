"""Crawls run as processes of their own, as a user runs them, for tests that stop, kill or resume
them: ``start_crawl`` starts one, ``run_archiver`` runs a command to its end."""

from __future__ import annotations

import asyncio
import resource
import signal
import subprocess
import sys
from pathlib import Path

from subprocesses import track
from warcio.archiveiterator import ArchiveIterator

CONCURRENCY = 3
"""Fetches in flight in each crawl start_crawl() starts."""


def start_crawl(
    seed: str, output: Path, *extra: str, max_file_bytes: int | None = None, mirror: bool = False
) -> subprocess.Popen[str]:
    """``archiver crawl`` of ``seed`` into ``output`` with ``extra`` options, running; its files
    may not grow past ``max_file_bytes``, as on a disk that fills up there; its mirror is built
    only if ``mirror``."""

    def full_disk() -> None:
        # Files may not grow past max_file_bytes: writes fail with EFBIG, as on a full disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        limit = resource.RLIM_INFINITY if max_file_bytes is None else max_file_bytes
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return track(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "archiver",
                "crawl",
                *([seed] if seed else []),
                "-o",
                str(output),
                "--concurrency",
                str(CONCURRENCY),
                *([] if mirror else ["--no-mirror"]),
                "--quiet",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=full_disk if max_file_bytes else None,
        )
    )


async def wait_for_hits(site, count: int, seconds: float = 30) -> None:
    """Wait until ``site`` (conftest.Site) served ``count`` requests: a crawl is under way."""
    for _ in range(int(seconds / 0.02)):
        if sum(site.hits.values()) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("crawl did not get going")


def warc_responses(snapshot: Path) -> list[str]:
    """The target URI of each response and revisit record of ``snapshot``'s WARC files, as far
    as each can be read."""
    urls = []
    for path in sorted((snapshot / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            try:
                for record in ArchiveIterator(f):
                    if record.rec_type in ("response", "revisit"):
                        urls.append(record.rec_headers.get_header("WARC-Target-URI"))
            except Exception:  # a record torn by SIGKILL ends that file's readable part
                pass
    return urls


def run_archiver(*args: str) -> subprocess.CompletedProcess[str]:
    """``archiver ARGS...`` run to its end (two minutes at most), its output kept."""
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120
    )
