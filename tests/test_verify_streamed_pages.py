"""verify's reading of large mirror pages, parsed as a stream: in the encoding a browser reads
the file in, with its start tags crowded with attributes thinned, whatever that encoding."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

import archiver.html_stream
from archiver.crowded_tags import MAX_NAMES, READ_NAMES
from archiver.store.snapshot import Snapshot
from archiver.verify.mirror_links import STREAM_HTML_FROM
from archiver.verify.verifier import mirror_checks

ATTRIBUTES = 2_000
"""Attributes of the crowded tag: 30 times MAX_NAMES, few enough that libxml2 reads them all in
a moment when they do reach it."""


def _crowded_page() -> str:
    """A page of one crowded <a>, then text enough to be read as a stream."""
    names = " ".join(f"data-n{number}=v" for number in range(ATTRIBUTES))
    text = "<p>" + "words " * 100 + "</p>"
    filler = text * (STREAM_HTML_FROM // len(text))
    return f'<!doctype html><title>crowded</title><p><a {names} href="/after">after</a></p>{filler}'


def _fed_to_libxml2(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Where the chunks the stream reader gives libxml2 are gathered."""
    fed: list[bytes] = []
    chunks = archiver.html_stream._chunks

    def gathered(source: object) -> Iterator[bytes]:
        for chunk in chunks(source):
            fed.append(bytes(chunk))
            yield chunk

    monkeypatch.setattr(archiver.html_stream, "_chunks", gathered)
    return fed


@pytest.mark.parametrize("charset", ["utf-16-le", "utf-16-be"])
async def test_a_crowded_tag_of_a_utf16_mirror_page_reaches_libxml2_thinned(
    site, run_crawl, monkeypatch: pytest.MonkeyPatch, charset: str
) -> None:
    """libxml2 compares each attribute of a tag with every one before it: a UTF-16 page given to
    it as it is, the thinning (which reads markup as ASCII) missed its tags, and one tag of
    100,000 attributes held verify for minutes (counted here, not timed)."""
    bom = "\ufeff".encode(charset)
    site.file("/", bom + _crowded_page().encode(charset), "text/html")
    site.page("/after")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    mirrored = next((root / "mirror").rglob("index.html"))
    assert mirrored.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")  # kept in UTF-16, with its mark
    assert mirrored.stat().st_size > STREAM_HTML_FROM
    fed = _fed_to_libxml2(monkeypatch)
    report = mirror_checks(Snapshot(root))
    assert report.ok, report.render_text(str(root))
    given = b"".join(fed).decode("utf-8")
    tag = re.search(r"<a [^>]*>", given)
    assert tag is not None, "the page's <a> never reached libxml2 as UTF-8"
    assert MAX_NAMES <= tag.group().count("=") <= MAX_NAMES + len(READ_NAMES)
    assert 'href="after.html"' in tag.group()
    assert report.stats["mirror links"] >= 1
