"""archiver verify on a snapshot damaged by hand, one way at a time: each damage is named precisely
(which file, record or row, what is wrong), with exit 1 and never a traceback.

One crawl of test_verify's site serves every case: each test damages its own copy.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import os
import re
import shutil
import sqlite3
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Site, in_linear_time, manifest_rows
from test_verify import build_site, row_for, sql

from archiver import cli
from archiver.config import CrawlConfig
from archiver.crawling.resume import recover
from archiver.crawling.run import crawl
from archiver.mirror.build import build_mirror
from archiver.store.crawl_record import CrawlRecord
from archiver.store.manifest import Manifest
from archiver.store.rows import QUEUED, ManifestRow
from archiver.store.schema import LATER_COLUMNS
from archiver.store.snapshot import Snapshot
from archiver.verify import verifier
from archiver.verify.verifier import verify_snapshot
from archiver.warc.cdxj import merge_into_index


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished crawl of the test site, its mirror built (small WARC files: several members each)."""
    root = tmp_path_factory.mktemp("crawled") / "snap"

    async def run() -> None:
        site = Site()
        build_site(site)
        await site.start()
        try:
            config = CrawlConfig(
                seeds=(site.url("/"),), output=root, warc_max_size=4096, max_tries=2, retry_base_delay=0.01
            )
            await crawl(config, resume=False)
        finally:
            await site.close()

    asyncio.run(run())
    build_mirror(root)
    return root


@pytest.fixture
def snap(crawled: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "snap"
    shutil.copytree(crawled, copy)
    return copy


def members(path: Path) -> list[int]:
    """Offsets of the gzip members of ``path``, and its size last."""
    data = path.read_bytes()
    offsets = [0]
    while offsets[-1] < len(data):
        inflate = zlib.decompressobj(31)
        inflate.decompress(data[offsets[-1] :])
        offsets.append(len(data) - len(inflate.unused_data))
    return offsets


def gunzip_the_warcs(root: Path) -> None:
    """Each WARC file of the snapshot uncompressed, as a user may gunzip one (foo.warc.gz becomes
    foo.warc), its rows naming their records where they are now."""
    db = sqlite3.connect(root / "manifest.sqlite3")
    for warc in sorted((root / "warc").glob("*.warc.gz")):
        data, plain, moved = warc.read_bytes(), bytearray(), {}
        for start, end in itertools.pairwise(members(warc)):
            moved[start] = (len(plain), len(whole := gzip.decompress(data[start:end])))
            plain += whole
        warc.with_suffix("").write_bytes(bytes(plain))
        warc.unlink()
        for prefix in ("", "dom_"):
            located = f"SELECT url, {prefix}warc_offset FROM urls WHERE {prefix}warc_file = ?"
            for url, offset in db.execute(located, (warc.name,)).fetchall():
                db.execute(
                    f"UPDATE urls SET {prefix}warc_file = ?, {prefix}warc_offset = ?, "
                    f"{prefix}warc_length = ? WHERE url = ?",
                    (warc.with_suffix("").name, *moved[offset], url),
                )
    db.commit()
    db.close()


def flip_a_revisit_head_byte_in_a_plain_warc(root: Path) -> str:
    """A byte of the HTTP head of a revisit (the one a mirror file's encoding and type are read
    from) flipped in an uncompressed WARC file: warcio checks none of a revisit's digests."""
    gunzip_the_warcs(root)
    row = row_for(root, "/logo-copy.png")
    assert row.record_type == "revisit"
    warc = root / "warc" / str(row.warc_file)
    data = bytearray(warc.read_bytes())
    start = int(row.warc_offset or 0)
    at = data.index(
        b"image/png", data.index(b"\r\n\r\nHTTP/1.1 200", start), start + int(row.warc_length or 0)
    )
    data[at] ^= 0x01
    warc.write_bytes(bytes(data))
    return f"{row.warc_file}@{row.warc_offset}"


def garble_a_digest_value_in_a_plain_warc(root: Path) -> str:
    """A response's WARC-Block-Digest made a value no base (16, 32 or 64) decodes, its record the
    same length, in an uncompressed WARC file: warcio raised binascii.Error out of the read that
    ended its block."""
    gunzip_the_warcs(root)
    row = row_for(root, "/b")
    warc = root / "warc" / str(row.warc_file)
    data = bytearray(warc.read_bytes())
    start = int(row.warc_offset or 0)
    at = data.index(b"WARC-Block-Digest: sha1:", start) + len(b"WARC-Block-Digest: sha1:")
    data[at : at + 32] = b"Z" * 31 + b" "  # 31 characters: read as base64, which they are not
    warc.write_bytes(bytes(data))
    return f"{row.warc_file}@{row.warc_offset}"


def replace_record(root: Path, path: str, edit: Callable[[bytes], bytes]) -> str:
    """Replace the gzip member of the response of ``path`` by ``edit`` of its inflated bytes,
    compressed again (the records after it move); returns file@offset."""
    row = row_for(root, path)
    warc = root / "warc" / str(row.warc_file)
    data = warc.read_bytes()
    start, end = int(row.warc_offset or 0), int(row.warc_offset or 0) + int(row.warc_length or 0)
    member = gzip.compress(edit(gzip.decompress(data[start:end])), mtime=0)
    warc.write_bytes(data[:start] + member + data[end:])
    return f"{row.warc_file}@{start}"


def edit_in_place(warc: Path, offset: int, length: int, edit: Callable[[bytes], bytes]) -> None:
    """Replace the gzip member at ``offset`` of ``warc`` by ``edit`` of its inflated bytes,
    compressed again and padded (a gzip comment) to its ``length``: the records after it stay
    where their rows say, and only its digests tell."""
    data = warc.read_bytes()
    inflated = edit(gzip.decompress(data[offset : offset + length]))
    body = min((_deflated(inflated, strategy) for strategy in range(5)), key=len)
    trailer = struct.pack("<II", zlib.crc32(inflated), len(inflated) & 0xFFFFFFFF)
    padding = length - 10 - len(body) - len(trailer) - 1
    assert padding >= 0
    header = b"\x1f\x8b\x08\x10" + bytes(6) + b" " * padding + b"\x00"  # FCOMMENT
    warc.write_bytes(data[:offset] + header + body + trailer + data[offset + length :])


def edit_record_of(root: Path, url: str, edit: Callable[[bytes], bytes]) -> ManifestRow:
    """edit_in_place() of the record the manifest of the snapshot ``root`` holds for ``url``; its
    row."""
    row = manifest_rows(root)[url]
    assert row.warc_file and row.warc_offset is not None and row.warc_length, row
    edit_in_place(root / "warc" / row.warc_file, row.warc_offset, row.warc_length, edit)
    return row


def server_blanked(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    """An edit for edit_in_place(): ``old`` replaced by ``new`` in the record, and its Server
    header blanked, so it compresses no longer than it did."""
    return lambda record: re.sub(rb"Server: [^\r]*", lambda m: b" " * len(m[0]), record).replace(old, new)


def _deflated(data: bytes, strategy: int) -> bytes:
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15, 9, strategy)
    return deflate.compress(data) + deflate.flush()


def flip_gzip_flags(root: Path) -> str:
    """The FLG byte of a member in the middle of a file: it then reads what follows as its header."""
    row = row_for(root, "/a")
    warc = root / "warc" / str(row.warc_file)
    offsets = members(warc)
    assert offsets.index(int(row.warc_offset or 0)) < len(offsets) - 2, "a member must follow it"
    data = bytearray(warc.read_bytes())
    data[int(row.warc_offset or 0) + 3] ^= 0x55
    warc.write_bytes(bytes(data))
    return f"{row.warc_file}@{row.warc_offset}"


def cut_at_a_member_boundary(root: Path) -> str:
    row = row_for(root, "/b")
    warc = root / "warc" / str(row.warc_file)
    warc.write_bytes(warc.read_bytes()[: int(row.warc_offset or 0)])
    return f"{row.url} -> {row.warc_file}@{row.warc_offset}"


def cut_inside_content_length(root: Path) -> str:
    return replace_record(root, "/a", lambda record: record[: record.index(b"Content-Length: ") + 17])


def lose_target_uri_header(root: Path) -> str:
    return replace_record(
        root, "/a", lambda record: record.replace(b"WARC-Target-URI", b"WARC-Tarwet-URI", 1)
    )


def edit_row_status(root: Path) -> str:
    sql(root, "UPDATE urls SET status = 404 WHERE url = ?", row_for(root, "/b").url)
    return row_for(root, "/b").url


def edit_row_content_type(root: Path) -> str:
    sql(root, "UPDATE urls SET content_type = 'application/pdf' WHERE url = ?", row_for(root, "/b").url)
    return row_for(root, "/b").url


def edit_row_offset_to_text(root: Path) -> str:
    url = row_for(root, "/b").url
    sql(root, "UPDATE urls SET warc_offset = 'abc' WHERE url = ?", url)
    return url


def edit_cdxj_status(root: Path) -> str:
    index = root / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines(keepends=True)
    number = next(n for n, line in enumerate(lines) if '"status": "200"' in line)
    lines[number] = lines[number].replace('"status": "200"', '"status": "404"')
    index.write_text("".join(lines))
    return f"indexes/index.cdxj:{number + 1}"


def move_an_edited_line_to_pending(root: Path) -> str:
    """A line not merged yet (a crawl stopped) is merged by its resume, and packed by an export."""
    index = root / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines(keepends=True)
    number = next(n for n, line in enumerate(lines) if '"status": "200"' in line)
    (root / "indexes" / "index.cdxj.pending").write_text(lines[number].replace('"200"', '"404"'))
    index.write_text("".join(lines[:number] + lines[number + 1 :]))
    return "indexes/index.cdxj.pending:1"


def lose_a_crash_tail(root: Path) -> str:
    kept_in = "crash-tails/archiver.warc.gz.1234.tail"
    data = json.loads((root / "crawl.json").read_text())
    data["crash_tails"] = [{"file": "archiver.warc.gz", "offset": 1234, "length": 56, "kept_in": kept_in}]
    (root / "crawl.json").write_text(json.dumps(data))
    return kept_in


def flip_manifest_page(root: Path) -> str:
    db = sqlite3.connect(root / "manifest.sqlite3")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    path = root / "manifest.sqlite3"
    data = bytearray(path.read_bytes())
    for at in range(page_size + 100, 2 * page_size - 50, 7):  # the second page: the urls table's
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    return "manifest.sqlite3"


def add_a_mirror_file(root: Path) -> str:
    page = root / "mirror" / str(row_for(root, "/b").local_path)
    page.with_name("added.html").write_text("<p>not archived</p>")
    return f"mirror/{page.with_name('added.html').relative_to(root / 'mirror').as_posix()}"


def link_out_of_the_snapshot(root: Path) -> str:
    page = root / "mirror" / str(row_for(root, "/b").local_path)
    page.with_name("elsewhere.html").symlink_to(root.parent.parent)
    return f"mirror/{page.with_name('elsewhere.html').relative_to(root / 'mirror').as_posix()}"


def pipe_for_a_mirror_file(root: Path) -> str:
    local_path = str(row_for(root, "/b").local_path)
    (root / "mirror" / local_path).unlink()
    os.mkfifo(root / "mirror" / local_path)
    return f"mirror/{local_path}"


def edit_row_length(root: Path) -> str:
    url = row_for(root, "/b").url
    sql(root, "UPDATE urls SET length = length + 7 WHERE url = ?", url)
    return url


def edit_revisit_row_length(root: Path) -> str:
    """A revisit holds no payload: its row's length is its original's."""
    url = row_for(root, "/logo-copy.png").url
    sql(root, "UPDATE urls SET length = length - 1 WHERE url = ? AND record_type = 'revisit'", url)
    return url


def lose_a_fact_of_the_capture(column: str) -> Callable[[Path], str]:
    def damage(root: Path) -> str:
        url = row_for(root, "/b").url
        sql(root, f"UPDATE urls SET {column} = NULL WHERE url = ?", url)
        return url

    damage.__name__ = f"lose_{column}"
    return damage


def edit_row_title(root: Path) -> str:
    sql(root, "UPDATE urls SET title = 'Edited' WHERE url = ?", row_for(root, "/b").url)
    return row_for(root, "/b").url


def edit_row_parent(root: Path) -> str:
    """/b is said found on /new, which links to / only."""
    sql(root, "UPDATE urls SET parent = ? WHERE url = ?", row_for(root, "/new").url, row_for(root, "/b").url)
    return row_for(root, "/b").url


def edit_row_depth(root: Path) -> str:
    sql(root, "UPDATE urls SET depth = 3 WHERE url = ?", row_for(root, "/b").url)
    return row_for(root, "/b").url


def edit_redirect_target_parent(root: Path) -> str:
    """/new, where /old redirects, is said found by a redirect of the home page."""
    home = row_for(root, "/old").url.removesuffix("old")
    sql(root, "UPDATE urls SET parent = ? WHERE url = ?", home, row_for(root, "/new").url)
    return row_for(root, "/new").url


def edit_every_depth(root: Path) -> str:
    """Every row a depth deeper: each still one deeper than its parent, but the seed."""
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        db.execute("UPDATE urls SET depth = depth + 1")
    db.close()
    return row_for(root, "/old").url.removesuffix("old")


def edit_row_fetched_at(root: Path) -> str:
    url = row_for(root, "/b").url
    sql(root, "UPDATE urls SET fetched_at = '2001-01-01T00:00:00Z' WHERE url = ?", url)
    return url


def delete_a_skipped_row(root: Path) -> str:
    sql(root, "DELETE FROM urls WHERE url = ? AND outcome = 'skipped'", "http://elsewhere.invalid/x")
    return "http://elsewhere.invalid/x"


def delete_index_html(root: Path) -> str:
    (root / "index.html").unlink()
    return "index.html"


def edit_index_html(root: Path) -> str:
    with open(root / "index.html", "a", encoding="utf-8") as page:
        page.write('<a href="http://elsewhere.invalid/">not archived</a>')
    return "index.html"


def edit_crawl_json(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], str]:
    def damage(root: Path) -> str:
        data = json.loads((root / "crawl.json").read_text())
        edit(data)
        (root / "crawl.json").write_text(json.dumps(data))
        return "crawl.json"

    damage.__name__ = f"crawl_json_{edit.__name__}"
    return damage


def text_for_a_count(data: dict[str, Any]) -> None:
    data["stats"]["fetched"] = "ten"


def list_for_an_object(data: dict[str, Any]) -> None:
    data["stats"]["by_status"] = [200, 301]


def count_edited(data: dict[str, Any]) -> None:
    data["stats"]["skipped"] += 1


def object_for_the_runs(data: dict[str, Any]) -> None:
    data["runs"] = {"started": data["started"]}


TAMPERING: list[tuple[Callable[[Path], str], str, str]] = [
    (flip_gzip_flags, "corrupt_gzip", "runs past the whole members after it"),
    (flip_a_revisit_head_byte_in_a_plain_warc, "digest_mismatch", "block digest failed"),
    (garble_a_digest_value_in_a_plain_warc, "digest_mismatch", "a digest cannot be read"),
    (cut_at_a_member_boundary, "wrong_location", "before this record: it was cut short"),
    (cut_inside_content_length, "unreadable_record", "the record ends before its headers do"),
    (lose_target_uri_header, "unreadable_record", "headers are damaged"),
    (edit_row_status, "wrong_location", "record's HTTP status 200 is not 404"),
    (edit_row_content_type, "wrong_location", "record's content type text/html is not application/pdf"),
    (edit_row_offset_to_text, "bad_row", "warc_offset 'abc' is not a whole number"),
    (edit_cdxj_status, "cdxj_mismatch", "status 404 is not the record's 200"),
    (move_an_edited_line_to_pending, "cdxj_mismatch", "status 404 is not the record's 200"),
    (flip_manifest_page, "missing_manifest", "damaged: "),
    (add_a_mirror_file, "unrecorded_mirror_file", "a file the mirror build did not write"),
    (link_out_of_the_snapshot, "unrecorded_mirror_file", "out of the snapshot"),
    (pipe_for_a_mirror_file, "changed_mirror_file", "is no longer a regular file"),
    (edit_row_length, "wrong_location", "record's payload is 96 bytes, not 103"),
    (edit_revisit_row_length, "wrong_location", "record's payload is 1032 bytes, not 1031"),
    (lose_a_fact_of_the_capture("payload_digest"), "wrong_location", "row names no payload_digest"),
    (lose_a_fact_of_the_capture("warc_length"), "wrong_location", "row names no warc_length"),
    (lose_a_fact_of_the_capture("record_type"), "wrong_location", "row names no record_type"),
    (edit_row_fetched_at, "wrong_location", "is not 2001-01-01T00:00:00Z"),
    (edit_row_title, "wrong_discovery", "title 'Edited' is not the page's "),
    (edit_row_parent, "wrong_discovery", "/new does not link to it"),
    (edit_row_depth, "wrong_discovery", "depth 3: found on http://"),
    (edit_redirect_target_parent, "wrong_discovery", "/ does not redirect to it"),
    (edit_every_depth, "wrong_discovery", "depth 1: a seed is of depth 0"),
    (delete_a_skipped_row, "unrecorded_link", "(out of scope), not in the manifest"),
    (delete_index_html, "lost_mirror_file", "bytes written, now missing"),
    (edit_index_html, "changed_mirror_file", "; the build wrote "),
    (edit_crawl_json(text_for_a_count), "crawl_json_mismatch", 'stats.fetched "ten" is not a whole number'),
    (
        edit_crawl_json(list_for_an_object),
        "crawl_json_mismatch",
        "stats.by_status [200, 301] is not an object",
    ),
    (edit_crawl_json(count_edited), "crawl_json_mismatch", "stats.skipped is 2; the manifest counts 1"),
    (edit_crawl_json(object_for_the_runs), "crawl_json_mismatch", "is not a list of objects"),
    (lose_a_crash_tail, "crawl_json_mismatch", "(56 bytes cut from archiver.warc.gz@1234) is not kept"),
]


@pytest.mark.parametrize(("damage", "kind", "words"), TAMPERING, ids=[d.__name__ for d, _, _ in TAMPERING])
def test_tampering_is_named_where_it_is(
    snap: Path, damage: Callable[[Path], str], kind: str, words: str, capsys
) -> None:
    where = damage(snap)
    with in_linear_time(60):  # a hang guard: nothing may block on what it reads
        assert cli.main(["verify", str(snap), "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    examples = json.loads(captured.out)["problems"].get(kind, {}).get("examples", [])
    assert any(example["where"].startswith(where) and words in example["detail"] for example in examples), (
        json.loads(captured.out)["problems"]
    )


def test_a_damaged_gzip_header_leaves_the_records_after_it_checked(snap: Path) -> None:
    """Only the damaged member is lost: the file is not taken as cut short there."""
    flip_gzip_flags(snap)
    report = verify_snapshot(snap)
    assert "torn_file" not in report.counts
    after = row_for(snap, "/b" if row_for(snap, "/b").warc_file == row_for(snap, "/a").warc_file else "/a")
    assert not [p for p in report.examples.get("wrong_location", []) if p.where.startswith(after.url + " ")]


def test_a_manifest_of_an_older_version_verifies(snap: Path, capsys) -> None:
    """Read-only, its later columns read as NULL: verify and its mirror checks read it as it is."""
    db = sqlite3.connect(snap / "manifest.sqlite3")
    db.execute("DROP INDEX urls_dom_location")
    for column in LATER_COLUMNS:
        db.execute(f"ALTER TABLE urls DROP COLUMN {column}")
    db.commit()
    db.close()
    assert cli.main(["verify", str(snap)]) == 0, capsys.readouterr()
    assert "OK, complete and intact (integrity, consistency, completeness, mirror checked)" in (
        capsys.readouterr().out
    )
    with sqlite3.connect(snap / "manifest.sqlite3") as db:  # not upgraded: verify writes nothing
        assert "request" not in {info[1] for info in db.execute("PRAGMA table_info(urls)")}
    db.close()


def test_an_error_in_the_mirror_checks_is_one_line(snap: Path, monkeypatch, capfd) -> None:
    """The mirror's checks run in a forked process: what stops them is said once, by the command."""

    def fail(*_args: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(verifier, "check_mirror_files", fail)
    assert cli.main(["verify", str(snap)]) == 2
    err = capfd.readouterr().err
    assert (
        err == "archiver: error: the snapshot's manifest cannot be used: database disk image is malformed\n"
    )


def write_offset_as_text(root: Path) -> None:
    edit_row_offset_to_text(root)


def write_binary_cdxj_line(root: Path) -> None:
    index = root / "indexes" / "index.cdxj"
    index.write_bytes(b"\xff\xfe not text\n" + index.read_bytes())


def write_runs_as_an_object(root: Path) -> None:
    edit_crawl_json(object_for_the_runs)(root)


def write_depth_as_text(root: Path) -> None:
    """A value no step of a resume reads before it takes up the URLs to fetch again."""
    sql(root, "UPDATE urls SET depth = 'deep' WHERE url = ?", row_for(root, "/b").url)


def edit_a_record_body(root: Path) -> None:
    replace_record(root, "/b", lambda record: record.replace(b"<a href", b"<A href", 1))


def make_cdxj_a_folder(root: Path) -> None:
    index = root / "indexes" / "index.cdxj"
    index.unlink()
    index.mkdir()


COMMANDS_ON_DAMAGE: list[tuple[Callable[[Path], None], list[str], str]] = [
    (write_offset_as_text, ["mirror", "{snap}"], "the manifest is damaged: in the row of "),
    (
        write_offset_as_text,
        ["export", "{snap}", "--wacz", "{out}"],
        "warc_offset 'abc' is not a whole number",
    ),
    (write_offset_as_text, ["crawl", "--resume", "-o", "{snap}"], "warc_offset 'abc' is not a whole number"),
    (write_binary_cdxj_line, ["export", "{snap}", "--wacz", "{out}"], "(a line with no file name)"),
    (make_cdxj_a_folder, ["export", "{snap}", "--wacz", "{out}"], "cannot read {snap}/indexes/index.cdxj"),
    (write_depth_as_text, ["crawl", "--resume", "-o", "{snap}"], "depth 'deep' is not a whole number"),
    (write_runs_as_an_object, ["crawl", "--resume", "-o", "{snap}"], "its runs are not a list of objects"),
    (edit_a_record_body, ["export", "{snap}", "--wacz", "{out}"], "block digest failed"),
]


@pytest.mark.parametrize(
    ("damage", "argv", "words"),
    COMMANDS_ON_DAMAGE,
    ids=[f"{argv[0]}-{damage.__name__}" for damage, argv, _ in COMMANDS_ON_DAMAGE],
)
def test_commands_on_a_damaged_snapshot_say_so_in_one_line(
    snap: Path, tmp_path: Path, damage: Callable[[Path], None], argv: list[str], words: str, capfd
) -> None:
    damage(snap)
    before = files(snap)
    fill = {"snap": str(snap), "out": str(tmp_path / "out.wacz")}
    assert cli.main([part.format(**fill) for part in argv]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("archiver: error: "), err
    assert words.format(**fill) in err
    assert not (tmp_path / "out.wacz").exists()
    assert files(snap) == before


def files(root: Path) -> dict[Path, bytes]:
    """The bytes of each file of the snapshot (of the manifest, its rows), but the lock's."""
    found = {}
    for path in root.rglob("*"):
        if path.name == "manifest.sqlite3":
            db = sqlite3.connect(path)
            tables = ("urls", "mirror_files", "crawl_state")  # not a mirror build's scratch tables
            found[path] = repr(
                [db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables]
            ).encode()
            db.close()
        elif path.is_file() and not path.name.endswith((".lock", "-shm", "-wal")):
            found[path] = path.read_bytes()
    return found


def test_a_line_of_the_index_that_is_not_text_is_merged_unchanged(tmp_path: Path) -> None:
    """A resumed crawl folds its new lines into an index damaged since: it ends, and the damaged
    line is kept as it was, for verify to name."""
    index, pending = tmp_path / "index.cdxj", tmp_path / "index.cdxj.pending"
    index.write_bytes(b"a 1 {}\n\xff\xfe not text\n")
    pending.write_bytes(b"b 2 {}\n")
    assert merge_into_index(pending, index) == 3
    assert index.read_bytes() == b"a 1 {}\nb 2 {}\n\xff\xfe not text\n"


def cut_a_record_short(warc: Path) -> None:
    member = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 900\r\n\r\n" + b"x" * 900)
    with open(warc, "ab") as out:
        out.write(member[: len(member) // 2])


def leave_what_a_kill_leaves(snap: Path) -> None:
    """URLs still queued, index lines not merged yet, a record cut short past the last commit."""
    last = sorted((snap / "warc").iterdir())[-1]
    with Manifest.open(snap / "manifest.sqlite3", readonly=True) as manifest:
        url = max((row.warc_offset or 0, row.url) for row in manifest.rows() if row.warc_file == last.name)[1]
    # Its record was written, its row not committed: the crawl fetches it again.
    sql(snap, "UPDATE urls SET outcome = 'queued', warc_file = NULL, warc_offset = NULL WHERE url = ?", url)
    data = json.loads((snap / "crawl.json").read_text())
    data.update(status="running", finished=None)  # a killed run never notes its end
    (snap / "crawl.json").write_text(json.dumps(data))
    index = snap / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines(keepends=True)
    (snap / "indexes" / "index.cdxj.pending").write_text("".join(lines[-3:]))
    index.write_text("".join(lines[:-3]))
    cut_a_record_short(last)


@pytest.mark.parametrize("killed", [True, False], ids=["a-kill", "damage"])
def test_a_record_cut_short_is_packed_only_past_a_kills_last_commit(
    snap: Path, tmp_path: Path, killed: bool, capfd
) -> None:
    """A crawl killed can be packed as it is (the record a kill cut is named by no index line);
    the same cut in a finished crawl's file is damage, and the package is refused."""
    last = sorted((snap / "warc").iterdir())[-1]
    if killed:
        leave_what_a_kill_leaves(snap)
    else:
        cut_a_record_short(last)
    target = tmp_path / "out.wacz"
    assert cli.main(["export", str(snap), "--wacz", str(target)]) == (0 if killed else 2)
    err = capfd.readouterr().err
    if killed:
        assert err == "" and target.is_file()
    else:
        assert err.startswith(f"archiver: error: {last}@") and err.count("\n") == 1, err
        assert "its last record is cut short" in err and not target.exists()


def test_a_killed_crawl_is_incomplete_and_resumable_not_corrupt(snap: Path, capsys) -> None:
    """What a kill leaves (leave_what_a_kill_leaves). Verify says the crawl is incomplete and
    resumable, and finds nothing corrupt."""
    leave_what_a_kill_leaves(snap)
    assert cli.main(["verify", str(snap), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["resumable"] is True
    assert set(report["problems"]) == {"unfinished_crawl", "crash_tail"}, report["problems"]
    assert report["problems"]["crash_tail"]["count"] == 2  # the record not committed, the one cut
    assert cli.main(["verify", str(snap)]) == 1
    headline = capsys.readouterr().out.splitlines()[0]
    assert headline.startswith(f"{snap}: incomplete, resumable: 1 URL still queued (continue it with: ")


def last_committed_capture(snap: Path) -> tuple[Path, str, int]:
    """(file, url, offset) of the last capture a committed row names in the last WARC file."""
    last = sorted((snap / "warc").iterdir())[-1]
    with Manifest.open(snap / "manifest.sqlite3", readonly=True) as manifest:
        offset, url = max(
            (row.warc_offset or 0, row.url) for row in manifest.rows() if row.warc_file == last.name
        )
    return last, url, offset


@pytest.mark.parametrize(
    ("cut", "damaged"),
    [("past-the-commit", False), ("inside-its-request", True), ("inside-its-response", True)],
)
def test_verify_and_resume_draw_the_last_commit_at_the_same_byte(snap: Path, cut: str, damaged: bool) -> None:
    """A killed crawl's last WARC file, cut past its last committed capture (what a kill leaves),
    or inside that capture's request or response (damage since: a kill never cuts what was
    committed). Verify calls the cut a crash's tail exactly when resume sets it aside as one;
    where it is damage, resume fetches the capture again rather than keep half of it."""
    columns = "url, outcome, depth, found_by"
    sql(
        snap, f"INSERT INTO urls ({columns}) VALUES ('http://127.0.0.1/next', 'queued', 1, 'link')"
    )  # still to fetch
    last, url, offset = last_committed_capture(snap)
    ends = [end for end in members(last) if end > offset]
    if cut == "past-the-commit":
        cut_a_record_short(last)
    elif cut == "inside-its-request":
        os.truncate(last, ends[0] + 10)  # its response whole, its request cut
    elif cut == "inside-its-response":
        os.truncate(last, offset + 10)
    report = verify_snapshot(snap)
    assert ("torn_file" in report.counts) is damaged, report.counts
    assert ("crash_tail" in report.counts) is not damaged, report.counts
    snapshot = Snapshot(snap)
    with Manifest.open(snapshot.manifest_path) as manifest:
        record = CrawlRecord(snapshot, snapshot.read_crawl_json())
        (warning,) = recover(snapshot, "archiver", manifest, record)
        assert ("where it is damaged" in warning) is damaged, warning
        assert (manifest.get(url).outcome == QUEUED) is damaged
    assert last.stat().st_size == (offset if damaged else ends[1])


def flip_a_bit_only_the_crc_tells(root: Path) -> str:
    """A bit flipped in the deflate data of the response of /b that still inflates, to another
    payload of the same length, with no error but the gzip CRC's (about 1% of flips do)."""
    row = row_for(root, "/b")
    warc = root / "warc" / str(row.warc_file)
    data = bytearray(warc.read_bytes())
    start, end = int(row.warc_offset or 0), int(row.warc_offset or 0) + int(row.warc_length or 0)
    whole = gzip.decompress(bytes(data[start:end]))
    payload_from = whole.index(b"\r\n\r\n", whole.index(b"\r\n\r\n") + 4) + 4  # past the HTTP head
    for bit in range(8 * (start + 10), 8 * (end - 8)):  # the deflate data, between header and trailer
        data[bit // 8] ^= 1 << bit % 8
        inflate = zlib.decompressobj(-15)
        try:
            other = inflate.decompress(bytes(data[start + 10 : end - 8]))
        except zlib.error:
            other = b""
        same_head = other[:payload_from] == whole[:payload_from]
        if inflate.eof and len(other) == len(whole) and same_head and other != whole:
            warc.write_bytes(bytes(data))
            return row.url
        data[bit // 8] ^= 1 << bit % 8
    raise AssertionError("no flip inflates silently")


def flip_a_payload_byte_in_a_plain_warc(path: str) -> Callable[[Path], str]:
    """A byte of the payload of ``path`` flipped in an uncompressed WARC file: no gzip CRC tells,
    only the record's digests."""

    def damage(root: Path) -> str:
        gunzip_the_warcs(root)
        row = row_for(root, path)
        warc = root / "warc" / str(row.warc_file)
        data = bytearray(warc.read_bytes())
        data[int(row.warc_offset or 0) + int(row.warc_length or 0) - 10] ^= 0x01  # before CRLF CRLF
        warc.write_bytes(bytes(data))
        return row.url

    return damage


def replace_the_record_of_a(root: Path) -> str:
    lose_target_uri_header(root)
    return row_for(root, "/a").url


def cut_the_file_before_b(root: Path) -> str:
    cut_at_a_member_boundary(root)
    return row_for(root, "/b").url


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (replace_the_record_of_a, "AttributeError"),
        (cut_the_file_before_b, ""),
        (flip_a_bit_only_the_crc_tells, "Incorrect checksum"),
        pytest.param(flip_a_payload_byte_in_a_plain_warc("/b"), "DigestMismatch", id="plain-warc-page"),
        pytest.param(flip_a_payload_byte_in_a_plain_warc("/bg.png"), "DigestMismatch", id="plain-warc-image"),
    ],
)
def test_a_rebuilt_mirror_keeps_the_file_of_a_record_damaged_since(
    snap: Path, damage: Callable[[Path], str], why: str, capsys
) -> None:
    """The record of truth damaged after the crawl, the page's file the crawl wrote is the best
    copy left: a rebuild keeps it, says so on one line naming it, and exits 1."""
    before = files(snap / "mirror")
    url = damage(snap)
    page = "/" + url.split("/", 3)[3]
    path = str(row_for(snap, page).local_path)
    sql(snap, "UPDATE mirror_files SET note = 'what it lacked' WHERE path = ?", path)
    assert cli.main(["mirror", str(snap)]) == 1
    out = capsys.readouterr().out
    line = f"  {url}: kept mirror/{path} as the crawl wrote it; its WARC record cannot be read ("
    assert [row for row in out.splitlines() if row.startswith(line) and why in row], out
    assert files(snap / "mirror") == before
    assert row_for(snap, page).local_path == path
    with sqlite3.connect(snap / "manifest.sqlite3") as db:
        (note,) = db.execute("SELECT note FROM mirror_files WHERE path = ?", (path,)).fetchone()
    db.close()
    assert note.startswith("what it lacked; kept as the crawl wrote it: its WARC record cannot be read (")
    report = verify_snapshot(snap)
    assert not {"lost_mirror_file", "changed_mirror_file", "unrecorded_mirror_file"} & set(report.counts)
