"""A WACZ's CDXJ blocks are cut where ReplayWeb.page finds every line: it picks a block by a key
of its own (warcio.js getSurt), which keeps a folder's final slash and the escapes pywb's key
undoes, so a block cut where the two orders disagree hid a page from it."""

from __future__ import annotations

import bisect
import gzip
import io
import itertools
import json

import pytest

from archiver.export.zipnum import replay_lookup_key, write_blocks
from archiver.surt import surt

REPLAYWEBPAGE_KEYS = [
    # getSurt of warcio.js 2.4 (which ReplayWeb.page 2.5 bundles), run on each URL.
    ("http://h/a/", "h)/a/"),
    ("http://h/a-b", "h)/a-b"),
    ("http://h/a.html", "h)/a.html"),
    ("http://h/a", "h)/a"),
    ("http://h/%7Euser/", "h)/%7euser/"),
    ("http://h/~z", "h)/~z"),
    ("http://h/b//c", "h)/b//c"),
    ("http://h/b/c", "h)/b/c"),
    ("http://h/search?q=a%20b&page=2", "h)/search?page=2&q=a%20b"),
    ("http://h/q?a.b=1&a=2", "h)/q?a.b=1&a=2"),
    ("http://h/caf%C3%A9/", "h)/caf%c3%a9/"),
    ("http://www.Example.com:8080/Docs/?b=2&a=1", "com,example:8080)/docs/?a=1&b=2"),
    ("http://[::1]:8000/x/", "[::1]:8000)/x/"),
    ("urn:dom:http://h/a/", "urn:dom:http://h/a/"),
]


@pytest.mark.parametrize(("url", "key"), REPLAYWEBPAGE_KEYS)
def test_the_key_replaywebpage_looks_a_url_up_by(url, key):
    assert replay_lookup_key(url) == key


def blocks_replaywebpage_reads(labels: list[str], key: str) -> set[int]:
    """The blocks ReplayWeb.page reads to look up the URL it keys ``key`` (wabac.js
    loadCDXFromIDX): the last whose label sorts before ``key + " 9999"``, those before it while
    their label starts with the key without its query, and the first sorting at or after ``key``."""
    read = set()
    last = bisect.bisect_left(labels, key + " 9999") - 1
    while last >= 0:
        read.add(last)
        if not labels[last].split(" ")[0].startswith(key.split("?")[0]):
            break
        last -= 1
    after = bisect.bisect_left(labels, key)
    if after < len(labels):
        read.add(after)
    return read


def cdxj(url: str, timestamp: str) -> str:
    return f"{surt(url)} {timestamp} {json.dumps({'url': url, 'status': '200'})}"


def index_of(urls: list[str]) -> list[str]:
    """The sorted index of ``urls``, the first two captured twice (a re-archive's original and revisit)."""
    lines = [cdxj(url, "20260101000000") for url in urls]
    lines += [cdxj(url, "20260202000000") for url in urls[:2]]
    return sorted(lines)


def written(lines: list[str], lines_per_block: int) -> tuple[list[str], list[list[str]]]:
    """The labels of the .idx and the lines of each block, as ``write_blocks`` wrote them."""
    out = io.BytesIO()
    idx = write_blocks(lines, out, lines_per_block=lines_per_block)
    data = out.getvalue()
    labels, blocks = [], []
    for line in idx[1:]:
        label, entry = line.split(" {", 1)
        where = json.loads("{" + entry)
        labels.append(label)
        blocks.append(
            gzip.decompress(data[where["offset"] : where["offset"] + where["length"]]).decode().splitlines()
        )
    return labels, blocks


@pytest.mark.parametrize("lines_per_block", [1, 2, 3, 5])
def test_replaywebpage_reads_the_block_of_each_line(lines_per_block):
    urls = [url for url, _ in REPLAYWEBPAGE_KEYS if not url.startswith("urn:")]
    lines = index_of(urls)
    labels, blocks = written(lines, lines_per_block)
    # pywb's view: the lines in their order, each block labelled by its first line.
    assert list(itertools.chain.from_iterable(blocks)) == lines
    assert labels == [block[0].split(" {")[0] for block in blocks]
    assert len(blocks) > 1
    keys = dict(REPLAYWEBPAGE_KEYS)
    for number, block in enumerate(blocks):
        for line in block:
            url = json.loads(line.split(" ", 2)[2])["url"]
            assert number in blocks_replaywebpage_reads(labels, keys[url]), (url, labels)


def test_a_folder_ending_a_block_is_found_and_blocks_stay_small():
    """The common case: /a/ (pywb's key /a) ends a block, /a-b would start the next; the cut
    moves one line on, and blocks keep their size elsewhere."""
    urls = [f"http://h/0/{n:04d}.png" for n in range(9)] + ["http://h/a/", "http://h/a-b", "http://h/b"]
    labels, blocks = written(sorted(cdxj(url, "20260101000000") for url in urls), 10)
    assert [len(block) for block in blocks] == [11, 1]
    assert 0 in blocks_replaywebpage_reads(labels, "h)/a/")
