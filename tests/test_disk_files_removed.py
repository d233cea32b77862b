"""Files of a snapshot removed while a crawl writes them (a cleanup that runs too soon): the crawl
stops with one line that names the file, exits 3, and resumed with --repair it fetches again what
was lost, so verify finds the snapshot complete."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web
from conftest import Site
from crawl_processes import run_archiver, start_crawl

from archiver.cli.exits import EXIT_OK, EXIT_STOPPED

PAGES = 200


async def slow_chain(site: Site) -> None:
    """A chain of pages, each a little slow: the crawl is still writing long after it began."""

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.05)
        n = int(request.path.strip("/p") or -1)
        links = "".join(f'<a href="/p{k}">{k}</a>' for k in (n + 1, n + 2) if k < PAGES)
        return web.Response(text=f"<title>p{n}</title>{links}", content_type="text/html")

    site.handler("/", page)
    for n in range(PAGES):
        site.handler(f"/p{n}", page)
    await site.start()


def warc_file(output: Path) -> list[Path]:
    """The WARC file the crawl writes."""
    return sorted((output / "warc").glob("*.warc.gz"))[-1:]


def manifest_files(output: Path) -> list[Path]:
    """The manifest and its write-ahead log."""
    return sorted(output.glob("manifest.sqlite3*"))


@pytest.mark.parametrize(
    ("removed", "lost"),
    [
        pytest.param(warc_file, "its records are lost", id="warc"),
        pytest.param(manifest_files, "its rows are lost", id="manifest"),
    ],
)
async def test_a_file_removed_under_the_crawl_stops_it(
    site: Site, tmp_path: Path, removed: Callable[[Path], list[Path]], lost: str
) -> None:
    """The writer went on writing the file it held open, gone from the folder: the crawl ended
    "done" (exit 0) with what it held lost, and only verify found it out (a manifest removed:
    exit 2, "no such table", and a resume that cut every record)."""
    await slow_chain(site)
    output = tmp_path / "snap"
    crawl = start_crawl(site.url("/"), output)
    while not list((output / "warc").glob("*.warc.gz")):
        assert crawl.poll() is None, "the crawl ended before it wrote a WARC file"
        await asyncio.sleep(0.02)
    while sum(site.hits.values()) < 10:
        await asyncio.sleep(0.02)
    gone = removed(output)
    for path in gone:
        path.unlink()
    _, stderr = await asyncio.to_thread(crawl.communicate, timeout=120)
    assert crawl.returncode == EXIT_STOPPED, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert f"{gone[0]} was removed while the crawl wrote it: {lost}" in lines[0], lines[0]
    assert "--repair" in lines[0] and f"archiver crawl --resume {output}" in lines[0], lines[0]
    assert sum(site.hits.values()) < PAGES, "the crawl went on past the loss"
    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(output), "--repair", "--quiet")
    assert resumed.returncode == EXIT_OK, resumed.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(output), "--no-mirror")
    assert verified.returncode == EXIT_OK, verified.stdout + verified.stderr
