"""The offline mirror: built from a snapshot or during a crawl, every local link resolves, nothing
written outside mirror/, index.html, damage reported."""

from __future__ import annotations

import gzip
import html
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import lxml.etree
import lxml.html
import pytest
from conftest import manifest_rows
from mirror_cases import PNG, S, target_of
from snapshot_builder import SnapshotBuilder
from test_verify_tamper import edit_in_place, server_blanked
from warcio.archiveiterator import ArchiveIterator

from archiver import cli
from archiver.link_values import iter_css_urls
from archiver.links import iter_html_references
from archiver.mirror.build import build_mirror
from archiver.report import Report
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.svg import iter_svg_references
from archiver.verify.mirror_links import check_mirror
from archiver.verify.verifier import verify_snapshot


def small_site(root: Path) -> Path:
    snap = SnapshotBuilder(root)
    snap.page(
        f"{S}/",
        """<!doctype html><html><head><title>Home</title>
        <link rel="stylesheet" href="/css/site.css"></head><body>
        <a href="/about">About</a> <a href="/old">Old</a> <a href="/docs/">Docs</a>
        <a href="/list?page=2">Page 2</a> <a href="/missing">Missing</a>
        <a href="https://elsewhere.test/">Elsewhere</a> <img src="/img/logo.png"></body></html>""",
        title="Home",
    )
    snap.page(
        f"{S}/about",
        '<title>About</title><a href="/">home</a><a href="/docs/#x">d</a>',
        gzipped=True,
        title="About",
    )
    snap.page(f"{S}/docs/", '<a href="../about">about</a><img src="../img/logo.png">', title="Docs")
    snap.page(f"{S}/list?page=2", '<a href="?page=1">1</a><a href="/">home</a>', title="List 2")
    snap.page(f"{S}/new", '<a href="/old">self via redirect</a>', title="New")
    snap.redirect(f"{S}/old", f"{S}/older")
    snap.redirect(f"{S}/older", f"{S}/new", status=302)
    snap.file(
        f"{S}/css/site.css",
        b'@import "print.css"; body{background:url(../img/logo.png)}',
        "text/css",
        gzipped=True,
    )
    snap.file(f"{S}/img/logo.png", PNG, "image/png")
    snap.page(f"{S}/missing", "<h1>Not here</h1>", status=404, title="404")
    snap.other(f"{S}/private/", "skipped", "robots", parent=f"{S}/")
    snap.other(f"{S}/broken", "failed", "connection reset", parent=f"{S}/")
    return snap.close()


def local_links(mirror_file: Path) -> list[str]:
    data = mirror_file.read_bytes()
    if mirror_file.suffix == ".css":
        return [value for _s, _e, value in iter_css_urls(data.decode())]
    root = lxml.html.document_fromstring(data)
    return [value for *_rest, value, _kind in iter_html_references(root)]


def test_small_site(tmp_path: Path) -> None:
    root = small_site(tmp_path / "snap")
    stats = build_mirror(root)
    mirror = root / "mirror" / "site.test"
    assert stats.errors == []
    assert (stats.pages, stats.stylesheets, stats.other) == (6, 1, 1)
    assert stats.redirects == 2
    assert "6 pages" in stats.summary()
    assert sorted(p.relative_to(mirror).as_posix() for p in mirror.rglob("*") if p.is_file()) == [
        "about.html",
        "css/site.css",
        "docs/index.html",
        "img/logo.png",
        "index.html",
        "list@page=2.html",
        "missing.html",
        "new.html",
    ]
    home = (mirror / "index.html").read_text()
    assert 'href="about.html"' in home and 'href="new.html"' in home
    assert 'href="docs/index.html"' in home and 'href="list@page=2.html"' in home
    assert 'href="missing.html"' in home and 'href="https://elsewhere.test/"' in home
    assert 'href="css/site.css"' in home and 'src="img/logo.png"' in home
    assert (mirror / "about.html").read_text() == (
        '<title>About</title><a href="index.html">home</a><a href="docs/index.html#x">d</a>'
    )
    assert (mirror / "css/site.css").read_text() == (
        '@import "http://site.test/css/print.css"; body{background:url(../img/logo.png)}'
    )
    assert (mirror / "img/logo.png").read_bytes() == PNG
    assert (mirror / "list@page=2.html").read_text() == (
        '<a href="http://site.test/list?page=1">1</a><a href="index.html">home</a>'
    )


def test_every_local_link_resolves(tmp_path: Path) -> None:
    root = small_site(tmp_path / "snap")
    build_mirror(root)
    for document in (root / "mirror").rglob("*"):
        if document.suffix not in (".html", ".css"):
            continue
        for link in local_links(document):
            if link.startswith(("http:", "https:", "#")):
                continue
            assert target_of(document, link).is_file(), (document, link)
    report = Report()
    check_mirror(root, report)
    assert report.ok, report


def test_manifest_local_paths(tmp_path: Path) -> None:
    root = small_site(tmp_path / "snap")
    build_mirror(root)
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        paths = {row.url: row.local_path for row in manifest.rows()}
    assert paths[f"{S}/"] == "site.test/index.html"
    assert paths[f"{S}/list?page=2"] == "site.test/list@page=2.html"
    assert paths[f"{S}/old"] is None and paths[f"{S}/broken"] is None
    for url, path in paths.items():
        if path:
            assert (root / "mirror" / path).is_file(), url


def test_rebuild_replaces_the_mirror_and_never_follows_planted_symlinks(tmp_path: Path) -> None:
    root = small_site(tmp_path / "snap")
    build_mirror(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious")
    os.symlink(outside, root / "mirror" / "site.test" / "img2")
    os.symlink(outside / "keep.txt", root / "mirror" / "site.test" / "stale.html")
    (root / "mirror" / "stale-file.html").write_text("old")
    first = {p: p.read_bytes() for p in (root / "mirror").rglob("*") if p.is_file() and not p.is_symlink()}
    build_mirror(root)
    assert (outside / "keep.txt").read_text() == "precious"
    assert not (root / "mirror" / "stale-file.html").exists()
    assert not (root / "mirror" / "site.test" / "img2").exists()
    after = {p: p.read_bytes() for p in (root / "mirror").rglob("*") if p.is_file()}
    first.pop(root / "mirror" / "stale-file.html")
    assert after == first
    assert not (root / ".mirror.partial").exists() and not (root / ".mirror.old").exists()


def test_revisit_payload_comes_from_the_original_record(tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/a/", '<a href="/b/">b</a><img src="x.png">')
    snap.file(f"{S}/a/x.png", PNG, "image/png")
    revisit = snap.page(f"{S}/b/", '<a href="/b/">b</a><img src="x.png">')
    copy = snap.file(f"{S}/copy.png", PNG, "image/png")
    assert copy.record_type == "revisit" and revisit.record_type == "revisit"
    root = snap.close()
    stats = build_mirror(root)
    assert stats.errors == []
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        copy_path = manifest.get(f"{S}/copy.png").local_path
    assert copy_path == "site.test/a/x.png"  # an identical file shares the first one's
    assert (root / "mirror" / copy_path).read_bytes() == PNG
    # Same bytes, different folder: each copy is rewritten for its own URL.
    assert (root / "mirror/site.test/b/index.html").read_text() == (
        '<a href="index.html">b</a><img src="http://site.test/b/x.png">'
    )
    assert (root / "mirror/site.test/a/index.html").read_text() == (
        '<a href="../b/index.html">b</a><img src="x.png">'
    )


def test_interrupted_crawl(tmp_path: Path) -> None:
    """Queued URLs, and a WARC file torn inside its last record: the rest is mirrored."""
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", '<a href="/a">a</a><a href="/b">b</a><a href="/q">q</a>')
    snap.page(f"{S}/a", "<p>a</p>")
    last = snap.page(f"{S}/b", "<p>b</p>" * 200)
    snap.other(f"{S}/q", "queued", "")
    root = snap.close()
    warc = root / "warc" / last.warc_file
    with open(warc, "r+b") as fh:
        fh.truncate(last.warc_offset + 40)
    stats = build_mirror(root)
    assert stats.pages == 2
    home = (root / "mirror/site.test/index.html").read_text()
    assert home == (
        '<a href="a.html">a</a><a href="http://site.test/b">b</a><a href="http://site.test/q">q</a>'
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_corrupt_record_is_reported_not_fatal(tmp_path: Path, workers: int) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", '<a href="/a">a</a>')
    bad = snap.page(f"{S}/a", "<p>a</p>" * 100)
    root = snap.close()
    warc = root / "warc" / bad.warc_file
    data = bytearray(warc.read_bytes())
    start = bad.warc_offset + 20
    data[start : start + 30] = b"\x00" * 30
    warc.write_bytes(bytes(data))
    stats = build_mirror(root, workers=workers)
    assert len(stats.errors) == 1 and "site.test/a" in stats.errors[0]
    assert stats.pages == 1
    # The page that links to it, written before the failure, leads where the live URL is (as
    # wget leaves a link to what it could not save), not to a file that is not there.
    home = (root / "mirror/site.test/index.html").read_text()
    assert home == '<a href="http://site.test/a">a</a>'
    assert not (root / "mirror/site.test/a.html").exists()
    report = Report()
    check_mirror(root, report)
    assert report.ok, report.examples
    # The command says so in its exit code too: a script must see the mirror lacks a file.
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "mirror", str(root)], capture_output=True, text=True
    )
    assert done.returncode == 1 and "1 errors" in done.stdout and done.stderr == "", done


@pytest.mark.parametrize(
    "path",
    [
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/x",
        "/..%2f..%2fx",
        "/a%00b",
        "/CON",
        "/x\\..\\..\\y",
        "/" + "z" * 400,
        "/%5c%5c..%5cwin",
    ],
)
def test_hostile_urls_stay_inside_mirror(path: str, tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", f'<a href="{path}">x</a>')
    snap.page(f"{S}{path}", "<p>hostile</p>")
    root = snap.close()
    stats = build_mirror(root)
    assert stats.errors == [] and stats.pages == 2
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    mirror = (root / "mirror").resolve()
    outside = [
        p
        for p in files
        if p.suffix == ".html" and mirror not in p.resolve().parents and p.name != "index.html"
    ]
    assert outside == []
    report = Report()
    check_mirror(root, report)
    assert report.ok, report


def test_large_asset_is_streamed(tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    big = os.urandom(3 * 1024 * 1024)
    snap.file(f"{S}/big.bin", big, "application/octet-stream")
    text = b"x" * (5 * 1024 * 1024)
    snap.file(f"{S}/big.txt", gzip.compress(text, mtime=0), "text/plain", gzipped=False)
    snap.file(f"{S}/big2.txt", text, "text/plain", gzipped=True)
    root = snap.close()
    build_mirror(root)
    assert (root / "mirror/site.test/big.bin").read_bytes() == big
    assert (root / "mirror/site.test/big2.txt").read_bytes() == text
    # big.txt stores the very bytes big2.txt does, but not as a Content-Encoding: not shared.
    assert gzip.decompress((root / "mirror/site.test/big.txt").read_bytes()) == text


def test_index_html(tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", '<a href="/x">x</a>', title='<script>alert("t")</script> & co')
    snap.page(f"{S}/x?q=<b>", "<p>x</p>", title="Query page")
    snap.redirect(f"{S}/r", f"{S}/x?q=<b>")
    snap.other(f"{S}/skip", "skipped", "robots")
    snap.other("javascript:alert(1)", "skipped", "not http")
    snap.other(f"{S}/fail", "failed", 'refused "<x>"')
    root = snap.close()
    build_mirror(root)
    index = (root / "index.html").read_text()
    assert "<script>alert" not in index
    assert "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt; &amp; co" in index
    assert 'href="mirror/site.test/index.html"' in index
    assert "refused &#34;&lt;x&gt;&#34;" in index
    assert 'href="javascript:' not in index
    assert 'id="filter"' in index and "Redirects" in index and "robots" in index
    tree = lxml.html.document_fromstring(index.encode())
    hrefs = [a.get("href") for a in tree.iter("a")]
    locals_ = [h for h in hrefs if h.startswith("mirror/")]
    assert len(locals_) == 3  # two pages, and the redirect's final file
    for href in locals_:
        assert (root / unquote(href)).is_file(), href
    assert re.search(r"<td class=\"url\">http://site.test/r</td>", index)


def test_index_html_puts_each_fetched_url_in_one_table(tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", "<p>home</p>")
    snap.capture(
        f"{S}/odd-case", b"<p>odd</p>", [("Content-Type", "text/html")], content_type="Application/XHTML+XML"
    )
    snap.file(f"{S}/logo.png", b"\x89PNG", "image/png")
    snap.capture(f"{S}/untyped", b"data", [])
    snap.other(f"{S}/lost", "fetched", "")  # fetched, but its record is not in the WARC files
    root = snap.close()
    build_mirror(root)
    tree = lxml.html.document_fromstring((root / "index.html").read_bytes())

    def listed(table: str) -> set[str]:
        return {cell.text_content() for cell in tree.xpath(f'//table[@id="{table}"]//td[@class="url"]')}

    assert listed("pages") == {f"{S}/", f"{S}/odd-case"}
    files = listed("files")
    assert {f"{S}/logo.png", f"{S}/untyped"} <= files and not files & {f"{S}/", f"{S}/odd-case"}
    assert listed("failed") == {f"{S}/lost"}


def test_templates_ship_with_the_package() -> None:
    from importlib.resources import files

    assert files("archiver.templates").joinpath("index.html").is_file()


def test_not_a_snapshot(tmp_path: Path) -> None:
    from archiver.errors import SnapshotError

    with pytest.raises(SnapshotError, match="not a snapshot"):
        build_mirror(tmp_path)


async def test_crawled_site_mirror(site: Any, run_crawl: Any) -> None:
    """End to end: crawl a real local server, build the mirror, every local link resolves."""
    from demo_site import build_demo_site

    await build_demo_site(site).start()
    result = await run_crawl(site.url("/"))
    root = result.snapshot.root
    stats = build_mirror(root)
    assert stats.errors == []
    assert stats.pages == 7 and stats.stylesheets == 2
    host = site.host.replace(":", "+")
    home = (root / "mirror" / host / "index.html").read_text()
    for link in (
        'href="docs/index.html"',
        'href="about.html"',
        'href="new.html"',
        'href="search@q=a%20b&amp;page=2.html"',
        'src="img/a.png"',
        'srcset="img/a.png 1x, img/b.png 2x"',
        "url(&#x27;img/b.png&#x27;)",
        "url(img/c.png)",
        'src="frame.html"',
        'href="static/site.css"',
    ):
        assert link in home, link
    assert site.url("/") not in home
    report = Report()
    check_mirror(root, report)
    assert report.ok, report
    index = (root / "index.html").read_text()
    assert "Demo home" in index and f"mirror/{host}/index.html" in index


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()
    }


def test_build_shared_by_processes_writes_what_one_process_writes(tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", "".join(f'<a href="/p{n}">p{n}</a>' for n in range(300)))
    for n in range(300):
        snap.page(
            f"{S}/p{n}",
            f'<link rel=stylesheet href="/s.css"><a href="/p{(n + 1) % 300}">next</a>'
            f'<img src="/i{n % 7}.png"><a href="/gone">gone</a>',
            gzipped=n % 3 == 0,
        )
    for n in range(7):
        snap.file(f"{S}/i{n}.png", PNG if n else PNG + b"x", "image/png")
    snap.file(f"{S}/s.css", b"body{background:url(/i1.png)}", "text/css")
    snap.redirect(f"{S}/gone", f"{S}/p0")
    root = snap.close()
    one = build_mirror(root, workers=1)
    one_tree = _tree(root / "mirror")
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        one_paths = {row.url: row.local_path for row in manifest.rows()}
    shared = build_mirror(root, workers=3)
    assert _tree(root / "mirror") == one_tree
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        assert {row.url: row.local_path for row in manifest.rows()} == one_paths
    assert (
        (shared.pages, shared.stylesheets, shared.other, shared.bytes, shared.redirects)
        == (one.pages, one.stylesheets, one.other, one.bytes, one.redirects)
        == (301, 1, 2, one.bytes, 1)  # i1.png to i6.png are one payload: one file
    )
    assert shared.shared == one.shared == 5
    assert one_paths[f"{S}/p5"] == "site.test/p5.html"


async def test_identical_payloads_share_one_mirror_file(site: Any, run_crawl: Any) -> None:
    home = "<html><title>Home</title><a href='/dir/index.html'>Home</a><a href='x.html'>x</a>"
    site.file("/dir/", home)
    site.file("/dir/index.html", home)
    site.page("/dir/x.html", links=["/dir/", "/dir/index.html", "/a/logo.png", "/b/logo.png"])
    site.file("/a/logo.png", PNG, "image/png")
    site.file("/b/logo.png", PNG, "image/png")
    site.file("/c/index.html", home)  # same bytes, another folder: its links mean other files
    site.page("/", links=["/dir/", "/c/index.html"])
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    stats = build_mirror(root)
    assert stats.shared == 2 and not stats.errors
    rows = {url: row.local_path for url, row in manifest_rows(root).items()}
    host = site.host.replace(":", "+")
    assert rows[site.url("/dir/")] == rows[site.url("/dir/index.html")] == f"{host}/dir/index.html"
    assert rows[site.url("/a/logo.png")] == rows[site.url("/b/logo.png")]
    assert rows[site.url("/c/index.html")] != rows[site.url("/dir/")]
    folder = root / "mirror" / host / "dir"
    assert sorted(p.name for p in folder.iterdir()) == ["index.html", "x.html"]
    page = (folder / "x.html").read_text()
    assert page.count('href="index.html"') == 2  # both spellings of Home lead to one file
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


def test_index_lists_the_first_skipped_urls_without_sorting_them_all(tmp_path: Path) -> None:
    with Manifest.open(tmp_path / "manifest.sqlite3") as manifest:
        for n in range(30):
            manifest.upsert(ManifestRow(f"http://h/{n:02}", "link", 1, "skipped", reason="depth"))
        assert [row.url for row in manifest.rows("skipped", limit=3)] == [
            "http://h/00",
            "http://h/01",
            "http://h/02",
        ]
        plan = manifest.connection.execute(
            "EXPLAIN QUERY PLAN SELECT url FROM urls WHERE outcome = 'skipped' ORDER BY url LIMIT 3"
        ).fetchall()
    # Read in URL order from an index: the rows not listed are never read, let alone sorted.
    assert not any("TEMP B-TREE" in str(step) for step in plan), plan


async def test_an_iframe_srcdoc_is_crawled_and_made_local_in_the_mirror(site: Any, run_crawl: Any) -> None:
    # Its document's links resolve against its page's base URL: the crawl never read them, and
    # the mirror left them relative to a page whose <base> it drops, or live.
    inner = '<img src="deep.png">'
    document = (
        '<link rel="stylesheet" href="s.css"><img src="i.png" srcset="i2.png 2x"><a href="next.html">n</a>'
        f'<p style="background:url(bg.png)">p</p><iframe srcdoc="{html.escape(inner)}"></iframe>'
    )
    site.file("/", f'<base href="/dir/"><iframe srcdoc="{html.escape(document)}"></iframe>')
    site.file("/dir/s.css", "body{background:url(css.png)}", "text/css")
    for n, name in enumerate(("i.png", "i2.png", "bg.png", "deep.png", "css.png")):
        site.file(f"/dir/{name}", PNG + bytes([n]), "image/png")
    site.page("/dir/next.html")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    for name in ("s.css", "i.png", "i2.png", "bg.png", "deep.png", "css.png", "next.html"):
        row = rows[site.url(f"/dir/{name}")]
        assert (row.status, row.found_by) == (200, "link" if name == "next.html" else "requisite"), name
    page = root / "mirror" / site.host.replace(":", "+") / "index.html"
    outer = lxml.html.document_fromstring(page.read_bytes())
    srcdoc = lxml.html.document_fromstring(outer.find(".//iframe").get("srcdoc"))
    links = [value for *_rest, value, _kind in iter_html_references(srcdoc)]
    assert links == ["dir/s.css", "dir/i.png", "dir/i2.png", "dir/next.html", "dir/bg.png"]
    deeper = lxml.html.document_fromstring(srcdoc.find(".//iframe").get("srcdoc"))
    assert [value for *_rest, value, _kind in iter_html_references(deeper)] == ["dir/deep.png"]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    assert report.stats["mirror links"] >= 6


@pytest.mark.parametrize("size", ["small", "streamed"])
async def test_requisites_before_a_base_are_fetched_against_the_pages_url_as_chromium_fetches_them(
    site: Any, run_crawl: Any, size: str
) -> None:
    """Chromium fetches a stylesheet, a script, a style's image before the page's <base> as its
    parser inserts them, against the page's own URL (measured); the crawl resolved every link
    against the base, fetched other URLs than a reader's browser did, and the mirror pointed there.
    A link followed later (an <a>, a <link rel=next>, even one before the <base>) resolves against
    the base."""
    filler = "<p>" + "x" * 300_000 + "</p>" if size == "streamed" else ""
    site.file(
        "/x/page.html",
        '<!doctype html><html><head><link rel="stylesheet" href="s.css"><script src="j.js"></script>'
        '<style>p{background:url(bg.png)}</style><link rel="next" href="early.html"><base href="/b/"></head>'
        f'<body style="background:url(bb.png)"><img src="i.png"><a href="p.html">p</a>{filler}</body></html>',
    )
    site.file("/x/s.css", "p{color:red}", "text/css")
    site.file("/x/j.js", "1", "text/javascript")
    for n, name in enumerate(("x/bg.png", "b/bb.png", "b/i.png")):
        site.file(f"/{name}", PNG + bytes([n]), "image/png")  # one file each, not one shared
    site.page("/b/p.html")
    site.page("/b/early.html")
    await site.start()
    root = (await run_crawl(site.url("/x/page.html"), sitemaps=False)).snapshot.root
    rows = manifest_rows(root)
    fetched = sorted(url.removeprefix(site.url("")) for url, row in rows.items() if row.status == 200)
    assert fetched == [
        "/b/bb.png",
        "/b/early.html",
        "/b/i.png",
        "/b/p.html",
        "/x/bg.png",
        "/x/j.js",
        "/x/page.html",
        "/x/s.css",
    ]
    page = lxml.html.document_fromstring(
        (root / "mirror" / rows[site.url("/x/page.html")].local_path).read_bytes()
    )
    assert sorted(value for *_rest, value, _kind in iter_html_references(page)) == [
        "../b/bb.png",
        "../b/early.html",
        "../b/i.png",
        "../b/p.html",
        "bg.png",
        "j.js",
        "s.css",
    ]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_svg_documents_are_crawled_and_made_local_in_the_mirror(site: Any, run_crawl: Any) -> None:
    # An SVG image's <image>, <use>, <feImage>, styles and <a> were neither fetched nor rewritten:
    # opened from the mirror, it drew what it could reach on the web.
    site.page("/", body='<img src="img/a.svg"><object data="img/o.svg"></object>')
    site.file(
        "/img/a.svg",
        """<?xml version="1.0"?>
        <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
        <style><![CDATA[ rect { fill: url(pattern.svg#p) } ]]></style>
        <image href="pic.png"/><use xlink:href="sprite.svg#icon"/>
        <filter id="f"><feImage href="/fe.png"/></filter><circle style="fill:url('bg.png')"/>
        <a href="/page.html"><text>more</text></a></svg>""",
        "image/svg+xml",
    )
    site.file(
        "/img/o.svg", '<svg xmlns="http://www.w3.org/2000/svg"><image href="o.png"/></svg>', "image/svg+xml"
    )
    site.file(
        "/img/sprite.svg",
        '<svg xmlns="http://www.w3.org/2000/svg"><image href="deep.png"/></svg>',
        "image/svg+xml",
    )
    site.file("/img/pattern.svg", '<svg xmlns="http://www.w3.org/2000/svg"/>', "image/svg+xml")
    for n, path in enumerate(("/img/pic.png", "/fe.png", "/img/bg.png", "/img/o.png", "/img/deep.png")):
        site.file(path, PNG + bytes([n]), "image/png")
    site.page("/page.html")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    fetched = ("/img/pattern.svg", "/img/pic.png", "/img/sprite.svg", "/fe.png", "/img/bg.png", "/page.html")
    for path in (*fetched, "/img/o.png", "/img/deep.png"):
        assert rows[site.url(path)].status == 200, path
    assert rows[site.url("/page.html")].found_by == "link"
    svg = root / "mirror" / site.host.replace(":", "+") / "img" / "a.svg"
    tree = lxml.etree.fromstring(svg.read_bytes())  # still XML
    links = [value for value, _requisite, _in_css in iter_svg_references(svg.read_bytes(), None)]
    for link, path in zip(links, fetched, strict=True):
        assert target_of(svg, link) == root / "mirror" / str(rows[site.url(path)].local_path), link
    assert tree is not None and site.url("/").encode() not in svg.read_bytes()
    written = svg.read_bytes()
    assert not build_mirror(root).errors
    assert svg.read_bytes() == written  # the mirror rebuilt from the WARC files: the same bytes
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_an_empty_query_is_a_url_of_its_own_from_the_request_to_the_mirror(
    site: Any, run_crawl: Any
) -> None:
    # "/p?" is another URL than "/p" (a browser asks for "GET /p?"), and a server may answer it
    # otherwise: each is fetched, recorded and mirrored as itself.
    site.page("/", links=["/p", "/p?", "?", "/p?#part"])
    site.page("/p", title="plain")
    site.page("/p?", title="empty query")
    site.page("/?", title="home, empty query")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    assert (site.hits["/p"], site.hits["/p?"], site.hits["/?"]) == (1, 1, 1)
    rows = manifest_rows(root)
    assert (rows[site.url("/p")].title, rows[site.url("/p?")].title) == ("plain", "empty query")
    assert rows[site.url("/?")].title == "home, empty query"
    requests, responses = {}, {}
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as warc:
            for record in ArchiveIterator(warc):
                target = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "request":
                    requests[target] = record.http_headers.statusline.split(" ")[0]  # the request target
                elif record.rec_type == "response":
                    responses[target] = record.content_stream().read()
    assert (requests[site.url("/p?")], requests[site.url("/p")]) == ("/p?", "/p")
    assert b"empty query" in responses[site.url("/p?")] and b"plain" in responses[site.url("/p")]
    paths = {url: rows[site.url(url)].local_path for url in ("/", "/?", "/p", "/p?")}
    assert len(set(paths.values())) == 4, paths
    host = root / "mirror" / site.host.replace(":", "+")
    home = (host / "index.html").read_text()
    assert 'href="p@.html"' in home and 'href="p.html"' in home and 'href="index@.html"' in home
    assert 'href="p@.html#part"' in home
    assert "empty query" in (host / "p@.html").read_text() and "plain" in (host / "p.html").read_text()
    written = _tree(root / "mirror")
    build_mirror(root)
    assert _tree(root / "mirror") == written
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_changed_byte_in_the_head_of_a_revisit_is_damage_to_the_mirror(
    site: Any, run_crawl: Any, capsys: Any
) -> None:
    """A revisit's block is its HTTP head alone, which the mirror (and a browser answered from
    the snapshot) reads for the Content-Type and Content-Encoding of its original's payload.
    Changed since (its member compressed again, so only its digest tells), it is damage as a
    changed byte of a body is: the file the crawl wrote is kept and the command exits 1, not
    rebuilt under headers no digest vouches for."""
    same = b'<html><title>Same</title><a href="../one/x.html">one</a><a href="x.html">here</a></html>'
    site.page("/", links=["/one/x.html", "/two/x.html"])
    site.file("/one/x.html", same, "text/html")
    site.file("/two/x.html", same, "text/html")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    row = manifest_rows(root)[site.url("/two/x.html")]
    assert row.record_type == "revisit" and row.warc_offset is not None and row.warc_length is not None
    edit_in_place(
        root / "warc" / str(row.warc_file),
        row.warc_offset,
        row.warc_length,
        server_blanked(b"text/html", b"text/htmx"),
    )
    assert cli.main(["mirror", str(root)]) == 1
    out = capsys.readouterr().out
    kept = f"{row.url}: kept mirror/{row.local_path} as the crawl wrote it; its WARC record cannot be read ("
    assert kept in out and "does not match its digests" in out, out
