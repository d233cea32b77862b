"""archiver verify: real snapshots crawled from a local site, damaged one way at a time."""

from __future__ import annotations

import fcntl
import gzip
import html
import io
import json
import os
import re
import shutil
import sqlite3
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web

from archiver import cli
from archiver.report import BROKEN_MIRROR_LINK, KINDS, Report
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.store.snapshot import LOCK_NAME
from archiver.verify.mirror_links import check_mirror, local_target
from archiver.verify.verifier import verify_snapshot
from archiver.warc.capture import Capture
from archiver.warc.files import WarcFiles
from archiver.warc.integrity import warc_files

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def build_site(site) -> None:
    """A small site with a stylesheet, images, a redirect, a gzip page and a duplicate body."""
    site.page(
        "/",
        links=["/a", "/b", "/old", "/gz", "/dropped", "http://elsewhere.invalid/x"],
        head='<link rel="stylesheet" href="/style.css">',
        body='<img src="/logo.png">',
    )
    site.page("/a", links=["/", "/b"], body='<img src="/logo-copy.png">')
    site.page("/b", links=["/a"])
    site.redirect("/old", "/new")
    site.page("/new", links=["/"])
    site.file("/style.css", "body { background: url(bg.png) }", "text/css")
    site.file("/bg.png", PNG[:100], "image/png")
    site.file("/logo.png", PNG, "image/png")
    site.file("/logo-copy.png", PNG, "image/png")
    gz_page = b'<html><body><a href="/from-gz">in gzip</a></body></html>'
    site.file("/gz", gzip.compress(gz_page), "text/html", headers={"Content-Encoding": "gzip"})
    site.page("/from-gz")

    async def drop(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # no response at all: a failed row without a capture
        return web.Response()

    site.handler("/dropped", drop)


def has_mirror() -> bool:
    try:
        from archiver.mirror.build import build_mirror  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
async def snapshot(site, run_crawl) -> Path:
    """A finished crawl of the test site (small WARC files, so captures span several)."""
    build_site(site)
    await site.start()
    result = await run_crawl(site.url("/"), warc_max_size=4096, max_tries=2)
    root = result.snapshot.root
    if has_mirror():
        from archiver.mirror.build import build_mirror

        build_mirror(root)
    return root


def rows(root: Path) -> dict[str, ManifestRow]:
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        return {row.url: row for row in manifest.rows()}


def row_for(root: Path, path: str) -> ManifestRow:
    found = [row for url, row in rows(root).items() if url.endswith(path)]
    assert len(found) == 1, path
    return found[0]


def sql(root: Path, statement: str, *args: object) -> None:
    db = sqlite3.connect(root / "manifest.sqlite3")
    with db:
        assert db.execute(statement, args).rowcount == 1
    db.close()


def flip_byte(root: Path) -> None:
    row = row_for(root, "/a")
    path = root / "warc" / str(row.warc_file)
    data = bytearray(path.read_bytes())
    data[int(row.warc_offset or 0) + int(row.warc_length or 0) // 2] ^= 0x55
    path.write_bytes(bytes(data))


def truncate_warc(root: Path) -> None:
    last = warc_files(root / "warc")[-1]
    last.write_bytes(last.read_bytes()[:-30])


def delete_warc(root: Path) -> None:
    row = row_for(root, "/b")
    (root / "warc" / str(row.warc_file)).unlink()


def delete_row(root: Path) -> None:
    sql(root, "DELETE FROM urls WHERE url = ?", row_for(root, "/b").url)


def wrong_offset(root: Path) -> None:
    sql(root, "UPDATE urls SET warc_offset = warc_offset + 7 WHERE url = ?", row_for(root, "/a").url)


def delete_mirror_file(root: Path) -> None:
    (root / "mirror" / str(row_for(root, "/b").local_path)).unlink()


def break_mirror_link(root: Path) -> None:
    page = root / "mirror" / str(row_for(root, "/a").local_path)
    text = page.read_text()
    assert "</body>" in text
    page.write_text(text.replace("</body>", '<a href="no-such-page.html">gone</a></body>'))


def leave_links_live(root: Path) -> None:
    """Links the rewriter should have made local, left absolute: to a page, and to a redirect
    whose chain ends at a page."""
    page = root / "mirror" / str(row_for(root, "/a").local_path)
    live = "".join(f'<a href="{row_for(root, path).url}">{path}</a>' for path in ("/b", "/old"))
    page.write_text(page.read_text().replace("</body>", f"{live}</body>"))


def flip_mirror_image_byte(root: Path) -> None:
    image = root / "mirror" / str(row_for(root, "/logo.png").local_path)
    data = bytearray(image.read_bytes())
    data[len(data) // 2] ^= 0x01
    image.write_bytes(bytes(data))


def delete_mirror_image(root: Path) -> None:
    (root / "mirror" / str(row_for(root, "/logo.png").local_path)).unlink()


def forget_mirror_files(root: Path) -> None:
    # As a manifest written before mirror files were recorded.
    db = sqlite3.connect(root / "manifest.sqlite3")
    db.execute("DROP TABLE mirror_files")
    db.commit()
    db.close()


def unrecord_mirror_file(root: Path) -> None:
    sql(root, "DELETE FROM mirror_files WHERE path = ?", row_for(root, "/a").local_path)


def unrecord_link(root: Path) -> None:
    # /dropped failed with no capture: its row is the only trace of the link.
    sql(root, "DELETE FROM urls WHERE url = ?", row_for(root, "/dropped").url)


def lose_revisit_original(root: Path) -> None:
    revisit = next(row for row in rows(root).values() if row.record_type == "revisit")
    original = next(
        row
        for row in rows(root).values()
        if row.record_type == "response" and row.payload_digest == revisit.payload_digest
    )
    path = root / "warc" / str(original.warc_file)
    data = path.read_bytes()
    start = int(original.warc_offset or 0)
    path.write_bytes(data[:start] + data[start + int(original.warc_length or 0) :])


def unfinish(root: Path) -> None:
    sql(root, "UPDATE urls SET outcome = 'queued' WHERE url = ?", row_for(root, "/from-gz").url)


def cut_redirect_target(root: Path) -> None:
    sql(root, "DELETE FROM urls WHERE url = ?", row_for(root, "/new").url)


def drop_cdxj_line(root: Path) -> None:
    index = root / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines(keepends=True)
    index.write_text("".join(lines[1:]))


def drop_reason(root: Path) -> None:
    sql(root, "UPDATE urls SET reason = NULL WHERE url = ?", "http://elsewhere.invalid/x")


DAMAGE: list[tuple[Callable[[Path], None], str, bool]] = [
    (flip_byte, "corrupt_gzip", False),
    (truncate_warc, "torn_file", False),
    (delete_warc, "missing_warc_file", False),
    (delete_row, "unlisted_record", False),
    (wrong_offset, "wrong_location", False),
    (delete_mirror_file, "missing_mirror_file", True),
    (break_mirror_link, "broken_mirror_link", True),
    (break_mirror_link, "changed_mirror_file", True),
    (leave_links_live, "live_mirror_link", True),
    (flip_mirror_image_byte, "changed_mirror_file", True),
    (delete_mirror_image, "lost_mirror_file", True),
    (forget_mirror_files, "unrecorded_mirror_file", True),
    (unrecord_mirror_file, "unrecorded_mirror_file", True),
    (unrecord_link, "unrecorded_link", False),
    (lose_revisit_original, "dangling_revisit", False),
    (unfinish, "unfinished_crawl", False),
    (cut_redirect_target, "dangling_redirect", False),
    (drop_cdxj_line, "cdxj_mismatch", False),
    (drop_reason, "missing_reason", False),
]


async def test_undamaged_snapshot_verifies(snapshot: Path, capsys) -> None:
    report = verify_snapshot(snapshot)
    assert report.ok, report.render_text(str(snapshot))
    assert report.stats["revisits"] == 1
    assert report.stats["pages parsed"] >= 6
    assert len(warc_files(snapshot / "warc")) > 1
    assert cli.main(["verify", str(snapshot)]) == 0
    assert "OK, complete and intact" in capsys.readouterr().out


async def test_only_a_changed_mirror_file_is_reported(snapshot: Path) -> None:
    if not has_mirror():
        pytest.skip("the mirror stage is not available")
    flip_mirror_image_byte(snapshot)
    report = verify_snapshot(snapshot)
    assert list(report.counts) == ["changed_mirror_file"]
    assert report.stats["mirror files checked"] == rows_with_local_path(snapshot)


def rows_with_local_path(root: Path) -> int:
    return len({row.local_path for row in rows(root).values() if row.local_path})


@pytest.mark.parametrize(
    ("damage", "kind", "needs_mirror"), DAMAGE, ids=[damage.__name__ for damage, _, _ in DAMAGE]
)
async def test_damage_is_named(
    snapshot: Path, damage: Callable[[Path], None], kind: str, needs_mirror: bool, capsys
) -> None:
    if needs_mirror and not has_mirror():
        pytest.skip("the mirror stage is not available")
    damage(snapshot)
    assert cli.main(["verify", str(snapshot), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert kind in report["problems"], report["problems"]
    assert report["problems"][kind]["count"] >= 1
    assert report["problems"][kind]["examples"]
    assert cli.main(["verify", str(snapshot)]) == 1
    assert f": {kind} (" in capsys.readouterr().out


async def test_links_left_live_to_what_the_mirror_holds_are_reported(snapshot: Path) -> None:
    """index.html shows each page's original URL, live on purpose: only the mirror's links count."""
    if not has_mirror():
        pytest.skip("the mirror stage is not available")
    assert f'href="{row_for(snapshot, "/b").url}"' in (snapshot / "index.html").read_text()
    leave_links_live(snapshot)
    report = verify_snapshot(snapshot)
    assert report.counts["live_mirror_link"] == 2, report.render_text("snap")
    details = " ".join(problem.detail for problem in report.examples["live_mirror_link"])
    assert f"mirror/{row_for(snapshot, '/b').local_path} holds it" in details
    assert f"mirror/{row_for(snapshot, '/new').local_path} holds it" in details  # where /old leads


async def test_no_mirror_skips_mirror_links(snapshot: Path) -> None:
    if not has_mirror():
        pytest.skip("the mirror stage is not available")
    break_mirror_link(snapshot)
    assert not verify_snapshot(snapshot).ok
    report = verify_snapshot(snapshot, check_mirror=False)
    assert report.ok, report.render_text(str(snapshot))
    assert "mirror" not in report.checks


async def test_large_mirror_pages_are_streamed(snapshot: Path, monkeypatch) -> None:
    if not has_mirror():
        pytest.skip("the mirror stage is not available")
    monkeypatch.setattr("archiver.verify.mirror_links.STREAM_HTML_FROM", 0)
    clean = verify_snapshot(snapshot)
    assert clean.ok, clean.render_text(str(snapshot))
    break_mirror_link(snapshot)
    assert sorted(verify_snapshot(snapshot).counts) == ["broken_mirror_link", "changed_mirror_file"]


async def test_a_large_mirror_page_opening_with_a_comment_is_streamed(site, run_crawl, monkeypatch) -> None:
    # Saved pages often open with a comment, before <html>: the root's sibling in the tree.
    site.file("/", "<!-- saved from elsewhere -->\n<html><body><a href='/a'>a</a></body></html>")
    site.file("/a", "<!-- one --><!-- two --><html><body><a href='/'>home</a><a href='/gone'>x</a>")
    site.file("/gone", "<h1>gone</h1>", status=404)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1)
    monkeypatch.setattr("archiver.verify.mirror_links.STREAM_HTML_FROM", 0)
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text(str(result.snapshot.root))
    assert report.stats["mirror links"] >= 3


async def test_a_capture_the_mirror_could_not_write_is_reported(site, run_crawl, monkeypatch) -> None:
    """A file system that refuses a mirror file's name (here: a name past its 255 bytes, the
    mirror's own limits raised above that) leaves the capture out of the mirror."""
    monkeypatch.setattr("archiver.paths.MAX_NAME_BYTES", 400)
    monkeypatch.setattr("archiver.paths.MAX_PATH_UNITS", 1000)
    long = "/" + "n" * 300
    site.page("/")
    site.page(long)
    await site.start()
    root = (await run_crawl(site.url("/"), site.url(long))).snapshot.root  # a seed: no link leads there
    assert rows(root)[site.url(long)].local_path is None
    report = verify_snapshot(root)
    assert list(report.counts) == ["unmirrored_capture"], report.render_text("snap")
    assert [problem.where for problem in report.examples["unmirrored_capture"]] == [site.url(long)]


async def test_cli_verify_json(snapshot: Path, capsys) -> None:
    assert cli.main(["verify", str(snapshot), "--json", "--no-mirror"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert report["checks"] == ["integrity", "consistency", "completeness"]
    assert report["stats"]["records"] > 0


async def test_bare_warc_folder_verifies_integrity(snapshot: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(snapshot / "warc", bare)
    report = verify_snapshot(bare)
    assert report.ok, report.render_text(str(bare))
    assert report.checks == ["integrity"]
    flip_target = warc_files(bare)[0]
    data = bytearray(flip_target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flip_target.write_bytes(bytes(data))
    assert cli.main(["verify", str(bare)]) == 1


async def test_a_snapshot_a_crawl_is_writing_is_refused(snapshot: Path, capsys) -> None:
    # Read while it is written, it would seem half done: URLs still queued, records unindexed.
    holder = os.open(snapshot / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        os.write(holder, b"pid 1 host h since now command archiver crawl\n")
        assert cli.main(["verify", str(snapshot)]) == 2
    finally:
        os.close(holder)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"snapshot {snapshot} is being written by" in captured.err
    assert cli.main(["verify", str(snapshot), "--no-mirror"]) == 0


@pytest.mark.parametrize("make", ["empty", "missing", "file"])
def test_not_a_snapshot_exits_2(tmp_path: Path, make: str, capsys) -> None:
    target = tmp_path / "target"
    if make == "empty":
        target.mkdir()
        (target / "notes.txt").write_text("hello")
    elif make == "file":
        target.write_text("hello")
    assert cli.main(["verify", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "is not a snapshot" in captured.err


async def test_unreadable_settings_fall_back_to_the_seeds(snapshot: Path) -> None:
    data = json.loads((snapshot / "crawl.json").read_text())
    data["settings"]["exclude"] = ["("]
    (snapshot / "crawl.json").write_text(json.dumps(data))
    report = verify_snapshot(snapshot)
    assert list(report.counts) == ["missing_settings"]
    (snapshot / "crawl.json").unlink()
    assert list(verify_snapshot(snapshot).counts) == ["missing_settings"]


async def test_missing_manifest_is_a_problem(snapshot: Path) -> None:
    (snapshot / "manifest.sqlite3").unlink()
    report = verify_snapshot(snapshot)
    assert "missing_manifest" in report.counts


async def test_declared_truncation_is_not_damage(site, run_crawl) -> None:
    site.page("/", body='<img src="/big.png">')
    site.file("/big.png", PNG * 20, "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), max_file_size=1000)
    report = verify_snapshot(result.snapshot.root, check_mirror=False)
    assert report.ok, report.render_text("snap")
    assert report.stats["declared truncations"] == 1


def test_every_problem_kind_has_a_check_and_title() -> None:
    assert all(kind.check and kind.title for kind in KINDS.values())


def test_every_kind_names_its_mend_or_says_no_command_mends_it() -> None:
    """Each kind verify can print ends its line with the command that mends it, named for the
    snapshot, or says no command mends it."""
    for kind in KINDS.values():
        line = f"{kind.title} ({kind.mend_for('my snap')})"
        named = re.search(r"with: (archiver [^()]*)\)$", line)
        assert (named is None) == ("no command" in kind.mend), kind.name
        assert named is None or "'my snap'" in named.group(1), kind.name


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a.html", "a.html"),
        ("../img/a%20b.png?v=2#top", "../img/a b.png"),
        ("page%3Fq=1.html", "page?q=1.html"),
        ("/root.html", "/root.html"),
        ("https://example.com/x", None),
        ("//example.com/x", None),
        ("data:image/png;base64,AAAA", None),
        ("javascript:void(0)", None),
        ("mailto:a@b.c", None),
        ("#section", None),
        ("?only-query", None),
        ("", None),
    ],
)
def test_local_target(value: str, expected: str | None) -> None:
    assert local_target(value) == expected


def test_verify_streams_large_records(tmp_path: Path) -> None:
    """Memory does not follow record size: a 40 MB record verifies in a few MB of Python heap."""
    body = bytes(range(256)) * (40 * 4096)
    capture = Capture(
        url="http://big.example/blob",
        date=datetime.now(UTC),
        request_line="GET /blob HTTP/1.1",
        request_headers=[("Host", "big.example")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "application/octet-stream")],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest=_sha1(body),
    )
    with WarcFiles(tmp_path, prefix="big", max_size=10**9) as warcs:
        warcs.write_capture(capture)
    del body, capture
    tracemalloc.start()
    try:
        report = verify_snapshot(tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.ok, report.render_text(str(tmp_path))
    assert peak < 8 * 1024 * 1024


def _sha1(data: bytes) -> str:
    import base64
    import hashlib

    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def _broken_links_of_a_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool, page: str
) -> tuple[list[tuple[str, str]], Report]:
    """Check a mirror of ``page`` (mirror/h/page.html, beside a here.png), read whole or, with
    ``streamed``, as a stream; (where, what) of each broken link named, and the report."""
    if streamed:
        monkeypatch.setattr("archiver.verify.mirror_links.STREAM_HTML_FROM", 0)
    folder = tmp_path / "mirror" / "h"
    folder.mkdir(parents=True)
    (folder / "here.png").write_bytes(b"png")
    (folder / "page.html").write_text(page)
    report = Report()
    check_mirror(tmp_path, report)
    found = [(problem.where, problem.detail) for problem in report.examples.get(BROKEN_MIRROR_LINK, [])]
    return found, report


@pytest.mark.parametrize("streamed", [False, True])
def test_a_broken_local_link_in_an_iframe_srcdoc_is_named(
    tmp_path: Path, monkeypatch, streamed: bool
) -> None:
    # A srcdoc document's links resolve against its page's URL: in the mirror, its file's folder.
    inner = '<img src="here.png"><img src="gone.png"><iframe srcdoc="<a href=\'deeper.html\'>d</a>">'
    page = f'<p><iframe srcdoc="{html.escape(inner)}"></iframe></p>'
    found, report = _broken_links_of_a_page(tmp_path, monkeypatch, streamed, page)
    assert sorted(found) == [
        ("mirror/h/page.html", "'deeper.html' resolves to no file"),
        ("mirror/h/page.html", "'gone.png' resolves to no file"),
    ]
    assert report.stats["mirror links"] == 3


@pytest.mark.parametrize("streamed", [False, True])
def test_a_broken_background_of_a_later_body_tag_is_named(
    tmp_path: Path, monkeypatch, streamed: bool
) -> None:
    # Text before it began the body: the later tag's background is the body's, an image a
    # browser fetches, whether the page is small or read as a stream.
    page = '<p>text</p><body class=late background="gone.png"><p>more</p>'
    found, _report = _broken_links_of_a_page(tmp_path, monkeypatch, streamed, page)
    assert found == [("mirror/h/page.html", "'gone.png' resolves to no file")]


def test_a_broken_local_link_in_a_mirrored_svg_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "mirror" / "h"
    folder.mkdir(parents=True)
    (folder / "here.png").write_bytes(b"png")
    (folder / "a.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><image href="here.png"/><use href="gone.svg#i"/>'
        '<rect style="fill:url(gone.png)"/><a href="http://elsewhere.test/">e</a></svg>'
    )
    report = Report()
    check_mirror(tmp_path, report)
    found = sorted(problem.detail for problem in report.examples.get(BROKEN_MIRROR_LINK, []))
    assert found == ["'gone.png' resolves to no file", "'gone.svg#i' resolves to no file"]
    assert report.stats["mirror links"] == 3
