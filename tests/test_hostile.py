"""Hostile servers are expected input: bombs, endless bodies, huge headers, slow hosts, odd paths."""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import time
import zlib

import brotlicffi
import markupsafe
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import in_linear_time, manifest_rows
from raw_server import RawRequest, RawServer

from archiver.export.pages import snapshot_pages
from archiver.mirror.build import build_mirror
from archiver.paths import relative_url
from archiver.scope import MAX_URL_LENGTH
from archiver.store.manifest import Manifest
from archiver.verify.verifier import verify_snapshot


def gzip_bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1024 * 1024)
    parts = [compressor.compress(b"<title>bomb</title><a href='/after-bomb'>x</a>")]
    parts += [compressor.compress(chunk) for _ in range(size // len(chunk))]
    return b"".join(parts) + compressor.flush()


async def test_gzip_bomb_is_stored_but_decoded_only_up_to_a_limit(site, run_crawl):
    bomb = gzip_bomb(1024**3)  # 1 GiB of zeros in about 1 MB
    site.page("/", links=["/bomb"])
    site.file("/bomb", bomb, "text/html", headers={"Content-Encoding": "gzip"})
    site.page("/after-bomb")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/bomb")].outcome == "fetched"
    assert rows[site.url("/bomb")].length == len(bomb)
    assert rows[site.url("/after-bomb")].outcome == "fetched"  # links before the limit count
    # The mirror writes the page as far as the limit (it wrote 1.1 GB) and says so.
    root = result.snapshot.root
    assert not build_mirror(root).errors
    page = root / "mirror" / manifest_rows(root)[site.url("/bomb")].local_path
    assert page.stat().st_size <= 32 * 1024**2 + 100  # its links rewritten
    assert b"after-bomb.html" in page.read_bytes()[:200]
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        assert list(manifest.mirror_notes()) == [
            (site.url("/bomb"), page.relative_to(root / "mirror").as_posix(), CUT.replace("1 MiB", "32 MiB"))
        ]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_page_of_two_gzip_members_is_its_first_as_chromium_shows_it(site, run_crawl):
    """Chromium shows a page's first gzip member and ignores the rest; the crawl took the links of
    every member, and the mirror showed a page no reader saw."""
    shown = gzip.compress(b"<title>two</title><a href='/in-the-first'>shown</a>")
    hidden = gzip.compress(b"<a href='/in-the-second'>never shown</a><p>hidden text</p>")
    site.page("/", links=["/two"])
    site.file("/two", shown + hidden, "text/html", headers={"Content-Encoding": "gzip"})
    site.page("/in-the-first")
    site.page("/in-the-second")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url("/two")].length == len(shown + hidden)  # archived as sent
    assert rows[site.url("/in-the-first")].outcome == "fetched"
    assert site.url("/in-the-second") not in rows and site.hits["/in-the-second"] == 0
    page = (root / "mirror" / rows[site.url("/two")].local_path).read_bytes()
    assert b"in-the-first.html" in page and b"hidden text" not in page
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_endless_body_is_a_failure_kept_truncated_at_the_timeout(site, run_crawl):
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(1000):
            await response.write(b"more " * 100)
            await asyncio.sleep(0.01)
        return response

    site.page("/", links=["/endless"])
    site.handler("/endless", endless)
    await site.start()
    result = await run_crawl(site.url("/"), timeout=1.0, max_tries=2)
    row = manifest_rows(result.snapshot.root)[site.url("/endless")]
    # Cut by the timeout, not by --max-file-size: the archive lacks the rest of it.
    assert row.outcome == "failed" and row.truncated and row.length > 0 and row.tries == 2
    assert "at the 1 s timeout" in row.reason and site.hits["/endless"] == 2


async def test_endless_body_is_cut_at_max_file_size(site, run_crawl):
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        while True:
            await response.write(b"x" * 65536)

    site.page("/", links=["/endless"])
    site.handler("/endless", endless)
    await site.start()
    result = await run_crawl(site.url("/"), max_file_size=300_000)
    row = manifest_rows(result.snapshot.root)[site.url("/endless")]
    assert row.truncated and row.length == 300_000


PAST_256_KIB = "the answer's head runs past 256 KiB"


async def test_huge_headers_fail_cleanly(site, run_crawl):
    """A head past the 256 KiB browsers take, here in one field, is a failure with one line."""
    site.page("/", links=["/huge", "/fine"])
    site.file("/huge", "x", "text/plain", headers={"X-Huge": "h" * 300_000})
    site.page("/fine")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    huge = rows[site.url("/huge")]
    assert huge.outcome == "failed" and huge.reason.startswith(f"bad response: {PAST_256_KIB}"), huge
    assert rows[site.url("/fine")].outcome == "fetched"


async def test_slow_host_does_not_stall_a_fast_one(site, other_site, run_crawl):
    finished: dict[str, float] = {}
    slow_started: list[str] = []

    async def slow(request: web.Request) -> web.Response:
        # The first two hold the slow host's two slots for long enough that a loaded
        # machine still fetches the 20 fast pages meanwhile; the rest answer at once.
        slow_started.append(request.path)
        if len(slow_started) <= 2:
            await asyncio.sleep(2.5)
        finished[request.path] = time.monotonic()
        return web.Response(text="slow", content_type="text/plain")

    async def fast(request: web.Request) -> web.Response:
        finished[request.path] = time.monotonic()
        return web.Response(text="fast", content_type="text/plain")

    for i in range(6):
        other_site.handler(f"/slow{i}", slow)
    await other_site.start()
    links = [other_site.url(f"/slow{i}") for i in range(6)] + [f"/fast{i}" for i in range(20)]
    site.page("/", links=links)
    for i in range(20):
        site.handler(f"/fast{i}", fast)
    await site.start()
    await run_crawl(site.url("/"), scope="any", concurrency=4, host_concurrency=2)
    last_fast = max(finished[f"/fast{i}"] for i in range(20))
    first_slow = min(finished[f"/slow{i}"] for i in range(6))
    assert last_fast < first_slow


async def test_markup_made_to_take_time_squared_is_crawled_mirrored_and_verified(site, run_crawl):
    """Each of these, a megabyte or less, once took a parser hours: it looked again from every
    "url(" of a stylesheet, every "<" of a start tag never closed, every "<noscript>"."""
    site.page("/", links=["/page"], head='<link rel="stylesheet" href="/s.css">')
    # One bad url, read to its ")" as CSS reads it: what follows is read again.
    site.file("/s.css", "a{b:url(" * 100_000 + ") url(/after-css.png)", "text/css")
    site.page(
        "/page",
        body='<a href="/after-page">next</a><p style="' + "url(" * 50_000 + '">x</p>' + "<div " * 100_000,
    )
    site.file("/after-css.png", b"\x89PNG", "image/png")
    site.page("/after-page")
    await site.start()
    with in_linear_time(120):
        result = await run_crawl(site.url("/"))
        root = result.snapshot.root
        rows = manifest_rows(root)
        assert rows[site.url("/after-css.png")].outcome == "fetched"
        assert rows[site.url("/after-page")].outcome == "fetched"
        assert not build_mirror(root).errors
        page = (root / "mirror" / rows[site.url("/page")].local_path).read_bytes()
        assert b'href="after-page.html"' in page
        report = verify_snapshot(root)
        assert report.ok, report.render_text(str(root))


async def test_dot_segment_paths_stay_on_the_site(site, run_crawl):
    site.page("/", links=["/../../etc/passwd", "/a/%2e%2e/%2e%2e/b", "/..%2f..%2fsecret"])
    await site.start()
    result = await run_crawl(site.url("/"))
    urls = set(manifest_rows(result.snapshot.root))
    assert site.url("/etc/passwd") in urls and site.url("/b") in urls
    assert all(u.startswith(site.url("/")) for u in urls)


async def test_a_page_in_a_charset_nobody_knows_is_archived_and_followed(site, run_crawl):
    site.file("/", '<title>odd</title><a href="/next">next</a>', "text/html; charset=no-such-charset")
    site.page("/next")
    await site.start()
    result = await run_crawl(site.url("/"))
    assert build_mirror(result.snapshot.root).errors == []
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/")].outcome == "fetched" and rows[site.url("/")].title == "odd"
    assert rows[site.url("/next")].outcome == "fetched"
    assert rows[site.url("/")].local_path, "no mirror file for the page"
    assert (result.snapshot.mirror_dir / rows[site.url("/")].local_path).is_file()


async def test_charsets_that_cannot_decode_a_page_leave_it_archived_mirrored_and_followed(site, run_crawl):
    """Codecs that are not text encodings (base64), refuse errors="replace" (idna), or meet
    bytes they cannot hold (a UTF-16 page cut after an odd byte)."""
    site.file(
        "/",
        '<link rel="stylesheet" href="/s.css"><a href="/u16">u</a><a href="/b64">b</a>',
        "text/html; charset=idna",
    )
    site.file("/s.css", "body { background: url(bg.png) } /* \xe9 */", "text/css; charset=punycode")
    site.file("/bg.png", b"\x89PNG", "image/png")
    site.file("/u16", '<a href="/after-u16">x</a>'.encode("utf-16") + b"A", "text/html; charset=utf-16")
    site.file("/b64", '<a href="/after-b64">x</a>', "text/html; charset=base64")
    site.page("/after-u16")
    site.page("/after-b64")
    await site.start()
    result = await run_crawl(site.url("/"))
    assert build_mirror(result.snapshot.root).errors == []
    rows = manifest_rows(result.snapshot.root)
    for path in ("/", "/s.css", "/bg.png", "/u16", "/b64", "/after-u16", "/after-b64"):
        assert rows[site.url(path)].outcome == "fetched", path
        assert rows[site.url(path)].local_path, path


def _compressed(coding: str, head: bytes, unit: bytes, size: int) -> bytes:
    """``head`` then ``unit`` repeated to ``size`` bytes, compressed by ``coding``, a block at a time."""
    block = unit * ((1 << 20) // len(unit))
    blocks = [head, *(block for _ in range(size // len(block)))]
    if coding == "br":
        compressor = brotlicffi.Compressor(quality=4)
        return b"".join(compressor.process(b) for b in blocks) + compressor.finish()
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw": -zlib.MAX_WBITS}[coding]
    deflate = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(deflate.compress(b) for b in blocks) + deflate.flush()


HEAD = b"<!doctype html><title>bomb</title><a href='/after'>after</a>"
BOMB = 40 << 20
CUT = "cut at 1 MiB: the body decodes to more"
HOSTILE_BODIES = {
    "gzip bomb": (lambda: _compressed("gzip", HEAD, b"\0", BOMB), "text/html", "gzip", CUT),
    "deflate bomb": (lambda: _compressed("deflate", HEAD, b"\0", BOMB), "text/html", "deflate", CUT),
    "raw deflate bomb": (lambda: _compressed("raw", HEAD, b"\0", BOMB), "text/html", "deflate", CUT),
    "br bomb": (lambda: _compressed("br", HEAD, b"\0", BOMB), "text/html", "br", CUT),
    "gzip of a gzip bomb": (
        lambda: gzip.compress(_compressed("gzip", HEAD, b"\0", BOMB)),
        "text/html",
        "gzip, gzip",
        CUT,
    ),
    "bomb of links": (
        lambda: _compressed("gzip", HEAD, b"<a href='/after'>a</a>\n", BOMB),
        "text/html",
        "gzip",
        CUT,
    ),
    "one huge line": (lambda: _compressed("gzip", HEAD, b"a", BOMB), "text/html", "gzip", CUT),
    "stylesheet bomb": (
        lambda: _compressed("gzip", b"", b"a{background:url(/after)}\n", BOMB),
        "text/css",
        "gzip",
        CUT,
    ),
    "image bomb": (
        lambda: _compressed("gzip", b"\x89PNG\r\n\x1a\n", b"\0", BOMB),
        "image/png",
        "gzip",
        "cut at 2 MiB: the body decodes to more",
    ),
    "plain page sent as gzip": (lambda: HEAD, "text/html", "gzip", "not gzip data: kept as received"),
    "unknown encoding": (
        lambda: HEAD,
        "text/html",
        "zstd",
        "unknown Content-Encoding 'zstd': kept as received",
    ),
    "thousands of codings": (
        lambda: HEAD,
        "text/html",
        ", ".join(["gzip"] * 2000),
        "2000 Content-Encodings, more than 8: kept as received",
    ),
    "corrupt gzip": (
        lambda: gzip.compress(HEAD + b"<p>" + random.Random(1).randbytes(100_000))[:3000],
        "text/html",
        "gzip",
        "corrupt gzip data after",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_BODIES))
async def test_hostile_encodings_are_mirrored_within_bounds_and_verify(name, site, run_crawl, monkeypatch):
    make, content_type, encoding, note = HOSTILE_BODIES[name]
    monkeypatch.setattr("archiver.mirror.document.REWRITE_LIMIT", 1 << 20)
    monkeypatch.setattr("archiver.mirror.document.DECODED_FILE_LIMIT", 2 << 20)
    body = make()
    site.page("/", links=["/x"])
    site.file("/x", body, content_type, headers={"Content-Encoding": encoding})
    site.page("/after")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    if content_type != "image/png":
        assert manifest_rows(root)[site.url("/after")].outcome == "fetched"  # a link before the bomb
    stats = build_mirror(root)
    assert not stats.errors
    local_path = manifest_rows(root)[site.url("/x")].local_path
    written = (root / "mirror" / local_path).read_bytes()
    assert len(written) <= 2 << 20
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        notes = {url: found for url, _path, found in manifest.mirror_notes()}
    assert notes[site.url("/x")].startswith(note)
    assert str(markupsafe.escape(note)) in (root / "index.html").read_text()
    if content_type != "image/png" and "after" in written[:2000].decode("latin-1"):
        assert b"after.html" in written[:2000]  # links kept are rewritten
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
UNTYPED: dict[str, tuple[list[bytes], bytes]] = {
    # path: (header lines, body), served byte for byte
    "/": (
        [],
        b'\n <!DOCTYPE html><title>home</title><a href="/empty">e</a><a href="/unknown">u</a>'
        b'<a href="/png">p</a><a href="/nosniff">n</a><a href="/plain">t</a>'
        b'<a href="/two-types">2</a><a href="/quoted">q</a><a href="/kept">k</a>'
        b'<a href="/unknown-charset">c</a><a href="/typeless-charset">t</a><img src="/nosniff-png">'
        b'<img src="/html-png">',
    ),
    "/empty": ([b"Content-Type: "], b'<!-- a comment --><a href="/after-empty">x</a>'),
    "/unknown": (
        [b"Content-Type: unknown/unknown", b"Content-Encoding: gzip"],
        gzip.compress(b'<P>gzip<a href="/after-unknown">x</a>'),
    ),
    "/png": ([], PNG),
    # nosniff: text/plain, as Chromium takes it, never a page; an image is still an image.
    "/nosniff": ([b"X-Content-Type-Options: nosniff"], b'<html><a href="/not-sniffed">x</a>'),
    "/nosniff-png": ([b"X-Content-Type-Options: nosniff", b"Content-Type: unknown/unknown"], PNG),
    # An image sent as a page (a script that makes it names no type: the server's default) is the
    # image a page shows in an <img>, and its mirror file is the image, as it came.
    "/html-png": ([b"Content-Type: text/html; charset=utf-8"], PNG + b'<a href="/in-png">'),
    "/plain": ([b"Content-Type: text/plain"], b'<html><a href="/plain-text">x</a>'),
    "/two-types": ([b"Content-Type: text/plain", b"Content-Type: text/html"], b'<a href="/after-two">x</a>'),
    # Browsers know no charset 'koi8-r' (quotes and all): the page is read as windows-1252.
    "/quoted": ([b"Content-Type: text/html; charset='koi8-r'"], b"<title>\xc1\xc2</title>"),
    # The charset of an earlier field holds while the type stays the same.
    "/kept": (
        [b"Content-Type: text/html; charset=koi8-r", b"Content-Type: text/html"],
        b"<title>\xc1\xc2</title>",
    ),
    # A type that names none keeps its charset (Fetch's "extract a MIME type"): the sniffed page is
    # read in it, its links too; a Content-Type that is no MIME type gives no charset.
    "/unknown-charset": (
        [b"Content-Type: unknown/unknown; charset=koi8-r"],
        b'<html><title>\xc1\xc2</title><a href="/\xc1">x</a>',
    ),
    "/typeless-charset": (
        [b"Content-Type: ;charset=koi8-r"],
        b'<html><title>\xc1\xc2</title><a href="/\xc2">x</a>',
    ),
}


async def test_answers_of_no_type_are_sniffed_as_browsers_do(run_crawl):
    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
        lines, body = UNTYPED.get(request.path, ([b"Content-Type: text/html"], b"<title>end</title>"))
        head = b"\r\n".join(
            [b"HTTP/1.1 200 OK", b"Connection: close", *lines, b"Content-Length: %d" % len(body)]
        )
        writer.write(head + b"\r\n\r\n" + body)

    server = await RawServer(handler).start()
    base = server.url("")

    def url(path: str) -> str:
        return base + path

    result = await run_crawl(url("/"), max_tries=1, timeout=5.0)
    await server.close()
    root = result.snapshot.root
    rows = manifest_rows(root)
    types = {path: rows[url(path)].content_type for path in UNTYPED}
    assert types == {
        "/": "text/html",
        "/empty": "text/html",
        "/unknown": "text/html",
        "/png": "image/png",
        "/nosniff": "text/plain",
        "/nosniff-png": "image/png",
        "/html-png": "image/png",
        "/plain": "text/plain",
        "/two-types": "text/html",
        "/quoted": "text/html",
        "/kept": "text/html",
        "/unknown-charset": "text/html",
        "/typeless-charset": "text/html",
    }
    followed = {path: url(path) in rows for path in ("/after-empty", "/after-unknown", "/after-two")}
    assert followed == {"/after-empty": True, "/after-unknown": True, "/after-two": True}
    assert url("/not-sniffed") not in rows and url("/plain-text") not in rows
    assert rows[url("/quoted")].title == "ÁÂ" and rows[url("/kept")].title == "аб"
    assert rows[url("/unknown-charset")].title == "аб" and url("/%D0%B0") in rows  # koi8-r
    assert rows[url("/typeless-charset")].title == "ÁÂ" and url("/%C3%82") in rows  # windows-1252
    # The WARC keeps the answers as received; the mirror names files by what they were taken as.
    assert not build_mirror(root).errors
    rows = manifest_rows(root)
    assert rows[url("/")].local_path.endswith(".html")
    assert rows[url("/png")].local_path.endswith(".png")
    assert rows[url("/nosniff-png")].local_path.endswith(".png")
    image = root / "mirror" / rows[url("/html-png")].local_path
    assert image.suffix == ".png" and image.read_bytes() == UNTYPED["/html-png"][1]
    assert url("/in-png") not in rows
    assert rows[url("/nosniff")].local_path.endswith(".txt")  # from disk, no page either
    home = (root / "mirror" / rows[url("/")].local_path).read_text()
    assert 'href="empty.html"' in home and 'href="png.png"' in home
    page = (root / "mirror" / rows[url("/unknown-charset")].local_path).read_bytes()
    linked = rows[url("/%D0%B0")].local_path.rsplit("/", 1)[-1]
    assert page.startswith(b'<meta charset="koi8-r">') and f'href="{linked}"'.encode() in page
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    parsed = [row for row in rows.values() if row.content_type == "text/html" and row.status == 200]
    assert report.stats["pages parsed"] == len(parsed) == 13, "verify reads the sniffed pages too"
    # The CDXJ index gives each answer the type it was taken as, as the manifest does.
    index = (root / "indexes" / "index.cdxj").read_text().splitlines()
    indexed = {
        entry["url"]: entry.get("mime") for entry in (json.loads(line.split(" ", 2)[2]) for line in index)
    }
    assert [indexed[url(path)] for path in ("/", "/empty", "/unknown", "/nosniff")] == [
        "text/html",
        "text/html",
        "text/html",
        "text/plain",
    ]
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        pages = [page.url for page in snapshot_pages(manifest)]
    assert pages[0] == url("/") and url("/empty") in pages and url("/png") not in pages  # WACZ pages


async def test_an_unasked_upgrade_is_a_failed_fetch(run_crawl):
    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/upgrade":  # to a plain GET: past it the connection is no longer HTTP
            writer.write(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
            )
            writer.write(b"\x81\x05hello")
            return
        body = b'<a href="/upgrade">u</a>'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )

    server = await RawServer(handler).start()
    seed, upgrade = server.url("/"), server.url("/upgrade")
    result = await run_crawl(seed, max_tries=1, timeout=5.0)
    await server.close()
    row = manifest_rows(result.snapshot.root)[upgrade]
    assert row.outcome == "failed" and row.status is None and row.local_path is None
    assert "101 Switching Protocols to a request that asked for no upgrade" in (row.reason or "")


async def test_an_image_at_a_page_s_name_is_mirrored_as_an_image(site, run_crawl):
    """A browser reading the mirror from disk types a file by its name alone: an image served at
    /x.html written as x.html would open as a page of its bytes."""
    site.page("/", links=["/img.html", "/notes.html"], body='<img src="/img.html?v=2">')
    site.file("/img.html", PNG, "image/png")
    site.file("/img.html?v=2", PNG + b"2", "image/png")
    site.file("/notes.html", "plain <script>text</script>", "text/plain")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    paths = {path: rows[site.url(path)].local_path for path in ("/img.html", "/img.html?v=2", "/notes.html")}
    host = rows[site.url("/")].local_path.partition("/")[0]
    assert paths == {
        "/img.html": f"{host}/img.html.png",
        "/img.html?v=2": f"{host}/img.html@v=2.png",
        "/notes.html": f"{host}/notes.html.txt",
    }
    home = (root / "mirror" / rows[site.url("/")].local_path).read_text()
    assert 'href="img.html.png"' in home and 'src="img.html@v=2.png"' in home
    assert 'href="notes.html.txt"' in home
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_an_international_host_name_is_one_host_however_written(site, run_crawl):
    """--resolve and links name it in Unicode, in punycode, in capitals: one host, asked for in
    punycode (the name DNS knows), its pages archived once."""
    hosts: list[str] = []

    async def home(request: web.Request) -> web.Response:
        hosts.append(request.headers["Host"])
        return web.Response(
            text=f'<a href="{puny}/a">a</a><a href="{upper}/a#x">a</a>', content_type="text/html"
        )

    site.handler("/", home)
    site.page("/a")
    await site.start()
    port = site.server.port
    unicode, puny, upper = (
        f"http://{name}:{port}" for name in ("bücher.test", "xn--bcher-kva.test", "BÜCHER.test")
    )
    root = (await run_crawl(f"{unicode}/", resolve=(("bücher.test", "127.0.0.1"),))).snapshot.root
    rows = manifest_rows(root)
    assert {url: row.outcome for url, row in rows.items()} == {f"{puny}/": "fetched", f"{puny}/a": "fetched"}
    assert hosts == [f"xn--bcher-kva.test:{port}"] and site.hits["/a"] == 1
    assert rows[f"{puny}/"].local_path == f"xn--bcher-kva.test+{port}/index.html"
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_crawler_traps_end_at_the_limits_given_and_the_log_says_which(run_crawl, tmp_path):
    """An endless calendar, paths ever deeper from relative links on a page that answers every
    path, a session id in every link: --max-depth, --max-pages, --max-bytes and --max-time end
    each, and crawl.log says, once, which limit ended it."""
    answered = 0

    async def trap(request: web.Request) -> web.Response:
        nonlocal answered
        answered += 1
        if request.path in ("/robots.txt", "/sitemap.xml"):
            return web.Response(status=404)
        if request.path == "/cal":
            month = int(request.query["month"])
            links = [f"/cal?month={month + 1}", f"/cal?month={month - 1}"]
        else:
            links = ["/cal?month=1", "a/", f"/s?sid={answered}"]
        return web.Response(text="".join(f'<a href="{u}">x</a>' for u in links), content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", trap)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    limits: dict[str, tuple[dict[str, float], str]] = {
        "depth": ({"max_depth": 4}, "--max-depth 4 reached: links deeper are recorded as skipped (depth)"),
        "pages": (
            {"max_pages": 30},
            "--max-pages 30 reached: the URLs not fetched yet are recorded as skipped",
        ),
        "bytes": ({"max_bytes": 3000}, "--max-bytes 3000 reached: the URLs not fetched yet are recorded"),
        "time": ({"max_time": 1.0}, "crawl stopped: --max-time reached"),
    }
    try:
        for name, (options, line) in limits.items():
            result = await run_crawl(
                f"http://127.0.0.1:{server.port}/deep/", output=tmp_path / name, **options
            )
            log = (result.snapshot.root / "logs" / "crawl.log").read_text()
            assert log.count(line) == 1, (name, log[-2000:])
            if name != "time":
                report = verify_snapshot(result.snapshot.root, check_mirror=False)
                assert report.ok, report.render_text(name)
    finally:
        await server.close()


async def test_a_host_name_of_253_bytes_and_a_port_is_mirrored(site, run_crawl):
    """The longest host name DNS allows, with a port, names a folder past the 255 bytes file
    systems allow: every file of that host failed to be written."""
    site.page("/", links=["/a"])
    site.page("/a")
    await site.start()
    host = ".".join(["a" * 63] * 4)[:253]
    root = (
        await run_crawl(f"http://{host}:{site.server.port}/", resolve=((host, "127.0.0.1"),))
    ).snapshot.root
    rows = manifest_rows(root)
    assert [row.outcome for row in rows.values()] == ["fetched", "fetched"]
    for row in rows.values():
        assert row.local_path and (root / "mirror" / row.local_path).is_file(), row.url
        assert all(len(name.encode()) <= 255 for name in row.local_path.split("/"))
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_urls_past_the_length_limit_are_skipped_with_a_reason(site, run_crawl):
    """A link of a megabyte made WARC header lines longer than a reader reads back: verify found
    its record at no location. URLs past MAX_URL_LENGTH are recorded as skipped."""
    near, long, huge = ("/q?" + "x" * size for size in (MAX_URL_LENGTH - 100, MAX_URL_LENGTH, 1_100_000))
    site.page("/", links=[near, long], body=f'<img src="{huge}">')
    await site.start()
    root = (await run_crawl(site.url("/"), max_tries=1)).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url(near)].outcome == "fetched"  # the server's answer (here a 400) as sent
    assert [(rows[site.url(u)].outcome, rows[site.url(u)].reason) for u in (long, huge)] == [
        ("skipped", "URL too long"),
        ("skipped", "URL too long"),
    ]
    log = (root / "logs" / "crawl.log").read_text()
    assert log.count("a URL past 65,536 characters: such URLs are recorded as skipped (URL too long)") == 1
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))[:2000]


async def test_a_page_sent_as_an_attachment_is_a_download_not_a_page(site, run_crawl):
    """A browser saves an HTML answer with Content-Disposition: attachment and shows nothing: it
    is taken as a download (application/octet-stream), its links not followed, its mirror file
    its bytes as sent, not rewritten. An image sent so is still an image its page shows."""
    saved = b'<html><a href="/inside">in</a><img src="/pic.png"></html>'
    site.page("/", links=["/report"], body='<img src="/logo.png">')
    site.file("/report", saved, "text/html", headers={"Content-Disposition": "attachment; filename=x.pdf"})
    site.file("/logo.png", PNG, "image/png", headers={"Content-Disposition": "attachment"})
    site.page("/inside")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    report = rows[site.url("/report")]
    assert (report.outcome, report.content_type) == ("fetched", "application/octet-stream"), report
    assert site.url("/inside") not in rows and site.url("/pic.png") not in rows
    assert (root / "mirror" / report.local_path).read_bytes() == saved
    assert rows[site.url("/logo.png")].content_type == "image/png"
    verified = verify_snapshot(root)
    assert verified.ok, verified.render_text(str(root))


async def test_links_to_hosts_of_punycode_that_is_no_idna_are_skipped_with_a_reason(site, run_crawl):
    """A host with an xn-- label that does not decode (or decodes to what IDNA refuses) is no
    host the URL standard parses nor a name that resolves: its links, requisites included, are
    recorded as skipped, not fetched as failures; the mirror leaves them absolute."""
    bad = ["http://xn--zz/", "http://a.xn--ls8h-broken.example/p", "http://xn--abc-.example/i.png"]
    site.page("/", links=bad[:2], body=f'<img src="{bad[2]}">')
    await site.start()
    root = (await run_crawl(site.url("/"), scope="any", max_tries=1)).snapshot.root
    rows = manifest_rows(root)
    skipped = [(rows[url].outcome, rows[url].reason) for url in bad]
    assert skipped == [("skipped", "invalid punycode host")] * 3
    home = (root / "mirror" / rows[site.url("/")].local_path).read_text()
    assert all(f'"{url}"' in home for url in bad), home
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_bytes_python_reads_otherwise_than_the_encoding_standard_are_read_as_browsers_read_them(
    site, run_crawl
):
    """Byte 0xCA of windows-1255 is U+05BA to browsers (Python's cp1255 has nothing there), 0xAE
    of KOI8-U is ў (Python's has a box-drawing sign), 0x80 of GBK a euro sign (Python's gbk has
    nothing), Shift_JIS's 0xA0 and 0xFD U+FFFD (Python's cp932 has private-use characters),
    Big5's 0x87 0x7A U+3875 (Python's big5hkscs has nothing): a link with them is fetched where
    Chromium fetches it, its path in UTF-8, its query in the page's encoding as Chromium writes
    it (Shift_JIS's IBM rows for what NEC's rows read, no Big5 for what only HKSCS has), and
    ISO-2022-JP's escapes as the standard reads them."""
    home = b'<meta charset="windows-1255"><a href="/h\xca?q=\xca">x</a>'
    home += b'<a href="/k">k</a><a href="/g">g</a><a href="/j">j</a><a href="/e">e</a><a href="/b">b</a>'
    home += b'<a href="/i">i</a>'
    site.file("/", home, "text/html")
    site.file("/k", b'<meta charset="koi8-u"><a href="/k\xae?q=\xae">x</a>', "text/html")
    # GBK is GB18030 to browsers, of 2022: 0x80 is the euro sign, A6D9 a vertical comma.
    # A lead and a digit that begin no four-byte character are one error, the digit read again.
    site.file(
        "/g",
        b'<meta charset="gbk"><a href="/g\x80\xa6\xd9?q=\x80\xa6\xd9">x</a>'
        b'<a href="/g2\x81\x30a\x81\xffb">y</a>',
        "text/html",
    )
    site.page("/g2%EF%BF%BD0a%EF%BF%BDb")
    # A Shift_JIS lead and a byte past ASCII that make no character are one error, one U+FFFD.
    site.file(
        "/j",
        b'<meta charset="shift_jis"><a href="/j\x81\xad">x</a><a href="/s\xa0\xfd?q=\xee\xef\xa0">s</a>',
        "text/html",
    )
    site.page("/j%EF%BF%BD")
    site.page("/s%EF%BF%BD%EF%BF%BD?q=%FA@%26%2365533%3B")
    site.file(
        "/b", b'<meta charset="big5"><a href="/b\x87\x7a\xa1\x45?q=\x87\x7a\xa1\x45">x</a>', "text/html"
    )
    site.page("/b%E3%A1%B5%E2%80%A7?q=%26%2314453%3B%A1E")
    # EUC-JP is JIS X 0208 with Windows' NEC and IBM rows to browsers: FC E2 is 髙.
    site.file("/e", b'<meta charset="euc-jp"><a href="/e\xfc\xe2?q=\xfc\xe2">x</a>', "text/html")
    site.page("/e%E9%AB%99?q=%FC%E2")
    # ISO-2022-JP: half-width katakana after ESC ( I, NEC's row 13 (①), and an escape that
    # outputs nothing before the next one (an error), as Chromium reads them.
    site.file(
        "/i", b'<meta charset="iso-2022-jp"><a href="/i\x1b(I12\x1b(B\x1b$B-!\x1b(B">x</a>', "text/html"
    )
    site.page("/i%EF%BD%B1%EF%BD%B2%EF%BF%BD%E2%91%A0")
    site.page("/h%D6%BA?q=%CA")
    site.page("/k%D1%9E?q=%AE")
    site.page("/g%E2%82%AC%EF%B8%90?q=%80%A6%D9")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    for path in (
        "/h%D6%BA?q=%CA",
        "/k%D1%9E?q=%AE",
        "/g%E2%82%AC%EF%B8%90?q=%80%A6%D9",
        "/g2%EF%BF%BD0a%EF%BF%BDb",
        "/j%EF%BF%BD",
        "/s%EF%BF%BD%EF%BF%BD?q=%FA@%26%2365533%3B",
        "/b%E3%A1%B5%E2%80%A7?q=%26%2314453%3B%A1E",
        "/e%E9%AB%99?q=%FC%E2",
        "/i%EF%BD%B1%EF%BD%B2%EF%BF%BD%E2%91%A0",
    ):
        assert rows[site.url(path)].status == 200 and site.hits[path] == 1, path
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_bytes_windows_1252_assigns_no_character_are_read_as_browsers_read_them(site, run_crawl):
    """The Encoding standard reads bytes 0x81, 0x8D, 0x8F, 0x90 and 0x9D of windows-1252 as the
    C1 controls of their value, where Python's cp1252 has no character: a link to /p\\x81 is
    /p%C2%81, its query's \\x81 is %81, not a U+FFFD written in UTF-8 or as &#65533;."""
    site.file(
        "/", b'<meta charset="windows-1252"><a href="/p\x81\x9d\xe9?q=\x81\x8f\xe9\x80">x</a>', "text/html"
    )
    site.page("/p%C2%81%C2%9D%C3%A9?q=%81%8F%E9%80")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    link = site.url("/p%C2%81%C2%9D%C3%A9?q=%81%8F%E9%80")
    assert rows[link].status == 200 and site.hits[link.partition(site.host)[2]] == 1
    home = (root / "mirror" / rows[site.url("/")].local_path).read_text("latin-1")
    assert f'href="{relative_url(rows[site.url("/")].local_path, rows[link].local_path)}"' in home
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
