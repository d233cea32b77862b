"""The mirror of a site built like real ones, browsed page by page from file:// in Chromium.

benchmarks/mirror_check.py opens every page of the mirror with the network
blocked and reports files missing, requests that leave file://, console errors,
fonts, images and stylesheets that fail, dead local links, and pages that look
otherwise than the live site (which is still served while it checks).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from aiohttp import web
from demo_site import png
from test_browser import CHROMIUM

BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
sys.path.insert(0, BENCHMARKS)
try:
    import mirror_check
finally:
    sys.path.remove(BENCHMARKS)

RED, BLUE = png(4, 4, (200, 30, 30)), png(8, 8, (30, 30, 200))
SPRITE = (
    '<svg xmlns="http://www.w3.org/2000/svg"><symbol id="star" viewBox="0 0 10 10">'
    '<rect width="10" height="10" fill="green"/></symbol></svg>'
)


def real_shaped_site(site: Any) -> None:
    """The markup real sites use, every page linked from the home page."""
    head = (
        '<link rel="stylesheet" href="/css/style.css?v=3">'
        '<link rel="preload" href="/fonts/body.woff2" as="font" type="font/woff2" crossorigin>'
        '<script src="/js/app.js" defer></script>'
    )
    body = (
        "<h1>Home</h1>"
        '<img id="plain" src="/img/caf%C3%A9.png" alt="">'
        '<img id="spaced" src="/img/a%20b.png" alt="">'
        '<img id="unicode" src="/img/bücher.png" alt="">'
        '<img id="srcset" src="/img/red.png" srcset="/img/red.png 1x, /img/blue.png 2x" alt="">'
        '<picture><source srcset="/img/blue.png" media="(min-width: 1px)">'
        '<img id="picture" src="/img/red.png" alt=""></picture>'
        f'<img id="data" src="data:image/png;base64,{base64.b64encode(RED).decode()}" alt="">'
        '<div id="inline" style="background-image: url(&quot;/img/bg%201.png&quot;)">inline</div>'
        '<img id="sprite" src="/img/sprite.svg" alt="">'
        '<iframe src="/frame.html"></iframe>'
        '<a href="javascript:void(0)">js</a>'
        '<a href="/guide">guide</a> <a href="/guide/intro#part-2">intro</a>'
        '<a href="/search?q=a+b&amp;page=2#results">search</a>'
        '<a href="/moved">moved</a> <a href="/refresh.html">refresh</a>'
        '<a href="/gone.html">gone</a> <a href="/based/page.html">based</a>'
        '<a href="/more/">more</a> <a href="/edge.html">edge</a>'
        '<a href="/probe/x.xhtml">xhtml</a> <a href="/probe/frames.html">frames</a>'
        '<div style="height: 5000px"></div><img id="lazy" src="/img/blue.png" loading="lazy" alt="">'
    )
    site.page("/", title="Home", head=head, body=body)
    site.file(
        "/css/style.css?v=3",
        '@import url("base.css");\nh1 { color: rgb(0, 128, 0); }\n',
        "text/css",
    )
    site.file(
        "/css/base.css",
        '@import "deep/more.css";\n'
        "@font-face { font-family: Body; src: url(\"../fonts/body.woff2\") format('woff2'),"
        " url('../fonts/body.woff') format(\"woff\"); }\n"
        "body { background: url('../img/bg\\ 1.png') no-repeat; font-family: Body, serif; }\n",
        "text/css",
    )
    site.file("/css/deep/more.css", "#inline { border-image: url(../../img/red.png) 1; }\n", "text/css")
    site.file("/js/app.js", "document.documentElement.dataset.js = 'ran';\n", "text/javascript")
    site.file("/fonts/body.woff2", b"wOF2 not a real font", "font/woff2")
    site.file("/fonts/body.woff", b"wOFF not a real font", "font/woff")
    for path, image in (
        ("/img/caf%C3%A9.png", RED),
        ("/img/a%20b.png", RED),
        ("/img/b%C3%BCcher.png", BLUE),
        ("/img/red.png", RED),
        ("/img/blue.png", BLUE),
        ("/img/bg%201.png", BLUE),
    ):
        site.file(path, image, "image/png")
    site.file("/img/sprite.svg", SPRITE, "image/svg+xml")
    more = (
        "<style>#styled { background: url(../img/red.png); }"
        '#set { background-image: image-set(url("../img/red.png") 1x, "../img/blue.png" 2x); }</style>'
        '<link rel="icon" href="../img/red.png">'
        '<link rel="preload" as="image" href="../img/blue.png"'
        ' imagesrcset="../img/red.png 1x, ../img/blue.png 2x">'
        '<div id="styled">styled</div><div id="set">set</div>'
        '<img id="comma" src="../img/a,b.png" srcset="../img/a,b.png 1x, ../img/blue.png 2x" alt="">'
        '<video id="poster" poster="../img/blue.png"></video>'
        '<object id="object" data="../img/sprite.svg" type="image/svg+xml"></object>'
        '<embed src="../img/sprite.svg" type="image/svg+xml">'
        '<input type="image" src="../img/red.png" alt="go">'
        '<svg width="9" height="9"><image href="../img/red.png" width="9" height="9"/>'
        '<image xlink:href="../img/blue.png" width="9" height="9"/></svg>'
        '<iframe src="../frame.html#x" srcdoc="<img src=../img/blue.png>"></iframe>'
        '<a href="?page=2">next</a> <a href="#top">top</a> <a href="">self</a>'
        '<a href="../search?q=a+b&amp;page=2">search</a> <a href="../caf%C3%A9/">café</a>'
        '<a href="../r%C3%A9sum%C3%A9.html?lang=fran%C3%A7ais">résumé</a>'
        '<form action="../search"><input name="q"></form>'
        '<img id="hash" src="../img/c%23.png" alt=""><img id="percent" src="../img/100%25.png" alt="">'
        '<img id="question" src="../img/what%3F.png" alt=""><img id="plus" src="../img/a+b.png" alt="">'
        '<img id="old" src="../img/old.png" alt="">'
        '<img id="dynamic" src="../img/pic.php?id=3&amp;s=a/b" alt="">'
        '<img id="sized" srcset="../img/red.png 100w, ../img/blue.png 200w" sizes="50vw" alt="">'
        '<video><source src="../media/clip.webm?x=1" type="video/webm">'
        '<track src="../media/subs.vtt"></video>'
        '<link rel="stylesheet" href="../css/theme?v=3"><link rel="stylesheet" href="../css/moved.css">'
        '<link rel="stylesheet" href="../css/odd.css"><div id="odd1">1</div><div id="odd2">2</div>'
        '<div id="odd3">3</div><div id="odd4">4</div>'
        f'<img id="long" src="../img/long.png?{"k=" + "v" * 300}" alt="">'
    )
    site.page("/more/", title="More", body=more)
    site.file(
        "/probe/x.xhtml",
        '<?xml version="1.0" encoding="UTF-8"?><?xml-stylesheet href="../css/deep/more.css"?>'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>X</title>'
        '<link rel="stylesheet" href="../css/odd.css"/></head>'
        '<body><img src="../img/red.png" alt=""/><div id="odd1">1</div></body></html>',
        "application/xhtml+xml",
    )
    site.page(
        "/probe/frames.html",
        title="Frames",
        head="<style>:root { --bg: url(../img/blue.png); }</style>",
        body='<div style="background: var(--bg); height: 5px">v</div>'
        '<iframe src="../frame.html#top"></iframe><img src="../img/none.png" alt="">'
        '<img src="/img/away.png" alt="">',
    )
    site.redirect("/img/away.png", "/img/blue.png")
    edge = (
        '<IMG SRC=" /img/red.png " ALT=""><img src=/img/blue.png alt=x>'
        '<img srcset="\n /img/red.png,\n /img/blue.png 2x\n" alt="">'
        '<a href="#frag">frag</a> <a href="?q=1">query</a>'
        '<a href="//{host}/guide/./intro">scheme-relative</a>'
        '<a href="/guide/../guide/intro">dots</a> <a href="HTTP://{host}/guide">upper</a>'
        '<a href="  /guide/intro  ">spaced</a>'
        '<img id="other-host" src="http://{other}/img/blue.png" alt="">'
        '<link rel="stylesheet" href="http://{other}/css/base.css">'
    )
    site.handler("/edge.html", lambda request: edge_page(request, edge))
    site.page("/more/?page=2", title="More 2", links=["./"])
    site.file("/img/a,b.png", RED, "image/png")
    for path in (
        "/img/c%23.png",
        "/img/100%25.png",
        "/img/what%3F.png",
        "/img/a+b.png",
        "/img/pic.php?id=3&s=a/b",
    ):
        site.file(path, BLUE, "image/png")
    site.redirect("/img/old.png", "/img/red.png")
    site.file("/img/long.png?k=" + "v" * 300, BLUE, "image/png")
    for path in ("/img/a(1).png", "/img/b%27q.png", "/img/layered.png", "/img/upper.png"):
        site.file(path, png(3, 3, (1, 2, 3)), "image/png")
    site.file(
        "/css/odd.css",
        '@IMPORT URL( "layer.css" ) layer(base) supports(display: grid) screen;\n'
        "#odd1 { background: URL(../img/a\\(1\\).png); }\n"
        "#odd2 { background: url( '../img/b\\'q.png' ) , none; }\n"
        "#odd3 { background: /* c */ url(../img/upp\\65r.png); }\n"
        "@font-face { font-family: Odd; src:url(../fonts/body.woff)format(woff),local(Odd); }\n",
        "text/css",
    )
    site.file(
        "/css/layer.css", "@layer base { #odd4 { background: url('../img/layered.png'); } }", "text/css"
    )
    site.redirect("/css/moved.css", "/css/deep/more.css", 302)
    site.file("/css/theme?v=3", "#set { outline: 1px solid url(x); } a { color: rgb(1, 2, 3); }", "text/css")
    site.file("/media/clip.webm?x=1", b"\x1aE\xdf\xa3 not a clip", "video/webm")
    site.file("/media/subs.vtt", "WEBVTT\n", "text/vtt")
    site.page("/caf%C3%A9/", title="Café", links=["../more/"])
    site.page("/r%C3%A9sum%C3%A9.html?lang=fran%C3%A7ais", title="Résumé", links=["/"])
    site.page("/frame.html", title="Frame", body='<img src="img/red.png" alt="">')
    site.page("/guide", title="Guide", links=["/guide/intro", "guide/intro?x=1"])
    site.page("/guide/intro", title="Intro", body='<h2 id="part-2">Part 2</h2>', links=["../guide", "./"])
    site.page("/guide/", title="Guide folder", links=["intro"])
    site.page("/guide/?q=1", title="Guide query")
    site.page("/search?q=a+b&page=2", title="Search", body='<p id="results">none</p>')
    site.redirect("/moved", "/guide/intro")
    site.page("/refresh.html", title="Refresh", head='<meta http-equiv="refresh" content="0; url=/guide">')
    site.page("/gone.html", title="Gone", body="<p>Not here</p>", status=404)
    site.page(
        "/based/page.html",
        title="Based",
        head='<base href="/guide/">',
        body='<img src="../img/blue.png" alt="">',
        links=["intro", "/"],
    )


async def edge_page(request: web.Request, body: str) -> web.StreamResponse:
    host = request.host
    head = f'<base href="http://{host}/guide/">'
    text = f"<!doctype html><html><head><title>Edge</title>{head}</head>"
    text += f"<body>{body.format(host=host, other=host.replace('127.0.0.1', 'localhost'))}</body></html>"
    return web.Response(text=text, content_type="text/html")


async def test_a_real_shaped_site_browses_from_file_urls_as_it_does_live(site: Any, run_crawl: Any) -> None:
    real_shaped_site(site)
    await site.start()
    result = await run_crawl(site.url("/"))
    reports = await mirror_check.sweep(result.snapshot.root, CHROMIUM, live=True, limit=None)
    failures = [f"{report.path}: {kind}: {detail}" for report in reports for kind, detail in report.failures]
    assert failures == []
    pages = {report.path.split("/", 2)[2] for report in reports if report.path.startswith("mirror/")}
    assert reports[0].path == "index.html"  # the snapshot's index
    assert {"index.html", "guide.html", "guide/intro.html", "frame.html", "gone.html"} <= pages, pages


async def test_the_sweep_reports_each_kind_of_failure(tmp_path: Path) -> None:
    # A hand-made mirror holding one of each thing a person browsing it would miss.
    folder = tmp_path / "mirror" / "h"
    folder.mkdir(parents=True)
    (folder / "sprite.svg").write_text(SPRITE)
    (folder / "mod.js").write_text("export const x = 1;\n")
    (folder / "broken.png").write_bytes(b"not an image")
    (folder / "checked.css").write_text("p { color: red; }")
    (folder / "style.css").write_text(
        "@font-face { font-family: Gone; src: url(gone.woff2); } p { font-family: Gone; }"
    )
    (folder / "index.html").write_text(
        '<!doctype html><link rel="stylesheet" href="style.css"><link rel="stylesheet" href="checked.css"'
        ' integrity="sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=">'
        "<p>text</p>"
        '<svg><use href="sprite.svg#star"/></svg><script type="module" src="mod.js"></script>'
        '<img src="missing.png"><img src="broken.png"><img src="http://127.0.0.1:9/away.png">'
        '<a href="nowhere.html">dead</a><script>undefinedFunction()</script>'
        '<div style="height: 5000px"></div><img src="far.png" loading="lazy">'
    )
    [report] = await mirror_check.sweep(tmp_path, CHROMIUM, live=False, limit=None)
    kinds = {
        kind: [detail for k, detail in report.failures if k == kind] for kind, _detail in report.failures
    }
    assert set(kinds) == {"missing", "blocked", "leak", "console", "font", "image", "stylesheet", "link"}, (
        report.failures
    )
    assert any(detail.endswith("/h/missing.png (net::ERR_FILE_NOT_FOUND)") for detail in kinds["missing"])
    assert any("/h/gone.woff2" in detail for detail in kinds["missing"])
    assert any("/h/far.png" in detail for detail in kinds["missing"])  # lazy, below the fold
    assert any("/h/mod.js" in detail for detail in kinds["blocked"])
    assert any("/h/sprite.svg" in detail for detail in kinds["blocked"])
    assert kinds["leak"] == ["http://127.0.0.1:9/away.png"]
    assert any("undefinedFunction" in detail for detail in kinds["console"])
    assert kinds["font"] == ["Gone"]
    assert [detail.rpartition("/")[2] for detail in kinds["image"]] == ["broken.png"]
    assert [detail.rpartition("/")[2] for detail in kinds["stylesheet"]] == ["checked.css"]
    assert [detail.rpartition("/")[2] for detail in kinds["link"]] == ["nowhere.html"]


def test_the_sweep_takes_a_snapshot_named_by_a_relative_path(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    # Pages are opened by file:// URL, which a relative path cannot make: it failed with a traceback.
    folder = tmp_path / "snap" / "mirror" / "h"
    folder.mkdir(parents=True)
    (folder / "index.html").write_text('<!doctype html><p>text</p><img src="missing.png">')
    monkeypatch.chdir(tmp_path)
    assert mirror_check.main(["snap", "--chromium", CHROMIUM]) == 1
    out = capsys.readouterr().out
    assert "1 pages checked, 1 with failures" in out
    assert "/snap/mirror/h/missing.png" in out
