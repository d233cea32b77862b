"""A stylesheet read in its page's encoding: when the page's record is damaged, the one command
verify names mends the snapshot in one run."""

from __future__ import annotations

import asyncio

from conftest import manifest_rows
from repairs import run_archiver
from test_repair_named import problem_lines
from test_verify_mends import named_command
from test_verify_tamper import edit_record_of, server_blanked


async def test_a_page_whose_stylesheet_was_read_in_its_encoding_is_mended_in_one_repair(site, run_crawl):
    # The stylesheet names no encoding: its URLs are read in the page's, windows-1252. The page's
    # record damaged, verify cannot read them (unknown_encoding) and names the repair, which
    # fetches the page again: once is enough, the stylesheet's links found in it as the crawl
    # found them.
    site.file("/", b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>', "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    assert manifest_rows(root)[site.url("/caf%C3%A9.png")].status == 200
    edit_record_of(root, site.url("/"), server_blanked(b"\xe9<", b"\xe8<"))

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
