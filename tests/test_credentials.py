"""Headers, cookies and HTTP authentication go only to the hosts they were given for.

Two servers play the site (site.test) and a CDN (cdn.test), both on 127.0.0.1 and
reached by name through --resolve, so cookies tell them apart as browsers would.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from conftest import manifest_rows

from archiver.config import CrawlConfig
from archiver.errors import ConfigError
from archiver.mirror.build import build_mirror
from archiver.store.snapshot import Snapshot

RESOLVE = (("site.test", "127.0.0.1"), ("cdn.test", "127.0.0.1"))
SECRET = "s3cr3t-pw"
BASIC = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()


class Recorder:
    """The headers each request to one server carried, by path."""

    def __init__(self, site) -> None:
        self.site = site
        self.seen: list[tuple[str, dict[str, str]]] = []

    def serve(
        self, path: str, body: str = "", status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        async def handler(request: web.Request) -> web.Response:
            self.seen.append((request.path, dict(request.headers)))
            return web.Response(text=body, status=status, content_type="text/html", headers=headers)

        self.site.handler(path, handler)

    def headers(self, name: str) -> Iterator[str | None]:
        return (headers.get(name) for _, headers in self.seen)


def name_url(site, name: str, path: str = "/") -> str:
    return f"http://{name}:{site.server.port}{path}"


@pytest.fixture
async def two_hosts(site, other_site):
    """site.test: a home page with an image and a link on the CDN, and redirects to both hosts."""
    home, cdn = Recorder(site), Recorder(other_site)
    site.handler("/robots.txt", lambda request: _record(home, request))
    other_site.handler("/robots.txt", lambda request: _record(cdn, request))
    await other_site.start()
    cdn_logo = name_url(other_site, "cdn.test", "/logo.png")
    cdn_page = name_url(other_site, "cdn.test", "/page")
    home.serve(
        "/",
        f'<img src="{cdn_logo}"><a href="/a">a</a><a href="{cdn_page}">cdn</a>'
        '<a href="/to-cdn">moved</a><a href="/to-a2">moved here</a>',
    )
    home.serve("/a", "<title>a</title>")
    home.serve("/a2", "<title>a2</title>")
    home.serve("/to-cdn", status=302, headers={"Location": name_url(other_site, "cdn.test", "/landing")})
    home.serve("/to-a2", status=302, headers={"Location": "/a2"})
    cdn.serve("/logo.png", "png", headers={"Set-Cookie": "cdn=1; Path=/"})
    cdn.serve(
        "/page", "<title>cdn page</title>", headers={"Set-Cookie": "planted=1; Domain=site.test; Path=/"}
    )
    cdn.serve("/landing", "<title>landing</title>")
    await site.start()
    return home, cdn


async def _record(recorder: Recorder, request: web.Request) -> web.Response:
    recorder.seen.append((request.path, dict(request.headers)))
    return web.Response(status=404)


async def test_headers_and_cookies_go_to_the_seed_host_only(two_hosts, site, run_crawl):
    home, cdn = two_hosts
    await run_crawl(
        name_url(site, "site.test"),
        resolve=RESOLVE,
        scope="any",
        headers=(("Authorization", "Bearer SECRET"), ("X-Token", "t0k")),
        cookies=(("session", "abc"),),
    )
    assert {path for path, _ in home.seen} >= {"/", "/a", "/a2", "/to-cdn", "/to-a2", "/robots.txt"}
    assert {path for path, _ in cdn.seen} == {"/robots.txt", "/logo.png", "/page", "/landing"}
    assert set(home.headers("Authorization")) == {"Bearer SECRET"}
    assert set(home.headers("X-Token")) == {"t0k"}
    assert all("session=abc" in (cookie or "") for cookie in home.headers("Cookie"))
    # Not to the CDN's requisite, link or redirect target; and the CDN's cookies stay with it.
    assert set(cdn.headers("Authorization")) == {None}
    assert set(cdn.headers("X-Token")) == {None}
    assert "session=abc" not in "".join(cookie or "" for cookie in cdn.headers("Cookie"))
    assert not any("cdn=" in (c or "") or "planted=" in (c or "") for c in home.headers("Cookie"))


async def test_credentials_hosts_widen_who_gets_them(two_hosts, site, run_crawl):
    home, cdn = two_hosts
    await run_crawl(
        name_url(site, "site.test"),
        resolve=RESOLVE,
        headers=(("X-Token", "t0k"),),
        credentials_hosts=(f"cdn.test:{cdn.site.server.port}",),
    )
    assert set(cdn.headers("X-Token")) == {"t0k"}


@pytest.fixture
async def guarded(site, other_site):
    """site.test asks for alice's password (Basic) on every page; cdn.test asks nothing."""
    home, cdn = Recorder(site), Recorder(other_site)

    async def guard(request: web.Request) -> web.Response:
        home.seen.append((request.path, dict(request.headers)))
        if request.headers.get("Authorization") != BASIC:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="site"'}, text="no")
        links = f'<img src="{name_url(other_site, "cdn.test", "/logo.png")}"><a href="/private">p</a>'
        return web.Response(text=f"<title>inside {request.path}</title>{links}", content_type="text/html")

    site.handler("/", guard)
    site.handler("/private", guard)
    cdn.serve("/logo.png", "png")
    await site.start()
    await other_site.start()
    return home, cdn


def everything_written(root: Path) -> bytes:
    """Every byte of the snapshot, WARC records inflated."""
    data = b""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            raw = path.read_bytes()
            data += gzip.decompress(raw) if path.name.endswith(".gz") else raw
    return data


@pytest.mark.parametrize("how", ["user:password@ in the seed", "--http-user and --http-password"])
async def test_http_authentication_goes_to_its_host_and_is_never_written(how, guarded, site, run_crawl):
    home, cdn = guarded
    if how.startswith("user"):
        seeds, options = (f"http://alice:{SECRET}@site.test:{site.server.port}/",), {}
    else:
        seeds, options = (name_url(site, "site.test"),), {"http_user": "alice", "http_password": SECRET}
    result = await run_crawl(*seeds, resolve=RESOLVE, **options)
    root = result.snapshot.root
    rows = manifest_rows(root)
    assert rows[name_url(site, "site.test", "/private")].outcome == "fetched"
    assert set(home.headers("Authorization")) == {BASIC}
    assert cdn.seen and set(cdn.headers("Authorization")) == {None}
    build_mirror(root)
    written = everything_written(root)
    assert SECRET.encode() not in written
    assert BASIC.split()[1].encode() not in written
    assert b"Authorization: Basic [withheld]" in written  # the request record says auth was sent
    settings = result.snapshot.read_crawl_json()["settings"]
    assert "http_password" not in settings


async def test_a_refused_password_is_a_failure_with_its_status(guarded, site, run_crawl):
    result = await run_crawl(f"http://alice:wrong@site.test:{site.server.port}/", resolve=RESOLVE)
    row = manifest_rows(result.snapshot.root)[name_url(site, "site.test")]
    assert (row.outcome, row.status) == ("failed", 401)
    assert row.reason == "HTTP 401: authentication required (the credentials sent were refused)"


async def test_a_401_without_credentials_is_not_a_success(guarded, site, run_crawl):
    result = await run_crawl(name_url(site, "site.test"), resolve=RESOLVE)
    row = manifest_rows(result.snapshot.root)[name_url(site, "site.test")]
    assert (row.outcome, row.status) == ("failed", 401) and "--http-user" in row.reason


async def test_a_resumed_crawl_asks_for_the_password_again(site, run_crawl, tmp_path):
    """crawl.json keeps the user, not the password: a resume needs it given again."""
    reached_private = asyncio.Event()
    hold = {"private": True}
    authorized: list[str | None] = []

    async def guard(request: web.Request) -> web.Response:
        authorized.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != BASIC:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="site"'})
        if request.path == "/private" and hold["private"]:
            reached_private.set()
            await asyncio.sleep(60)  # the crawl is interrupted meanwhile
        return web.Response(text='<a href="/private">p</a>', content_type="text/html")

    site.handler("/", guard)
    site.handler("/private", guard)
    await site.start()
    seed = f"http://alice:{SECRET}@site.test:{site.server.port}/"
    crawling = asyncio.create_task(run_crawl(seed, resolve=RESOLVE))
    await asyncio.wait_for(reached_private.wait(), 30)
    crawling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await crawling
    hold["private"] = False
    settings = Snapshot(tmp_path / "snap").read_crawl_json()["settings"]
    assert settings["seeds"] == [f"http://alice@site.test:{site.server.port}/"]
    with pytest.raises(ConfigError, match="ARCHIVER_HTTP_PASSWORD"):
        CrawlConfig.from_json(settings)
    config = CrawlConfig.from_json(settings, http_password=SECRET)
    resumed = await run_crawl(*config.seeds, resume=True, resolve=RESOLVE, http_password=SECRET)
    row = manifest_rows(resumed.snapshot.root)[name_url(site, "site.test", "/private")]
    assert row.outcome == "fetched"
    assert set(authorized) == {BASIC}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"http_user": "alice"}, "--http-user needs a password"),
        ({"http_password": "pw"}, "--http-password needs --http-user"),
        ({"seeds": ("http://alice@h/",)}, "names the user 'alice' but no password"),
    ],
)
def test_credentials_that_cannot_be_sent_are_refused(options, message, tmp_path):
    options = {"seeds": ("http://h/",), **options}
    with pytest.raises(ConfigError, match=message):
        CrawlConfig(output=tmp_path, **options)


def test_the_command_line_takes_the_password_from_the_environment(tmp_path, capsys, monkeypatch):
    from archiver.cli import main

    monkeypatch.delenv("ARCHIVER_HTTP_PASSWORD", raising=False)
    seed = "http://127.0.0.1:9/"  # nothing listens: the crawl fails fast once it starts
    assert main(["crawl", seed, "-o", str(tmp_path / "a"), "--http-user", "alice", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "ARCHIVER_HTTP_PASSWORD" in error
    monkeypatch.setenv("ARCHIVER_HTTP_PASSWORD", SECRET)
    main(["crawl", seed, "-o", str(tmp_path / "b"), "--http-user", "alice", "--quiet", "--max-tries", "1"])
    assert "could not fetch" in capsys.readouterr().err  # it crawled: the password was taken
    settings = Snapshot(tmp_path / "b").read_crawl_json()["settings"]
    assert settings["http_user"] == "alice" and SECRET not in str(settings)
    # Set for other tools, it is not taken when no user asks for it.
    main(["crawl", seed, "-o", str(tmp_path / "c"), "--quiet", "--max-tries", "1", "--retry-on", "500,503"])
    settings = Snapshot(tmp_path / "c").read_crawl_json()["settings"]
    assert settings["http_user"] is None and settings["retry_on"] == [500, 503]


async def test_a_401_from_a_host_credentials_do_not_go_to_says_how_to_send_them(site, other_site, run_crawl):
    async def guard(request: web.Request) -> web.Response:
        return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="cdn"'})

    other_site.handler("/", guard)
    await other_site.start()
    site.page("/", links=[other_site.url("/")])
    await site.start()
    result = await run_crawl(site.url("/"), scope="any", http_user="alice", http_password=SECRET)
    row = manifest_rows(result.snapshot.root)[other_site.url("/")]
    assert (row.outcome, row.status) == ("failed", 401) and "--credentials-host" in row.reason


async def test_a_cookie_set_for_a_public_suffix_never_reaches_the_seed(site, other_site, run_crawl):
    """evil.github.io sets a cookie for all of github.io: a browser refuses it, and so do we."""
    names = (("alice.github.io", "127.0.0.1"), ("evil.github.io", "127.0.0.1"))
    cookies_at_seed: dict[str, str | None] = {}

    async def tosser(request: web.Request) -> web.Response:
        response = web.Response(body=b"png", content_type="image/png")
        response.headers.add("Set-Cookie", "tossed=1; Domain=github.io; Path=/")
        response.headers.add("Set-Cookie", "own=1; Domain=evil.github.io; Path=/")
        return response

    async def page(request: web.Request) -> web.Response:
        cookies_at_seed[request.path] = request.headers.get("Cookie")
        logo = name_url(other_site, "evil.github.io", "/logo.png")
        return web.Response(text=f'<img src="{logo}"><a href="/a">a</a>', content_type="text/html")

    other_site.handler("/logo.png", tosser)
    site.handler("/", page)
    site.handler("/a", page)
    await other_site.start()
    await site.start()
    result = await run_crawl(name_url(site, "alice.github.io"), resolve=names, concurrency=1)
    rows = manifest_rows(result.snapshot.root)
    assert rows[name_url(site, "alice.github.io", "/a")].outcome == "fetched"
    assert other_site.hits["/logo.png"] == 1 and site.hits["/a"] == 1
    assert "tossed" not in (cookies_at_seed["/a"] or "")


async def test_credential_headers_are_not_kept_and_index_html_shows_no_values(two_hosts, site, run_crawl):
    result = await run_crawl(
        name_url(site, "site.test"),
        resolve=RESOLVE,
        headers=(("Authorization", "Bearer SECRET"), ("X-Token", "t0k")),
        cookies=(("session", "abc"),),
    )
    root = result.snapshot.root
    build_mirror(root)
    index = (root / "index.html").read_text()
    assert "SECRET" not in index and "t0k" not in index and "abc" not in index
    assert "X-Token" in index  # the names are shown, not the values
    settings = result.snapshot.read_crawl_json()["settings"]
    assert settings["headers"] == [["Authorization", "[withheld]"], ["X-Token", "t0k"]]
    assert b"SECRET" not in everything_written(root)
    with pytest.raises(ConfigError, match="Authorization header, which crawl.json does not keep"):
        CrawlConfig.from_json(settings)
    again = (("Authorization", "Bearer SECRET"), ("X-Token", "t0k"))
    assert CrawlConfig.from_json(settings, headers=again).headers == again


async def test_a_cookie_header_given_is_withheld_from_the_request_records(site, run_crawl):
    """A Cookie header given with --header was kept out of crawl.json but written in each WARC
    request record (and so the WACZ), as sent. Its cookies keep their names alone there, as the
    README says; --cookie values and the cookies servers set stay in the records as sent."""
    sent: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        sent.append(request.headers.get("Cookie", ""))
        response = web.Response(text="<a href='/b'>b</a>", content_type="text/html")
        response.set_cookie("srv", "1")
        return response

    site.handler("/", handler)
    site.handler("/b", handler)
    await site.start()
    result = await run_crawl(
        site.url("/"), headers=(("Cookie", "hc=HEADERSECRET; hd=2"),), cookies=(("session", "abc"),)
    )
    assert sent and all("hc=HEADERSECRET; hd=2" in cookie for cookie in sent)
    written = everything_written(result.snapshot.root)
    assert b"HEADERSECRET" not in written
    assert b"Cookie: hc=[withheld]; hd=[withheld]; session=abc; srv=1" in written


async def test_http_authentication_goes_with_credentialed_requests_alone(site, other_site, run_crawl):
    """A CORS-mode request whose credentials mode sends none (a crossorigin image of another
    origin, a web app manifest) goes without the Authorization a --credentials-host gets, as
    Chromium sends it; one with crossorigin=use-credentials, or a no-cors image, goes with it."""
    cdn = Recorder(other_site)
    for path in ("/plain.png", "/anonymous.png", "/credentialed.png", "/app.json"):
        cdn.serve(path, "x")
    await other_site.start()
    at_cdn = name_url(other_site, "cdn.test")[:-1]
    site.page(
        "/",
        body=f'<img src="{at_cdn}/plain.png"><img crossorigin src="{at_cdn}/anonymous.png">'
        f'<img crossorigin=use-credentials src="{at_cdn}/credentialed.png">'
        f'<link rel=manifest href="{at_cdn}/app.json">',
    )
    await site.start()
    await run_crawl(
        name_url(site, "site.test"),
        resolve=RESOLVE,
        http_user="alice",
        http_password=SECRET,
        credentials_hosts=(f"cdn.test:{other_site.server.port}",),
    )
    sent = {path: headers.get("Authorization") for path, headers in cdn.seen}
    assert sent == {
        "/plain.png": BASIC,
        "/anonymous.png": None,
        "/credentialed.png": BASIC,
        "/app.json": None,
    }


async def test_a_cookie_given_for_a_host_goes_to_its_every_port(site, other_site, run_crawl):
    """As in a browser (RFC 6265), a cookie is for a host name: a --cookie given for the seed's
    host goes to another port of it, which an --header value does not reach."""
    other = Recorder(other_site)
    other.serve("/logo.png", "png")
    await other_site.start()
    site.page("/", body=f'<img src="{name_url(other_site, "site.test", "/logo.png")}">')
    await site.start()
    await run_crawl(
        name_url(site, "site.test"),
        resolve=RESOLVE,
        cookies=(("session", "abc"),),
        headers=(("X-Token", "t"),),
    )
    assert [(path, headers.get("Cookie"), headers.get("X-Token")) for path, headers in other.seen] == [
        ("/logo.png", "session=abc", None)
    ]
