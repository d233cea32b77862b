"""A disk that fills while a crawl writes: the crawl stops with one line that names the file it
could not write and the system's reason, exits 3, and its resume finishes a snapshot that
verify finds complete. The disk fills for real: the crawl's files may not grow past a limit
(RLIMIT_FSIZE), so a write past it fails with EFBIG as one on a full disk fails with ENOSPC."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from conftest import Site
from crawl_processes import run_archiver, start_crawl

from archiver.cli.exits import EXIT_OK, EXIT_STOPPED
from archiver.crawling.run import CrawlResult
from archiver.warc.members import torn_offset

PAGES = 3
LIMIT = 600_000
"""Bytes a file of the crawls below may grow to: past what the manifest's write-ahead log reaches
in their few commits, short of a page of 900 KB (held in memory as it comes: past 1 MB a body
goes to a scratch file, itself past the limit)."""


def one_line_of(process: subprocess.Popen[str]) -> tuple[int, str]:
    """The exit code of ``process`` and the one line it wrote on stderr."""
    _, stderr = process.communicate(timeout=120)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return process.returncode, lines[0]


async def resumed_and_verified(output: Path) -> None:
    """Resume the crawl stopped in ``output`` (the disk has room again): it finishes, and verify
    finds the snapshot complete, its mirror with it."""
    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(output), "--quiet")
    assert resumed.returncode == EXIT_OK, resumed.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(output))
    assert verified.returncode == EXIT_OK, verified.stdout + verified.stderr


async def test_a_mirror_file_past_the_room_left_is_named_in_the_one_line(site: Site, tmp_path: Path) -> None:
    """The crawl said "cannot write the mirror: File too large": which file, on which disk, it
    did not say. Pages that compress well keep the WARC file small; their mirror files are not."""
    site.page("/", links=[f"/p{n}" for n in range(PAGES)])
    for n in range(PAGES):
        site.page(f"/p{n}", body="x" * 900_000)
    await site.start()
    output = tmp_path / "snap"
    crawl = start_crawl(site.url("/"), output, max_file_bytes=LIMIT, mirror=True)
    code, line = await asyncio.to_thread(one_line_of, crawl)
    assert code == EXIT_STOPPED, line
    assert "cannot write " in line and ": File too large" in line, line
    assert f"archiver crawl --resume {output}" in line, line
    named = Path(line.split("cannot write ", 1)[1].split(": File too large")[0])
    assert named.parent.parent == output / "mirror", named  # the page's file, in its host's folder
    assert named.name in {f"p{n}.html" for n in range(PAGES)}, named
    for warc in (output / "warc").glob("*.warc.gz"):
        assert torn_offset(warc) is None, f"{warc.name} ends in a torn record"
    await resumed_and_verified(output)


async def test_a_body_the_disk_has_no_room_for_stops_the_crawl_instead_of_failing_its_url(
    site: Site, tmp_path: Path
) -> None:
    """A body past 1 MB is held in a scratch file as it comes: the disk refused it there, and
    the crawl took that for a server that cut the body short, asked the URL three times more,
    recorded it as failed ("could not fetch ... body cut short when the connection ended") and
    exited 1, as if the site were at fault."""
    site.page("/", links=["/big"])
    site.page("/big", body="x" * 3_000_000)
    await site.start()
    output = tmp_path / "snap"
    crawl = start_crawl(site.url("/"), output, max_file_bytes=LIMIT)
    code, line = await asyncio.to_thread(one_line_of, crawl)
    assert code == EXIT_STOPPED, line
    assert f"cannot write a scratch file in {tempfile.gettempdir()}: File too large" in line, line
    assert f"archiver crawl --resume {output}" in line, line
    assert site.hits["/big"] == 1  # the server was not at fault: not asked again
    await resumed_and_verified(output)
    assert site.hits["/big"] == 2


async def test_a_full_disk_as_a_resumed_crawl_opens_its_control_file_is_a_write_error(
    site: Site, run_crawl: Callable[..., Awaitable[CrawlResult]]
) -> None:
    """The crawl's control file (control.sqlite3, where archiver control leaves commands) met a
    full disk as the resume made it: the crawl said so as for bad input (exit 2, no word of a
    resume), not as the write error it is (exit 3). The file leads to /dev/full, whose writes
    fail with ENOSPC."""
    site.page("/", links=["/a"]).page("/a")
    await site.start()
    output = (await run_crawl(site.url("/"))).snapshot.root
    control = output / "control.sqlite3"
    control.unlink(missing_ok=True)
    control.symlink_to("/dev/full")
    refused = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(output), "--quiet")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == EXIT_STOPPED, refused.stderr
    assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert f"cannot write {control}: database or disk is full" in lines[0], lines[0]
    assert f"archiver crawl --resume {output}" in lines[0], lines[0]
    control.unlink()  # the disk has room again
    await resumed_and_verified(output)


async def test_a_manifest_the_disk_has_no_room_for_is_named_in_the_one_line(
    site: Site, tmp_path: Path
) -> None:
    """Once the crawl had made its manifest, a commit the disk refused said only "cannot write
    the manifest: disk I/O error": which file, and so which disk, it did not say. Many small
    pages: the manifest's write-ahead log is the file that grows first."""
    site.page("/", links=[f"/p{n}" for n in range(100)])
    for n in range(100):
        site.page(f"/p{n}", links=[f"/p{(n + k) % 100}" for k in range(20)])
    await site.start()
    output = tmp_path / "snap"
    crawl = start_crawl(site.url("/"), output, max_file_bytes=200_000)
    code, line = await asyncio.to_thread(one_line_of, crawl)
    assert code == EXIT_STOPPED, line
    assert f"write error: cannot write the manifest {output / 'manifest.sqlite3'}: " in line, line
    await resumed_and_verified(output)
