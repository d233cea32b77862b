"""Readers of a snapshot after its crawl take what they read only once it is checked, and read
what they need of it alone.

The tests change bytes of records in place (their gzip members compressed again, so only their
digests or CRC tell, as in an uncompressed WARC file) and show that each reader treats the
record as damaged instead of taking the changed bytes, and does not refuse what does not
depend on them.
"""

from __future__ import annotations

import base64
import gzip
import random
import struct
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conftest import manifest_rows
from snapshot_builder import MOMENT, SnapshotBuilder
from test_verify_tamper import edit_in_place, server_blanked

from archiver import cli
from archiver.crawling.stored_answers import StoredAnswers
from archiver.store.snapshot import Snapshot
from archiver.verify.verifier import verify_snapshot
from archiver.warc.dom import RenderedDom, dom_record
from archiver.warc.members import CHUNK
from archiver.warc.reader import WHOLE_READ_BYTES

GZIPPED = gzip.compress(b"the same bytes, stored twice" * 20, mtime=0)


def _mirrored_after_an_edit(
    root: Path, url: str, edit: tuple[bytes, bytes], capsys: Any
) -> tuple[set[str], str]:
    """Change bytes of the record of ``url`` (``edit``: what, into what; the Server header blanked so
    that the record stays as long), rebuild the mirror (which exits 1: it keeps files), and return
    the URLs whose crawl's files it kept, and what it printed."""
    row = manifest_rows(root)[url]
    assert row.warc_offset is not None and row.warc_length is not None
    edit_in_place(root / "warc" / str(row.warc_file), row.warc_offset, row.warc_length, server_blanked(*edit))
    assert cli.main(["mirror", str(root)]) == 1
    out = capsys.readouterr().out
    return {line.split(": kept ")[0].strip() for line in out.splitlines() if ": kept " in line}, out


async def test_a_changed_head_of_a_payload_captured_twice_does_not_share_its_file(
    site: Any, run_crawl: Any, capsys: Any
) -> None:
    """Two captures of one stored payload share a mirror file only under one Content-Encoding.
    The mirror build reads that of the first capture from its record: changed there (the gzip
    it was sent with renamed away), it must not be taken as the second's (none), which would
    give the second the first's file: the first is damage, and the second gets its own."""
    site.page("/", links=["/a.bin", "/b.bin"])
    site.file("/a.bin", GZIPPED, "application/octet-stream", headers={"Content-Encoding": "gzip"})
    site.file("/b.bin", GZIPPED, "application/octet-stream")
    await site.start()
    root = (await run_crawl(site.url("/"), concurrency=1)).snapshot.root
    rows = manifest_rows(root)
    first, second = rows[site.url("/a.bin")], rows[site.url("/b.bin")]
    assert first.record_type == "response" and second.record_type == "revisit"
    assert first.local_path != second.local_path
    _kept, out = _mirrored_after_an_edit(
        root, first.url, (b"Content-Encoding: gzip", b"Content-Encodinx: gzip"), capsys
    )
    assert f"{first.url}: kept mirror/{first.local_path} as the crawl wrote it" in out, out
    rebuilt = manifest_rows(root)[second.url]
    assert rebuilt.local_path == second.local_path
    assert (root / "mirror" / str(rebuilt.local_path)).read_bytes() == GZIPPED


def member_read_in_part(warc: Path, offset: int, length: int, old: bytes, new: bytes) -> None:
    """The gzip member at ``offset`` of ``warc`` (``length`` bytes) written again with ``old``
    replaced by ``new`` but the CRC of the bytes it held, in stored deflate blocks after a
    comment that puts its end just past a multiple of the reader's CHUNK: a reader that stops
    at the record's last byte has all of it from whole chunks and has not met the CRC, the one
    check of the WARC headers. The bytes after the member move with it."""
    data = warc.read_bytes()
    inflated = gzip.decompress(data[offset : offset + length])
    deflate = zlib.compressobj(0, zlib.DEFLATED, -15)
    body = deflate.compress(inflated.replace(old, new, 1)) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(inflated), len(inflated))
    comment = (PAST_A_CHUNK - 10 - 1 - len(body) - len(trailer)) % CHUNK
    member = b"\x1f\x8b\x08\x10" + bytes(6) + b" " * comment + b"\x00" + body + trailer
    assert len(member) % CHUNK == PAST_A_CHUNK
    warc.write_bytes(data[:offset] + member + data[offset + length :])


PAST_A_CHUNK = 6
"""Bytes of the member's trailer that member_read_in_part() leaves past a multiple of CHUNK."""


async def test_a_browser_is_not_answered_from_a_large_record_whose_crc_fails(
    site: Any, run_crawl: Any
) -> None:
    """A record past WHOLE_READ_BYTES is read streamed, and its gzip member's CRC may be met
    only past its block: its WARC-Record-ID changed (which the rendered DOM's record names) is
    not handed on as the capture's, but the record is damage and the answer is none."""
    blob = random.Random(0).randbytes(WHOLE_READ_BYTES + 4096)
    site.file("/blob.bin", blob, "application/octet-stream")
    await site.start()
    root = (await run_crawl(site.url("/blob.bin"), sitemaps=False)).snapshot.root
    row = manifest_rows(root)[site.url("/blob.bin")]
    assert row.warc_offset is not None and row.warc_length is not None
    assert row.warc_length > WHOLE_READ_BYTES
    answers = StoredAnswers(Snapshot(root))
    try:
        intact = await answers.answer(row)
    finally:
        answers.close()
    assert intact is not None and intact.body == blob and intact.record_id
    old_id = intact.record_id.encode()
    assert old_id.startswith(b"<urn:uuid:")
    new_id = old_id[:10] + (b"1" if old_id[10:11] == b"0" else b"0") + old_id[11:]
    member_read_in_part(root / "warc" / str(row.warc_file), row.warc_offset, row.warc_length, old_id, new_id)
    answers = StoredAnswers(Snapshot(root))
    try:
        assert await answers.answer(row) is None
    finally:
        answers.close()


async def test_a_browser_is_not_answered_from_a_record_that_does_not_parse(site: Any, run_crawl: Any) -> None:
    """A record whose WARC head no longer parses (its version line changed, its CRC made to
    match) is no answer, as a damaged one is: not an error out of the browser's request."""
    site.file("/style.css", "body { color: red }", "text/css")
    await site.start()
    root = (await run_crawl(site.url("/style.css"), sitemaps=False)).snapshot.root
    row = manifest_rows(root)[site.url("/style.css")]
    assert row.warc_offset is not None and row.warc_length is not None
    edit_in_place(
        root / "warc" / str(row.warc_file),
        row.warc_offset,
        row.warc_length,
        server_blanked(b"WARC/1.1", b"WARX/1.1"),
    )
    answers = StoredAnswers(Snapshot(root))
    try:
        assert await answers.answer(row) is None
    finally:
        answers.close()


async def test_a_stylesheet_that_names_its_encoding_is_mirrored_without_its_referrer(
    site: Any, run_crawl: Any, capsys: Any
) -> None:
    """The page that refers to three stylesheets is damaged since the crawl. The one that names
    no encoding is read in the page's, which is not known: its crawl's file is kept. Those that
    name theirs (an @charset rule, a Content-Type charset) do not depend on the page: they are
    mirrored from their records."""
    page = b'<link rel=stylesheet href="a.css"><link rel=stylesheet href="b.css">'
    page += b'<link rel=stylesheet href="c.css"><p>caf\xe9</p>'
    site.file("/", page, "text/html; charset=windows-1252")
    site.file("/a.css", b'@charset "windows-1252"; a{background:url(caf\xe9.png)}', "text/css")
    site.file("/b.css", b"b{background:url(caf\xe9.png)}", "text/css; charset=windows-1252")
    site.file("/c.css", b"c{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    kept, out = _mirrored_after_an_edit(root, site.url("/"), (b"\xe9<", b"\xe8<"), capsys)
    assert kept == {site.url("/"), site.url("/c.css")}, out


async def test_a_stylesheet_imported_by_one_that_names_its_encoding_does_not_need_the_page(
    site: Any, run_crawl: Any, capsys: Any
) -> None:
    """The page is damaged since the crawl; its stylesheet names its encoding and @imports one
    that names none, read in the importing stylesheet's: neither depends on the page, and both
    are mirrored from their records (verify checks the imported one's links too)."""
    site.file("/", b'<link rel=stylesheet href="a.css"><p>caf\xe9</p>', "text/html; charset=windows-1252")
    site.file("/a.css", b'@charset "windows-1252"; @import "d.css"; a{color:red}', "text/css")
    site.file("/d.css", b"d{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    assert manifest_rows(root)[site.url("/caf%C3%A9.png")].status == 200
    kept, out = _mirrored_after_an_edit(root, site.url("/"), (b"\xe9<", b"\xe8<"), capsys)
    assert kept == {site.url("/")}, out
    report = verify_snapshot(root)
    assert "unknown_encoding" not in report.counts, report.render_text(str(root))


async def test_a_file_cut_inside_an_earlier_capture_is_resumed_from_that_capture(
    site: Any, run_crawl: Any
) -> None:
    """A WARC file cut short (since the crawl) inside the request of a capture that is not its
    last: resume cuts it back to that capture's start and fetches it again, with those after
    it, rather than keep its response alone; verify then finds the snapshot whole."""
    site.page("/", links=["/a", "/b", "/c"])
    for path in ("/a", "/b", "/c"):
        site.page(path)
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False, concurrency=1)).snapshot.root
    pages = sorted(
        (row for url, row in manifest_rows(root).items() if url != site.url("/robots.txt")),
        key=lambda row: row.warc_offset or 0,
    )
    torn = pages[1]
    assert len({row.warc_file for row in pages}) == 1 and torn.warc_offset is not None
    assert torn.warc_length is not None and torn.warc_offset < (pages[-1].warc_offset or 0)
    warc = root / "warc" / str(torn.warc_file)
    with warc.open("r+b") as file:  # inside its request, which follows its response
        file.truncate(torn.warc_offset + torn.warc_length + 10)
    fetched_before = site.hits[urlsplit(torn.url).path]
    await run_crawl(site.url("/"), output=root, resume=True, sitemaps=False, concurrency=1)
    assert site.hits[urlsplit(torn.url).path] == fetched_before + 1
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


def test_a_large_rendered_dom_whose_crc_fails_is_not_mirrored(tmp_path: Path, capsys: Any) -> None:
    """A rendered DOM past WHOLE_READ_BYTES is read streamed; its WARC-Page-Charset (the
    encoding the page's links are written in) changed, only the CRC tells: the mirror does
    not rewrite the page under it, but says the record cannot be read and exits 1."""
    snap = SnapshotBuilder(tmp_path / "snap")
    page = snap.page("http://site.test/", "<p>shell</p>")
    text = base64.b64encode(random.Random(0).randbytes(WHOLE_READ_BYTES + 4096)).decode()
    dom = RenderedDom(page.url, MOMENT, f"<html><body><p>{text}</p></body></html>".encode(), "Shift_JIS")
    location = snap.warcs.write_member(dom_record(dom, snap.warcs.make_id()))
    snap.manifest.set_render(page.url, "always", None, location)
    root = snap.close()
    warc_file, offset, length = location
    assert length > WHOLE_READ_BYTES
    assert cli.main(["mirror", str(root)]) == 0
    capsys.readouterr()
    member_read_in_part(root / "warc" / warc_file, offset, length, b"Shift_JIS", b"EUC-JP")
    assert cli.main(["mirror", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"{page.url}: " in out and "gzip data does not decompress" in out, out


def _page_past_the_decode_limit() -> bytes:
    """A gzipped page that decodes past the 32 MiB the crawl, verify and the mirror read of it,
    with bytes past that which do not compress: its record is not read to its end with its body."""
    page = '<!doctype html><title>café</title><a href="/a">a</a>'.encode() + b"<p>filler</p>" * (3 << 20)
    return gzip.compress(page + b"<!--" + random.Random(0).randbytes(1 << 20) + b"-->", mtime=0)


async def test_a_page_past_the_decode_limit_whose_head_changed_is_not_mirrored_from_it(
    site: Any, run_crawl: Any, capsys: Any
) -> None:
    """A page the mirror rewrites from the first 32 MiB it decodes: its record's head changed
    since (its charset, only its digests tell, at the end of the record, never reached). The
    mirror rewrote the page from it in the charset it now says; it keeps the file the crawl wrote,
    says the record cannot be read, and exits 1."""
    headers = {"Content-Encoding": "gzip"}
    site.file("/", _page_past_the_decode_limit(), "text/html; charset=utf-8", headers=headers)
    site.page("/a")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    row = manifest_rows(root)[site.url("/")]
    assert row.warc_file and row.warc_offset is not None and row.warc_length and row.local_path
    written = (root / "mirror" / row.local_path).read_bytes()
    edit_in_place(
        root / "warc" / row.warc_file,
        row.warc_offset,
        row.warc_length,
        lambda record: record.replace(b"charset=utf-8", b"charset=cp866", 1),
    )
    capsys.readouterr()
    assert cli.main(["mirror", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"{site.url('/')}: kept mirror/{row.local_path} as the crawl wrote it" in out, out
    assert (root / "mirror" / row.local_path).read_bytes() == written
