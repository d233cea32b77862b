"""A rendered page's DOM: its record, its manifest columns, its mirror file, and what verify makes of it."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import in_linear_time
from snapshot_builder import SnapshotBuilder

from archiver.mirror.build import build_mirror
from archiver.mirror.scripts import neutralise_scripts
from archiver.report import UNLISTED_RECORD, UNRECORDED_LINK, WRONG_LOCATION, Report
from archiver.store.committed import committed_end
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.verify.completeness import check_completeness, crawl_scope
from archiver.verify.consistency import check_manifest
from archiver.warc.integrity import WarcScan, warc_files
from archiver.warc.record_index import RecordIndex

SHELL = (
    "<!doctype html><html><head><title>App</title></head>"
    "<body><div id='root'></div><script src='/app.js'></script></body></html>"
)
DOM = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>App</title></head><body>'
    '<div id="root"><h1>Built</h1><a href="/b" onclick="go(event)">B</a><img src="/pic.png"></div>'
    '<noscript>Enable JavaScript</noscript><script src="/app.js"></script></body></html>'
)


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<script src="a.js"></script>', '<script type="text/x-archived-script" src="a.js"></script>'),
        (
            "<script type=module>import x from './x.js'</script>",
            '<script type="text/x-archived-script" data-archived-type=module>'
            "import x from './x.js'</script>",
        ),
        (
            '<script type="application/ld+json">{"a": 1}</script>',
            '<script type="application/ld+json">{"a": 1}</script>',
        ),
        (
            '<body onload="start()"><a href="#" onClick="go()">',
            '<body data-archived-onload="start()"><a href="#" data-archived-onclick="go()">',
        ),
        ('<img\tonerror="retry()" src="a.png">', '<img\tdata-archived-onerror="retry()" src="a.png">'),
        ('<link rel="modulepreload" href="m.js">', '<link data-archived-rel="modulepreload" href="m.js">'),
        ("<link rel=preload as=script href=p.js>", "<link data-archived-rel=preload as=script href=p.js>"),
        (
            "<link rel=preload as=image href=i.png><link rel=stylesheet href=s.css>",
            "<link rel=preload as=image href=i.png><link rel=stylesheet href=s.css>",
        ),
        ("<p>a</p><NOSCRIPT>Enable JavaScript</NOSCRIPT><p>b</p>", "<p>a</p><p>b</p>"),
        # Only <noscript> elements: not the text in a comment or a script.
        (
            "<!-- <noscript>c</noscript> --><script>'<noscript>'</script><p>",
            "<!-- <noscript>c</noscript> --><script type=\"text/x-archived-script\">'<noscript>'</script><p>",
        ),
        ("<p>a</p><noscript>never closed", "<p>a</p><noscript>never closed"),
        (
            "<p>caf\u00e9</p><script>x</script>",
            '<p>caf\u00e9</p><script type="text/x-archived-script">x</script>',
        ),
        # A frame's srcdoc document (the render keeps there what scripts wrote), nested ones too.
        (
            "<iframe onload=x() srcdoc='<p>a</p><script>go()</script><noscript>n</noscript>"
            '<iframe srcdoc="&lt;script>deep()&lt;/script>"></iframe>\'></iframe>',
            '<iframe data-archived-onload=x() srcdoc="&lt;p&gt;a&lt;/p&gt;&lt;script type=&quot;'
            "text/x-archived-script&quot;&gt;go()&lt;/script&gt;&lt;iframe srcdoc=&quot;&amp;lt;script "
            "type=&amp;quot;text/x-archived-script&amp;quot;&amp;gt;deep()&amp;lt;/script&amp;gt;"
            '&quot;&gt;&lt;/iframe&gt;"></iframe>',
        ),
        ("<iframe srcdoc='<p>no script</p>'></iframe>", "<iframe srcdoc='<p>no script</p>'></iframe>"),
    ],
)
def test_neutralise_scripts(html, expected):
    assert neutralise_scripts(html.encode("utf-8")) == expected.encode("utf-8")


def test_noscripts_never_closed_cost_no_time_squared():
    """A page of "<noscript>" openings was searched to its end from each (hours for a megabyte)."""
    with in_linear_time():
        assert neutralise_scripts(b"<p>" + b"<noscript>" * 100_000) == b"<p>" + b"<noscript>" * 100_000


def _snapshot(tmp_path, *, claimed=True, b_recorded=True):
    snap = SnapshotBuilder(tmp_path / "snap")
    page = snap.capture(
        "http://site.test/",
        SHELL.encode(),
        [("Content-Type", "text/html")],
        found_by="seed",
        depth=0,
        title="App",
    )
    snap.file("http://site.test/app.js", b"document.body.innerHTML = '...';", "application/javascript")
    snap.file("http://site.test/pic.png", b"\x89PNG", "image/png")
    if b_recorded:
        snap.page("http://site.test/b", "<title>B</title>", title="B")  # as the crawl records it
    location = snap.rendered(page, DOM, claimed=claimed)
    return snap.close(), location


def _verify(root, mirror=False):
    report = Report()
    with RecordIndex() as records, Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        scan = WarcScan(report, records)
        scan.scan(warc_files(root / "warc"))
        names = {path.name: path.stat().st_size for path in warc_files(root / "warc")}
        check_manifest(
            manifest, scan.records, names, scan.damaged, report, root / "mirror" if mirror else None
        )
        scope = crawl_scope({"seeds": ["http://site.test/"], "scope": "host"}, manifest)
        check_completeness(manifest, scan.records, root / "warc", scope, report)
    return report


def test_links_found_only_in_the_rendered_dom_count_for_completeness(tmp_path):
    root, _location = _snapshot(tmp_path, b_recorded=False)
    report = _verify(root)
    assert [problem.where for problem in report.examples.get(UNRECORDED_LINK, [])] == ["http://site.test/b"]
    assert report.stats["rendered pages parsed"] == 1
    assert not report.examples.get(WRONG_LOCATION, []) and not report.examples.get(UNLISTED_RECORD, [])


def test_a_dom_record_no_row_claims_is_reported(tmp_path):
    root, location = _snapshot(tmp_path, claimed=False)
    report = _verify(root)
    assert [problem.where for problem in report.examples.get(UNLISTED_RECORD, [])] == [
        f"{location[0]}@{location[1]}"
    ]


def test_a_row_pointing_at_no_dom_record_is_reported(tmp_path):
    root, _location = _snapshot(tmp_path)
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        db.execute("UPDATE urls SET dom_warc_offset = 0 WHERE url = 'http://site.test/'")
    report = _verify(root)
    assert len(report.examples.get(WRONG_LOCATION, [])) == 1


def test_the_mirror_of_a_rendered_page_is_its_dom_with_scripts_inert(tmp_path):
    root, _location = _snapshot(tmp_path)
    stats = build_mirror(root)
    assert stats.errors == []
    html = (root / "mirror" / "site.test" / "index.html").read_text()
    assert '<h1>Built</h1><a href="b.html" data-archived-onclick="go(event)">B</a><img src="pic.png">' in html
    assert '<script type="text/x-archived-script" src="app.js"></script>' in html
    assert "noscript" not in html
    assert _verify(root, mirror=True).ok


def test_a_manifest_from_before_gets_the_render_columns(tmp_path):
    path = tmp_path / "manifest.sqlite3"
    with sqlite3.connect(path) as db:  # the table as the first release wrote it
        db.execute(
            "CREATE TABLE urls (url TEXT PRIMARY KEY, found_by TEXT NOT NULL, parent TEXT, "
            "depth INTEGER NOT NULL, outcome TEXT NOT NULL, reason TEXT, tries INTEGER NOT NULL DEFAULT 0, "
            "status INTEGER, content_type TEXT, length INTEGER, payload_digest TEXT, fetched_at TEXT, "
            "title TEXT, redirect_to TEXT, final_url TEXT, warc_file TEXT, warc_offset INTEGER, "
            "warc_length INTEGER, record_type TEXT, truncated INTEGER NOT NULL DEFAULT 0, local_path TEXT)"
        )
        db.execute(
            "INSERT INTO urls (url, found_by, depth, outcome) VALUES ('http://h/', 'seed', 0, 'queued')"
        )
    with Manifest.open(path, readonly=True) as manifest:  # verify reads it as it is
        row = manifest.get("http://h/")
        assert row is not None and row.render_reason is None and row.dom_warc_file is None
    with Manifest.open(path) as manifest:  # a resume adds them
        manifest.set_render("http://h/", "always", None, ("a.warc.gz", 10, 20))
        row = manifest.get("http://h/")
        assert row is not None and (row.render_reason, row.dom_warc_offset) == ("always", 10)


def test_a_final_row_keeps_how_a_queued_url_was_found(tmp_path):
    """A URL a browser asked for before its queue item came up still says how the crawl found it."""
    with Manifest.open(tmp_path / "m.sqlite3") as manifest:
        manifest.upsert(ManifestRow("http://h/a", "link", 1, "queued", parent="http://h/"))
        manifest.upsert(ManifestRow("http://h/a", "requisite", 3, "fetched", parent="http://h/x", status=200))
        row = manifest.get("http://h/a")
        assert (row.found_by, row.depth, row.parent, row.outcome) == ("link", 1, "http://h/", "fetched")
        manifest.upsert(ManifestRow("http://h/s", "link", 5, "skipped", reason="depth"))
        manifest.upsert(ManifestRow("http://h/s", "requisite", 2, "fetched", parent="http://h/x", status=200))
        row = manifest.get("http://h/s")
        assert (row.found_by, row.depth) == ("requisite", 2)  # a skip is no finding to keep


def test_rendered_pages_of_one_shell_keep_their_own_mirror_files(tmp_path):
    """An application serves one shell at every address: identical payloads, different pages."""
    snap = SnapshotBuilder(tmp_path / "snap")
    for name in ("one", "two"):
        page = snap.page(f"http://site.test/app/{name}", SHELL)
        snap.rendered(page, DOM.replace("<h1>Built</h1>", f"<h1>Page {name}</h1>"))
    root = snap.close()
    assert build_mirror(root).errors == []
    for name in ("one", "two"):
        assert f"<h1>Page {name}</h1>" in (root / "mirror" / "site.test" / "app" / f"{name}.html").read_text()


def test_a_committed_dom_record_is_never_cut_as_a_crash_tail(tmp_path):
    """Resume cuts what follows the last committed record: a rendered DOM, written after its page's
    response and request, can be that record."""
    root, location = _snapshot(tmp_path)
    path = root / "warc" / location[0]
    with Manifest.open(root / "manifest.sqlite3") as manifest:
        assert committed_end(path, manifest).end == path.stat().st_size == location[1] + location[2]
        assert manifest.has_capture_at(location[0], location[1])
