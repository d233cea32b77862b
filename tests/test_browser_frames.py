"""What the frames of a rendered page ask for is read as Chromium reads it, by the crawl, the mirror
and verify alike.

A stylesheet that names no charset is read in the encoding of the document that links it. A
frame whose document a script built (an ``<iframe srcdoc>`` it made, an ``about:blank`` frame it
wrote) is UTF-8 in Chromium, whatever its page's encoding; a stylesheet a stylesheet
``@import``s is read in the importing one's, whatever Referer the browser sent for it. The crawl
learns these from the browser's requests and its queue, the mirror and verify from the page's
rendered DOM and the manifest.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from aiohttp import web
from conftest import manifest_rows
from script_site import png
from test_browser import CHROMIUM
from test_browser_limits import doms
from warcio.archiveiterator import ArchiveIterator

from archiver.link_values import iter_css_urls
from archiver.mirror.build import build_mirror
from archiver.verify.verifier import verify_snapshot

CAFE = "/caf%C3%A9.png"
"""café.png as Chromium asks for it from a stylesheet it reads in UTF-8."""
GARBLED = "/caf%C3%83%C2%A9.png"
"""café.png as asked for from that stylesheet read in windows-1252."""
REPLACED = "/caf%EF%BF%BD.png"
"""café.png as asked for from a windows-1252 stylesheet read in UTF-8 (é is no UTF-8 there)."""


async def slow_page(request: web.Request) -> web.StreamResponse:
    """A page that takes seconds to answer: with one worker, what is queued after it waits (a
    browser does not ask for a link)."""
    await asyncio.sleep(4)
    return web.Response(text="<p>slow</p>", content_type="text/html")


def response_targets(root: Path) -> set[str]:
    """The WARC-Target-URI of every response and revisit record of the snapshot at ``root``."""
    targets = set()
    for warc in (root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    targets.add(record.rec_headers.get_header("WARC-Target-URI"))
    return targets


def sent_referer(root: Path, url: str) -> str | None:
    """The Referer of the WARC request record of ``url`` (None: it sent none)."""
    for warc in (root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "request" and record.rec_headers.get_header("WARC-Target-URI") == url:
                    return record.http_headers.get_header("Referer")
    raise AssertionError(f"no request record of {url}")


def assert_read_as_chromium_reads_it(
    site: Any, root: Path, stylesheet: str, garbled: str = GARBLED, asked: str = CAFE
) -> None:
    """The café.png of ``stylesheet`` (a path) is the one Chromium asks for (``asked``), in the
    WARC and the manifest, and never the ``garbled`` one (a path) it is read as in another
    encoding; verify finds the snapshot complete; the mirror's file of the stylesheet, as the
    crawl wrote it and built again from the WARC, points at the local file of ``asked``."""
    assert site.url(asked) in response_targets(root)
    assert site.url(garbled) not in response_targets(root)
    rows = manifest_rows(root)
    assert rows[site.url(asked)].status == 200
    assert site.url(garbled) not in rows
    assert site.hits[garbled] == 0, site.hits
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    host = root / "mirror" / site.host.replace(":", "+")
    sheet = host / stylesheet.lstrip("/")
    for built_again in (False, True):
        if built_again:
            shutil.rmtree(root / "mirror")
            build_mirror(root)
        links = [url for _s, _e, url in iter_css_urls(sheet.read_bytes().decode("latin-1"))]
        assert links == [asked.lstrip("/")], links
        assert (sheet.parent / unquote(links[0])).read_bytes() == png(200, 100, 0)


async def test_a_stylesheet_of_an_iframe_srcdoc_a_script_made_is_read_in_utf8(site, run_crawl):
    """A windows-1252 page whose script makes an <iframe srcdoc> linking s.css: Chromium reads
    s.css in the srcdoc document's encoding, UTF-8, and asks for café.png. The crawl read s.css in
    the page's encoding and fetched a garbled café.png (a 404), and the mirror and verify, reading
    the page as fetched (no srcdoc there), read it so too."""
    script = (
        "<script>var f = document.createElement('iframe');"
        "f.srcdoc = '<link rel=stylesheet href=s.css><p>framed</p>';"
        "document.body.appendChild(f);</script>"
    )
    site.file("/", f"<p>caf\xe9</p>{script}".encode("cp1252"), "text/html; charset=windows-1252")
    site.file("/s.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert_read_as_chromium_reads_it(site, root, "/s.css")


async def test_a_stylesheet_of_a_frame_a_script_wrote_is_read_in_utf8(site, run_crawl):
    """An about:blank frame a script wrote (document.write) is UTF-8 in Chromium too, whatever
    its page's encoding; the rendered DOM keeps it in its iframe's srcdoc, where the mirror and
    verify read it as such."""
    script = (
        "<script>var f = document.createElement('iframe'); document.body.appendChild(f);"
        "f.contentDocument.open();"
        "f.contentDocument.write('<link rel=stylesheet href=w.css><p>written</p>');"
        "f.contentDocument.close();</script>"
    )
    site.file("/", f"<p>caf\xe9</p>{script}".encode("cp1252"), "text/html; charset=windows-1252")
    site.file("/w.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert_read_as_chromium_reads_it(site, root, "/w.css")


async def test_what_a_browser_asks_for_before_its_turn_is_captured_as_it_was_queued(site, run_crawl):
    """A windows-1252 page links a.css (UTF-8 by its header), which @imports b.css (no charset,
    so UTF-8 too, as Chromium reads it), which names café.png. Queued behind a slow page, they
    are asked for by the browser before their turn: their captures, taken ahead, were made as if
    the page had linked them, their rows given the page's depth plus one (café.png 2, not 3),
    which verify found wrong."""

    site.file(
        "/",
        b"<link rel=stylesheet href=a.css><a href=slow.html>s</a><p>caf\xe9</p><script>var x = 1;</script>",
        "text/html; charset=windows-1252",
    )
    site.handler("/slow.html", slow_page)
    site.file("/a.css", '@import "b.css"; i{color:red}', "text/css; charset=utf-8")
    site.file("/b.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, concurrency=1)).snapshot.root
    rows = manifest_rows(root)
    found = [(rows[site.url(path)].parent, rows[site.url(path)].depth) for path in ("/a.css", "/b.css", CAFE)]
    assert found == [(site.url("/"), 1), (site.url("/a.css"), 2), (site.url("/b.css"), 3)]
    assert_read_as_chromium_reads_it(site, root, "/b.css")


async def test_a_stylesheet_a_script_adds_under_a_referrer_policy_is_read_in_its_pages_encoding(
    site, run_crawl
):
    """A windows-1252 page's script adds a stylesheet whose referrerpolicy sends the page's origin
    alone: Chromium reads it in the page's encoding. The crawl took the Referer it sent (the
    site's root) for the document that linked it, and read the stylesheet in the root's
    encoding (UTF-8 here): its café.png became another URL, while the mirror and verify, which
    read it in its page's, found café.png never fetched."""
    script = (
        "<script>var l = document.createElement('link'); l.rel = 'stylesheet';"
        " l.referrerPolicy = 'origin'; l.href = 's.css'; document.head.appendChild(l);</script>"
    )
    site.file("/p.html", f"<p>caf\xe9</p>{script}".encode("cp1252"), "text/html; charset=windows-1252")
    site.page("/")
    site.file("/s.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/p.html"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert sent_referer(root, site.url("/s.css")) == site.url("/")  # as the browser sent it
    assert_read_as_chromium_reads_it(site, root, "/s.css", REPLACED)


async def test_a_stylesheet_imported_without_a_referer_is_read_in_its_importers_encoding(site, run_crawl):
    """a.css (UTF-8 by its header, its Referrer-Policy no-referrer) @imports b.css, which the
    browser asks for with no Referer before its turn: the crawl took its page for the document
    that linked it, and read b.css in the page's windows-1252."""

    site.file(
        "/",
        b"<link rel=stylesheet href=a.css><a href=slow.html>s</a><p>caf\xe9</p><script>var x = 1;</script>",
        "text/html; charset=windows-1252",
    )
    site.handler("/slow.html", slow_page)
    site.file(
        "/a.css",
        '@import "b.css"; i{color:red}',
        "text/css; charset=utf-8",
        headers={"Referrer-Policy": "no-referrer"},
    )
    site.file("/b.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, concurrency=1)).snapshot.root
    assert manifest_rows(root)[site.url("/b.css")].parent == site.url("/a.css")
    assert sent_referer(root, site.url("/b.css")) is None
    assert_read_as_chromium_reads_it(site, root, "/b.css")


async def test_a_stylesheet_of_a_blob_frame_is_read_in_that_frames_encoding(site, run_crawl):
    """A frame a script loads from a blob: URL is no srcdoc document: Chromium reads it, and so
    the stylesheet it links, in its page's windows-1252 (it asks for the café.png of that
    reading), as the crawl does. The rendered DOM keeps it in its iframe's srcdoc all the same
    (beside its blob: src), where the mirror and verify took it for a srcdoc document, UTF-8."""
    script = (
        "<script>var b = new Blob(['<link rel=stylesheet href=\"' + location.origin + '/bl.css\">"
        "<p>blob</p>'], {type: 'text/html'});"
        "var f = document.createElement('iframe'); f.src = URL.createObjectURL(b);"
        " document.body.appendChild(f);</script>"
    )
    site.file("/", f"<p>caf\xe9</p>{script}".encode("cp1252"), "text/html; charset=windows-1252")
    site.file("/bl.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00c3\u00a9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert 'src="blob:' in doms(root)[site.url("/")]
    assert_read_as_chromium_reads_it(site, root, "/bl.css", garbled=CAFE, asked=GARBLED)


async def test_a_stylesheet_a_frames_script_adds_is_read_in_the_frames_encoding(site, run_crawl):
    """A UTF-8 page frames f.html, a windows-1252 page whose script adds fs.css (no charset):
    Chromium reads fs.css in the frame's encoding, as the crawl did. Its manifest row named the
    top page, whose render asked for it, as the page it was found on, so the mirror and verify
    read it in the top page's UTF-8 and found the café.png Chromium asks for never fetched."""
    script = (
        "<script>var l = document.createElement('link'); l.rel = 'stylesheet';"
        " l.href = 'fs.css'; document.head.appendChild(l);</script>"
    )
    site.page("/", body='<iframe src="f.html"></iframe>')
    site.file("/f.html", f"<p>caf\xe9</p>{script}".encode("cp1252"), "text/html; charset=windows-1252")
    site.file("/fs.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    # One tab: the top page's render loads the frame, and asks for fs.css, before the frame's own.
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    assert manifest_rows(root)[site.url("/fs.css")].parent == site.url("/f.html")
    assert_read_as_chromium_reads_it(site, root, "/fs.css", REPLACED)


ADDING_FS_CSS = (
    "var l = document.createElement('link'); l.rel = 'stylesheet'; l.href = 'fs.css';"
    " document.head.appendChild(l);"
)
"""An onload handler that adds fs.css to its document (a page with no script: not rendered with
--browser auto)."""


def windows_1252_frame(site: Any, path: str) -> None:
    """Serve at ``path`` a windows-1252 page whose onload handler adds fs.css."""
    page = f'<body onload="{ADDING_FS_CSS}"><p>caf\xe9</p></body>'
    site.file(path, page.encode("cp1252"), "text/html; charset=windows-1252")


async def test_a_stylesheet_a_frame_not_rendered_adds_is_read_in_the_frames_encoding(site, run_crawl):
    """With --browser auto, a UTF-8 page (its script makes it rendered) frames f.html, a
    windows-1252 page with no script of its own (so not rendered) whose onload handler adds
    fs.css: Chromium reads fs.css in the frame's encoding. Its row named the top page as the page
    it was found on: the crawl read it in the frame's encoding, the mirror and verify in the top
    page's UTF-8, and found the café.png Chromium asks for never fetched."""
    site.page("/", body='<iframe src="f.html"></iframe><script>var x = 1;</script>')
    windows_1252_frame(site, "/f.html")
    site.file("/fs.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url("/")].render_reason and not rows[site.url("/f.html")].render_reason
    assert rows[site.url("/fs.css")].parent == site.url("/f.html")
    assert_read_as_chromium_reads_it(site, root, "/fs.css", REPLACED)


def framing_script(src: str) -> str:
    """A script that frames the document at ``src`` (a JavaScript expression) in an <iframe>."""
    return (
        f"<script>var f = document.createElement('iframe'); f.src = {src};"
        " document.body.appendChild(f);</script>"
    )


async def crawl_a_framing_page(site: Any, run_crawl: Any, src: str, stylesheet: str) -> Path:
    """The snapshot of a windows-1252 page whose script frames ``src`` (a JavaScript expression),
    every page rendered: the frame links ``stylesheet``, which asks for café.png (read in UTF-8;
    the page's encoding would read another name)."""
    site.file("/", f"<p>caf\xe9</p>{framing_script(src)}".encode("cp1252"), "text/html; charset=windows-1252")
    site.file(stylesheet, "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root: Path = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    return root


async def test_a_stylesheet_of_a_blob_frame_that_names_its_charset_is_read_in_it(site, run_crawl):
    """A blob: frame whose type names a charset (text/html;charset=utf-8) in a windows-1252 page:
    Chromium reads it, and the stylesheet it links, in UTF-8 and asks for café.png. The crawl,
    the mirror and verify read the stylesheet in the page's windows-1252."""
    blob = (
        "URL.createObjectURL(new Blob(['<link rel=stylesheet href=\"' + location.origin + '/bu.css\">"
        "<p>blob</p>'], {type: 'text/html;charset=utf-8'}))"
    )
    root = await crawl_a_framing_page(site, run_crawl, blob, "/bu.css")
    assert 'src="blob:' in doms(root)[site.url("/")]
    assert_read_as_chromium_reads_it(site, root, "/bu.css")


async def test_a_stylesheet_of_an_iframe_srcdoc_inside_a_blob_frame_is_read_in_utf8(site, run_crawl):
    """A blob: frame (no charset: read in its windows-1252 page's encoding) holds an <iframe
    srcdoc> linking sd.css: Chromium reads the srcdoc document, and sd.css, in UTF-8. The crawl
    did too; the mirror and verify, which set the blob frame's document aside as not UTF-8, set
    the srcdoc frame inside it aside with it, and read sd.css in the page's encoding."""
    blob = (
        "URL.createObjectURL(new Blob(['<iframe srcdoc=\"<link rel=stylesheet href=' + location.origin"
        " + '/sd.css><p>inner</p>\"></iframe><p>blob</p>'], {type: 'text/html'}))"
    )
    root = await crawl_a_framing_page(site, run_crawl, blob, "/sd.css")
    assert 'src="blob:' in doms(root)[site.url("/")]
    assert_read_as_chromium_reads_it(site, root, "/sd.css")


async def test_a_stylesheet_of_a_data_frame_that_names_its_charset_is_read_in_it(site, run_crawl):
    """A frame of a data: URL naming charset=utf-8 in a windows-1252 page: Chromium reads it,
    and the stylesheet it links, in UTF-8 and asks for café.png. The crawl, the mirror and
    verify read the stylesheet in the page's windows-1252."""
    data = (
        "'data:text/html;charset=utf-8,' + encodeURIComponent('<link rel=stylesheet href='"
        " + location.origin + '/du.css><p>data</p>')"
    )
    root = await crawl_a_framing_page(site, run_crawl, data, "/du.css")
    assert 'src="data:text/html;charset=utf-8,' in doms(root)[site.url("/")]
    assert_read_as_chromium_reads_it(site, root, "/du.css")


async def test_a_stylesheet_a_frame_not_rendered_adds_imports_is_read_in_the_frames_encoding(site, run_crawl):
    """The fs.css of a frame not rendered @imports fi.css, neither naming a charset: Chromium
    reads both in the frame's windows-1252, and so do the crawl, the mirror and verify."""
    site.page("/", body='<iframe src="f.html"></iframe><script>var x = 1;</script>')
    windows_1252_frame(site, "/f.html")
    site.file("/fs.css", '@import "fi.css";', "text/css")
    site.file("/fi.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    assert manifest_rows(root)[site.url("/fi.css")].parent == site.url("/fs.css")
    assert_read_as_chromium_reads_it(site, root, "/fi.css", REPLACED)


async def test_a_stylesheet_a_frame_two_deep_adds_is_read_in_that_frames_encoding(site, run_crawl):
    """A rendered UTF-8 page frames f.html (UTF-8, not rendered), which frames g.html
    (windows-1252, not rendered), whose handler adds fs.css: found on g.html, read in its
    encoding, as Chromium reads it, and verify finds it found there."""
    site.page("/", body='<iframe src="f.html"></iframe><script>var x = 1;</script>')
    site.page("/f.html", body='<iframe src="g.html"></iframe>')
    windows_1252_frame(site, "/g.html")
    site.file("/fs.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    rows = manifest_rows(root)
    assert not rows[site.url("/f.html")].render_reason and not rows[site.url("/g.html")].render_reason
    assert rows[site.url("/fs.css")].parent == site.url("/g.html")
    assert_read_as_chromium_reads_it(site, root, "/fs.css", REPLACED)


async def test_a_stylesheet_of_a_frame_a_script_navigates_is_read_in_the_new_documents_encoding(
    site, run_crawl
):
    """A rendered UTF-8 page's script navigates its frame, once loaded, to f.html (windows-1252,
    met nowhere else), whose handler adds fs.css: read in f.html's encoding, as Chromium reads
    it, by the crawl, the mirror and verify alike."""
    script = (
        "<script>var f = document.querySelector('iframe');"
        " f.onload = function () { f.onload = null; f.contentWindow.location = 'f.html'; };</script>"
    )
    site.page("/", body=f'<iframe src="a.html"></iframe>{script}')
    site.page("/a.html", body="<p>first</p>")
    windows_1252_frame(site, "/f.html")
    site.file("/fs.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    assert manifest_rows(root)[site.url("/fs.css")].parent == site.url("/f.html")
    assert_read_as_chromium_reads_it(site, root, "/fs.css", REPLACED)


async def test_a_stylesheet_two_documents_of_two_encodings_link_is_read_in_each(site, run_crawl):
    """A UTF-8 page and the windows-1252 page it frames both link s.css (no charset): Chromium
    reads it once in each document's encoding and asks for both café.png URLs. The crawl asks
    for both as Chromium does; the snapshot keeps one s.css, read (in the mirror and by verify)
    in the encoding of the page that found it first, and verify finds it complete."""
    site.page("/", body='<link rel=stylesheet href="s.css"><p>x</p><iframe src="f.html"></iframe>')
    site.file(
        "/f.html",
        '<link rel=stylesheet href="s.css"><p>caf\xe9</p>'.encode("cp1252"),
        "text/html; charset=windows-1252",
    )
    site.file("/s.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    site.file("/caf\u00c3\u00a9.png", png(0, 100, 200), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url("/s.css")].parent == site.url("/")
    assert rows[site.url(CAFE)].status == rows[site.url(GARBLED)].status == 200
    assert site.hits[CAFE] == site.hits[GARBLED] == 1, site.hits
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    sheet = root / "mirror" / site.host.replace(":", "+") / "s.css"
    assert [url for _s, _e, url in iter_css_urls(sheet.read_bytes().decode("latin-1"))] == [CAFE.lstrip("/")]


async def test_a_data_frames_relative_link_names_nothing(site, run_crawl):
    """A windows-1252 page links s.css, then its script drops that link and frames a data: URL
    (charset=utf-8) whose document links s.css by a relative URL: a data: document's base URL
    is opaque, so that link names nothing in Chromium, and s.css is the page's, read in its
    encoding. The mirror and verify resolved the frame's link against the page's URL, took
    s.css for the frame's alone, and read it in UTF-8."""
    data = "'data:text/html;charset=utf-8,' + encodeURIComponent('<link rel=stylesheet href=s.css><p>d</p>')"
    script = (
        "<script>onload = function () { document.querySelector('link').remove();"
        f" var f = document.createElement('iframe'); f.src = {data}; document.body.append(f); }};</script>"
    )
    page = f"<link rel=stylesheet href=s.css><p>caf\xe9</p>{script}"
    site.file("/", page.encode("cp1252"), "text/html; charset=windows-1252")
    site.file("/s.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    dom = doms(root)[site.url("/")]
    assert 'src="data:text/html;charset=utf-8,' in dom and '<link rel=stylesheet href="s.css' not in dom, dom
    assert site.hits["/s.css"] == 1, site.hits
    assert_read_as_chromium_reads_it(site, root, "/s.css", REPLACED)


async def test_a_stylesheet_a_frame_first_found_as_a_link_adds_is_read_in_the_frames_encoding(
    site, run_crawl
):
    """The home page links f.html (a windows-1252 page, not rendered, whose onload handler adds
    fs.css) and p.html, a rendered UTF-8 page that frames f.html: Chromium reads fs.css in the
    frame's encoding. f.html was found first as a link, not as p.html's frame, so it was not
    counted as having run in p.html's render: fs.css was taken for p.html's and read in UTF-8."""
    site.page("/", links=["/f.html", "/p.html"])
    site.page("/p.html", body='<iframe src="f.html"></iframe><script>var x = 1;</script>')
    windows_1252_frame(site, "/f.html")
    site.file("/fs.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    rows = manifest_rows(root)
    assert (rows[site.url("/f.html")].found_by, rows[site.url("/f.html")].parent) == ("link", site.url("/"))
    assert rows[site.url("/p.html")].render_reason and not rows[site.url("/f.html")].render_reason
    assert rows[site.url("/fs.css")].parent == site.url("/f.html")
    assert_read_as_chromium_reads_it(site, root, "/fs.css", REPLACED)


A_KANA = "/%E3%82%A2.png"
"""ア.png as Chromium asks for it from a stylesheet it reads in Shift_JIS."""
A_KANA_AS_1252 = "/%C6%92A.png"
"""ア.png as asked for from that stylesheet read in windows-1252 (its bytes 83 41)."""


async def test_a_stylesheet_a_shift_jis_frame_adds_is_read_in_shift_jis(site, run_crawl):
    """A windows-1252 page frames f.html, Shift_JIS by its Content-Type, and g.html, Shift_JIS by
    its <meta charset>, whose onload handlers add fs.css and gs.css (no charset): Chromium reads
    each frame (document.characterSet) and its stylesheet in Shift_JIS, neither UTF-8 nor the
    page's encoding, and so do the crawl, the mirror and verify."""
    site.file(
        "/",
        b'<p>caf\xe9</p><iframe src="f.html"></iframe><iframe src="g.html"></iframe><script>x = 1</script>',
        "text/html; charset=windows-1252",
    )
    adding = ADDING_FS_CSS.replace("fs.css", "{}")
    f_page = f'<body onload="{adding.format("fs.css")}"><p>\u30a2</p></body>'
    g_page = f'<meta charset="shift_jis"><body onload="{adding.format("gs.css")}"><p>\u30a2</p></body>'
    site.file("/f.html", f_page.encode("shift_jis"), "text/html; charset=shift_jis")
    site.file("/g.html", g_page.encode("shift_jis"), "text/html")
    for sheet in ("/fs.css", "/gs.css"):  # not the same bytes: each its own file, not a revisit
        site.file(sheet, f"p{{background:url(\u30a2.png)}} /* {sheet} */".encode("shift_jis"), "text/css")
    site.file("/\u30a2.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    rows = manifest_rows(root)
    assert [rows[site.url(sheet)].parent for sheet in ("/fs.css", "/gs.css")] == [
        site.url("/f.html"),
        site.url("/g.html"),
    ]
    for sheet in ("/fs.css", "/gs.css"):
        assert_read_as_chromium_reads_it(site, root, sheet, garbled=A_KANA_AS_1252, asked=A_KANA)


async def test_a_stylesheet_of_a_data_or_blob_frame_in_shift_jis_is_read_in_shift_jis(site, run_crawl):
    """A windows-1252 page frames a data: URL and a blob: URL whose types name Shift_JIS, each
    linking a stylesheet (no charset): Chromium reads each frame (document.characterSet) and its
    stylesheet in Shift_JIS. The crawl, the mirror and verify read them in the page's encoding:
    only UTF-8 was told apart from it."""
    link = "'<link rel=stylesheet href=' + location.origin + '/{}><p>x</p>'"
    data = f"'data:text/html;charset=shift_jis,' + encodeURIComponent({link.format('ds.css')})"
    blob = (
        f"URL.createObjectURL(new Blob([{link.format('bs.css')}], {{type: 'text/html;charset=shift_jis'}}))"
    )
    page = f"<p>caf\xe9</p>{framing_script(data)}{framing_script(blob)}"
    site.file("/", page.encode("cp1252"), "text/html; charset=windows-1252")
    for sheet in ("/ds.css", "/bs.css"):  # not the same bytes: each its own file, not a revisit
        site.file(sheet, f"p{{background:url(\u30a2.png)}} /* {sheet} */".encode("shift_jis"), "text/css")
    site.file("/\u30a2.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    for sheet in ("/ds.css", "/bs.css"):
        assert_read_as_chromium_reads_it(site, root, sheet, garbled=A_KANA_AS_1252, asked=A_KANA)


async def chromium_alone_asks(site: Any, path: str = "/") -> set[str]:
    """The paths of ``site`` Chromium asks for when it loads ``path`` on its own (no routing)."""
    from playwright.async_api import async_playwright

    before = dict(site.hits)
    async with async_playwright() as playwright:
        args = ["--headless", "--no-sandbox"]
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        page = await browser.new_page()
        await page.goto(site.url(path), wait_until="networkidle")
        await browser.close()
    return {asked for asked, hits in site.hits.items() if hits > before.get(asked, 0)}


@pytest.mark.parametrize("blob_type", ["text/html;charset=utf-8", "text/html;charset=shift_jis", "text/html"])
async def test_a_blob_frames_relative_links_resolve_to_nothing_as_in_chromium(site, run_crawl, blob_type):
    """A blob: frame's document lives at its blob: URL, against which no relative URL resolves:
    Chromium asks for none of its relative images, only its absolute one, whatever charset its
    type names. The crawl read the document of a UTF-8 blob: frame (the rendered DOM keeps it in
    the frame's srcdoc) as a srcdoc document at its page's URL, and of the others too: it
    fetched /a.png and /root.png, which verify then asked of the snapshot."""
    images = "<img src=a.png><img src=/root.png><img src=' + location.origin + '/abs.png><p>blob</p>"
    blob = f"URL.createObjectURL(new Blob(['{images}'], {{type: '{blob_type}'}}))"
    page = f"<p>caf\xe9</p>{framing_script(blob)}"
    site.file("/", page.encode("cp1252"), "text/html; charset=windows-1252")
    for path in ("/a.png", "/root.png", "/abs.png"):
        site.file(path, png(10, 10, 0), "image/png")
    await site.start()
    assert await chromium_alone_asks(site) - {"/favicon.ico"} == {"/", "/abs.png"}
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert 'src="blob:' in doms(root)[site.url("/")]
    rows = manifest_rows(root)
    assert rows[site.url("/abs.png")].status == 200
    assert site.url("/a.png") not in rows and site.url("/root.png") not in rows
    assert site.hits["/a.png"] == site.hits["/root.png"] == 0
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    for built_again in (False, True):
        if built_again:
            shutil.rmtree(root / "mirror")
            build_mirror(root)
        report = verify_snapshot(root)
        assert report.ok, report.render_text(str(root))
        # Its relative images stay as written: made absolute, they would be fetched from the site.
        mirrored = (root / "mirror" / site.host.replace(":", "+") / "index.html").read_text("cp1252")
        assert site.url("/a.png") not in mirrored and site.url("/root.png") not in mirrored
