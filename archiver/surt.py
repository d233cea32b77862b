"""The SURT of a URL (Sort-friendly URI Reordering Transform): the key of CDXJ indexes, made as
pywb and cdxj-indexer make it (the surt package's default canonicalizer, step by step), so
that pywb finds a URL our index holds and a WACZ's ZipNum blocks are where its readers look."""

from __future__ import annotations

import re
from urllib.parse import quote_from_bytes, unquote_to_bytes, urlsplit

from archiver.urls import DEFAULT_PORTS

_WWW = re.compile(r"^www\d*\.")
_SURT_SAFE = b"!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
"""What the SURT of pywb and cdxj-indexer (the surt package) leaves unescaped in a path and query."""
_PATH_SESSION_IDS = (
    re.compile(rb"^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^?]+\.aspx.*)$", re.I),
    re.compile(rb"^(.*/)(\([0-9a-z]{24}\)/)([^?]+\.aspx.*)$", re.I),
)
_QUERY_SESSION_IDS = (
    re.compile(rb"^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$", re.I),
)


def _unescaped(text: bytes) -> bytes:
    while (plain := unquote_to_bytes(text)) != text:
        text = plain
    return text


def _escaped(text: bytes) -> bytes:
    return quote_from_bytes(_unescaped(text), safe=_SURT_SAFE).encode("ascii")


def _without_dot_segments(path: bytes) -> bytes:
    """``path`` with its dot segments resolved and empty segments but the last dropped."""
    kept: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b"..":
            if kept:
                kept.pop()
            else:
                kept.append(segment)
        elif segment != b".":
            kept.append(segment)
    return b"/" + b"".join(segment + b"/" for segment in kept[:-1] if segment) + (kept[-1] if kept else b"")


def _surt_path(path: bytes, *, hierarchical: bool = True) -> bytes:
    """A path as the surt package keys it: unescaped, dot segments and empty ones dropped
    (``hierarchical``: the path of a URL with a host), escaped once, lowercased, an .aspx
    session id dropped, no trailing slash but the root's."""
    path = _unescaped(path)
    if hierarchical:
        path = _without_dot_segments(path)
    path = _escaped(path).lower()
    for pattern in _PATH_SESSION_IDS:
        if match := pattern.match(path):
            path = match.group(1) + match.group(3)
    return path[:-1] if len(path) > 1 and path.endswith(b"/") else path


def _surt_query(query: bytes) -> bytes:
    """A query as the surt package keys it: escaped once, session ids dropped, lowercased,
    its arguments sorted by name, then value."""
    query = _escaped(query)
    for pattern in _QUERY_SESSION_IDS:
        if match := pattern.match(query):
            query = match.group(1) + (match.group(2) or b"")
    arguments = sorted(tuple(argument.split(b"=", 1)) for argument in query.lower().split(b"&"))
    return b"&".join(b"=".join(argument) for argument in arguments)


def surt(url: str) -> str:
    """Sort-friendly URI Reordering Transform: the key of pywb's CDXJ indexes, as pywb and
    cdxj-indexer make it (the surt package's default canonicalizer), so that pywb finds a URL
    our index holds, and a WACZ's ZipNum blocks are where its readers look.

    A URN (the target of a record about a page, such as urn:dom:URL) keeps its order: the
    surt package canonicalizes it as a path and query alone.

    >>> surt("https://www.Example.com/a/?b=2&a=1#top"), surt("urn:dom:http://h/Dir/?b&a")
    ('com,example)/a?a=1&b=2', 'urn:dom:http://h/dir?a&b')
    >>> surt("http://h/x//./y/../%7Ez?a.b=1&a=2")
    'h)/x/~z?a=2&a.b=1'
    """
    if url.startswith("urn:"):
        path, _, query = url[4:].partition("#")[0].partition("?")
        return "urn:" + _surt_tail(_surt_path(path.encode("utf-8"), hierarchical=False), query)
    parts = urlsplit(url)
    host = _WWW.sub("", (parts.hostname or "").lower().strip("."))
    key = ",".join(reversed(host.split(".")))
    if parts.port and parts.port != DEFAULT_PORTS.get(parts.scheme):
        key += f":{parts.port}"
    return f"{key})" + _surt_tail(_surt_path(parts.path.encode("utf-8") or b"/"), parts.query)


def _surt_tail(path: bytes, query: str) -> str:
    keyed = _surt_query(query.encode("utf-8")) if query else b""
    return (path + (b"?" + keyed if keyed else b"")).decode("ascii")
