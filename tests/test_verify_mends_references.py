"""verify's lines about what a revisit refers to outside itself (its original, the previous
snapshot of a re-archive) name what mends them: the damage made to a real snapshot, what the line
names done as it is written, verify passing after."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from conftest import manifest_rows
from rearchive_site import built_site
from repairs import run_archiver
from test_repair_named import problem_lines
from test_verify_mends import NAMED_COMMAND, named_command
from test_verify_tamper import edit_record_of


async def rearchived(site, run_crawl, tmp_path: Path) -> tuple[Path, Path]:
    """OLD, a crawl of the site, and NEW, its re-archive (--previous OLD): NEW's unchanged page
    /same is a revisit of OLD's record."""
    await built_site(site, validators=False)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    assert manifest_rows(new)[site.url("/same")].record_type == "revisit"
    return old, new


async def test_a_dangling_revisit_is_mended_by_the_command_its_line_names(site, run_crawl, tmp_path) -> None:
    """The original of NEW's revisit damaged in OLD: verify's dangling_revisit line names crawl
    --resume NEW --repair; run as written, it fetches the page again whole, and NEW verifies."""
    old, new = await rearchived(site, run_crawl, tmp_path)
    edit_record_of(old, site.url("/same"), lambda record: record.replace(b"always", b"ALWAYS", 1))
    verified = await asyncio.to_thread(run_archiver, "verify", str(new))
    assert verified.returncode == 1, verified.stdout
    line = problem_lines(verified.stdout)["dangling_revisit"]
    assert named_command(line) == ["crawl", "--resume", str(new), "--repair"], line

    mended = await asyncio.to_thread(run_archiver, *named_command(line))
    assert mended.returncode == 0, mended.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(new))
    assert verified.returncode == 0, verified.stdout


async def test_a_missing_previous_snapshot_is_mended_by_putting_it_back_where_its_line_says(
    site, run_crawl, tmp_path
) -> None:
    """OLD moved away: verify NEW's missing_previous line names no command (none gives OLD back)
    and says to put it back where crawl.json names it, which its example names; put back there,
    NEW verifies."""
    old, new = await rearchived(site, run_crawl, tmp_path)
    moved = shutil.move(old, tmp_path / "elsewhere")
    verified = await asyncio.to_thread(run_archiver, "verify", str(new))
    assert verified.returncode == 1, verified.stdout
    line = problem_lines(verified.stdout)["missing_previous"]
    assert NAMED_COMMAND.search(line) is None and "put the previous snapshot back" in line, line
    example = verified.stdout.splitlines()[verified.stdout.splitlines().index(line) + 1].strip()
    where = Path(example.split(": ", 1)[0])
    assert where.resolve() == old.resolve(), example

    shutil.move(moved, where)
    verified = await asyncio.to_thread(run_archiver, "verify", str(new))
    assert verified.returncode == 0, verified.stdout
