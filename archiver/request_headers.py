"""What each request carries beyond the session's defaults: credentials, only for their own
hosts, and for a URL a rendered page asks for, the headers its browser chose the answer with
(the Referer, as a browser would send it, is referrer_policy's). Pure rules, no I/O.

Credentials are what the user hands the crawler: ``--header`` values, ``--cookie``
values (the fetcher's cookie jar holds those) and HTTP authentication
(``--http-user``/``--http-password``, or ``user:password@`` in a seed URL). They go
to the seeds' hosts and the hosts named by ``--credentials-host``, to no other:
not to a host a redirect leads to, nor to a CDN serving a page's images. The
host is the URL's host and port, whatever its scheme.

>>> creds = Credentials.build(["http://alice:pw@site.test/"], headers=[("X-Token", "t")])
>>> creds.headers_for("https://site.test/a")
{'X-Token': 't', 'Authorization': 'Basic YWxpY2U6cHc='}
>>> creds.headers_for("http://cdn.test/logo.png")
{}
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from archiver.errors import ConfigError
from archiver.urls import host_of, try_normalize

WITHHELD = "[withheld]"
"""What a WARC request record, crawl.json and index.html hold in place of a credential."""
PASSWORD_VARIABLE = "ARCHIVER_HTTP_PASSWORD"
"""The environment variable a crawl, and its resume, take the --http-password from."""
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Headers (lowercased) whose value given with --header crawl.json does not keep."""
NEGOTIATION_HEADERS = {
    "accept": "Accept",
    "x-requested-with": "X-Requested-With",
    "origin": "Origin",
    "accept-encoding": "Accept-Encoding",
    "sec-purpose": "Sec-Purpose",
}
"""Headers of a browser's request (lowercased: their names as sent) that choose what a server
answers: an image as WebP, JSON rather than HTML where a script asks for JSON, a fragment for
XMLHttpRequest, a prefetch's answer (PREFETCH), the Access-Control-Allow-Origin a script's
request from another origin needs (a server that names the origin it allows names none to a
request that gives none, and may refuse it), a media file sent with no coding (MEDIA_ENCODING;
any other Accept-Encoding is the crawl's own, ACCEPT_ENCODING). The crawl's request for a URL a
rendered page asks for carries them. The other headers are the crawl's: no conditional or Range
header (it keeps whole bodies), its cookies, credentials and Referer."""
ACCEPT_DOCUMENT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,"
    "image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8"
)
"""The Accept of a navigation (a page, a frame, a link to an image), Chromium's but for its last
entry, ``application/signed-exchange;v=b3;q=0.7``: a server that negotiates answers a link to an
image with the WebP or AVIF a browser following it gets, and an XML document as XML. A signed
exchange is a page wrapped for a cache to serve, which the crawl would keep as a blob in place
of the page; Chromium rates it below the page, so servers answer it the page alike. One rule for
both paths: a navigation the crawl's browser asks for first (a frame a script adds) goes without
it too (without_signed_exchange())."""
ACCEPT_BY_DESTINATION = {
    "image": "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "style": "text/css,*/*;q=0.1",
    "script": "*/*",
    "font": "*/*",
    "media": "*/*",
    "track": "*/*",
    "manifest": "*/*",
    "fetch": "*/*",
}
"""The Accept Chromium sends for a request of each destination (link_requests.request_destination());
a document's is the session's own. A server that negotiates answers an image asked for as a
page with a page."""
ACCEPT_LANGUAGE = "en-US,en;q=0.9"
"""The Accept-Language of every request, the one Chromium sends as the crawl runs it (its locale
en-US): a server that answers in the reader's language answers the crawl and its browser alike,
and one that refuses a request naming no language (as some bot filters do) does not refuse it.
A --header for a host gives another. The crawl sends no Sec-Fetch-* header: those tell a
server what a browser's own context was (the site a request came from, a user's click), which a
crawler naming itself in its User-Agent does not claim, and servers admit a request without
them (any client but a browser sends none); its browser's requests are sent without them too."""
UPGRADE_INSECURE_REQUESTS = ("Upgrade-Insecure-Requests", "1")
"""What Chromium sends with a navigation (a page, a frame): a server may answer it with a
redirect to https, which the crawl then follows as a browser does."""
PREFETCH = ("Sec-Purpose", "prefetch")
"""What Chromium 156 sends with the request of a <link rel=prefetch> (of any ``as``), with the
Accept of a navigation (ACCEPT_DOCUMENT) but no Upgrade-Insecure-Requests: no navigation, a
request a server may answer otherwise (many refuse a prefetch when busy, some count no visit)."""
ACCEPT_ENCODING = "gzip, deflate, br"
"""The Accept-Encoding of every request: the codings Chromium asks for that the crawl decodes
(content.py) and replay tools read back. A server may send brotli only to a client that asks
for it, and what it sends then is what a browser got. Not zstd, which Chromium asks for too:
warcio (so pywb, which leaves zstd out of what it asks for) and ReplayWeb.page do not decode a
zstd record, so a page archived so would replay as garbage there; a server sends such a client
gzip or br, or the body as it is. One sent unasked is kept as received (content.py says so)."""
MEDIA_ENCODING = ("Accept-Encoding", "identity")
"""What Chromium asks a video or an audio (a <source> of theirs) for: no content coding (it
reads media in ranges, which a coding would break), so a server that compresses what a client
accepts sends it plain, and the crawl, asking alike, keeps what a browser gets. Chromium sends
``Range: bytes=0-`` too; the crawl does not: a server may answer that with a 206 holding only a
first part of the body (many cap a range they were not given an end for), and replay tools
play a 206 record back as a part; without it the answer is the whole body, a 200, which the
crawl's browser is given (Chromium plays a 200 as it plays a 206)."""
MAX_NEGOTIATION_VALUE = 1024
"""A longer value (a script may set any) is not sent."""

Negotiation = tuple[tuple[str, str], ...]
"""(name, value) pairs of NEGOTIATION_HEADERS a request is sent with."""


def split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without its ``user:password@``, and the user and password it held (unquoted).

    >>> split_userinfo("http://al%40ce:p%3Aw@h:8/x")
    ('http://h:8/x', 'al@ce', 'p:w')
    >>> split_userinfo("http://h/")
    ('http://h/', None, None)
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url, None, None
    end = len(rest)
    for mark in "/?#":
        at = rest.find(mark)
        if at != -1:
            end = min(end, at)
    authority = rest[:end]
    userinfo, at_sign, host = authority.rpartition("@")
    if not at_sign:
        return url, None, None
    user, colon, password = userinfo.partition(":")
    return f"{scheme}://{host}{rest[end:]}", unquote(user), unquote(password) if colon else None


def without_password(url: str) -> str:
    """``url`` with the password of its userinfo left out (the user stays), for crawl.json.

    >>> without_password("http://alice:secret@h/x"), without_password("http://h/")
    ('http://alice@h/x', 'http://h/')
    """
    bare, user, password = split_userinfo(url)
    if user is None or password is None:
        return url
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest[: rest.index(':')]}@{bare.partition('://')[2]}"


def _host(url: str) -> str | None:
    normalized = try_normalize(url)
    return host_of(normalized) if normalized else None


def basic_auth(user: str, password: str) -> str:
    """The Authorization value of HTTP Basic authentication (RFC 7617, UTF-8)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


@dataclass(frozen=True)
class Credentials:
    """Which hosts get the user's headers, cookies and HTTP authentication."""

    hosts: frozenset[str]
    """Hosts (host[:port], as urls.host_of gives them) that get --header and --cookie values."""
    headers: tuple[tuple[str, str], ...] = ()
    auth: Mapping[str, str] = field(default_factory=dict)
    """Host -> Authorization header value (HTTP Basic)."""

    @classmethod
    def build(
        cls,
        seeds: Iterable[str],
        *,
        extra_hosts: Iterable[str] = (),
        headers: Iterable[tuple[str, str]] = (),
        user: str | None = None,
        password: str | None = None,
    ) -> Credentials:
        """Credentials of a crawl: the seeds as given (a seed's ``user:password@`` is for its
        host alone), --credentials-host values, --header pairs and --http-user/--http-password.

        Raises ConfigError for a user without a password.
        """
        hosts: set[str] = set()
        auth: dict[str, str] = {}
        extra = [host for host in (_host(f"http://{name}/") for name in extra_hosts) if host]
        for seed in seeds:
            bare, seed_user, seed_password = split_userinfo(seed)
            host = _host(bare)
            if host is None:
                continue
            hosts.add(host)
            if seed_user is not None:
                seed_password = seed_password if seed_password is not None else password
                if seed_password is None:
                    raise ConfigError(
                        f"{without_password(seed)} names the user {seed_user!r} but no password: "
                        "give it with --http-password or the ARCHIVER_HTTP_PASSWORD environment variable"
                    )
                auth[host] = basic_auth(seed_user, seed_password)
        hosts.update(extra)
        if user is not None:
            if password is None:
                raise ConfigError(
                    "--http-user needs a password: give --http-password or set ARCHIVER_HTTP_PASSWORD"
                )
            for host in hosts:
                auth.setdefault(host, basic_auth(user, password))
        elif password is not None and not auth:
            raise ConfigError("--http-password needs --http-user (or a user in a seed URL)")
        return cls(frozenset(hosts), tuple(headers), auth)

    @property
    def given_cookies(self) -> frozenset[str]:
        """The ``name=value`` pairs of the Cookie headers given with --header, which a WARC
        request record withholds (withheld()), as crawl.json does.

        >>> Credentials.build(["http://h/"], headers=[("Cookie", "a=1; b=2")]).given_cookies == {"a=1", "b=2"}
        True
        """
        return frozenset(
            pair.strip()
            for name, value in self.headers
            if name.lower() == "cookie"
            for pair in value.split(";")
            if pair.strip()
        )

    def headers_for(self, url: str, credentialed: bool = True) -> dict[str, str]:
        """The credentials to send with a request for the normalised ``url`` (often none).

        A request whose credentials mode sends none (``credentialed`` False: cors_requests.credentialed()'s)
        goes without HTTP authentication and without the Authorization and Cookie headers of
        --header, as Chromium sends no credentials with it; the other --header values go.

        >>> creds = Credentials.build(["http://alice:pw@site.test/"], headers=[("X-Token", "t")])
        >>> creds.headers_for("http://site.test/font.woff2", credentialed=False)
        {'X-Token': 't'}
        """
        host = host_of(url)
        if host not in self.hosts:
            return {}
        if not credentialed:
            return {name: value for name, value in self.headers if name.lower() not in SECRET_HEADERS}
        sent = dict(self.headers)
        authorization = self.auth.get(host)
        if authorization is not None:
            sent["Authorization"] = authorization
        return sent


def withheld(
    headers: Iterable[tuple[str, str]], given_cookies: Collection[str] = ()
) -> list[tuple[str, str]]:
    """Request headers as a WARC request record keeps them: credentials left out.

    An Authorization header keeps its scheme (the record says authentication was
    sent) but not its credentials; Proxy-Authorization, meant for the proxy, goes.
    Each cookie of a Cookie header given with --header (``given_cookies``, its
    ``name=value`` pairs: Credentials.given_cookies) keeps its name alone; the
    jar's cookies sent beside them (--cookie ones, those servers set) stay as sent.

    >>> withheld([("Authorization", "Basic YTpi"), ("Proxy-Authorization", "x"), ("Accept", "*/*")])
    [('Authorization', 'Basic [withheld]'), ('Accept', '*/*')]
    >>> withheld([("Cookie", "hc=s; srv=1")], given_cookies={"hc=s"})
    [('Cookie', 'hc=[withheld]; srv=1')]
    """
    kept = []
    for name, value in headers:
        lower = name.lower()
        if lower == "proxy-authorization":
            continue
        if lower == "authorization":
            scheme = value.split(" ", 1)[0] if " " in value.strip() else ""
            value = f"{scheme} {WITHHELD}".strip()
        if lower == "cookie" and given_cookies:
            pairs = [pair.strip() for pair in value.split(";") if pair.strip()]
            if any(pair in given_cookies for pair in pairs):
                value = "; ".join(
                    f"{pair.partition('=')[0].strip()}={WITHHELD}" if pair in given_cookies else pair
                    for pair in pairs
                )
        kept.append((name, value))
    return kept


def negotiation(headers: Mapping[str, str]) -> Negotiation:
    """The headers of a browser's request (``headers``, names lowercased) that choose its answer.

    >>> negotiation({"accept": "image/webp,*/*", "referer": "http://h/", "x-requested-with": "XHR"})
    (('Accept', 'image/webp,*/*'), ('X-Requested-With', 'XHR'))
    >>> negotiation({"accept": "text/html,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"})
    (('Accept', 'text/html,*/*;q=0.8'),)
    """
    return tuple(
        (NEGOTIATION_HEADERS[lower], without_signed_exchange(value) if lower == "accept" else value)
        for lower, value in headers.items()  # in the order it sent them: header_order.origin_place()
        if lower in NEGOTIATION_HEADERS
        and (lower != "accept-encoding" or value == MEDIA_ENCODING[1])
        and len(value) <= MAX_NEGOTIATION_VALUE
        and not any(c in value for c in "\r\n\0")
    )


def without_signed_exchange(accept: str) -> str:
    """``accept`` without its signed exchange: the crawl's navigations and its browser's ask alike
    (ACCEPT_DOCUMENT says why).

    >>> without_signed_exchange("text/html, application/signed-exchange;v=b3;q=0.7")
    'text/html'
    """
    kept = [
        entry
        for entry in accept.split(",")
        if entry.partition(";")[0].strip().lower() != "application/signed-exchange"
    ]
    return ",".join(kept).strip()


def destination_negotiation(destination: str) -> Negotiation:
    """The headers a browser chooses its answer with for a request of ``destination``.

    >>> destination_negotiation("style"), destination_negotiation("")
    ((('Accept', 'text/css,*/*;q=0.1'),), ())
    >>> destination_negotiation("media")
    (('Accept', '*/*'), ('Accept-Encoding', 'identity'))
    >>> destination_negotiation("prefetch")[0]
    ('Sec-Purpose', 'prefetch')
    """
    if destination == "prefetch":
        return (PREFETCH, ("Accept", ACCEPT_DOCUMENT))
    accept = ACCEPT_BY_DESTINATION.get(destination)
    if not accept:
        return ()
    return (("Accept", accept), MEDIA_ENCODING) if destination == "media" else (("Accept", accept),)


def negotiation_text(pairs: Negotiation) -> str:
    """``pairs`` as one string, as a frontier stores them ('' for none).

    >>> negotiation_pairs(negotiation_text((("Accept", "a/b, c/d;q=0.5"),)))
    (('Accept', 'a/b, c/d;q=0.5'),)
    """
    return "\n".join(f"{name}: {value}" for name, value in pairs)


def negotiation_pairs(text: str) -> Negotiation:
    """The pairs negotiation_text() stored."""
    pairs = (line.partition(": ") for line in text.split("\n"))
    return tuple((name, value) for name, colon, value in pairs if colon)


def is_navigation(requisite: bool, pairs: Negotiation) -> bool:
    """Whether a request for a URL is a browser's navigation (a link followed, a frame's document),
    by what it is asked for: a link (not ``requisite``), or a requisite asked with no Accept of
    its own (``pairs``: its negotiation, destination_negotiation()'s) or a browser's Accept of a
    document (text/html first), but a prefetch's (PREFETCH), which is none.

    >>> is_navigation(False, ()), is_navigation(True, ()), is_navigation(True, (("Accept", "*/*"),))
    (True, True, False)
    >>> is_navigation(False, (PREFETCH, ("Accept", ACCEPT_DOCUMENT)))
    False
    """
    if any(name.lower() == "sec-purpose" for name, _value in pairs):
        return False
    if not requisite:
        return True
    accept = next((value for name, value in pairs if name.lower() == "accept"), None)
    return accept is None or accept.startswith("text/html")


def with_negotiation(headers: dict[str, str], pairs: Negotiation) -> dict[str, str]:
    """``headers`` (the crawl's own, which win: a --header given for the host) with ``pairs``.

    >>> with_negotiation({"accept": "text/plain"}, (("Accept", "image/*"), ("X-Requested-With", "x")))
    {'X-Requested-With': 'x', 'accept': 'text/plain'}
    """
    own = {name.lower() for name in headers}
    return {**{name: value for name, value in pairs if name.lower() not in own}, **headers}


def shown_settings(settings: dict[str, object]) -> dict[str, object]:
    """A crawl's settings as a page may show them: header and cookie values withheld (they
    may be credentials), the names kept; a password is never among them.

    >>> shown_settings({"headers": [["X-Token", "t0k"]], "cookies": [["sid", "1"]], "scope": "host"})
    {'headers': [['X-Token', '[withheld]']], 'cookies': [['sid', '[withheld]']], 'scope': 'host'}
    """
    shown = dict(settings)
    shown.pop("http_password", None)
    for name in ("headers", "cookies"):
        pairs = shown.get(name)
        if isinstance(pairs, list):
            shown[name] = [[pair[0], WITHHELD] for pair in pairs if isinstance(pair, list) and pair]
    return shown
