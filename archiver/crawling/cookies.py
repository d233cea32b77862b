"""The crawl's cookie jar: --cookie values for the hosts credentials go to, a cookies.txt
file, and what servers set, kept by the cookie rules with one more a browser applies.

A browser refuses a cookie whose Domain is a public suffix (``co.uk``,
``github.io``): one host could otherwise set cookies that every site under that
suffix receives, the seed's among them. aiohttp's jar checks only that the
Domain matches the host that set it; SiteCookieJar refuses those too.

A page rendered in a browser keeps cookies of its own: those its scripts set
(``document.cookie``) and those of the answers it was given. The requests it
makes are the crawl's, sent with this jar's cookies: SiteCookieJar.adopt() takes
in the cookies the browser sent with each (crawling/browser.py), with their
domain, path, expiry and Secure flag, so they go where the jar sends cookies,
that request and those after it (the hops of a redirect among them).

A URL with an empty query (``/p?``) is requested with its ``?`` written into the
path aiohttp is given (fetch.request_url: yarl drops an empty query), while its
path, which cookies match, is still ``/p``: SiteCookieJar matches that path.
"""

from __future__ import annotations

import http.cookiejar
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from http.cookies import BaseCookie, CookieError, Morsel
from typing import Any

import aiohttp
from aiohttp.typedefs import LooseCookies
from yarl import URL

from archiver.config import CrawlConfig
from archiver.errors import ConfigError
from archiver.urls import is_public_suffix

_NO_URL = URL()
_DOMAIN = re.compile(r";\s*domain\s*=\s*([^;]*)", re.IGNORECASE)


def refused_domain(domain: str, host: str | None) -> bool:
    """True if a cookie's Domain is a public suffix other than the host that set it (RFC 6265,
    5.3: a browser that knows the public suffixes ignores such a cookie)."""
    domain = domain.strip().strip(".").lower()
    return bool(domain) and domain != (host or "").lower() and is_public_suffix(domain)


def cookie_url(url: URL) -> URL:
    """``url`` as cookies see it (RFC 6265, 5.1.4: its path, without the query): the ``?`` of
    an empty query, which fetch.request_url writes at the end of the path, taken off.

    >>> from archiver.crawling.fetch import request_url
    >>> cookie_url(request_url("http://h/p?")).path, cookie_url(URL("http://h/p?q")).path
    ('/p', '/p')
    """
    if url.raw_path.endswith("?") and not url.raw_query_string:
        return url.with_path(url.raw_path[:-1], encoded=True)
    return url


class SiteCookieJar(aiohttp.CookieJar):
    """aiohttp's cookie jar, refusing cookies set for a whole public suffix, and matching the
    path of a URL with an empty query without its ``?`` (see the module)."""

    def filter_cookies(self, request_url: URL = _NO_URL) -> BaseCookie[str]:
        """The cookies to send to ``request_url``."""
        return super().filter_cookies(cookie_url(request_url))

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        """Keep the cookies of Set-Cookie ``headers`` but those whose Domain is a public suffix."""
        host = response_url.raw_host

        def kept(header: str) -> bool:
            match = _DOMAIN.search(header)
            return match is None or not refused_domain(match.group(1), host)

        super().update_cookies_from_headers(
            [header for header in headers if kept(header)], cookie_url(response_url)
        )

    def update_cookies(self, cookies: LooseCookies, response_url: URL = _NO_URL) -> None:
        """Keep ``cookies`` but those whose Domain is a public suffix (older aiohttp versions
        hand a response's cookies here)."""
        items = cookies.items() if isinstance(cookies, Mapping) else cookies
        kept = [
            (name, value)
            for name, value in items
            if not (isinstance(value, Morsel) and refused_domain(value["domain"], response_url.raw_host))
        ]
        super().update_cookies(kept, cookie_url(response_url))

    def adopt(self, cookies: Iterable[Mapping[str, Any]]) -> None:
        """Keep cookies a browser holds, as Playwright gives them (name, value, domain: with a
        leading dot for one set with a Domain attribute, path, expires: seconds since the epoch
        or -1 for the session, secure, httpOnly, sameSite): each replaces the jar's cookie of
        the same name, domain and path."""
        for cookie in cookies:
            name, value = str(cookie.get("name", "")), str(cookie.get("value", ""))
            domain, path = str(cookie.get("domain") or ""), str(cookie.get("path") or "/")
            host = domain.lstrip(".").lower()
            if not name or not host:
                continue
            morsel: Morsel[str] = Morsel()
            try:
                morsel.set(name, value, value)  # sent back as the browser holds it, not quoted
            except CookieError:  # a name the jar cannot hold
                continue
            morsel["path"] = path
            if domain.startswith("."):
                morsel["domain"] = host  # set for the domain; else for its host alone
            if cookie.get("secure"):
                morsel["secure"] = True
            if cookie.get("httpOnly"):
                morsel["httponly"] = True
            expires = cookie.get("expires")
            if isinstance(expires, int | float) and expires >= 0:
                morsel["max-age"] = str(max(int(expires - time.time()), 0))
            scheme = "https" if cookie.get("secure") else "http"
            try:
                origin = URL.build(scheme=scheme, host=host, path="/")
            except ValueError:
                continue
            self.update_cookies({name: morsel}, origin)


def read_cookies_file(path: str) -> http.cookiejar.MozillaCookieJar:
    """The cookies of a cookies.txt file; ConfigError if it cannot be read as one."""
    mozilla = http.cookiejar.MozillaCookieJar()
    try:
        mozilla.load(path, ignore_discard=True, ignore_expires=True)
    except (OSError, http.cookiejar.LoadError, ValueError) as exc:  # ValueError: not UTF-8
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"cannot read --cookies-file {path}: {why}") from None
    return mozilla


def load_cookies(config: CrawlConfig, hosts: Iterable[str]) -> SiteCookieJar:
    """A cookie jar holding --cookie values (for ``hosts``: the seeds' and --credentials-host
    hosts) and a cookies.txt file (for the domains it names)."""
    jar = SiteCookieJar(unsafe=True)
    if config.cookies:
        for host in hosts:
            jar.update_cookies(dict(config.cookies), response_url=URL(f"http://{host}/"))
    if config.cookies_file:
        for cookie in read_cookies_file(config.cookies_file):
            scheme = "https" if cookie.secure else "http"
            host = cookie.domain.lstrip(".")
            jar.update_cookies(
                {cookie.name: cookie.value or ""}, response_url=URL(f"{scheme}://{host}{cookie.path or '/'}")
            )
    return jar
