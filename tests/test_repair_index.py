"""A snapshot whose CDXJ index is lost or damaged gets it back from its WARC files, the record of truth."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web
from repairs import mirror_bytes, run_archiver

from archiver.verify.verifier import verify_snapshot

ROBOTS = "User-agent: *\nDisallow: /private\n"


@pytest.fixture
async def crawled(site, run_crawl) -> Path:
    """A finished crawl of a site with a redirect chain, a page whose body another has (a
    revisit), a 404, a link out of scope, a page robots.txt keeps out, a stylesheet, and a page
    that dropped the connection of each try (a failure: no record) and answers once it is done."""

    async def dropped(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        await asyncio.sleep(0.05)
        return web.Response(text="never sent")

    site.file("/robots.txt", ROBOTS, "text/plain")
    site.handler("/later", dropped)
    site.page(
        "/",
        links=["/a", "/old", "/copy", "/missing", "/private/x", "/later", "http://elsewhere.invalid/page"],
        head='<link rel="stylesheet" href="/style.css">',
    )
    site.page("/a", title="same", body="<p>text</p>")
    site.page("/copy", title="same", body="<p>text</p>")
    site.redirect("/old", "/older")
    site.redirect("/older", "/new", status=302)
    site.page("/new", links=["/a"])
    site.file("/style.css", "body { background: url(/bg.png) }", "text/css")
    site.file("/bg.png", b"\x89PNG\r\n\x1a\n" + bytes(40), "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=2)
    site.file("/later", "<title>later</title>")
    root = result.snapshot.root
    report = await asyncio.to_thread(verify_snapshot, root)
    assert report.ok, report.render_text(str(root))
    return root


def lose(index: Path) -> None:
    index.unlink()


def edit_a_line(index: Path) -> None:
    lines = index.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"offset": "', '"offset": "1')
    index.write_text("".join(lines))


def cut_short(index: Path) -> None:
    data = index.read_bytes()
    index.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", [lose, edit_a_line, cut_short], ids=["lost", "line edited", "cut short"])
async def test_an_index_lost_or_damaged_is_written_again_by_a_mirror_build(
    crawled: Path, damage: Callable[[Path], None]
) -> None:
    """verify names the command that mends the index; archiver mirror writes it again from the
    WARC files, line for line as the crawl wrote it, and leaves the mirror as the crawl built it."""
    root = crawled
    index = root / "indexes" / "index.cdxj"
    written = index.read_bytes()
    mirror = mirror_bytes(root)
    damage(index)

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1
    assert (
        "cdxj_mismatch" in verified.stdout
        and f"(write it again from them with: archiver mirror {root})" in verified.stdout
    )

    mended = await asyncio.to_thread(run_archiver, "mirror", str(root))
    assert mended.returncode == 0, mended.stderr
    lines = written.count(b"\n")
    assert f"index written again from the WARC files ({lines} lines)" in mended.stdout
    assert index.read_bytes() == written
    assert mirror_bytes(root) == mirror
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


async def test_an_index_as_the_crawl_wrote_it_is_not_written_again(crawled: Path) -> None:
    """An index that stands as the crawl left it is kept: the mirror build reads no WARC file for it."""
    index = crawled / "indexes" / "index.cdxj"
    before = index.stat()
    mirrored = await asyncio.to_thread(run_archiver, "mirror", str(crawled))
    assert mirrored.returncode == 0, mirrored.stderr
    assert "index written again" not in mirrored.stdout
    assert (index.stat().st_ino, index.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


async def test_an_index_copied_elsewhere_is_checked_and_kept_when_it_matches(
    crawled: Path, tmp_path: Path
) -> None:
    """A snapshot copied (its index's mark no longer names the file) keeps an index that matches
    its WARC files: checked, not written again."""
    copy = tmp_path / "copy"
    shutil.copytree(crawled, copy)
    index = copy / "indexes" / "index.cdxj"
    written = index.read_bytes()
    mirrored = await asyncio.to_thread(run_archiver, "mirror", str(copy))
    assert mirrored.returncode == 0, mirrored.stderr
    assert "index written again" not in mirrored.stdout
    assert index.read_bytes() == written


@pytest.mark.parametrize("damage", [lose, edit_a_line], ids=["lost", "line edited"])
async def test_a_resume_writes_again_an_index_lost_or_damaged_since_the_last_run(
    crawled: Path, damage: Callable[[Path], None]
) -> None:
    """A resume merges its own lines into the index at its end and marks it whole: an index
    lost or damaged since the last run is written again from the WARC files first, not left
    holding the new lines alone (or the damaged ones) under a mark that says it is whole."""
    index = crawled / "indexes" / "index.cdxj"
    written = index.read_bytes()
    damage(index)
    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(crawled), "--quiet")
    assert resumed.returncode == 4, resumed.stderr  # as the crawl: /missing answered 404
    lines = written.count(b"\n")
    assert (
        f"archiver: warning: indexes/index.cdxj was lost or damaged since the last run: written again "
        f"from the WARC files ({lines} lines)"
    ) in resumed.stderr
    assert index.read_bytes() == written
    verified = await asyncio.to_thread(run_archiver, "verify", str(crawled))
    assert verified.returncode == 0, verified.stdout


async def test_an_export_of_a_snapshot_that_lost_its_index_names_the_command_that_writes_it_again(
    crawled: Path, tmp_path: Path
) -> None:
    """archiver export refuses a snapshot whose index is lost in one line naming archiver mirror,
    which writes it again from the WARC files; the export then packs the snapshot."""
    lose(crawled / "indexes" / "index.cdxj")
    target = tmp_path / "snap.wacz"

    refused = await asyncio.to_thread(run_archiver, "export", str(crawled), "--wacz", str(target))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.endswith(f"write it again from the WARC files with: archiver mirror {crawled}\n")
    assert not target.exists()
    mended = await asyncio.to_thread(run_archiver, "mirror", str(crawled))
    assert mended.returncode == 0, mended.stderr
    exported = await asyncio.to_thread(run_archiver, "export", str(crawled), "--wacz", str(target))
    assert exported.returncode == 0 and target.is_file(), exported.stderr
