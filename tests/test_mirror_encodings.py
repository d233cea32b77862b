"""The mirror reads each document in the encoding the crawl read it in: a page's own, a
stylesheet's referrer's, a srcdoc's UTF-8; CSS escapes and queries name what the crawl fetched."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
from conftest import manifest_rows
from mirror_cases import PNG, S, target_of
from snapshot_builder import SnapshotBuilder

from archiver.link_values import iter_css_urls
from archiver.mirror.build import build_mirror
from archiver.report import LIVE_MIRROR_LINK, Report
from archiver.verify.mirror_links import check_mirror
from archiver.verify.verifier import verify_snapshot


def test_mirror_files_are_checked_as_read_in_their_own_encoding(tmp_path: Path) -> None:
    # A stylesheet's @charset rule, an .xhtml file's XML declaration: read as UTF-8 (a page's
    # bytes guessed windows-1252), the link the rewriter left live named another URL.
    folder = tmp_path / "mirror" / "h"
    folder.mkdir(parents=True)
    (folder / "s.css").write_bytes(b'@charset "windows-1252";a{background:url(http://h/caf\xe9.png)}')
    xhtml = '<?xml version="1.0" encoding="shift_jis"?><html><a href="http://h/\u65e5.png">a</a></html>'
    (folder / "p.xhtml").write_bytes(xhtml.encode("cp932"))
    # An SVG image's declaration read as browsers read its label (ISO-8859-1 is windows-1252);
    # one in a replacement encoding shows nothing, its links none (the mirror keeps its bytes).
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><image href="{}"/></svg>'
    (folder / "l.svg").write_bytes(
        b'<?xml version="1.0" encoding="iso-8859-1"?>' + svg.format("http://h/\u20ac.png").encode("cp1252")
    )
    (folder / "k.svg").write_bytes(
        b'<?xml version="1.0" encoding="iso-2022-kr"?>' + svg.format("/x.png").encode()
    )
    held = {
        "http://h/caf%C3%A9.png": "h/c.png",
        "http://h/%E6%97%A5.png": "h/n.png",
        "http://h/%E2%82%AC.png": "h/e.png",
    }
    report = Report()
    check_mirror(tmp_path, report, held.get)
    assert sorted(problem.where for problem in report.examples.get(LIVE_MIRROR_LINK, [])) == [
        "mirror/h/l.svg",
        "mirror/h/p.xhtml",
        "mirror/h/s.css",
    ]
    assert list(report.counts) == [LIVE_MIRROR_LINK]


def test_shift_jis_page(tmp_path: Path) -> None:
    snap = SnapshotBuilder(tmp_path / "snap")
    text = "<title>日本語</title><p>こんにちは</p><a href='/a'>リンク</a>"
    snap.page(f"{S}/", text.encode("shift_jis"), "text/html; charset=Shift_JIS")
    snap.page(f"{S}/a", "<p>a</p>")
    root = snap.close()
    build_mirror(root)
    body = (root / "mirror/site.test/index.html").read_bytes()
    assert body.startswith(b'<meta charset="Shift_JIS">')
    assert body.decode("shift_jis").endswith('<a href="a.html">リンク</a>')
    assert lxml.html.document_fromstring(body).findtext(".//title") == "日本語"


async def test_documents_that_name_no_charset_are_read_alike_by_the_crawl_and_the_mirror(
    site: Any, run_crawl: Any
) -> None:
    # A page that names no charset is read as a browser guesses it: UTF-8 if it is, else
    # windows-1252 (the crawl's parser read both as Latin-1, the rewriter both as UTF-8).
    # A stylesheet's @charset rule names its own.
    site.file("/", b'<link rel=stylesheet href="l.css"><a href="latin.html">l</a><a href="caf\xc3\xa9.html">')
    site.file("/latin.html", b'<p>caf\xe9 \x93quoted\x94</p><a href="na\xefve.html">n</a>')
    site.file("/caf\u00e9.html", b"<p>coffee</p>")
    site.file("/na\u00efve.html", b"<p>naive</p>")
    site.file("/l.css", b'@charset "ISO-8859-1";\na{background:url(th\xe9.png)}', "text/css")
    site.file("/th\u00e9.png", PNG, "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    for path in ("/caf%C3%A9.html", "/na%C3%AFve.html", "/th%C3%A9.png"):
        assert rows[site.url(path)].status == 200, path
    assert {url for url, row in rows.items() if row.status == 404} == set()
    host = root / "mirror" / site.host.replace(":", "+")
    for name in ("index.html", "latin.html", "l.css"):
        assert site.url("/").encode() not in (host / name).read_bytes(), name  # every link local
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_stylesheet_that_names_no_charset_is_read_in_its_referrers(site: Any, run_crawl: Any) -> None:
    # As browsers read it (CSS's environment encoding): in its page's encoding, an @import in its
    # importer's. Read as UTF-8, each url() below named a U+FFFD, fetched and linked.
    site.file(
        "/", b'<a href="latin.html">l</a><a href="sjis.html">s</a><a href="late.html">u</a><img src=i.svg>'
    )
    site.file("/latin.html", b'<link rel=stylesheet href="l.css">', "text/html; charset=windows-1252")
    site.file(
        "/l.css", b'@import "imp.css"; a{background:url(caf\xe9.png)} a:after{content:"\xe9"}', "text/css"
    )
    site.file("/imp.css", b"i{background:url(na\xefve.png)}", "text/css")
    sjis = '<meta charset="shift_jis"><link rel=stylesheet href="s.css">'.encode("shift_jis")
    site.file("/sjis.html", sjis)
    site.file("/s.css", "p{background:url(日.png)}".encode("shift_jis"), "text/css")
    svg = b'<?xml version="1.0" encoding="windows-1252"?><?xml-stylesheet href="v.css"?><svg xmlns="http://www.w3.org/2000/svg"/>'
    site.file("/i.svg", svg, "image/svg+xml")
    site.file("/v.css", b"svg{background:url(\xfcber.png)}", "text/css")
    # A page in another encoding that links a stylesheet found first elsewhere: the first counts.
    site.file("/late.html", b'<link rel=stylesheet href="l.css">', "text/html; charset=utf-8")
    for n, name in enumerate(("/caf\u00e9.png", "/na\u00efve.png", "/\u65e5.png", "/\u00fcber.png")):
        site.file(name, PNG + bytes([n]), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    for path in ("/caf%C3%A9.png", "/na%C3%AFve.png", "/%E6%97%A5.png", "/%C3%BCber.png"):
        assert rows[site.url(path)].status == 200, path
    assert not [url for url in rows if "%EF%BF%BD" in url]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    # The mirror built again from the records reads each alike; its file says what it was read
    # in, so that it reads the same from disk whatever page of the mirror links it.
    host = root / "mirror" / site.host.replace(":", "+")
    for built_again in (False, True):
        if built_again:
            shutil.rmtree(root / "mirror")
            build_mirror(root)
        stylesheet = (host / "l.css").read_bytes()
        assert stylesheet.startswith(b'@charset "windows-1252";'), stylesheet
        for name, expected in (
            ("l.css", "caf%C3%A9.png"),
            ("imp.css", "na%C3%AFve.png"),
            ("s.css", "%E6%97%A5.png"),
            ("v.css", "%C3%BCber.png"),
        ):
            links = [url for _s, _e, url in iter_css_urls((host / name).read_bytes().decode("latin-1"))]
            assert links[-1] == expected, name
    # The record of the page that refers to l.css damaged since: read as UTF-8, l.css (and imp.css,
    # which l.css imports) would be other bytes. The rebuild keeps their files, and says so.
    page = rows[site.url("/latin.html")]
    warc = root / "warc" / str(page.warc_file)
    data = bytearray(warc.read_bytes())
    data[int(page.warc_offset or 0) + int(page.warc_length or 0) // 2] ^= 0x55
    warc.write_bytes(bytes(data))
    before = {name: (host / name).read_bytes() for name in ("l.css", "imp.css")}
    stats = build_mirror(root)
    assert {name: (host / name).read_bytes() for name in before} == before
    referred = "the record of the document that refers to it cannot be read"
    kept = [line for line in stats.kept if referred in line]
    assert sorted(line.split(": ", 1)[0] for line in kept) == [site.url("/imp.css"), site.url("/l.css")]


async def test_a_stylesheet_a_srcdoc_document_links_is_read_in_utf8(site: Any, run_crawl: Any) -> None:
    """A stylesheet that names no charset, linked from an <iframe srcdoc> document of a page in
    windows-1252, is read as Chromium reads it, in the srcdoc document's encoding (UTF-8), by the
    crawl, the mirror (built again too) and verify alike. The crawl read it in its page's
    encoding, and fetched a café.png whose name was garbled."""
    site.file(
        "/",
        b'<iframe srcdoc="&lt;link rel=stylesheet href=sd.css&gt;"></iframe><link rel=stylesheet href=p.css>',
        "text/html; charset=windows-1252",
    )
    site.file("/sd.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/p.css", b"p{background:url(na\xefve.png)}", "text/css")
    site.file("/caf\u00e9.png", PNG, "image/png")
    site.file("/na\u00efve.png", PNG + b"2", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url("/caf%C3%A9.png")].status == 200
    assert rows[site.url("/na%C3%AFve.png")].status == 200  # the page's own: in its encoding
    assert sorted(url for url in rows if url.endswith(".png")) == sorted(
        [site.url("/caf%C3%A9.png"), site.url("/na%C3%AFve.png")]
    )
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    host = root / "mirror" / site.host.replace(":", "+")
    for built_again in (False, True):
        if built_again:
            shutil.rmtree(root / "mirror")
            build_mirror(root)
        links = [url for _s, _e, url in iter_css_urls((host / "sd.css").read_bytes().decode("latin-1"))]
        assert links[-1] == "caf%C3%A9.png"


async def test_css_escapes_name_what_the_crawl_fetches_and_the_mirror_links(
    site: Any, run_crawl: Any
) -> None:
    # CSS reads "a\20 b.png" as "a b.png" and "caf\e9" as "café": the crawl fetched "a\20" (no such
    # URL: the space ended it) and "caf/e9.png" (a backslash is a slash to the URL parser).
    css = (
        r'a{background:url(a\20 b.png)} b{background:url("caf\e9.png")} i{background:url(x\(1\).png)}'
        r' p{background:url(skip\(2\).png)} @import "q\"uote.css";'
    )
    site.page("/", head='<link rel="stylesheet" href="s.css">')
    site.file("/s.css", css, "text/css")
    for n, name in enumerate(("/a b.png", "/café.png", "/x(1).png", "/skip(2).png")):
        site.file(name, PNG + bytes([n]), "image/png")
    site.file('/q"uote.css', "i{color:red}", "text/css")
    await site.start()
    root = (await run_crawl(site.url("/"), exclude=("skip",))).snapshot.root
    rows = manifest_rows(root)
    archived = ("/a%20b.png", "/caf%C3%A9.png", "/x(1).png", "/q%22uote.css")
    for path in archived:
        assert rows[site.url(path)].status == 200, path
    assert rows[site.url("/skip(2).png")].outcome == "skipped"
    assert {url for url, row in rows.items() if row.status == 404} == set()
    stylesheet = root / "mirror" / site.host.replace(":", "+") / "s.css"
    links = [url for _start, _end, url in iter_css_urls(stylesheet.read_text())]
    # Every archived URL is a local file; the skipped one is absolute, escaped so CSS reads it whole.
    assert links[3] == site.url("/skip(2).png")
    for link, path in zip(links[:3] + links[4:], archived, strict=True):
        assert target_of(stylesheet, link) == root / "mirror" / str(rows[site.url(path)].local_path), link
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_query_is_requested_in_its_pages_encoding_as_a_browser_requests_it(
    site: Any, run_crawl: Any
) -> None:
    # A browser writes a link's query in its page's encoding (the path in UTF-8): the crawl asked
    # for ?q=caf%C3%A9, which a site that reads windows-1252 queries takes for "cafÃ©".
    site.file("/", b'<a href="latin.html">l</a><a href="sjis.html">s</a><a href="cyr.html">c</a>')
    latin = b'<a href="/s?q=caf\xe9">x</a><img src="/i.png?v=\xe9"><p style="background:url(/b.png?\xe9)">'
    site.file("/latin.html", latin, "text/html; charset=windows-1252")
    site.file("/sjis.html", '<meta charset="shift_jis"><a href="/s?q=日語">x</a>'.encode("shift_jis"))
    site.file("/cyr.html", b'<meta charset="windows-1251"><a href="/s?q=caf&eacute;">x</a>')
    site.file("/s", "<p>search</p>")
    site.file("/i.png", PNG, "image/png")
    site.file("/b.png", PNG + b"b", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    requested = {
        "/s?q=caf%E9",
        "/i.png?v=%E9",
        "/b.png?%C3%A9",  # CSS is always UTF-8
        "/s?q=%93%FA%8C%EA",
        "/s?q=caf%26%23233%3B",  # é is no character of windows-1251: &#233;
    }
    assert requested <= set(site.hits)
    assert "/s?q=caf%C3%A9" not in site.hits
    rows = manifest_rows(root)
    for path in requested:
        assert rows[site.url(path)].outcome == "fetched", path
    host = root / "mirror" / site.host.replace(":", "+")
    for name in ("latin.html", "sjis.html", "cyr.html"):
        assert site.url("/").encode() not in (host / name).read_bytes(), name  # every link local
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
