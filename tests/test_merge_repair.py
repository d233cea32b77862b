"""A shared crawl's node part that lost its manifest, or whose manifest is damaged, is written
again from its WARC files by ``archiver merge DIR --repair``, through a real Redis and real node
processes: the merged snapshot then holds the rows the undamaged crawl had, and verify passes."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from conftest import manifest_rows
from node_site import TreeSite, assert_verified, finish, node_args, run_archiver, started_together
from repairs import KEPT, lose_manifest
from test_repair_manifest import overwrite_its_middle

from archiver.cli.exits import EXIT_PROBLEMS
from archiver.store.rows import ManifestRow
from archiver.store.snapshot import Snapshot

PAGES = 60
"""Pages of the site the two nodes share: each page is linked from one page alone, so how each
was found (its parent, its depth) is one thing whichever node met it."""
FACTS = tuple(name for name in KEPT if name != "local_path") + ("found_by", "depth", "parent")
"""What a row written again from the WARC files gives back as the crawl wrote it (no mirror
here: the nodes crawl with --no-mirror)."""


def facts(rows: dict[str, ManifestRow]) -> dict[str, tuple[object, ...]]:
    return {url: tuple(getattr(row, name) for name in FACTS) for url, row in rows.items()}


@pytest.fixture
async def crawled(tmp_path: Path, redis_url: str) -> AsyncIterator[tuple[Path, TreeSite]]:
    """A crawl shared by nodes n1 and n2 (started together), finished and merged."""
    site = TreeSite(PAGES, latency=0.01)
    await site.start()
    output = tmp_path / "snap"
    args = node_args(site.url(), output, redis_url, "mended", "--no-mirror", "--concurrency", "4")
    try:
        nodes = await started_together(site, redis_url, "mended", args, ["n1", "n2"])
        for node in nodes.values():
            code, text = await finish(node)
            assert code == 0, text
        yield output, site
    finally:
        await site.close()


@pytest.mark.parametrize("damage", [lose_manifest, overwrite_its_middle], ids=["lost", "damaged"])
async def test_a_part_whose_manifest_is_lost_or_damaged_is_written_again_by_merge_repair(
    crawled: tuple[Path, TreeSite], damage: Callable[[Path], None]
) -> None:
    """A part that lost its manifest was left out of every merge with a warning that named no way
    to mend it (crawl --repair refused a shared crawl), though its WARC files hold every capture.
    The merge's warning and verify now name archiver merge DIR --repair, which writes the part's
    manifest again from its WARC files (how each URL was found, found again over every node's,
    since the page that linked one may be another node's), and joins it: the rows are the crawl's,
    nothing is fetched again, and verify passes. The part's node was killed: the merge recovers
    the part from the manifest written again, cutting nothing it names. Before the repair, verify
    called the snapshot resumable with crawl --resume, for the URLs n1 queued and n2 fetched:
    it now says the part is to be merged first."""
    output, site = crawled
    before = manifest_rows(output, for_crawlers=True)
    theirs = [row for row in before.values() if (row.warc_file or "").startswith("archiver-n2-")]
    linked_by_n1 = [
        row for row in theirs if row.parent and before[row.parent].warc_file.startswith("archiver-n1-")
    ]
    assert theirs and linked_by_n1  # n2 stored pages, some of them linked from pages n1 stored
    hits = dict(site.hits)
    part = output / "nodes" / "n2"
    damage(part)
    record = json.loads((part / "crawl.json").read_text())
    record["status"] = "running"  # as a node killed with kill -9 leaves it: recovered at the merge
    (part / "crawl.json").write_text(json.dumps(record))

    code, text = await run_archiver("merge", str(output))
    assert code == EXIT_PROBLEMS, text
    assert f"write it again from its WARC files with: archiver merge {output} --repair" in text, text
    code, report = await run_archiver("verify", str(output))
    assert code == EXIT_PROBLEMS and "unmerged_node (1)" in report, report
    # n1's rows of the pages it queued and n2 fetched say queued: the crawl is not to be resumed
    # (no node would fetch them again), its part is to be merged.
    assert "unfinished_crawl" in report and "resumable" not in report.splitlines()[0], report
    assert "nodes/n2: its manifest is lost or damaged: write it again from its WARC files with: " in report
    assert f"archiver merge {output} --repair" in report, report

    code, text = await run_archiver("merge", str(output), "--repair")
    assert code == 0, text
    assert f"written again from the WARC files, {len(theirs)} captures" in text, text
    assert f"merged the parts of {output}: n1, n2\n" in text, text
    after = manifest_rows(output, for_crawlers=True)
    assert facts(after) == facts(before)
    assert dict(site.hits) == hits
    assert_verified(output, text)


async def test_merge_repair_leaves_a_sound_part_as_it_is(crawled: tuple[Path, TreeSite]) -> None:
    """--repair writes again only a manifest lost or damaged: the parts that stand are joined as
    they are, and the merge says nothing was written again."""
    output, _site = crawled
    before = manifest_rows(output, for_crawlers=True)
    parts = {path: path.read_bytes() for path in (output / "nodes").glob("*/manifest.sqlite3")}
    code, text = await run_archiver("merge", str(output), "--repair")
    assert code == 0, text
    assert "written again" not in text
    assert {path: path.read_bytes() for path in parts} == parts
    after = manifest_rows(output, for_crawlers=True)
    assert facts(after) == facts(before)
    assert {url: dataclasses.astuple(row) for url, row in after.items()} == {
        url: dataclasses.astuple(row) for url, row in before.items()
    }


async def test_the_repair_of_a_shared_crawl_is_named_where_it_is_refused(crawl_root: Path) -> None:
    """crawl --resume --repair of a shared crawl was refused with "a shared crawl's parts are
    merged first", and a node's part whose manifest is lost was told to run crawl --resume
    nodes/NODE --repair, which no part takes: each now names archiver merge DIR --repair."""
    code, text = await run_archiver("crawl", "--resume", str(crawl_root), "--repair")
    assert code == 2 and len(text.splitlines()) == 1, text
    assert text.endswith(f"archiver merge {crawl_root} --repair\n"), text
    part = Snapshot(crawl_root).node_part("n2")
    assert (
        part.repair_advice == f"write it again from its WARC files with: archiver merge {crawl_root} --repair"
    )


@pytest.fixture
def crawl_root(crawled: tuple[Path, TreeSite]) -> Path:
    return crawled[0]
