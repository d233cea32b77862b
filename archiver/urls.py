"""URL normalisation and SURT keys: pure functions, no I/O.

>>> normalize_url("HTTP://Example.COM:80/a/./b/../c?q=1#top")
'http://example.com/a/c?q=1'
"""

from __future__ import annotations

import functools
import ipaddress
import posixpath
import re
from urllib.parse import urljoin, urlsplit, urlunsplit

from publicsuffixlist import PublicSuffixList

from archiver.errors import BadURL

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


# A URL already in canonical form: http(s), a lowercase ASCII host, a path and
# query of characters that need no escaping (no "%" at all), no fragment. Such a
# URL, without dot segments, "//" or a default port, normalises to itself: the
# common case, checked by one regex instead of the full work (tests compare the two).
_CANONICAL = re.compile(
    r"(https?)://[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
    r"(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]+)?"
)
# A base URL's origin ("http://h:8") and directory ("http://h:8/a/"), when it is canonical.
_BASE = re.compile(r"(https?://[^/?#]+)(/(?:[^?#]*/)?)[^?#]*(?:\?[^#]*)?")


def _is_canonical(url: str) -> bool:
    match = _CANONICAL.fullmatch(url)
    if match is None:
        return False
    scheme, port, path = match.groups()
    if "/." in path or "//" in path:
        return False
    return port is None or (int(port) != DEFAULT_PORTS[scheme] and int(port) <= 65535)


@functools.lru_cache(maxsize=256)
def _base_parts(base: str) -> tuple[str, str] | None:
    """(origin, directory) of a canonical base URL; None sends the join to urljoin."""
    if not _is_canonical(base):
        return None
    match = _BASE.fullmatch(base)
    return (match.group(1), match.group(1) + match.group(2)) if match else None


def url_folder(url: str) -> str:
    """``url`` up to the last slash of its path: what any reference with a path of its own
    resolves against, whatever the rest of the URL (a URL without a path has the folder /).

    >>> url_folder("http://h/a/b.html?x=/y#z"), url_folder("http://h?q")
    ('http://h/a/', 'http://h/')
    """
    host_start, path_start, end = _parts_at(url)
    if path_start == end:
        return url[:end] + "/"
    return url[: url.rindex("/", path_start, end) + 1]


def _parts_at(url: str) -> tuple[int, int, int]:
    """Where the host, the path and the query or fragment of an absolute ``url`` start."""
    scheme_end = url.find("://")
    host_start = scheme_end + 3 if scheme_end != -1 else 0
    end = len(url)
    for mark in ("?", "#"):
        at = url.find(mark, host_start, end)
        if at != -1:
            end = at
    path_start = url.find("/", host_start, end)
    return host_start, end if path_start == -1 else path_start, end


def join_url(base: str, url: str) -> str:
    """urljoin(base, url), without urljoin's cost for the links pages are made of."""
    if url.startswith(("http://", "https://")):
        return url
    parts = _base_parts(base)
    # ":" may start a scheme; "//" and dot segments together resolve differently.
    if parts is not None and url and ":" not in url and "//" not in url:
        if url[0] == "/" and url[1:2] != "/":
            return parts[0] + url
        if url[0] not in "/?#":
            origin, directory = parts
            while url.startswith(("../", "./")):  # leading dot segments, as pages write them
                if url[1] == "/":
                    url = url[2:]
                    continue
                url = url[3:]
                parent = directory.rfind("/", 0, len(directory) - 1)
                if parent >= len(origin):
                    directory = directory[: parent + 1]
            # Any other dot segment is removed by the normalisation that follows.
            return directory + url
    return urljoin(base, url)


def normalize_url(url: str, base: str | None = None) -> str:
    """Return the canonical form of ``url`` (resolved against ``base`` if given).

    Lowercases scheme and host, drops the default port and the fragment,
    removes dot segments, normalises percent-encoding. Raises BadURL for
    anything that is not an absolute http(s) URL.

    >>> normalize_url("../x y", "http://h/a/b/")
    'http://h/a/x%20y'
    """
    url = url.strip()
    if "\\" in url:
        # Browsers read "\\" as "/" before the query in http(s) URLs (WHATWG URL standard).
        head, sep, tail = url.partition("?")
        url = head.replace("\\", "/") + sep + tail
    if base is not None:
        url = join_url(base, url)
    if _is_canonical(url):
        return url
    return _normalize_absolute(url)


def _normalize_absolute(url: str) -> str:
    """normalize_url's full work, for an absolute URL."""
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
    """The host (with a non-default port) of a normalised URL.

    >>> host_of("http://h:8/a?b"), host_of("https://h?q")
    ('h:8', 'h')
    """
    host_start, path_start, _end = _parts_at(url)
    return url[host_start:path_start]


@functools.lru_cache(maxsize=4096)
def registered_domain(host: str) -> str:
    """The registrable domain of a host (a port is ignored), after the Public Suffix List:
    the public suffix and one label before it. An IP literal, a single label (localhost)
    and a public suffix itself (github.io) are their own domain.

    >>> registered_domain("a.foo.github.io"), registered_domain("[::1]:8080"), registered_domain("localhost")
    ('foo.github.io', '[::1]', 'localhost')
    """
    if host.startswith("["):
        return host[: host.find("]") + 1] or host
    name = host.rpartition(":")[0] if ":" in host else host
    name = name.rstrip(".").lower()
    if "." not in name or _is_ipv4(name):
        return name
    return _suffixes().privatesuffix(name) or name


def _is_ipv4(name: str) -> bool:
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True


@functools.cache
def _suffixes() -> PublicSuffixList:
    """The Public Suffix List bundled with publicsuffixlist (read once, never fetched)."""
    return PublicSuffixList()


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
