"""The crawl's cookies go where, and as, a browser sends them: the values it was given or set,
a cookies.txt file, prefixed, Secure and SameSite cookies, those a browser sent."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from archiver.crawling.kept_state import COOKIES
from archiver.errors import ConfigError
from archiver.store.manifest import Manifest


async def test_a_cookie_goes_to_a_url_with_an_empty_query_as_a_browser_sends_it(site, run_crawl):
    """``/p?`` is requested as written, and its path is still /p: a cookie set for Path=/p goes
    to it (RFC 6265, 5.1.4 matches the path alone), as a browser sends it."""
    seen: dict[str, dict[str, str]] = {}

    async def setting(request: web.Request) -> web.Response:
        links = "".join(f"<a href='{path}'>{path}</a>" for path in ("/p?", "/p", "/px", "/dir/q?"))
        response = web.Response(text=links, content_type="text/html")
        response.set_cookie("p_only", "1", path="/p")
        response.set_cookie("dir_q", "1", path="/dir/q")
        response.set_cookie("everywhere", "1", path="/")
        return response

    async def checking(request: web.Request) -> web.Response:
        seen[request.raw_path] = dict(request.cookies)
        return web.Response(text="<title>checked</title>", content_type="text/html")

    site.handler("/", setting)
    for path in ("/p", "/px", "/dir/q"):
        site.handler(path, checking)
    await site.start()
    await run_crawl(site.url("/"), concurrency=1)
    assert seen == {
        "/p?": {"p_only": "1", "everywhere": "1"},
        "/p": {"p_only": "1", "everywhere": "1"},
        "/px": {"everywhere": "1"},
        "/dir/q?": {"dir_q": "1", "everywhere": "1"},
    }


async def test_cookies_a_browser_sent_go_where_a_browser_sends_them():
    """Cookies a rendered page's browser held (Playwright's form) join the jar with their
    domain, path, Secure flag and expiry: a host-only cookie stays on its host, a domain
    cookie reaches its subdomains, a Secure one goes over https alone, an expired one goes."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.adopt(
        [
            {"name": "host", "value": "1", "domain": "site.test", "path": "/", "expires": -1},
            {"name": "dom", "value": "2", "domain": ".site.test", "path": "/api", "expires": -1},
            {"name": "sec", "value": "1", "domain": "site.test", "path": "/", "secure": True},
            {"name": "old", "value": "1", "domain": "site.test", "path": "/", "expires": 1.0},
            {"name": "bad name", "value": "1", "domain": "site.test", "path": "/"},
        ]
    )

    def sent(url: str) -> dict[str, str]:
        return {name: morsel.coded_value for name, morsel in jar.filter_cookies(URL(url)).items()}

    assert sent("http://site.test/api/x") == {"host": "1", "dom": "2"}
    assert sent("https://site.test/") == {"host": "1", "sec": "1"}
    assert sent("http://www.site.test/api") == {"dom": "2"}
    assert sent("http://other.test/api") == {}


async def test_cookies_go_back_as_a_browser_sends_them(site, run_crawl, tmp_path):
    """A cookie a browser refuses is not kept (a Secure one set over http, a __Secure- or
    __Host- name whose rules are broken), and one kept goes back as it was set: the jar kept
    them all, quoted a value holding a comma (``a,b`` went back as ``"a\\054b"``), and sent a
    cookies.txt line marked secure over http (site.test: 127.0.0.1 is a secure origin)."""
    sent: dict[str, list[str]] = {}

    async def setting(request: web.Request) -> web.Response:
        response = web.Response(text="<a href='/b'>b</a>", content_type="text/html")
        for value in (
            "sec=1; Secure; Path=/",
            "__Secure-a=1; Path=/",
            "__Host-b=1; Path=/",
            "plain=a,b; Path=/",
            'quoted="q"; Path=/',
        ):
            response.headers.add("Set-Cookie", value)
        return response

    async def checking(request: web.Request) -> web.Response:
        sent[request.path] = sorted(request.headers.get("Cookie", "").split("; "))
        return web.Response(text="<title>b</title>", content_type="text/html")

    site.handler("/", setting)
    site.handler("/b", checking)
    await site.start()
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        "site.test\tFALSE\t/\tTRUE\t0\tsecret\tx\n"
        "site.test\tFALSE\t/\tFALSE\t0\tfromfile\ta,b\n"
    )
    await run_crawl(
        f"http://site.test:{site.server.port}/",
        cookies_file=str(cookies),
        concurrency=1,
        resolve=(("site.test", "127.0.0.1"),),
    )
    assert sent["/b"] == ["fromfile=a,b", "plain=a,b", 'quoted="q"']


@pytest.mark.parametrize(
    ("header", "kept"),
    [
        ("__Host-ok=1; Secure; Path=/", True),
        ("__host-lower=1; Path=/", False),  # the prefix in any case
        ("__Host-p=1; Secure; Path=/x", False),
        ("__Host-d=1; Secure; Path=/; Domain=site.test", False),
        ("__Host-n=1; Secure", False),  # no Path: not /
        ("__Secure-ok=1; Secure", True),
        ("__Secure-no=1", False),
        ("sec=1; Secure", True),
    ],
)
async def test_prefixed_cookies_follow_their_rules(header, kept):
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers([header], URL("https://site.test/x/y"))
    name = header.partition("=")[0]
    assert (name in jar.filter_cookies(URL("https://site.test/x/z"))) == kept


@pytest.mark.parametrize(
    "header",
    [
        "dup=1; Domain=evil.github.io; Domain=github.io; Path=/",
        'quoted=1; Domain="github.io"; Path=/',
        "single=1; Domain=.GitHub.io; Path=/",
    ],
)
async def test_a_cookie_for_a_public_suffix_is_refused_however_its_domain_is_written(header):
    """A Domain given twice was judged by the first and stored by the last, and a quoted one
    judged with its quotes and stored without: evil.github.io set cookies that went to every
    other github.io site. The last Domain is the one judged and kept (RFC 6265bis, 5.6), and
    a public suffix is refused, as Chromium refuses it."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers([header], URL("http://evil.github.io/"))
    assert not jar.filter_cookies(URL("http://victim.github.io/"))
    assert not jar.filter_cookies(URL("http://evil.github.io/"))


async def test_a_public_suffix_naming_itself_sets_a_cookie_for_itself_alone():
    """A host that is a public suffix (localhost, github.io) setting Domain=<itself> set a
    cookie the crawl sent to every host under it. It is kept for that host alone (RFC 6265bis,
    5.7, step 6), as Chromium keeps it; the last of two Domains decides there too."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers(["apex=1; Domain=github.io; Path=/"], URL("http://github.io/"))
    jar.update_cookies_from_headers(["own=1; Domain=.localhost; Path=/"], URL("http://localhost:8080/"))
    jar.update_cookies_from_headers(
        ["last=1; Domain=github.io; Domain=evil.github.io; Path=/"], URL("http://evil.github.io/")
    )
    assert set(jar.filter_cookies(URL("http://github.io/"))) == {"apex"}
    assert set(jar.filter_cookies(URL("http://localhost:9/"))) == {"own"}
    assert set(jar.filter_cookies(URL("http://a.evil.github.io/"))) == {"last"}
    assert not jar.filter_cookies(URL("http://victim.github.io/"))
    assert not jar.filter_cookies(URL("http://victim.localhost/"))
    assert [cookie["domain"] for cookie in jar.for_browser()][:2] == ["github.io", "localhost"]


async def test_a_cookies_file_line_keeps_its_domain_and_secure_flag(tmp_path):
    """A line marked for subdomains reaches them (it reached its host alone), one marked
    secure goes over https alone, and a name no cookie may have is a one-line error."""
    from yarl import URL

    from archiver.config import CrawlConfig
    from archiver.crawling.given_cookies import load_cookies

    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        ".site.test\tTRUE\t/\tFALSE\t0\twide\t1\n"
        "site.test\tFALSE\t/\tTRUE\t0\tsafe\t1\n"
    )
    config = CrawlConfig(seeds=("http://site.test/",), output=tmp_path / "o", cookies_file=str(cookies))
    jar = load_cookies(config, ())
    assert set(jar.filter_cookies(URL("http://www.site.test/"))) == {"wide"}
    assert set(jar.filter_cookies(URL("http://site.test/"))) == {"wide"}
    assert set(jar.filter_cookies(URL("https://site.test/"))) == {"wide", "safe"}
    cookies.write_text("# Netscape HTTP Cookie File\nsite.test\tFALSE\t/\tFALSE\t0\ta b\t1\n")
    with pytest.raises(ConfigError, match="bad cookie name 'a b'"):
        load_cookies(config, ())


async def test_the_jar_gives_a_browser_its_cookies_as_they_were_set():
    """A rendered page's browser gets the crawl's cookies, each for the hosts the jar sends it
    to: a host-only one for its host, one set with a Domain for its subdomains too."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers(
        ["own=a,b; Path=/", "wide=1; Domain=site.test; Path=/app; HttpOnly", "safe=1; Secure"],
        URL("https://www.site.test/"),
    )
    given = {cookie["name"]: cookie for cookie in jar.for_browser()}
    assert given["own"] == {
        "name": "own",
        "value": "a,b",
        "domain": "www.site.test",
        "path": "/",
        "secure": False,
        "httpOnly": False,
        "sameSite": "Lax",  # none said: Lax, as Chromium takes it
    }
    assert (given["wide"]["domain"], given["wide"]["path"], given["wide"]["httpOnly"]) == (
        ".site.test",
        "/app",
        True,
    )
    assert given["safe"]["secure"] is True


async def test_samesite_cookies_go_only_where_a_browser_sends_them(site, other_site, run_crawl):
    """A request another site's page makes sends no SameSite=Strict cookie, and a Lax one (a
    cookie without SameSite is Lax) only if it follows a link, not for an image the page shows;
    the answer to such an image sets no Lax cookie, and SameSite=None needs Secure. The crawl
    sent every cookie the jar held for the URL, whoever asked."""
    seen: dict[str, dict[str, str]] = {}

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>cdn</title>", content_type="text/html")
        for value in ("strict=1; SameSite=Strict", "lax=1; SameSite=Lax", "plain=1", "none=1; SameSite=None"):
            response.headers.add("Set-Cookie", value + "; Path=/")
        return response

    async def noted(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.cookies)
        response = web.Response(text="<title>x</title>", content_type="text/html")
        if request.path == "/img.png":
            response.headers.add("Set-Cookie", "fromimg=1; Path=/")  # Lax: refused there
        return response

    other_site.handler("/setup", setup)
    for path in ("/img.png", "/page", "/same"):
        other_site.handler(path, noted)
    await other_site.start()
    cdn = f"http://cdn.test:{other_site.server.port}"
    site.page("/", links=[f"{cdn}/page"], body=f'<img src="{cdn}/img.png">')
    await site.start()
    other_site.page("/", links=["/same"])
    home = f"http://site.test:{site.server.port}/"
    resolve = (("site.test", "127.0.0.1"), ("cdn.test", "127.0.0.1"))
    await run_crawl(f"{cdn}/setup", home, f"{cdn}/", resolve=resolve, concurrency=1, scope="host")
    assert seen["/img.png"] == {}  # an image site.test shows: cross-site, not a navigation
    assert seen["/page"] == {"lax": "1", "plain": "1"}  # a link from site.test: Lax ones go
    assert seen["/same"] == {"strict": "1", "lax": "1", "plain": "1"}  # cdn.test's own link


async def test_secure_cookies_go_to_loopback_over_http_as_chromium_sends_them(site, run_crawl):
    """http://127.0.0.1 and http://localhost are potentially trustworthy origins: Chromium keeps a
    Secure cookie they set over http and sends it back to them; the jar refused it there. Secure
    still means https for any other host."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    seen: dict[str, dict[str, str]] = {}

    async def setting(request: web.Request) -> web.Response:
        response = web.Response(text="<a href='/b'>b</a>", content_type="text/html")
        response.headers.add("Set-Cookie", "sec=1; Secure; Path=/")
        response.headers.add("Set-Cookie", "__Host-id=2; Secure; Path=/")
        return response

    async def checking(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.cookies)
        return web.Response(text="<title>b</title>", content_type="text/html")

    site.handler("/", setting)
    site.handler("/b", checking)
    await site.start()
    await run_crawl(site.url("/"))
    assert seen["/b"] == {"sec": "1", "__Host-id": "2"}

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies_from_headers(["s=1; Secure; Path=/"], URL("http://site.test/"))
    jar.update_cookies_from_headers(["l=1; Secure; Path=/"], URL("http://localhost:8080/"))
    jar.update_cookies_from_headers(["t=1; Secure; Path=/"], URL("https://site.test/"))
    assert set(jar.filter_cookies(URL("http://site.test/"))) == set()
    assert set(jar.filter_cookies(URL("https://site.test/"))) == {"t"}
    assert set(jar.filter_cookies(URL("http://localhost:9/"))) == {"l"}


async def test_a_server_setting_cookies_without_end_fills_no_more_than_a_browser_keeps(site, run_crawl):
    """A hostile site set 60 new cookies on each of its pages: the jar kept them all, for the
    whole crawl (written into the manifest with each batch, sent with each request). It keeps what
    Chromium keeps, 180 cookies a domain at most (aiohttp's jar, whose limits archiver requires)."""
    pages = 12

    def setting(n: int):
        async def handler(request: web.Request) -> web.Response:
            response = web.Response(text=f"<title>c{n}</title>", content_type="text/html")
            for k in range(60):
                response.set_cookie(f"c{n}_{k}", "v" * 50, path="/kept/")  # kept, never sent
            return response

        return handler

    site.page("/", links=[f"/c{n}" for n in range(pages)])
    for n in range(pages):
        site.handler(f"/c{n}", setting(n))
    await site.start()
    result = await run_crawl(site.url("/"), sitemaps=False, concurrency=1)
    assert result.stats.fetched == pages + 1
    with Manifest.open(result.snapshot.root / "manifest.sqlite3", readonly=True) as manifest:
        kept = json.loads(manifest.state(COOKIES) or "[]")
    assert 60 < len(kept) <= 180, len(kept)
    assert any(cookie["name"].startswith(f"c{pages - 1}_") for cookie in kept)  # the newest page's


async def test_many_hosts_of_one_site_never_evict_another_sites_cookies():
    """aiohttp limits the cookies of each host apart: twenty hosts of one site, each setting 200,
    filled the jar to its total limit, which then evicted the cookies used least lately, the
    user's session of another site among them. As in Chromium, a site (registrable domain) holds
    180 at most, its own oldest evicted; and many sites filling the jar evict the oldest of the
    site holding the most, never a site's only cookie."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar

    jar = SiteCookieJar(unsafe=True)
    jar.update_cookies({"sid": "1"}, URL("http://site.test/"))
    for host in range(20):
        for batch in range(4):
            headers = [f"e{batch}_{k}=1; Path=/" for k in range(50)]
            jar.update_cookies_from_headers(headers, URL(f"http://s{host}.evil.test/"))
    assert set(jar.filter_cookies(URL("http://site.test/"))) == {"sid"}
    assert 150 <= sum(domain.endswith("evil.test") for domain, _path, _name in jar.created) <= 180
    newest = set(jar.filter_cookies(URL("http://s19.evil.test/")))
    assert {f"e3_{k}" for k in range(50)} <= newest  # the site's oldest went, not its newest
    for site in range(25):  # 25 sites of 150 cookies: more than the jar holds in all
        for batch in range(3):
            headers = [f"c{batch}_{k}=1; Path=/" for k in range(50)]
            jar.update_cookies_from_headers(headers, URL(f"http://www.site{site}.test/"))
    assert len(jar) < 3300
    assert set(jar.filter_cookies(URL("http://site.test/"))) == {"sid"}
