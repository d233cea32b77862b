"""A snapshot whose crawl.json is lost or unreadable gets its settings back from its WARC files."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from repairs import run_archiver
from test_repair_named import problem_lines

from archiver.warc.capture import Capture
from archiver.warc.files import WarcFiles, crawl_info


def without_output(settings: dict[str, object]) -> dict[str, object]:
    return {name: value for name, value in settings.items() if name != "output"}


def lose(root: Path) -> None:
    (root / "crawl.json").unlink()


def cut(root: Path) -> None:
    path = root / "crawl.json"
    path.write_bytes(path.read_bytes()[:40])


@pytest.mark.parametrize("damage", [lose, cut], ids=["lost", "unreadable"])
async def test_a_lost_crawl_json_is_given_back_with_the_crawls_scope(
    site, run_crawl, damage: Callable[[Path], None]
) -> None:
    """A crawl with --exclude and --max-depth, its crawl.json then lost or cut short: verify's
    line, and the one-line refusal of export and of a plain --resume, name crawl --resume
    --repair, which gives the settings back from the warcinfo records (the excluded page and the
    one past the depth still not fetched) and verify then passes."""
    site.page("/", links=["/a", "/private/x", "/deep"])
    site.page("/a").page("/private/x").page("/deep", links=["/deeper"]).page("/deeper")
    await site.start()
    root = (await run_crawl(site.url("/"), exclude=("/private/",), max_depth=1)).snapshot.root
    before = json.loads((root / "crawl.json").read_text())["settings"]
    hits = dict(site.hits)
    assert "/private/x" not in hits and "/deeper" not in hits
    damage(root)

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1
    assert f"archiver crawl --resume {root} --repair" in problem_lines(verified.stdout)["missing_settings"], (
        verified.stdout
    )
    wacz = str(root.parent / "snap.wacz")
    for command in (
        ["export", str(root), "--wacz", wacz],
        ["crawl", "--resume", str(root)],
    ):
        refused = await asyncio.to_thread(run_archiver, *command)
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert f"archiver crawl --resume {root} --repair" in refused.stderr

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    assert "its settings are given back from the WARC files" in repaired.stderr
    after = json.loads((root / "crawl.json").read_text())["settings"]
    assert {k: v for k, v in after.items() if k != "output"} == {
        k: v for k, v in before.items() if k != "output"
    }
    assert Path(after["output"]).resolve() == root.resolve()
    assert dict(site.hits) == hits
    if damage is cut:
        assert len(list(root.glob("crawl.json.damaged-*"))) == 1
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


async def test_warc_files_that_name_no_settings_are_refused_in_one_line(tmp_path: Path) -> None:
    """A snapshot whose WARC file's warcinfo names no settings (as an older archiver wrote it)
    and whose crawl.json is lost: --repair says in one line that nothing gives them back."""
    root = tmp_path / "snap"
    (root / "warc").mkdir(parents=True)
    capture = Capture(
        "http://h/", datetime(2026, 1, 2, tzinfo=UTC), "GET / HTTP/1.1", [], "200 OK", "HTTP/1.1",
        [("Content-Type", "text/plain")], io.BytesIO(b"hi"), 2, "sha1:YIVV7ELYGQTASQUNN5I3FRNPJQF542SC",
    )  # fmt: skip
    info = crawl_info("archiver", ["http://h/"], "archiver")
    with WarcFiles(root / "warc", "archiver", 10**9, info=info) as warcs:
        warcs.write_capture(capture)

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 2 and len(repaired.stderr.splitlines()) == 1, repaired.stderr
    assert "names the crawl's settings" in repaired.stderr
    assert not (root / "crawl.json").exists()
