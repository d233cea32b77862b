"""The cookies a crawl is given: --cookie values, for the hosts its credentials go to, and a
cookies.txt file (Netscape format), read as curl and wget read it, into the crawl's jar
(crawling/cookies.py)."""

from __future__ import annotations

import http.cookiejar
import os
import stat
import time
from collections.abc import Iterable
from http.cookies import CookieError

from yarl import URL

from archiver.config import CrawlConfig
from archiver.crawling.cookies import SiteCookieJar, as_set
from archiver.errors import ConfigError

COOKIES_FILE_LIMIT = 16 * 1024**2
"""The largest cookies.txt file read (tens of thousands of cookies)."""


def read_cookies_file(path: str) -> http.cookiejar.MozillaCookieJar:
    """The cookies of a cookies.txt file; ConfigError if it cannot be read as one."""
    mozilla = http.cookiejar.MozillaCookieJar()
    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode):  # /dev/zero, a pipe: read by lines, it never ends
            raise ConfigError(f"cannot read --cookies-file {path}: not a file")
        if found.st_size > COOKIES_FILE_LIMIT:
            raise ConfigError(
                f"cannot read --cookies-file {path}: more than {COOKIES_FILE_LIMIT // 1024**2} MiB"
            )
        mozilla.load(path, ignore_discard=True, ignore_expires=True)
    except (OSError, http.cookiejar.LoadError, ValueError) as exc:  # ValueError: not UTF-8
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"cannot read --cookies-file {path}: {why}") from None
    return mozilla


def _file_expiry(field: object) -> float | None:
    """When the cookie of a cookies.txt line whose expiry field is ``field`` expires (seconds
    since the epoch), None for a session cookie: a field empty, 0, or no number, as curl reads it.

    >>> _file_expiry("1700000000"), _file_expiry("0"), _file_expiry(None), _file_expiry("never")
    (1700000000.0, None, None, None)
    """
    try:
        expires = float(str(field or 0))
    except ValueError:
        return None
    return expires if expires > 0 else None


def load_cookies(config: CrawlConfig, hosts: Iterable[str]) -> SiteCookieJar:
    """A cookie jar holding --cookie values (for ``hosts``: the seeds' and --credentials-host
    hosts) and a cookies.txt file (for the domains it names): each of its lines with its path,
    expiry, Secure and HttpOnly flags, one expired left out, as curl and wget read it."""
    jar = SiteCookieJar(unsafe=True)
    if config.cookies:
        for host in hosts:
            jar.update_cookies(dict(config.cookies), response_url=URL(f"http://{host}/"))
    if config.cookies_file:
        now = time.time()
        for cookie in read_cookies_file(config.cookies_file):
            expires = _file_expiry(cookie.expires)
            if expires is not None and expires <= now:
                continue  # expired: neither sent nor kept, as curl and wget read the file
            scheme = "https" if cookie.secure else "http"
            host = cookie.domain.lstrip(".")
            try:
                morsel = as_set(cookie.name, cookie.value or "")
            except CookieError:
                raise ConfigError(
                    f"--cookies-file {config.cookies_file}: bad cookie name {cookie.name!r}"
                ) from None
            morsel["path"] = cookie.path or "/"  # sent to that path and those under it alone
            if cookie.secure:
                morsel["secure"] = True  # sent over https alone
            if cookie.domain_specified:
                morsel["domain"] = host  # its line says TRUE: its subdomains get it too
            if cookie.has_nonstandard_attr("HTTPOnly"):  # http.cookiejar's name of it
                morsel["httponly"] = True  # a #HttpOnly_ line: a rendered page's scripts never see it
            if expires is not None:
                morsel["max-age"] = str(int(expires - now))  # else a session cookie
            jar.update_cookies({cookie.name: morsel}, response_url=URL(f"{scheme}://{host}/"))
    return jar
