"""The rules a browser applies to cookies, which the crawl's jar (crawling/cookies.py) obeys:
who asks for a request (request_context()), whether it is cross-site, and which cookies
are refused when set or kept back when sent.

A browser refuses a cookie whose Domain is a public suffix (``co.uk``,
``github.io``): one host could otherwise set cookies that every site under that
suffix receives, the seed's among them. aiohttp's jar checks only that the
Domain matches the host that set it; the jar refuses those too (kept_domain()). A
host that is itself a public suffix (``localhost``) naming itself sets a cookie
for itself alone.

A browser also refuses a Secure cookie from a page that is not secure (the jar
counts as secure https and, as Chromium does, the loopback origins that are
potentially trustworthy: ``http://localhost``, ``http://127.0.0.1``,
``http://[::1]``; it sends Secure cookies to those alone), and
a cookie named ``__Secure-...`` without Secure, or ``__Host-...`` without
Secure, with a Domain or with a Path other than ``/`` (RFC 6265bis, 4.1.3): the
jar refuses them too, or it would send cookies no browser sends.

SameSite is obeyed as Chromium obeys it. A request is cross-site when the page
that asked for it (its referrer, kept by its queue item) is of another site
(scheme and registrable domain) than its URL; a seed is asked for as a URL
typed in. A cross-site request sends no SameSite=Strict cookie, and a
SameSite=Lax one (a cookie without SameSite is Lax) only if it is a
navigation (a link followed, not a page's image); a cookie with SameSite=None
must be Secure. Its answer may set only SameSite=None cookies, but for a
navigation. The fetcher says whose request it is sending (request_context()).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from yarl import URL

from archiver.domains import is_localhost, is_public_suffix, registered_domain


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


def requesting() -> RequestContext | None:
    """Who asks for the request being sent (request_context()), None if it was not said."""
    return _REQUEST.get()


def cross_site(initiator: str | None, url: URL) -> bool:
    """Whether a request of ``url`` asked for by the page ``initiator`` is cross-site (schemeful:
    http and https are two sites); a seed's (None) never is.

    >>> cross_site("https://www.site.test/a", URL("https://cdn.site.test/x"))
    False
    >>> cross_site("https://site.test/", URL("http://site.test/")), cross_site(None, URL("http://h/"))
    (True, False)
    >>> cross_site("null", URL("http://h/"))  # a document of no origin is of no site
    True
    """
    if not initiator:
        return False
    try:
        return _site(URL(initiator)) != _site(url)
    except ValueError:
        return True


@functools.lru_cache(maxsize=1024)
def loopback_host(host: str) -> bool:
    """Whether ``host`` is localhost (or under it) or a loopback address."""
    if is_localhost(host):
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
    return scheme == "https" or scheme == "wss" or (scheme == "http" and loopback_host(url.raw_host or ""))


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


def kept_domain(domain: str, host: str | None) -> str | None:
    """The Domain attribute ``domain`` of a cookie the page on ``host`` sets, as a browser keeps it
    (RFC 6265bis, 5.7, step 6): a public suffix is refused (None), but for the host itself, whose
    cookie is kept for that host alone ('': no Domain), as Chromium keeps it; any other is kept.

    >>> kept_domain("github.io", "evil.github.io"), kept_domain("github.io", "github.io")
    (None, '')
    >>> kept_domain(".localhost", "localhost"), kept_domain("site.test", "www.site.test")
    ('', 'site.test')
    """
    name = domain.strip().strip(".").lower()
    if not name or not is_public_suffix(name):
        return domain
    return "" if name == (host or "").rstrip(".").lower() else None
