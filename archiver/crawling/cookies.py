"""The crawl's cookie jar: --cookie values for the hosts credentials go to, a cookies.txt
file (crawling/given_cookies.py), and what servers set, kept and sent as the rules a browser
applies say (crawling/cookie_rules.py: public suffixes, Secure, prefixed names, SameSite).

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

The jar sends each cookie back as it was set, as browsers do
(aiohttp quoted a value holding a comma or a space: ``a,b`` went back as
``"a\\054b"``).

A URL with an empty query (``/p?``) is requested with its ``?`` written into the
path aiohttp is given (fetch_request.request_url: yarl drops an empty query), while its
path, which cookies match, is still ``/p``: SiteCookieJar matches that path.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from http.cookies import BaseCookie, CookieError, Morsel
from typing import Any

import aiohttp
from aiohttp.abc import AbstractCookieJar
from aiohttp.helpers import is_ip_address
from aiohttp.typedefs import LooseCookies
from yarl import URL

from archiver.crawling.cookie_rules import (
    cross_site,
    kept_domain,
    loopback_host,
    refused_cookie,
    requesting,
    sent_cross_site,
)
from archiver.domains import registered_domain

_NO_URL = URL()


class SentCookies(BaseCookie[str]):
    """The cookies a request sends (SiteCookieJar.filter_cookies()), in the order they go: a
    BaseCookie holds one cookie of a name, and a browser sends each of two of one name (one set for
    /, one for /dir) to /dir/page, ``a=2; a=1``."""

    def __init__(self) -> None:
        super().__init__()
        self.in_order: list[Morsel[str]] = []

    def add(self, morsel: Morsel[str]) -> None:
        """Send ``morsel`` after those added before; the first of its name is the one looked up."""
        self.in_order.append(morsel)
        self.setdefault(morsel.key, morsel)


class CookiesInOrder(aiohttp.ClientRequest):
    """A request whose Cookie header lists the jar's cookies in the order the jar gives them,
    Chromium's (SiteCookieJar.filter_cookies()): aiohttp's sorts them by name, and a server
    reading the first of two cookies of one name (one per path) read another than a browser's."""

    def update_cookies(self, cookies: LooseCookies | None) -> None:
        """Write ``cookies`` (the jar's) after those of a Cookie header given (--header), which
        one of the same name replaces."""
        if not cookies:
            return
        if isinstance(cookies, SentCookies):
            items: list[tuple[str, Any]] = [(morsel.key, morsel) for morsel in cookies.in_order]
        else:
            items = list(cookies.items() if isinstance(cookies, Mapping) else cookies)
        names = {name for name, _value in items}
        given = [
            pair.strip()
            for pair in self.headers.pop(aiohttp.hdrs.COOKIE, "").split(";")
            if pair.strip() and pair.partition("=")[0].strip() not in names
        ]
        sent = [
            f"{name}={value.coded_value if isinstance(value, Morsel) else value}" for name, value in items
        ]
        self.headers[aiohttp.hdrs.COOKIE] = "; ".join(given + sent)


def as_set(name: str, value: str) -> Morsel[str]:
    """A cookie to send as ``name=value``, the value as it was given (not quoted)."""
    morsel: Morsel[str] = Morsel()
    morsel.set(name, value, value)
    return morsel


def _as_sent(cookie: Morsel[str]) -> Morsel[str]:
    """``cookie`` as a request sends it: its value as it was set (aiohttp's jar sends a value
    holding a comma or a space quoted, a browser as set), and its SameSite, for
    filter_cookies(), with no other attribute (the Cookie header holds name=value)."""
    sent = cookie.copy()
    sent.update({attribute: "" for attribute in sent if attribute != "samesite"})
    return sent


def cookie_url(url: URL) -> URL:
    """``url`` as cookies see it (RFC 6265, 5.1.4: its path, without the query): the ``?`` of
    an empty query, which fetch_request.request_url writes at the end of the path, taken off.

    >>> from archiver.crawling.fetch_request import request_url
    >>> cookie_url(request_url("http://h/p?")).path, cookie_url(URL("http://h/p?q")).path
    ('/p', '/p')
    """
    if url.raw_path.endswith("?") and not url.raw_query_string:
        return url.with_path(url.raw_path[:-1], encoded=True)
    return url


SITE_LIMIT = 180
"""The most cookies the jar holds for one site (registrable domain), as Chromium: one more, and
the site's own are evicted down to SITE_KEPT. aiohttp counts each host apart, so the many hosts
of one site filled the jar and evicted another site's cookies, the user's session among them."""

SITE_KEPT = 150
"""What a site over SITE_LIMIT keeps (Chromium's kDomainMaxCookies less kDomainPurgeCookies)."""

JAR_LIMIT = 3300
"""The most cookies aiohttp's jar holds in all, as Chromium's (the jar keeps below it)."""


class SiteCookieJar(aiohttp.CookieJar):
    """aiohttp's cookie jar, refusing cookies set for a whole public suffix and those the rules of
    Secure and of prefixed names refuse, keeping SITE_LIMIT cookies a site, sending values as
    they were set, and matching the path of a URL with an empty query without its ``?`` (see the
    module and cookie_rules.py).

    Each cookie keeps when it was created (nanoseconds since the epoch), which orders the
    cookies of one path length as Chromium orders them: set again with the value it has, it
    keeps that time; with another value, it is created anew (as Chromium 156 does).
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.created: dict[tuple[str, str, str], int] = {}
        """When each cookie was created, by (domain, path without its last '/', name)."""
        self._latest = 0

    def _note_created(self, held: Mapping[tuple[str, str, str], str]) -> None:
        """Note when each cookie the jar holds now was created, ``held`` being its cookies'
        values (_values()) before a change: one set anew, or set again with another value, is
        created now; one that left is forgotten."""
        values = self._values()
        self.created = {key: self.created[key] for key in values if key in self.created}
        for key, value in values.items():
            if held.get(key) != value:
                self.created[key] = self._now()

    def _values(self) -> dict[tuple[str, str, str], str]:
        """The value of each cookie the jar holds, by (domain, path, name)."""
        return {
            (domain, path, name): morsel.coded_value
            for (domain, path), cookies in self.cookies.items()
            for name, morsel in cookies.items()
        }

    def _now(self) -> int:
        """The time now, later than every creation time the jar holds (two cookies set at once
        keep the order they were set in)."""
        self._latest = max(time.time_ns(), self._latest + 1)
        return self._latest

    def filter_cookies(self, request_url: URL = _NO_URL) -> SentCookies:
        """The cookies to send to ``request_url`` (SameSite and credentials obeyed for the
        request_context())."""
        context = requesting()
        if context is not None and not context.credentials:
            return SentCookies()
        url = cookie_url(request_url)
        if url.scheme == "http" and loopback_host(url.raw_host or ""):
            url = url.with_scheme("https")  # aiohttp sends Secure cookies over https alone
        matching = super().filter_cookies(url)
        navigation = context.navigation if context is not None else True
        judged = context is not None and cross_site(context.initiator, request_url)
        sent = SentCookies()
        for morsel in self._every_match(url, matching.keys()) if matching else ():
            if not judged or sent_cross_site(str(morsel["samesite"] or ""), navigation):
                sent.add(morsel)
        return sent

    def _every_match(self, url: URL, names: Iterable[str]) -> list[Morsel[str]]:
        """Every cookie of ``names`` (those aiohttp's filter_cookies() admits: not expired, within
        its limits) the jar holds for ``url``, in Chromium's order (RFC 6265, 5.4): a longer path
        first, then the one created first, whichever domain it was set for. Two of one name, set
        for two paths or domains, both go, as a browser sends them; aiohttp gives the most
        specific alone."""
        wanted = set(names)
        host = url.raw_host or ""
        if not is_ip_address(host):
            labels = host.split(".")
            domains = [".".join(labels[start:]) for start in reversed(range(len(labels)))]
        else:
            domains = [host] if self.unsafe else []
        segments = url.path.split("/")
        paths = ["/".join(segments[:end]) for end in range(1, len(segments) + 1)]
        secure = url.scheme in ("https", "wss")
        held, host_only = self.cookies, self.host_only_cookies
        found: list[tuple[int, int, int, Morsel[str]]] = []
        for key in [("", "")] + [(domain, path) for domain in domains for path in paths]:
            for name, cookie in held.get(key, {}).items():
                if name not in wanted or (cookie["secure"] and not secure):
                    continue
                if key[0] not in ("", host) and (*key, name) in host_only:
                    continue
                if len(cookie["path"]) > len(url.path):
                    continue  # set for /dir/, asked as /dir
                created = self.created.get((*key, name), 0)
                found.append((-len(key[1]), created, len(found), _as_sent(cookie)))
        return [morsel for *_order, morsel in sorted(found, key=lambda entry: entry[:3])]

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        """Keep the cookies of Set-Cookie ``headers`` but those a browser refuses: a Domain that is
        a public suffix, a Secure one from a page that is not secure, a prefix's rules broken, and
        all those of an answer to a request that sends no credentials."""
        context = requesting()
        if context is not None and not context.credentials:
            return
        # aiohttp's parser reads them and hands update_cookies() the cookies it read, judged there
        # as they are stored: of two Domain attributes the last, a quoted one unquoted (a check
        # reading the header on its own judged the first, its quotes kept).
        AbstractCookieJar.update_cookies_from_headers(self, headers, response_url)

    def update_cookies(self, cookies: LooseCookies, response_url: URL = _NO_URL) -> None:
        """Keep ``cookies`` (a response's, as aiohttp's parser read them, a browser's, a
        cookies.txt file's) but those a browser refuses, each site within SITE_LIMIT; a value
        given as a string is sent as it is."""
        items = cookies.items() if isinstance(cookies, Mapping) else cookies
        kept: list[tuple[str, Morsel[str]]] = []
        for name, value in items:
            if isinstance(value, Morsel):
                given = {key: str(value[key]) for key in ("domain", "path", "samesite") if value[key]}
                if value["secure"]:
                    given["secure"] = ""
                domain = kept_domain(str(value["domain"]), response_url.raw_host)
                if domain is None or refused_cookie(name, given, response_url):
                    continue
                if domain != value["domain"]:  # a public suffix's own: for its host alone
                    value = value.copy()
                    value["domain"] = domain
                kept.append((name, value))
            else:
                try:
                    kept.append((name, as_set(name, str(value))))
                except CookieError:  # a name no cookie may have
                    continue
        held = self._values()
        self._leave_room(len(kept))
        super().update_cookies(kept, cookie_url(response_url))
        self._note_created(held)
        self._evict(
            morsel
            for site, count in self._site_counts().items()
            if count > SITE_LIMIT
            for morsel in self._oldest(site, count - SITE_KEPT)
        )

    def _site_counts(self) -> Counter[str]:
        """How many cookies the jar holds for each site (registrable domain)."""
        counts: Counter[str] = Counter()
        for (domain, _path), cookies in self.cookies.items():
            counts[registered_domain(domain)] += len(cookies)
        return counts

    def _oldest(self, site: str, count: int) -> list[tuple[tuple[str, str, str], Morsel[str]]]:
        """The ``count`` cookies of ``site`` evicted first, as Chromium evicts them: those not
        Secure before the Secure ones, the oldest first; with their keys (domain, path, name)."""
        held = [
            (bool(morsel["secure"]), self.created.get((domain, path, name), 0), (domain, path, name), morsel)
            for (domain, path), cookies in self.cookies.items()
            if registered_domain(domain) == site
            for name, morsel in cookies.items()
        ]
        held.sort(key=lambda entry: entry[:2])
        return [(key, morsel) for _secure, _created, key, morsel in held[:count]]

    def _leave_room(self, incoming: int) -> None:
        """Evict, before ``incoming`` cookies join, the oldest of the sites holding the most, so
        that the jar never reaches aiohttp's limit of its total (JAR_LIMIT): aiohttp evicts the
        cookies used least lately, whichever site's, and many sites' cookies evicted the user's."""
        excess = len(self) + incoming - JAR_LIMIT + 1
        if excess <= 0:
            return
        counts = self._site_counts()
        taken: Counter[str] = Counter()
        for _ in range(excess):
            site = max(counts, key=lambda held: counts[held] - taken[held], default=None)
            if site is None or counts[site] <= taken[site]:
                break
            taken[site] += 1
        self._evict(morsel for site, count in taken.items() for morsel in self._oldest(site, count))

    def _evict(self, doomed: Iterable[tuple[tuple[str, str, str], Morsel[str]]]) -> None:
        """Drop the cookies ``doomed`` (with their keys) from the jar."""
        gone = dict(doomed)
        if gone:
            evicted = {id(morsel) for morsel in gone.values()}
            self.clear(lambda morsel: id(morsel) in evicted)
            for key in gone:
                self.created.pop(key, None)

    def adopt(self, cookies: Iterable[Mapping[str, Any]]) -> None:
        """Keep cookies a browser holds, as Playwright gives them (name, value, domain: with a
        leading dot for one set with a Domain attribute, path, expires: seconds since the epoch
        or -1 for the session, secure, httpOnly, sameSite; and, from saved_cookies(), created):
        each replaces the jar's cookie of the same name, domain and path."""
        for cookie in cookies:
            name, value = str(cookie.get("name", "")), str(cookie.get("value", ""))
            domain, path = str(cookie.get("domain") or ""), str(cookie.get("path") or "/")
            host = domain.lstrip(".").lower()
            if not name or not host:
                continue
            try:
                morsel = as_set(name, value)  # sent back as the browser holds it
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
            created = cookie.get("created")
            key = (host, path.rstrip("/"), name)
            if isinstance(created, int) and key in self.created:  # kept (resume) or shared (nodes)
                self.created[key] = created

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
        secure, httpOnly), so a rendered page's scripts see those the crawl holds: in the order
        they were created, which the browser's own order of them follows."""
        live = {id(morsel) for morsel in self}  # iterating the jar drops the expired ones
        host_only = self.host_only_cookies
        given: list[tuple[int, dict[str, Any]]] = []
        for (domain, path), cookies in self.cookies.items():
            for name, morsel in cookies.items():
                if not domain or id(morsel) not in live:
                    continue
                given.append(
                    (
                        self.created.get((domain, path, name), 0),
                        {
                            "name": name,
                            "value": morsel.coded_value,
                            "domain": domain if (domain, path, name) in host_only else f".{domain}",
                            "path": str(morsel["path"] or "/"),
                            "secure": bool(morsel["secure"]),
                            "httpOnly": bool(morsel["httponly"]),
                            "sameSite": str(morsel["samesite"] or "Lax").capitalize(),
                        },
                    )
                )
        return [cookie for _created, cookie in sorted(given, key=lambda entry: entry[0])]
