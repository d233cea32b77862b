"""Facts verify compares: a row's with its WARC record and the other rows, a record's with the
record beside it. Each one edited is found, named where it is, and the command its line names
mends it (the manifest written again from the WARC files, or the capture fetched again), after
which verify passes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Site
from repairs import run_archiver
from test_repair_named import problem_lines
from test_verify_mends import edit_manifest, named_command, original, site, snapshot

__all__ = ["original", "site", "snapshot"]  # the fixtures, shared with test_verify_mends

pytestmark = pytest.mark.asyncio(loop_scope="module")


def redirect_elsewhere(root: Path, site: Site) -> None:
    """The redirect's row names another archived page as its next URL (and final one) than its
    record's Location: the mirror would link the redirect to that page."""
    edit_manifest(
        root,
        "UPDATE urls SET redirect_to = ?, final_url = ? WHERE url = ?",
        *[site.url("/sub/b")] * 2,
        site.url("/old"),
    )


def end_the_chain_elsewhere(root: Path, site: Site) -> None:
    """The redirect's final URL names another archived page than its chain ends at."""
    edit_manifest(root, "UPDATE urls SET final_url = ? WHERE url = ?", site.url("/sub/b"), site.url("/old"))


def lose_the_chain_end(root: Path, site: Site) -> None:
    """The redirect's final URL emptied: index.html would say it leads nowhere."""
    edit_manifest(root, "UPDATE urls SET final_url = NULL WHERE url = ?", site.url("/old"))


def redirect_a_page(root: Path, site: Site) -> None:
    """A page answered 200 is said to redirect, and to end at another page."""
    edit_manifest(
        root,
        "UPDATE urls SET redirect_to = ?, final_url = ? WHERE url = ?",
        *[site.url("/sub/b")] * 2,
        site.url("/a"),
    )


def end_a_page_elsewhere(root: Path, site: Site) -> None:
    """A page that is no redirect is given a final URL."""
    edit_manifest(root, "UPDATE urls SET final_url = ? WHERE url = ?", site.url("/sub/b"), site.url("/a"))


REPAIR = "crawl --resume {} --repair"

MENDED: list[tuple[Callable[[Path, Site], None], tuple[str, ...], str]] = [
    (redirect_elsewhere, ("wrong_redirect",), REPAIR),
    (end_the_chain_elsewhere, ("wrong_redirect",), REPAIR),
    (lose_the_chain_end, ("wrong_redirect",), REPAIR),
    (redirect_a_page, ("wrong_redirect",), REPAIR),
    (end_a_page_elsewhere, ("wrong_redirect",), REPAIR),
]
"""Each damage, the kinds of problem verify finds in it, and the command their lines name."""


@pytest.mark.parametrize(
    ("damage", "kinds", "command"), MENDED, ids=[damage.__name__ for damage, _kinds, _command in MENDED]
)
async def test_a_row_fact_that_is_not_so_is_found_and_mended(
    snapshot: Path, site: Site, damage: Callable[[Path, Site], None], kinds: tuple[str, ...], command: str
) -> None:
    """Before, verify passed these rows (a redirect's next or final URL not its record's, a page
    said to redirect), and the mirror built from them linked the wrong page. Now each is a
    problem of its kind, whose line names the command that mends it; run as written, it does,
    and verify passes."""
    damage(snapshot, site)
    verified = await asyncio.to_thread(run_archiver, "verify", str(snapshot))
    assert verified.returncode == 1, verified.stdout
    lines = problem_lines(verified.stdout)
    assert set(lines) == set(kinds), verified.stdout
    named = {tuple(named_command(lines[kind])) for kind in kinds}
    assert named == {tuple(command.format(snapshot).split())}, verified.stdout

    (args,) = named
    mended = await asyncio.to_thread(run_archiver, *args)
    assert mended.returncode in (0, 4), mended.stderr  # 4: as the crawl, /missing answers 404
    verified = await asyncio.to_thread(run_archiver, "verify", str(snapshot))
    assert verified.returncode == 0, verified.stdout
