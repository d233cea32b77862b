"""A stylesheet read in its page's encoding: when the page's record is damaged, the one command
verify names mends the snapshot in one run."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Site, manifest_rows
from repairs import run_archiver
from test_repair_named import problem_lines
from test_verify_mends import named_command
from test_verify_tamper import edit_record_of, server_blanked


def keep_the_rows(root: Path, site: Site) -> None:
    """The manifest as the crawl wrote it."""


def drop_a_row(root: Path, site: Site) -> None:
    """Another page's row deleted: the manifest disagrees with the WARC files, and the repair
    writes it again while the page's record is still damaged."""
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        assert db.execute("DELETE FROM urls WHERE url = ?", (site.url("/other.html"),)).rowcount == 1
    db.close()


@pytest.mark.parametrize("also", [keep_the_rows, drop_a_row], ids=["record", "record and row"])
async def test_a_page_whose_stylesheet_was_read_in_its_encoding_is_mended_in_one_repair(
    site, run_crawl, also: Callable[[Path, Site], None]
):
    # The stylesheet names no encoding: its URLs are read in the page's, windows-1252. The page's
    # record damaged, verify cannot read them (unknown_encoding) and names the repair, which
    # fetches the page again: once is enough, the stylesheet found on the page again (its
    # parent, the page whose encoding it is read in) whether the manifest is kept or written
    # again from the WARC files.
    page = b'<link rel=stylesheet href="l.css"><a href="other.html">o</a><p>caf\xe9</p>'
    site.file("/", page, "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    site.file("/other.html", b"<p>other</p>", "text/html")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    assert manifest_rows(root)[site.url("/caf%C3%A9.png")].status == 200
    edit_record_of(root, site.url("/"), server_blanked(b"\xe9<", b"\xe8<"))
    also(root, site)

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    lines = problem_lines(verified.stdout)
    assert verified.returncode == 1 and "unknown_encoding" in lines, verified.stdout
    mended = await asyncio.to_thread(run_archiver, *named_command(lines["unknown_encoding"]))
    assert mended.returncode == 0, mended.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
    rows = manifest_rows(root)
    assert rows[site.url("/l.css")].parent == site.url("/")
    assert not [url for url in rows if "%EF%BF%BD" in url]
