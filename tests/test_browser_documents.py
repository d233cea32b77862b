"""What a rendered page's documents ask for, as Chromium asks it: a link a script writes in its
page's encoding, each frame's stylesheets in its own document's encoding, a sandboxed document
with no origin, a URL with characters no URI holds."""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import unquote

import lxml.html
import pytest
from aiohttp import web
from conftest import manifest_rows
from script_site import png
from test_browser import CHROMIUM
from warcio.archiveiterator import ArchiveIterator

from archiver.mirror.build import build_mirror
from archiver.verify.verifier import verify_snapshot

LEGACY_PAGE = (
    "<!doctype html><html><head><title>Caf\u00e9</title></head><body><div id='root'></div><script>"
    "var a = document.createElement('a'); a.href = '/s?q=caf\\u00e9'; a.textContent = 'search';"
    "document.getElementById('root').appendChild(a);</script></body></html>"
)


@pytest.mark.parametrize(
    ("encoding", "label", "query"),
    [("cp1252", "iso-8859-1", "caf%E9"), ("shift_jis", "Shift_JIS", "caf%26%23233%3B")],
)
async def test_a_link_a_script_writes_keeps_its_query_in_the_pages_encoding(
    site, run_crawl, encoding, label, query
):
    """The rendered DOM is kept as UTF-8, but the browser writes a link's query in its page's
    encoding (é is byte E9 in windows-1252, and its character reference in Shift_JIS, which
    lacks it): the crawl follows, the mirror links and verify finds the URL it asks for."""
    site.file("/", LEGACY_PAGE.encode(encoding, "xmlcharrefreplace"), f"text/html; charset={label}")
    site.page("/s", title="found")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/")].dom_warc_file is not None
    found = rows[site.url(f"/s?q={query}")]
    assert (found.outcome, found.found_by) == ("fetched", "link")
    assert [url for url in rows if "/s?" in url] == [site.url(f"/s?q={query}")]
    build_mirror(result.snapshot.root)
    report = verify_snapshot(result.snapshot.root)
    assert report.ok, report.render_text("snap")
    mirror = result.snapshot.root / "mirror"
    page = mirror / str(rows[site.url("/")].local_path)
    (href,) = lxml.html.parse(str(page)).getroot().xpath("//a[text()='search']/@href")
    assert (page.parent / unquote(href)).resolve() == (mirror / str(found.local_path)).resolve()


async def test_a_frames_stylesheet_is_its_documents_and_a_sandboxed_frame_has_no_origin(
    site, other_site, run_crawl
):
    """A stylesheet a frame of the rendered page asks for is the frame's document's: the fonts it
    names (used or not, the crawl asks for them) carry the frame's origin, which a server
    answering the origins it allows alone needs, and a frame sandboxed without allow-same-origin
    has none (Origin: null, as Chromium sends it). They carried the page's origin. An image a
    script asks for with crossorigin=use-credentials, before any cookie exists, is asked for
    with credentials (its host's HTTP authentication), as a browser holding some would send
    them; an anonymous one without: the browser's request showed no Cookie for either, and both
    were asked for without. An image the sandboxed frame's script asks for is of no site: of the
    page's cookies, its SameSite=None one goes and its SameSite=Lax one stays home, as in
    Chromium (both went, the page's site judged); the other frame's goes with both."""
    origins: dict[str, str | None] = {}
    authorized: dict[str, bool] = {}
    cookies: dict[str, dict[str, str]] = {}

    async def cookied(request: web.Request) -> web.Response:
        cookies[request.path] = dict(request.cookies)
        return web.Response(body=b"x", content_type="image/png")

    def font(request: web.Request) -> web.Response:
        origins[request.path] = request.headers.get("Origin")
        authorized[request.path] = "Authorization" in request.headers
        return web.Response(body=b"wOF2", content_type="font/woff2")

    async def noted(request: web.Request) -> web.Response:
        return font(request)

    await site.start()
    home = site.url("/").rstrip("/")
    for path in ("/ff.woff2", "/bf.woff2", "/fu.woff2", "/bu.woff2"):
        site.handler(path, noted)
    for path in ("/fp.png", "/bp.png"):
        site.handler(path, cookied)
    # The frames and their stylesheets come from scripts: only the browser meets them (a URL a
    # script names whole would be found in it). A font each frame names and uses not is asked
    # for by the crawl alone, from the frame's document as it parses it: of no origin when the
    # browser met the frame sandboxed (it went with the frame's origin).
    styled = "<script>const l = document.createElement('link'); l.rel = 'stylesheet';"
    styled += "l.href = '/{}' + '.css'; document.head.append(l);</script><p>frame</p>"
    unused = f"<style>@font-face {{{{ font-family: u; src: url({home}/{{}}.woff2) }}}}</style>"
    picture = f"<script>new Image().src = '{home}/' + '{{}}' + '.png';</script>"
    other_site.file("/frame", styled.format("fs") + unused.format("fu") + picture.format("fp"))
    other_site.file("/boxed", styled.format("bs") + unused.format("bu") + picture.format("bp"))
    other_site.file("/fs.css", f"@font-face {{ font-family: g; src: url({home}/ff.woff2) }}", "text/css")
    other_site.file("/bs.css", f"@font-face {{ font-family: h; src: url({home}/bf.woff2) }}", "text/css")
    await other_site.start()
    cdn = other_site.url("/").rstrip("/")
    for path in ("/cred.png", "/anon.png"):
        other_site.handler(path, noted)
    framing = (
        f"<script>for (const [src, box] of [['{cdn}/frame', null], ['{cdn}/boxed', 'allow-scripts']]) {{"
        " const f = document.createElement('iframe'); if (box) f.setAttribute('sandbox', box);"
        " f.src = src; document.body.append(f); }"
        f"for (const [mode, name] of [['use-credentials', 'cred'], ['anonymous', 'anon']]) {{"
        f" const i = document.createElement('img'); i.crossOrigin = mode; i.src = '{cdn}/' + name + '.png';"
        " document.body.append(i); }</script>"
    )

    async def setting(request: web.Request) -> web.Response:
        response = web.Response(text=f"<body>{framing}</body>", content_type="text/html")
        response.headers.add("Set-Cookie", "lax=1; SameSite=Lax; Path=/")
        response.headers.add("Set-Cookie", "none=1; SameSite=None; Secure; Path=/")
        return response

    site.handler("/", setting)
    await run_crawl(
        site.url("/"),
        browser="always",
        chromium=CHROMIUM,
        scope="any",
        http_user="alice",
        http_password="pw",
        credentials_hosts=(f"127.0.0.1:{other_site.server.port}",),
    )
    assert cookies == {"/fp.png": {"lax": "1", "none": "1"}, "/bp.png": {"none": "1"}}
    assert origins == {
        "/ff.woff2": cdn,
        "/bf.woff2": "null",
        "/fu.woff2": cdn,
        "/bu.woff2": "null",
        "/cred.png": home,
        "/anon.png": home,
    }
    assert (authorized["/cred.png"], authorized["/anon.png"]) == (True, False)


async def test_a_rendered_page_its_policy_sandboxes_asks_for_what_its_dom_names_with_no_origin(
    site, other_site, run_crawl
):
    """A page its Content-Security-Policy sandboxes has no origin, its rendered DOM too: a font its
    script names and no text uses (the crawl alone asks for it, from the DOM) goes with Origin:
    null, as one its HTML names. It went with the page's origin. What its browser asks for first
    (an image, a fetch() with credentials, of its own site) is of no site: its SameSite=Lax
    cookie stays home, as Chromium keeps it (the crawl's request sent it, the page's site
    judged)."""
    origins: dict[str, str | None] = {}
    cookies: dict[str, dict[str, str]] = {}

    async def font(request: web.Request) -> web.Response:
        origins[request.path] = request.headers.get("Origin")
        return web.Response(body=b"wOF2", content_type="font/woff2")

    async def cookied(request: web.Request) -> web.Response:
        cookies[request.path] = dict(request.cookies)
        return web.Response(body=b"x", content_type="image/png")

    for path in ("/static.woff2", "/dom.woff2"):
        other_site.handler(path, font)
    for path in ("/pic.png", "/api"):
        site.handler(path, cookied)
    await other_site.start()
    cdn = other_site.url("").rstrip("/")
    face = "@font-face {{ font-family: {}; src: url(" + cdn + "/{}.woff2) }}"
    body = f"<style>{face.format('s', 'static')}</style><script>const s = document.createElement('style');"
    body += f"s.textContent = '{face.format('d', 'do')}'.replace('do.', 'dom.');"
    body += "document.head.append(s); const i = new Image(); i.src = '/p' + 'ic.png';"
    body += "fetch('/a' + 'pi', {credentials: 'include'}).catch(() => {});</script>"
    site.file("/", body, headers={"Content-Security-Policy": "sandbox allow-scripts"})
    await site.start()
    await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, scope="any", cookies=(("lax", "1"),))
    assert origins == {"/static.woff2": "null", "/dom.woff2": "null"}
    assert cookies == {"/pic.png": {}, "/api": {}}


URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
"""What RFC 3986 lets a URI hold (brackets only around an IPv6 host)."""


async def test_a_url_with_characters_no_uri_holds_is_one_fetch_and_a_valid_target_uri(site, run_crawl):
    """Chromium asks for /i%7C.png where the page says /i|.png, and the WHATWG parser leaves |, [,
    ] in a path and |, [, ], {, }, ^, ` in a query, which no URI holds (RFC 3986), though a
    WARC-Target-URI must be one: escaped, the page's link and the browser's request are one URL,
    fetched once, recorded once, under a Target-URI that is a URI."""
    site.page("/", body='<img src="/i|[1].png?v=|[]{}^`"><a href="/p|[q]?v={}^`">p</a>')
    site.file("/i%7C%5B1%5D.png?v=%7C%5B%5D%7B%7D%5E%60", png(1, 2, 3), "image/png")
    site.page("/p%7C%5Bq%5D?v=%7B%7D%5E%60")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)
    assert site.hits["/i%7C%5B1%5D.png?v=%7C%5B%5D%7B%7D%5E%60"] == 1, site.hits
    assert site.hits["/p%7C%5Bq%5D?v=%7B%7D%5E%60"] == 1, site.hits
    assert sum(site.hits.values()) == 3, site.hits
    targets: Counter[str] = Counter()
    for warc in (result.snapshot.root / "warc").glob("*.warc.gz"):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    target = record.rec_headers.get_header("WARC-Target-URI")
                    targets[target] += 1
                    host_end = target.index("/", len("http://"))
                    assert URI_CHARACTERS.fullmatch(target[host_end:]), target
    assert max(targets.values()) == 1, targets
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_rendered_pages_srcdoc_stylesheet_is_read_in_utf8(site, run_crawl):
    """A stylesheet naming no charset that an iframe's srcdoc document of a windows-1252 page
    links is read in UTF-8 when the crawl's browser renders the page, as by HTTP and as Chromium
    reads it: its café.png is the one fetched, and verify finds the snapshot complete. It was
    read in the page's encoding, and another, garbled URL fetched."""
    site.file(
        "/",
        b'<iframe srcdoc="&lt;link rel=stylesheet href=sd.css&gt;&lt;p&gt;x"></iframe>',
        "text/html; charset=windows-1252",
    )
    site.file("/sd.css", "p{background:url(café.png)}".encode(), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert sorted(manifest_rows(root)) == sorted(
        site.url(path) for path in ("/", "/sd.css", "/caf%C3%A9.png")
    )
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
