"""Snapshots an earlier version of archiver wrote stay complete, browsable and resumable.

tests/data/escaped-later is a crawl of a four-file site on 127.0.0.1:8173, stopped by
--max-pages 3, made before the characters no URI holds were escaped in URLs: its manifest,
WARC and index keep /a|b.html and /i[1].png as the home page wrote them, where normalize_url()
now gives /a%7Cb.html and /i%5B1%5D.png; /next.html, which links to both, is skipped at the
page limit. Each command looks a URL up in the form it has now, then in the earlier one.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import manifest_rows

from archiver import cli
from archiver.mirror.build import build_mirror
from archiver.urls import earlier_form, is_earlier_form, normalize_url
from archiver.verify.verifier import verify_snapshot
from archiver.warc.cdxj import marked_keyed

EARLIER = Path(__file__).parent / "data" / "escaped-later"
PORT = 8173
HOME = f"http://127.0.0.1:{PORT}/"


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    root = tmp_path / "snap"
    shutil.copytree(EARLIER, root)
    return root


def test_the_snapshot_is_what_an_earlier_version_wrote(earlier):
    with sqlite3.connect(earlier / "manifest.sqlite3") as db:
        urls = {url for (url,) in db.execute("SELECT url FROM urls")}
    assert {HOME + "a|b.html", HOME + "i[1].png", HOME + "next.html"} <= urls
    assert all(is_earlier_form(url) == ("|" in url or "[" in url) for url in urls)
    assert normalize_url(HOME + "a|b.html") == HOME + "a%7Cb.html"
    assert earlier_form(HOME + "a%7Cb.html") == HOME + "a|b.html"


def test_verify_finds_a_complete_snapshot_of_an_earlier_version_complete(earlier):
    """Its links, extracted again, are escaped now: they were reported as links of the home page
    the manifest does not hold."""
    report = verify_snapshot(earlier)
    assert report.ok, report.problems


def test_a_mirror_rebuilt_from_an_earlier_snapshot_links_its_pages_locally(earlier):
    """Its links led to the live site: the rebuilt home page found no row of their URLs."""
    build_mirror(earlier)
    home = (earlier / "mirror" / f"127.0.0.1+{PORT}" / "index.html").read_text()
    assert home.startswith('<a href="a%257Cb.html">x</a><img src="i%5B1%5D.png">'), home
    assert verify_snapshot(earlier).ok


async def test_a_resumed_crawl_of_an_earlier_snapshot_fetches_nothing_twice(earlier, site, run_crawl):
    """Resumed with a higher --max-pages, the crawl fetches /next.html, whose links (escaped now)
    name the two files the earlier crawl holds: they were fetched again, a second row each."""
    site.file("/", '<a href="/a|b.html">x</a><img src="/i[1].png"><a href="/next.html">n</a>')
    site.file("/next.html", '<a href="/a|b.html">again</a><img src="/i[1].png">')
    for path in ("/a%7Cb.html", "/i%5B1%5D.png"):
        site.file(path, "archived already")
    await site.start(port=PORT)
    await run_crawl(HOME, output=earlier, resume=True, max_pages=10, concurrency=1)
    assert site.hits == {"/next.html": 1}
    rows = manifest_rows(earlier)
    assert rows[HOME + "next.html"].outcome == "fetched"
    assert not {HOME + "a%7Cb.html", HOME + "i%5B1%5D.png"} & set(rows)
    assert verify_snapshot(earlier).ok


def earlier_surt(url: str) -> str:
    """The CDXJ key an earlier version gave a URL: its path lowercased with a trailing slash
    kept, its arguments sorted as text (pywb, keying by the surt package, looks neither up)."""
    parts = urlsplit(url)
    key = ",".join(reversed((parts.hostname or "").split("."))) + f":{parts.port}"
    query = "&".join(sorted(parts.query.split("&"))).lower() if parts.query else ""
    return f"{key}){(parts.path or '/').lower()}" + (f"?{query}" if query else "")


async def test_an_index_an_earlier_version_keyed_is_keyed_again_by_archiver_mirror(site, run_crawl, capsys):
    """An index keyed by an earlier version (/dir/ where pywb looks up /dir, arguments sorted as
    text): verify says which command keys it again, and archiver mirror does."""
    site.page("/", links=["/dir/", "/p?b=1&a=2&a10=3"])
    site.page("/dir/")
    site.page("/p")
    await site.start()
    result = await run_crawl(site.url("/"))
    root = result.snapshot.root
    index = root / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines()
    earlier = sorted(
        f"{earlier_surt(json.loads(line.split(' ', 2)[2])['url'])} {line.split(' ', 1)[1]}" for line in lines
    )
    assert len(set(earlier) - set(lines)) == 2  # /dir/ and the query are keyed otherwise
    index.write_text("".join(line + "\n" for line in earlier))

    report = verify_snapshot(root)
    assert set(report.counts) == {"cdxj_mismatch"}, report.counts
    details = [problem.detail for problem in report.examples["cdxj_mismatch"]]
    assert len(details) == 2, details
    assert all(
        f"(pywb looks it up by that; key the index again with: archiver mirror {root})" in d for d in details
    )

    # Packed as it is, its index is keyed as ReplayWeb.page looks its URLs up.
    assert cli.main(["export", str(root), "--wacz", str(root.parent / "x.wacz")]) == 0
    with zipfile.ZipFile(root.parent / "x.wacz") as wacz:
        assert gzip.decompress(wacz.read("indexes/index.cdx.gz")).decode().splitlines() == lines
    assert index.read_text().splitlines() == earlier

    assert cli.main(["mirror", str(root)]) == 0
    assert "; 2 index lines keyed again as pywb looks them up" in capsys.readouterr().out
    assert index.read_text().splitlines() == lines
    assert verify_snapshot(root).ok


async def test_archiver_mirror_reads_no_line_of_an_index_this_version_keyed(site, run_crawl, capsys):
    """The crawl's index is marked keyed as this version keys it: archiver mirror does not read
    its lines to look for an earlier version's (a pass over every line, seconds for 100,000),
    until the file changes: then it reads it once, keys what is keyed otherwise, and marks it."""
    site.page("/", links=["/dir/"])
    site.page("/dir/")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    index = root / "indexes" / "index.cdxj"
    assert marked_keyed(index)
    current = index.read_text()
    line = next(line for line in current.splitlines() if '"url": "' + site.url("/dir/") in line)
    old_key = earlier_surt(site.url("/dir/"))
    otherwise = current.replace(line, f"{old_key} {line.split(' ', 1)[1]}")
    assert otherwise != current

    # The same size (a space less in its JSON), time and inode as the file marked: the mark
    # vouches for it, no line is read.
    excess = len(otherwise) - len(current)
    padded = current.replace(line, f"{old_key} {line.split(' ', 1)[1].replace(', ', ',', excess)}")
    assert len(padded) == len(current) and padded != current
    standing = index.stat()
    with open(index, "r+") as same_file:
        same_file.write(padded)
    os.utime(index, ns=(standing.st_atime_ns, standing.st_mtime_ns))
    assert cli.main(["mirror", str(root)]) == 0
    assert "index lines keyed again" not in capsys.readouterr().out
    assert index.read_text() == padded

    index.write_text(otherwise)  # changed as anything changes it: read, keyed again, marked
    assert not marked_keyed(index)
    assert cli.main(["mirror", str(root)]) == 0
    assert "; 1 index lines keyed again as pywb looks them up" in capsys.readouterr().out
    assert index.read_text() == current and marked_keyed(index)
