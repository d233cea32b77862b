"""Hostile servers are expected input: bombs, endless bodies, huge headers, slow hosts, odd paths."""

from __future__ import annotations

import asyncio
import time
import zlib

from aiohttp import web
from conftest import manifest_rows

from archiver.mirror.build import build_mirror


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


async def test_endless_body_is_kept_truncated_at_the_timeout(site, run_crawl):
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
    result = await run_crawl(site.url("/"), timeout=1.0)
    row = manifest_rows(result.snapshot.root)[site.url("/endless")]
    assert row.outcome == "fetched" and row.truncated and row.length > 0


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


async def test_huge_headers_fail_cleanly(site, run_crawl):
    site.page("/", links=["/huge", "/fine"])
    site.file("/huge", "x", "text/plain", headers={"X-Huge": "h" * 200_000})
    site.page("/fine")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/huge")].outcome == "failed"
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
