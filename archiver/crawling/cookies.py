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
that request and those after it (the hops of a redirect among them), and once
the render ends, every cookie the browser holds (one a script set after the
page's last request went with no request); and
SiteCookieJar.forget() drops those the browser held and holds no more (its
page's script deleted them), which the page's later requests no longer send.

A browser also refuses a Secure cookie from a page that is not secure (the jar
counts as secure https and, as Chromium does, the loopback origins that are
potentially trustworthy: ``http://localhost``, ``http://127.0.0.1``,
``http://[::1]``; it sends Secure cookies to those alone), and
a cookie named ``__Secure-...`` without Secure, or ``__Host-...`` without
Secure, with a Domain or with a Path other than ``/`` (RFC 6265bis, 4.1.3): the
jar refuses them too, or it would send cookies no browser sends. It sends each
cookie back as it was set, as browsers do (aiohttp quoted a value holding a
comma or a space: ``a,b`` went back as ``"a\\054b"``).

SameSite is obeyed as Chromium obeys it. A request is cross-site when the page
that asked for it (its referrer, kept by its queue item) is of another site
(scheme and registrable domain) than its URL; a seed is asked for as a URL
typed in. A cross-site request sends no SameSite=Strict cookie, and a
SameSite=Lax one (a cookie without SameSite is Lax) only if it is a
navigation (a link followed, not a page's image); a cookie with SameSite=None
must be Secure. Its answer may set only SameSite=None cookies, but for a
navigation. The fetcher says whose request it is sending (request_context()).

A URL with an empty query (``/p?``) is requested with its ``?`` written into the
path aiohttp is given (fetch.request_url: yarl drops an empty query), while its
path, which cookies match, is still ``/p``: SiteCookieJar matches that path.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import http.cookiejar
import ipaddress
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.cookies import BaseCookie, CookieError, Morsel
from typing import Any

import aiohttp
from aiohttp._cookie_helpers import preserve_morsel_with_coded_value
from aiohttp.typedefs import LooseCookies
from yarl import URL

from archiver.config import CrawlConfig
from archiver.errors import ConfigError
from archiver.urls import is_public_suffix, registered_domain

_NO_URL = URL()
_DOMAIN = re.compile(r";\s*domain\s*=\s*([^;]*)", re.IGNORECASE)


@dataclass(frozen=True)
class RequestContext:
    """Who asks for a URL, as SameSite sees it."""

    initiator: str | None
    """The URL of the page that asked for it (or its origin): None for a seed."""
    navigation: bool
    """A page's link followed (or a seed), not something the page loads."""
    credentials: bool = True
    """Whether its credentials mode sends cookies at all (Fetch's: a CORS-mode request whose
    credentials are for its page's origin alone, of another origin, sends none, and keeps none
    its answer sets)."""


_REQUEST: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "archiver_cookie_request", default=None
)


@contextlib.contextmanager
def request_context(initiator: str | None, navigation: bool, credentials: bool = True) -> Iterator[None]:
    """The cookies of the request sent inside follow SameSite for a request of ``initiator``; none
    go, and none its answer sets are kept, without ``credentials``."""
    token = _REQUEST.set(RequestContext(initiator, navigation, credentials))
    try:
        yield
    finally:
        _REQUEST.reset(token)


def _site(url: URL) -> tuple[str, str]:
    return url.scheme, registered_domain(url.raw_host or "")


def cross_site(initiator: str | None, url: URL) -> bool:
    """Whether a request of ``url`` asked for by the page ``initiator`` is cross-site (schemeful:
    http and https are two sites); a seed's (None) never is.

    >>> cross_site("https://www.site.test/a", URL("https://cdn.site.test/x"))
    False
    >>> cross_site("https://site.test/", URL("http://site.test/")), cross_site(None, URL("http://h/"))
    (True, False)
    """
    if not initiator:
        return False
    try:
        return _site(URL(initiator)) != _site(url)
    except ValueError:
        return True


@functools.lru_cache(maxsize=1024)
def _loopback(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def secure_origin(url: URL) -> bool:
    """Whether a Secure cookie may be set by and sent to ``url``: https, or a loopback host that
    Chromium counts as potentially trustworthy over http too.

    >>> secure_origin(URL("http://localhost:8080/")), secure_origin(URL("http://127.0.0.2/"))
    (True, True)
    >>> secure_origin(URL("http://site.test/")), secure_origin(URL("https://site.test/"))
    (False, True)
    """
    scheme = url.scheme
    return scheme == "https" or scheme == "wss" or (scheme == "http" and _loopback(url.raw_host or ""))


def sent_cross_site(same_site: str, navigation: bool) -> bool:
    """Whether a cookie whose SameSite is ``same_site`` ('' for none: Lax) goes with a
    cross-site request, or may be set by its answer."""
    rule = same_site.strip().lower() or "lax"
    return rule == "none" or (rule == "lax" and navigation)


def refused_cookie(name: str, attributes: Mapping[str, str], url: URL) -> bool:
    """True if a browser refuses the cookie ``name`` with ``attributes`` (lowercased names:
    secure, domain, path; present when given) set by the page at ``url``: a Secure one from a
    page that is not secure, a prefixed name its rules refuse (RFC 6265bis, 4.1.3).

    >>> refused_cookie("__Host-id", {"secure": "", "path": "/"}, URL("https://h/a"))
    False
    >>> refused_cookie("__Host-id", {"secure": "", "path": "/", "domain": "h"}, URL("https://h/a"))
    True
    """
    secure = "secure" in attributes
    if secure and not secure_origin(url):
        return True
    if attributes.get("samesite", "").lower() == "none" and not secure:
        return True  # Chromium refuses it
    context = _REQUEST.get()
    if (
        context is not None
        and cross_site(context.initiator, url)
        and not sent_cross_site(attributes.get("samesite", ""), context.navigation)
    ):
        return True
    prefix = name[:9].lower()
    if prefix == "__secure-" and not secure:
        return True
    if name[:7].lower() == "__host-":
        return not secure or "domain" in attributes or attributes.get("path") != "/"
    return False


def _attributes(header: str) -> tuple[str, dict[str, str]]:
    """The name and the attributes (lowercased names, last one kept) of a Set-Cookie value."""
    pair, _, rest = header.partition(";")
    attributes = {}
    for part in rest.split(";"):
        key, _, value = part.partition("=")
        attributes[key.strip().lower()] = value.strip()
    return pair.partition("=")[0].strip(), attributes


def _as_set(name: str, value: str) -> Morsel[str]:
    """A cookie to send as ``name=value``, the value as it was given (not quoted)."""
    morsel: Morsel[str] = Morsel()
    morsel.set(name, value, value)
    return morsel


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
    """aiohttp's cookie jar, refusing cookies set for a whole public suffix and those the rules of
    Secure and of prefixed names refuse, sending values as they were set, and matching the path
    of a URL with an empty query without its ``?`` (see the module)."""

    def _build_morsel(self, cookie: Morsel[str]) -> Morsel[str]:
        # aiohttp's sends a value holding a comma or a space quoted: a browser sends it as set.
        # Its SameSite goes along, for filter_cookies() (the Cookie header holds name=value).
        built = preserve_morsel_with_coded_value(cookie)
        if cookie["samesite"]:
            built["samesite"] = cookie["samesite"]
        return built

    def filter_cookies(self, request_url: URL = _NO_URL) -> BaseCookie[str]:
        """The cookies to send to ``request_url`` (SameSite and credentials obeyed for the
        request_context())."""
        context = _REQUEST.get()
        if context is not None and not context.credentials:
            return BaseCookie()
        url = cookie_url(request_url)
        if url.scheme == "http" and _loopback(url.raw_host or ""):
            url = url.with_scheme("https")  # aiohttp sends Secure cookies over https alone
        cookies = super().filter_cookies(url)
        if context is None or not cross_site(context.initiator, request_url):
            return cookies
        sent: BaseCookie[str] = BaseCookie()
        for name, morsel in cookies.items():
            if sent_cross_site(str(morsel["samesite"] or ""), context.navigation):
                dict.__setitem__(sent, name, morsel)
        return sent

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        """Keep the cookies of Set-Cookie ``headers`` but those a browser refuses: a Domain that is
        a public suffix, a Secure one from a page that is not secure, a prefix's rules broken, and
        all those of an answer to a request that sends no credentials."""
        context = _REQUEST.get()
        if context is not None and not context.credentials:
            return
        host = response_url.raw_host

        def kept(header: str) -> bool:
            match = _DOMAIN.search(header)
            if match is not None and refused_domain(match.group(1), host):
                return False
            return not refused_cookie(*_attributes(header), response_url)

        super().update_cookies_from_headers(
            [header for header in headers if kept(header)], cookie_url(response_url)
        )

    def update_cookies(self, cookies: LooseCookies, response_url: URL = _NO_URL) -> None:
        """Keep ``cookies`` but those a browser refuses (older aiohttp versions hand a response's
        cookies here); a value given as a string is sent as it is."""
        items = cookies.items() if isinstance(cookies, Mapping) else cookies
        kept: list[tuple[str, Morsel[str]]] = []
        for name, value in items:
            if isinstance(value, Morsel):
                given = {key: str(value[key]) for key in ("domain", "path", "samesite") if value[key]}
                if value["secure"]:
                    given["secure"] = ""
                if refused_domain(value["domain"], response_url.raw_host) or refused_cookie(
                    name, given, response_url
                ):
                    continue
                kept.append((name, value))
            else:
                try:
                    kept.append((name, _as_set(name, str(value))))
                except CookieError:  # a name no cookie may have
                    continue
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
            try:
                morsel = _as_set(name, value)  # sent back as the browser holds it
            except CookieError:  # a name the jar cannot hold
                continue
            morsel["path"] = path
            if domain.startswith("."):
                morsel["domain"] = host  # set for the domain; else for its host alone
            if cookie.get("secure"):
                morsel["secure"] = True
            if cookie.get("httpOnly"):
                morsel["httponly"] = True
            if cookie.get("sameSite") in ("Strict", "Lax", "None"):
                morsel["samesite"] = str(cookie["sameSite"])
            expires = cookie.get("expires")
            if isinstance(expires, int | float) and expires >= 0:
                morsel["max-age"] = str(max(int(expires - time.time()), 0))
            held = self.cookies.get((host, path.rstrip("/")))
            if held is not None and name in held and held[name].coded_value == value:
                continue  # the jar's own (given to the browser): its expiry stays
            scheme = "https" if cookie.get("secure") else "http"
            try:
                origin = URL.build(scheme=scheme, host=host, path="/")
            except ValueError:
                continue
            self.update_cookies({name: morsel}, origin)

    def forget(self, cookies: Iterable[Mapping[str, Any]]) -> None:
        """Drop cookies a browser held and holds no more (a page's script deleted them), as
        Playwright gives them (name, value, domain, path): each leaves the jar unless the jar
        holds another value for it, set since."""
        gone = {
            (
                str(cookie.get("domain") or "").lstrip(".").lower(),
                str(cookie.get("path") or "/"),
                str(cookie.get("name", "")),
                str(cookie.get("value", "")),
            )
            for cookie in cookies
        }
        if gone:
            self.clear(
                lambda morsel: (
                    (str(morsel["domain"]), str(morsel["path"]), morsel.key, morsel.coded_value) in gone
                )
            )

    def for_browser(self) -> list[dict[str, Any]]:
        """The jar's cookies as a browser context takes them (Playwright's add_cookies: name,
        value as it is sent, domain with a leading dot for one that reaches subdomains, path,
        secure, httpOnly), so a rendered page's scripts see those the crawl holds."""
        live = {id(morsel) for morsel in self}  # iterating the jar drops the expired ones
        host_only = self.host_only_cookies
        given = []
        for (domain, path), cookies in self.cookies.items():
            for name, morsel in cookies.items():
                if not domain or id(morsel) not in live:
                    continue
                given.append(
                    {
                        "name": name,
                        "value": morsel.coded_value,
                        "domain": domain if (domain, path, name) in host_only else f".{domain}",
                        "path": str(morsel["path"] or "/"),
                        "secure": bool(morsel["secure"]),
                        "httpOnly": bool(morsel["httponly"]),
                        "sameSite": str(morsel["samesite"] or "Lax").capitalize(),
                    }
                )
        return given


def saved_cookies(jar: SiteCookieJar) -> str:
    """The cookies ``jar`` holds, as JSON a resumed crawl's jar adopts (SiteCookieJar.adopt):
    for_browser()'s with each one's expiry (seconds since the epoch, -1 for the session).

    >>> import asyncio
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
        kept.append({**cookie, "expires": expiries.get((domain, path, str(cookie["name"])), -1)})
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
            try:
                morsel = _as_set(cookie.name, cookie.value or "")
            except CookieError:
                raise ConfigError(
                    f"--cookies-file {config.cookies_file}: bad cookie name {cookie.name!r}"
                ) from None
            if cookie.secure:
                morsel["secure"] = True  # sent over https alone
            if cookie.domain_specified:
                morsel["domain"] = host  # its line says TRUE: its subdomains get it too
            jar.update_cookies(
                {cookie.name: morsel}, response_url=URL(f"{scheme}://{host}{cookie.path or '/'}")
            )
    return jar
