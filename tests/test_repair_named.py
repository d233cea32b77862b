"""What verify reports in a snapshot names the command that mends it, and that command mends it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from conftest import manifest_rows
from repairs import run_archiver
from test_repair_index import crawled

__all__ = ["crawled"]  # the fixture, used by name


def problem_lines(stdout: str) -> dict[str, str]:
    """The line verify gives each kind of problem it found, by the kind's name."""
    return {
        line.split(": ", 2)[1].split(" ")[0]: line
        for line in stdout.splitlines()
        if line.startswith(("integrity: ", "consistency: ", "completeness: ", "mirror: "))
    }


async def test_a_row_of_the_wrong_type_names_the_repair_which_mends_it(crawled: Path, site) -> None:
    """A manifest row edited to hold text for a number: verify's bad_row line names crawl --resume
    --repair, which sets that manifest aside and writes it again from the WARC files, fetching
    nothing archived; verify then passes."""
    root = crawled
    page = site.url("/a")
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        db.execute("UPDATE urls SET warc_offset = 'x' || warc_offset WHERE url = ?", (page,))
    db.close()

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1
    assert f"archiver crawl --resume {root} --repair" in problem_lines(verified.stdout)["bad_row"], (
        verified.stdout
    )
    hits = dict(site.hits)
    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert "the manifest is damaged" in repaired.stderr, repaired.stderr
    assert isinstance(manifest_rows(root)[page].warc_offset, int)
    assert {path: count for path, count in site.hits.items() if path != "/later"} == {
        path: count for path, count in hits.items() if path != "/later"
    }  # /later failed in the crawl: asked again
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


async def test_a_lost_or_changed_mirror_file_names_the_build_which_mends_it(crawled: Path, site) -> None:
    """A page's mirror file deleted and the stylesheet's changed: verify's missing_mirror_file,
    lost_mirror_file and changed_mirror_file lines name archiver mirror, which writes them again
    from the WARC files; verify then passes."""
    root = crawled
    rows = manifest_rows(root)
    page = root / "mirror" / str(rows[site.url("/a")].local_path)
    sheet = root / "mirror" / str(rows[site.url("/style.css")].local_path)
    kept = page.read_bytes(), sheet.read_bytes()
    page.unlink()
    sheet.write_bytes(b"body { color: red }")

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1
    lines = problem_lines(verified.stdout)
    for kind in ("missing_mirror_file", "lost_mirror_file", "changed_mirror_file"):
        assert "archiver mirror" in lines[kind], verified.stdout
    mirrored = await asyncio.to_thread(run_archiver, "mirror", str(root))
    assert mirrored.returncode == 0, mirrored.stderr
    assert (page.read_bytes(), sheet.read_bytes()) == kept
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


async def test_a_manifest_set_aside_for_disagreeing_is_said_written_again_in_one_line(
    crawled: Path, site
) -> None:
    """A row's WARC offset edited: --repair set the manifest aside ("set aside as ..., to be
    written again from them"), and the resume then said "the manifest was lost", as if it had
    been deleted. One line now says why it was set aside, where it is kept, and that it was
    written again from the WARC files; the row names its record again and verify passes."""
    root = crawled
    page = site.url("/a")
    kept = manifest_rows(root)[page].warc_offset
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        db.execute("UPDATE urls SET warc_offset = warc_offset + 10 WHERE url = ?", (page,))
    db.close()
    captures = sum(1 for row in manifest_rows(root, for_crawlers=True).values() if row.warc_file)

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    said = [line for line in repaired.stderr.splitlines() if "manifest" in line]
    assert len(said) == 1, repaired.stderr
    assert "the manifest disagrees with the WARC files (wrong_location: " in said[0], said
    assert said[0].endswith(
        f"set aside as {next(root.glob('manifest.sqlite3.damaged-*Z')).name}, written again from the WARC "
        f"files, {captures} captures; the crawl goes on from them"
    ), said
    assert manifest_rows(root)[page].warc_offset == kept
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
