"""The crawl's cookie jar as JSON: what a resumed crawl takes back (crawling/kept_state.py), what
the nodes of a shared crawl exchange through Redis (crawling/redis_cookies.py) and what their
parts join into when merged (crawling/merge.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from archiver.crawling.cookies import SiteCookieJar


def saved_cookies(jar: SiteCookieJar) -> str:
    """The cookies ``jar`` holds, as JSON a resumed crawl's jar adopts (SiteCookieJar.adopt):
    for_browser()'s with each one's expiry (seconds since the epoch, -1 for the session) and
    creation time (which orders the cookies it sends).

    >>> import asyncio
    >>> from yarl import URL
    >>> async def demo():
    ...     jar, again = SiteCookieJar(unsafe=True), SiteCookieJar(unsafe=True)
    ...     jar.update_cookies({"sid": "1"}, URL("http://h/"))
    ...     again.adopt(json.loads(saved_cookies(jar)))
    ...     return again.filter_cookies(URL("http://h/p"))["sid"].value
    >>> asyncio.run(demo())
    '1'
    """
    expiries = jar._expirations  # aiohttp keeps no public view of them
    kept = []
    for cookie in jar.for_browser():
        domain = str(cookie["domain"]).lstrip(".")
        path = str(cookie["path"]).rstrip("/")
        key = (domain, path, str(cookie["name"]))
        kept.append({**cookie, "expires": expiries.get(key, -1), "created": jar.created.get(key, 0)})
    return json.dumps(kept, separators=(",", ":"))


def joined_cookies(saved: Iterable[str]) -> str:
    """One jar of several saved_cookies() (the jars of a shared crawl's nodes), the later of
    them winning for a cookie of the same name, domain and path; one that cannot be read is
    left out.

    >>> def jar(*pairs):
    ...     return json.dumps([{"name": n, "value": v, "domain": "h", "path": "/"} for n, v in pairs])
    >>> joined = joined_cookies([jar(("sid", "1")), jar(("sid", "2"), ("b", "3"))])
    >>> [(c["name"], c["value"]) for c in json.loads(joined)]
    [('sid', '2'), ('b', '3')]
    """
    joined: dict[tuple[str, str, str], Any] = {}
    for text in saved:
        try:
            cookies = json.loads(text)
            for cookie in cookies:
                joined[(str(cookie["name"]), str(cookie["domain"]), str(cookie["path"]))] = cookie
        except (ValueError, TypeError, KeyError):  # a part damaged: its cookies are no guide
            continue
    return json.dumps(list(joined.values()), separators=(",", ":"))
