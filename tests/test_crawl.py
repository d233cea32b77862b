"""Crawl scenarios against real local servers: discovery, scope, redirects, retries."""

from __future__ import annotations

import asyncio

from aiohttp import web
from conftest import manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.mirror.build import build_mirror
from archiver.scope import ROBOTS_UNREACHABLE
from archiver.verify.verifier import verify_snapshot


async def test_link_discovery_from_every_source(site, run_crawl):
    site.page(
        "/",
        head='<link rel="stylesheet" href="/s.css"><style>@import "/imp.css";</style>'
        '<meta http-equiv="refresh" content="30; url=/refreshed">',
        body='<img src="/i.png" srcset="/i1.png 1x, /i2.png 2x"><picture><source srcset="/p.webp">'
        '</picture><script src="/j.js"></script><iframe src="/frame"></iframe>'
        '<video src="/v.mp4" poster="/poster.jpg"><track src="/t.vtt"></video>'
        '<audio src="/a.mp3"></audio><embed src="/e.swf"><object data="/o.svg"></object>'
        '<input type="image" src="/btn.png"><div style="background:url(/inline.png)"></div>'
        '<map><area href="/area"></map>',
        links=["/page"],
    )
    site.file("/s.css", "@import url(more.css); body { background: url(bg.png) }", "text/css")
    site.file("/more.css", "@font-face { src: url('/font.woff2') }", "text/css")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    expected = [
        "/s.css",
        "/imp.css",
        "/refreshed",
        "/i.png",
        "/i1.png",
        "/i2.png",
        "/p.webp",
        "/j.js",
        "/frame",
        "/v.mp4",
        "/poster.jpg",
        "/t.vtt",
        "/a.mp3",
        "/e.swf",
        "/o.svg",
        "/btn.png",
        "/inline.png",
        "/area",
        "/page",
        "/more.css",
        "/bg.png",
        "/font.woff2",
    ]
    for path in expected:
        assert site.hits[path] == 1, path
        assert rows[site.url(path)].outcome == "fetched", path
    assert rows[site.url("/s.css")].found_by == "requisite"
    assert rows[site.url("/page")].found_by == "link"
    assert rows[site.url("/bg.png")].parent == site.url("/s.css")
    assert rows[site.url("/")].title == "Page /"


async def test_link_cycle(site, run_crawl):
    site.page("/", links=["/a"])
    site.page("/a", links=["/b", "/"])
    site.page("/b", links=["/a", "/", "/b"])
    await site.start()
    result = await run_crawl(site.url("/"))
    assert dict(site.hits) == {"/": 1, "/a": 1, "/b": 1}
    assert result.totals["fetched"] == 3
    rows = manifest_rows(result.snapshot.root)
    assert [rows[site.url(p)].depth for p in ("/", "/a", "/b")] == [0, 1, 2]


async def test_scope_host_skips_other_hosts_but_fetches_requisites(site, other_site, run_crawl):
    other_site.file("/logo.png", b"PNG", "image/png")
    other_site.page("/elsewhere")
    await other_site.start()
    site.page("/", links=[other_site.url("/elsewhere")], body=f'<img src="{other_site.url("/logo.png")}">')
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert rows[other_site.url("/elsewhere")].outcome == "skipped"
    assert rows[other_site.url("/elsewhere")].reason == "out of scope"
    assert rows[other_site.url("/logo.png")].outcome == "fetched"
    assert other_site.hits == {"/logo.png": 1}


async def test_scope_domain_with_pinned_names(site, run_crawl):
    site.page("/", links=["/a"])
    site.page("/a")
    await site.start()
    port = site.server.port
    www, img, other = (f"http://{h}:{port}" for h in ("www.site.test", "img.site.test", "other.test"))
    site.page("/", links=[f"{img}/a", f"{other}/a"])
    pins = tuple((h, "127.0.0.1") for h in ("www.site.test", "img.site.test", "other.test"))
    result = await run_crawl(f"{www}/", scope="domain", resolve=pins)
    rows = manifest_rows(result.snapshot.root)
    assert rows[f"{img}/a"].outcome == "fetched"
    assert rows[f"{other}/a"].reason == "out of scope"


async def test_scope_domain_keeps_to_one_github_io_site(site, run_crawl):
    site.page("/")
    await site.start()
    port = site.server.port
    hosts = ("foo.github.io", "www.foo.github.io", "other.github.io")
    mine, www, theirs = (f"http://{h}:{port}" for h in hosts)
    site.page("/", links=[f"{www}/a", f"{theirs}/a"])
    site.page("/a")
    pins = tuple((h, "127.0.0.1") for h in hosts)
    result = await run_crawl(f"{mine}/", scope="domain", resolve=pins)
    rows = manifest_rows(result.snapshot.root)
    assert rows[f"{www}/a"].outcome == "fetched"
    assert rows[f"{theirs}/a"].reason == "out of scope"


async def test_scope_prefix_include_exclude(site, run_crawl):
    site.page("/docs/", links=["/docs/a", "/docs/b.pdf", "/docs/private/x", "/blog/"])
    site.page("/docs/a")
    await site.start()
    result = await run_crawl(
        site.url("/docs/"), scope="prefix", exclude=(r"\.pdf$",), include=(r"/docs/(a|$)",)
    )
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/docs/a")].outcome == "fetched"
    assert rows[site.url("/docs/b.pdf")].reason == "excluded"
    assert rows[site.url("/docs/private/x")].reason == "excluded"
    assert rows[site.url("/blog/")].reason == "out of scope"
    assert set(site.hits) == {"/docs/", "/docs/a"}


async def test_an_exclude_written_in_unicode_matches_the_urls_it_names(site, run_crawl):
    site.page("/", links=["/café/menu", "/cafe/menu"])
    site.page("/cafe/menu")
    await site.start()
    result = await run_crawl(site.url("/"), exclude=("/café/",))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/caf%C3%A9/menu")].reason == "excluded"
    assert rows[site.url("/cafe/menu")].outcome == "fetched"
    assert "/caf%C3%A9/menu" not in site.hits


async def test_scope_any_follows_other_hosts(site, other_site, run_crawl):
    other_site.page("/x")
    await other_site.start()
    site.page("/", links=[other_site.url("/x")])
    await site.start()
    result = await run_crawl(site.url("/"), scope="any")
    assert manifest_rows(result.snapshot.root)[other_site.url("/x")].outcome == "fetched"


async def test_max_depth_and_max_pages(site, run_crawl, tmp_path):
    site.page("/", links=["/1"])
    site.page("/1", links=["/2"])
    site.page("/2", links=["/3"])
    await site.start()
    result = await run_crawl(site.url("/"), max_depth=1, output=tmp_path / "depth")
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/1")].outcome == "fetched"
    assert rows[site.url("/2")].reason == "depth"
    result = await run_crawl(site.url("/"), max_pages=2, concurrency=1, output=tmp_path / "pages")
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/2")].outcome == "skipped"
    assert rows[site.url("/2")].reason == "page limit"


async def test_redirect_chain_recorded_hop_by_hop(site, run_crawl):
    site.page("/", links=["/r1"])
    site.redirect("/r1", "/r2", 301)
    site.redirect("/r2", "/r3", 302)
    site.redirect("/r3", "/final", 307)
    site.page("/final")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    for src, dst, status in (("/r1", "/r2", 301), ("/r2", "/r3", 302), ("/r3", "/final", 307)):
        row = rows[site.url(src)]
        assert (row.outcome, row.status, row.redirect_to) == ("redirected", status, site.url(dst))
        assert row.final_url == site.url("/final")
        assert row.warc_file is not None
    assert rows[site.url("/r2")].found_by == "redirect"
    assert rows[site.url("/final")].outcome == "fetched"


async def test_redirect_join(site, run_crawl):
    """Chains that meet are coalesced: the shared tail is fetched once."""
    site.page("/", links=["/a", "/b"])
    site.redirect("/a", "/shared")
    site.redirect("/b", "/shared")
    site.redirect("/shared", "/final")
    site.page("/final")
    await site.start()
    result = await run_crawl(site.url("/"))
    assert site.hits["/shared"] == 1
    assert site.hits["/final"] == 1
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/a")].final_url == rows[site.url("/b")].final_url == site.url("/final")


async def test_redirect_loop_is_an_error(site, run_crawl):
    site.page("/", links=["/loop1"])
    site.redirect("/loop1", "/loop2")
    site.redirect("/loop2", "/loop1")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/loop2")].outcome == "failed"
    assert rows[site.url("/loop2")].reason == "redirect loop"
    assert site.hits["/loop1"] == 1 and site.hits["/loop2"] == 1


async def test_too_many_redirects_is_an_error(site, run_crawl):
    async def endless(request: web.Request) -> web.Response:
        n = int(request.query.get("n", "0"))
        return web.Response(status=302, headers={"Location": f"/endless?n={n + 1}"})

    site.page("/", links=["/endless?n=0"])
    site.handler("/endless", endless)
    await site.start()
    result = await run_crawl(site.url("/"), max_redirects=3)
    rows = manifest_rows(result.snapshot.root)
    failed = [r for r in rows.values() if r.outcome == "failed"]
    assert len(failed) == 1 and "too many redirects" in failed[0].reason
    assert sum(site.hits.values()) == 1 + 4


async def test_redirect_leaving_scope_is_not_followed(site, other_site, run_crawl):
    other_site.page("/landing")
    await other_site.start()
    site.page("/", links=["/out"])
    site.redirect("/out", other_site.url("/landing"))
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/out")].outcome == "redirected"
    assert rows[other_site.url("/landing")].reason == "out of scope"
    assert other_site.hits == {}


async def test_max_tries_after_dropped_connections(site, run_crawl):
    """A server that drops new connections without answering costs exactly --max-tries requests."""
    attempts = {"n": 0}

    def closing(response: web.Response) -> web.Response:
        # No connection is kept: every request goes out on a new one. (One that a reused
        # connection loses unanswered is sent again on a new one, uncounted: see
        # test_hostile_answers.)
        response.force_close()
        return response

    async def flaky(request: web.Request) -> web.Response:
        attempts["n"] += 1
        if attempts["n"] < 3:
            assert request.transport is not None
            request.transport.close()  # drop the connection without answering
            await asyncio.sleep(0.05)
        return closing(web.Response(text="<title>ok</title>", content_type="text/html"))

    async def home(request: web.Request) -> web.Response:
        links = '<a href="/flaky">flaky</a><a href="/dead">dead</a>'
        return closing(web.Response(text=links, content_type="text/html"))

    async def missing(request: web.Request) -> web.Response:
        return closing(web.Response(status=404, text="not here"))

    async def dead(request: web.Request) -> web.Response:
        assert request.transport is not None
        request.transport.close()
        await asyncio.sleep(0.05)
        return web.Response(text="never sent")

    for path, handler in (("/", home), ("/robots.txt", missing), ("/sitemap.xml", missing)):
        site.handler(path, handler)
    site.handler("/flaky", flaky)
    site.handler("/dead", dead)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=3)
    rows = manifest_rows(result.snapshot.root)
    # A try is one request: aiohttp's own silent second request is off.
    assert rows[site.url("/flaky")].outcome == "fetched"
    assert rows[site.url("/flaky")].tries == 3 and attempts["n"] == 3
    assert site.hits["/dead"] == 3
    assert rows[site.url("/dead")].outcome == "failed"
    assert rows[site.url("/dead")].tries == 3
    assert "after 3 tries" in rows[site.url("/dead")].reason


async def test_retry_after_503(site, run_crawl):
    calls = {"n": 0}

    async def busy(request: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=503, headers={"Retry-After": "0"})
        return web.Response(text="fine", content_type="text/plain")

    site.page("/", links=["/busy", "/always503"])
    site.handler("/busy", busy)
    site.file("/always503", "down", "text/plain", status=503)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=2)
    rows = manifest_rows(result.snapshot.root)
    assert (rows[site.url("/busy")].status, rows[site.url("/busy")].tries) == (200, 2)
    assert rows[site.url("/always503")].outcome == "failed"
    assert rows[site.url("/always503")].reason == "HTTP 503 after 2 tries"
    assert rows[site.url("/always503")].warc_file is not None


async def test_crashing_handler_does_not_hang_the_crawl(site, run_crawl):
    async def crash(request: web.Request) -> web.Response:
        raise RuntimeError("handler bug")

    async def cut(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        response.content_length = 10_000
        await response.prepare(request)
        await response.write(b"<a href='/after'>partial")
        assert request.transport is not None
        request.transport.close()
        return response

    site.page("/", links=["/crash", "/cut", "/fine"])
    site.handler("/crash", crash)
    site.handler("/cut", cut)
    site.page("/fine")
    await site.start()
    result = await asyncio.wait_for(run_crawl(site.url("/"), max_tries=2), timeout=30)
    rows = manifest_rows(result.snapshot.root)
    # A 500 is the server's answer, recorded as sent and not tried again (as wget does).
    assert (rows[site.url("/crash")].outcome, rows[site.url("/crash")].status) == ("fetched", 500)
    assert site.hits["/crash"] == 1
    assert rows[site.url("/fine")].outcome == "fetched"
    assert rows[site.url("/cut")].truncated and rows[site.url("/cut")].outcome == "failed"
    assert not [r for r in rows.values() if r.outcome == "queued"]


async def test_unreachable_link_is_recorded_failed(site, run_crawl, tmp_path):
    dead = "http://127.0.0.1:9/nothing-listens-here"
    site.page("/", links=[dead])
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, scope="any", obey_robots=False)
    row = manifest_rows(result.snapshot.root)[dead]
    assert row.outcome == "failed" and row.status is None and row.reason
    # Obeying robots.txt, the host's robots.txt out of reach keeps it out (RFC 9309): an error all the same.
    result = await run_crawl(site.url("/"), max_tries=1, scope="any", output=tmp_path / "obeying")
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    robots = rows["http://127.0.0.1:9/robots.txt"]
    assert robots.outcome == "failed" and robots.status is None and robots.reason
    assert (rows[dead].outcome, rows[dead].reason) == ("skipped", ROBOTS_UNREACHABLE)
    assert result.totals["no_answer"] == 1 and result.totals["errors"] == [(dead, ROBOTS_UNREACHABLE)]


def response_targets(root) -> set[str]:
    """WARC-Target-URI of every response record of a snapshot."""
    targets = set()
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    targets.add(record.rec_headers.get_header("WARC-Target-URI"))
    return targets


async def test_urls_are_requested_and_recorded_as_the_page_wrote_them(site, run_crawl):
    links = ["images//image_left.png", "page?", "%7Euser/", "a%2fb", "q?b=2&a=1", "sp ace", "../dir/./x"]
    site.page("/dir/", links=links)
    site.file("/dir/images//image_left.png", b"\x89PNG\r\n\x1a\n" + bytes(32), "image/png")
    for path in ("/dir/page", "/dir/%7Euser/", "/dir/a%2fb", "/dir/q?b=2&a=1", "/dir/sp%20ace", "/dir/x"):
        site.page(path)
    await site.start()
    root = (await run_crawl(site.url("/dir/"))).snapshot.root
    requested = {site.url(path) for path in site.hits}
    # What was fetched is what the WARC says, spelled as the browser spells it.
    kept = {site.url("/robots.txt"), site.url("/sitemap.xml")}  # fetched to find URLs, and kept
    assert response_targets(root) == requested | kept
    assert set(manifest_rows(root)) == requested
    assert site.url("/dir/images//image_left.png") in requested
    assert site.url("/dir/%7Euser/") in requested and site.url("/dir/a%2fb") in requested
    assert site.url("/dir/page?") in requested  # an empty query is sent, as a browser sends it
    assert all(count == 1 for count in site.hits.values())
    build_mirror(root)
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    home = (root / "mirror" / manifest_rows(root)[site.url("/dir/")].local_path).read_text()
    image = manifest_rows(root)[site.url("/dir/images//image_left.png")].local_path
    assert image and (root / "mirror" / image).is_file()
    assert "http://" not in home  # every link leads to a local file
