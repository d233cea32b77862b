"""URL normalisation and SURT keys: pure functions, no I/O.

>>> normalize_url("HTTP://Example.COM:80/a/./b/../c?q=1#top")
'http://example.com/a/c?q=1'
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import urljoin, urlsplit, urlunsplit

from .errors import BadURL

DEFAULT_PORTS = {"http": 80, "https": 443}
FETCHABLE_SCHEMES = frozenset(DEFAULT_PORTS)

# RFC 3986 unreserved characters never need escaping; decoding them makes
# "/%7Euser" and "/~user" one URL.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters left as they are in a path or query: reserved delimiters and "%".
_PATH_SAFE = frozenset("!$&'()*+,;=:@/%")
_QUERY_SAFE = _PATH_SAFE | frozenset("?")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _normalize_escapes(part: str, safe: frozenset[str]) -> str:
    """Uppercase escapes, decode escaped unreserved bytes, escape what must be escaped."""

    def fix_escape(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    part = _ESCAPE.sub(fix_escape, part)
    out = []
    for index, char in enumerate(part):
        if char in _UNRESERVED or char in safe:
            if char == "%" and not _ESCAPE.match(part, index):
                out.append("%25")
            else:
                out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def _normalize_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    if not host:
        raise BadURL("", "no host")
    if host.startswith("["):
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        if all(ord(c) < 128 for c in host):
            return host
        raise BadURL(host, "host name is not valid") from None


def _remove_dot_segments(path: str) -> str:
    if not path:
        return "/"
    trailing = path.endswith(("/", "/.", "/.."))
    normal = posixpath.normpath(path)
    # normpath keeps a leading "//" (POSIX); the URL path we want has one slash.
    normal = "/" + normal.lstrip("/")
    if trailing and not normal.endswith("/"):
        normal += "/"
    return normal


def normalize_url(url: str, base: str | None = None) -> str:
    """Return the canonical form of ``url`` (resolved against ``base`` if given).

    Lowercases scheme and host, drops the default port and the fragment,
    removes dot segments, normalises percent-encoding. Raises BadURL for
    anything that is not an absolute http(s) URL.

    >>> normalize_url("../x y", "http://h/a/b/")
    'http://h/a/x%20y'
    """
    url = url.strip()
    # Browsers read "\\" as "/" before the query in http(s) URLs (WHATWG URL standard).
    head, sep, tail = url.partition("?")
    url = head.replace("\\", "/") + sep + tail
    if base is not None:
        url = urljoin(base, url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadURL(url, str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme not in FETCHABLE_SCHEMES:
        raise BadURL(url, "not an http or https URL")
    if not parts.hostname:
        raise BadURL(url, "no host")
    host = _normalize_host(parts.hostname)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _remove_dot_segments(_normalize_escapes(parts.path, _PATH_SAFE))
    query = _normalize_escapes(parts.query, _QUERY_SAFE)
    return urlunsplit((scheme, netloc, path, query, ""))


def try_normalize(url: str, base: str | None = None) -> str | None:
    """Like normalize_url, but None for URLs we cannot fetch (mailto:, bad hosts...)."""
    try:
        return normalize_url(url, base)
    except (BadURL, ValueError):
        return None


def host_of(url: str) -> str:
    """The host (with a non-default port) of a normalised URL."""
    return urlsplit(url).netloc


def registered_domain(host: str) -> str:
    """A cheap registrable-domain guess: the last two labels (three for short SLDs)."""
    host = host.split(":")[0]
    if re.fullmatch(r"[\d.]+|\[.*\]", host):
        return host
    labels = host.split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SHORT_SLDS:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


_SHORT_SLDS = frozenset({"co", "com", "ac", "org", "net", "gov", "edu", "ne", "or", "go"})


def surt(url: str) -> str:
    """Sort-friendly URI Reordering Transform, as pywb's CDXJ indexes use.

    >>> surt("https://www.Example.com/a?b=2&a=1")
    'com,example)/a?a=1&b=2'
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    key = ",".join(reversed(host.split(".")))
    if parts.port and parts.port != DEFAULT_PORTS.get(parts.scheme):
        key += f":{parts.port}"
    path = (parts.path or "/").lower()
    query = "&".join(sorted(parts.query.split("&"))).lower() if parts.query else ""
    return f"{key}){path}" + (f"?{query}" if query else "")
