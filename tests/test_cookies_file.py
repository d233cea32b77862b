"""A --cookies-file (Netscape format) is read as curl and wget read it: each line's cookie goes
to its path, until its expiry, with its Secure and HttpOnly flags, and a rendered page's
scripts see no HttpOnly one, as in Chromium."""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

from aiohttp import web
from test_browser import CHROMIUM
from yarl import URL

from archiver.config import CrawlConfig
from archiver.crawling.given_cookies import load_cookies
from archiver.crawling.saved_cookies import saved_cookies


def _jar(tmp_path, *lines: str):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n" + "".join(line + "\n" for line in lines))
    config = CrawlConfig(seeds=("http://site.test/",), output=tmp_path / "o", cookies_file=str(cookies))
    return load_cookies(config, ())


async def test_a_cookies_file_line_goes_to_its_path_until_it_expires(tmp_path):
    """Each line's path and expiry were ignored: a cookie for /private went to /, an expired one
    was sent, and every one was kept as a session cookie. As curl and wget read the file, a
    cookie goes to its path and those under it, an expired one is neither sent nor kept, and
    one that expires keeps its expiry (a resumed crawl lets it expire in time)."""
    later = int(time.time()) + 3600
    jar = _jar(
        tmp_path,
        "site.test\tFALSE\t/private\tFALSE\t0\tpathc\t1",
        "site.test\tFALSE\t/\tFALSE\t1000000000\texpired\t1",
        f"site.test\tFALSE\t/\tFALSE\t{later}\tlater\t1",
        "site.test\tFALSE\t/\tFALSE\t0\tsession\t1",
    )
    assert set(jar.filter_cookies(URL("http://site.test/"))) == {"later", "session"}
    assert set(jar.filter_cookies(URL("http://site.test/privatex"))) == {"later", "session"}
    assert set(jar.filter_cookies(URL("http://site.test/private/x"))) == {"pathc", "later", "session"}
    saved = {cookie["name"]: cookie for cookie in json.loads(saved_cookies(jar))}
    assert set(saved) == {"pathc", "later", "session"}
    assert saved["pathc"]["path"] == "/private"
    assert saved["session"]["expires"] == -1
    assert abs(saved["later"]["expires"] - later) <= 2


async def test_a_host_prefixed_cookie_of_a_cookies_file_is_kept(tmp_path):
    """A valid __Host- line (its host alone, path /, secure) was dropped: no path was set, so
    the prefix's rule (Path=/) refused it. It is kept and sent over https, as Chromium sends it."""
    jar = _jar(
        tmp_path,
        "site.test\tFALSE\t/\tTRUE\t0\t__Host-sid\t1",
        "site.test\tFALSE\t/\tTRUE\t0\t__Secure-sid\t1",
        ".site.test\tTRUE\t/\tTRUE\t0\t__Host-wide\t1",  # for its subdomains: not a __Host- cookie
    )
    assert set(jar.filter_cookies(URL("https://site.test/a"))) == {"__Host-sid", "__Secure-sid"}


async def test_an_httponly_line_of_a_cookies_file_is_hidden_from_a_pages_scripts(site, run_crawl, tmp_path):
    """A #HttpOnly_ line lost its flag: with --browser a page's script read the cookie through
    document.cookie (and could send it anywhere). The browser holds it HttpOnly, as Chromium
    holds such a cookie: the page's requests send it, its scripts never see it."""
    seen: dict[str, dict[str, str]] = {}
    read: list[str] = []

    async def home(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.cookies)
        script = "new Image().src = '/seen?c=' + encodeURIComponent(document.cookie);"
        return web.Response(text=f"<p>page</p><script>{script}</script>", content_type="text/html")

    async def noted(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.cookies)
        read.extend(parse_qs(request.query_string, keep_blank_values=True).get("c", []))
        return web.Response(body=b"GIF89a", content_type="image/gif")

    site.handler("/", home)
    site.handler("/seen", noted)
    await site.start()
    host = URL(site.url("/")).host
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(
        "# Netscape HTTP Cookie File\n"
        f"#HttpOnly_{host}\tFALSE\t/\tFALSE\t0\tsecret\ts1\n"
        f"{host}\tFALSE\t/\tFALSE\t0\tplain\tp1\n"
    )
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, cookies_file=str(cookies))
    assert result.stats.rendered == 1
    assert seen["/"] == {"secret": "s1", "plain": "p1"}
    assert seen["/seen"] == {"secret": "s1", "plain": "p1"}
    assert read == ["plain=p1"]
