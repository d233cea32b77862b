"""The private parts of aiohttp the crawl still relies on, where no public API does the job,
each checked against a real server so that an aiohttp release that changes one fails here,
by name, instead of quietly changing what the crawl does:

- the connection pool makes each connection's protocol with ``TCPConnector._factory`` and
  hands a connection back through ``TCPConnector._release`` (connections.py watches both: bytes
  that come unasked on an idle connection are dropped, a reused connection is told apart);
  the protocol parses answers with its ``_parser``, which answer_parser.py wraps;
- the cookie jar keeps each cookie's expiry in ``CookieJar._expirations`` (saved_cookies.py
  saves it, so a resumed crawl and the other nodes of a shared crawl let it expire in time).

The jar also reads Set-Cookie fields through ``AbstractCookieJar.update_cookies_from_headers``,
public, which hands update_cookies() the cookies aiohttp's parser read (cookies.py).
"""

from __future__ import annotations

import inspect
import json
import time
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from archiver.crawling.answer_parser import AnswerParser
from archiver.crawling.connections import WatchedConnector, WatchedHandler, connection_use
from archiver.crawling.cookies import SiteCookieJar
from archiver.crawling.saved_cookies import saved_cookies


async def _hello(_request: web.Request) -> web.Response:
    return web.Response(text="hello", headers={"Set-Cookie": "sid=1; Max-Age=600; Path=/"})


async def test_the_pool_makes_watched_connections_and_hands_them_back_through_its_release(aiohttp_server):
    app = web.Application()
    app.router.add_get("/", _hello)
    server = await aiohttp_server(app)
    assert list(inspect.signature(aiohttp.TCPConnector._release).parameters) == [
        "self",
        "key",
        "protocol",
        "should_close",
    ]
    async with aiohttp.ClientSession(connector=WatchedConnector()) as session:
        for reused in (False, True):
            with connection_use() as use:
                async with session.get(server.make_url("/")) as response:
                    assert await response.text() == "hello"
                    protocol = use.protocol
                    assert isinstance(protocol, WatchedHandler)  # made by _factory
                    assert isinstance(protocol._parser, AnswerParser)
            assert use.reused is reused
            assert protocol.idle  # handed back through _release, which marks it idle
            assert protocol.released == 1 + reused


async def _answered_into(jar: SiteCookieJar, handler: Any, aiohttp_server: Any) -> URL:
    """GET / of a server answering with ``handler``, its cookies kept in ``jar``; the URL asked."""
    app = web.Application()
    app.router.add_get("/", handler)
    server = await aiohttp_server(app)
    async with (
        aiohttp.ClientSession(cookie_jar=jar) as session,
        session.get(server.make_url("/")) as response,
    ):
        await response.read()
    return URL(str(server.make_url("/")))


async def test_saved_cookies_keep_the_expiry_the_jar_holds(aiohttp_server):
    jar = SiteCookieJar(unsafe=True)
    url = await _answered_into(jar, _hello, aiohttp_server)
    assert jar.filter_cookies(url)["sid"].value == "1"
    (saved,) = json.loads(saved_cookies(jar))
    assert saved["name"] == "sid"
    assert 590 < saved["expires"] - time.time() <= 600


async def test_the_jar_is_handed_the_cookies_aiohttps_parser_read(aiohttp_server):
    async def setting(_request: web.Request) -> web.Response:
        response = web.Response(text="hello")
        response.headers.add("Set-Cookie", "a=1; Domain=nowhere.test; Domain=127.0.0.1; Path=/")
        return response

    given = []

    class Seeing(SiteCookieJar):
        def update_cookies(self, cookies, response_url):
            given.extend(cookies)
            super().update_cookies(cookies, response_url)

    jar = Seeing(unsafe=True)
    url = await _answered_into(jar, setting, aiohttp_server)
    assert jar.filter_cookies(url)["a"].value == "1"
    assert [(name, morsel["domain"]) for name, morsel in given] == [("a", "127.0.0.1")]
