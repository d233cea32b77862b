"""Domains: a host's registrable domain and whether a name is a public suffix (after the Public
Suffix List bundled with publicsuffixlist), whether a host's ``xn--`` labels are valid IDNA, and
whether a name is ``localhost``'s.
Pure functions, no I/O; the URLs they are asked of are urls.py's.

>>> registered_domain("www.example.co.uk"), has_bad_punycode("http://a.xn--zz/")
('example.co.uk', True)
"""

from __future__ import annotations

import functools
import ipaddress

import idna
from publicsuffixlist import PublicSuffixList

from archiver.urls import host_of


def has_bad_punycode(url: str) -> bool:
    """True if a label of the host of ``url`` (normalised) is an ``xn--`` label that is no valid
    IDNA: punycode that does not decode, that decodes to nothing or to ASCII only, or to characters
    UTS #46 does not leave as they are. The WHATWG URL standard fails such a host (its "domain to
    ASCII"), no registry hands one out, and no DNS name of it resolves; ada-url, as Chromium,
    passes an ASCII host through unchecked.

    >>> has_bad_punycode("http://xn--bcher-kva.example/"), has_bad_punycode("http://a.xn--zz/")
    (False, True)
    """
    if "xn--" not in url:  # every link of every page asks: most have none
        return False
    name = host_of(url).partition(":")[0]  # an IPv6 address has no "xn--" label to check
    return "xn--" in name and any(_bad_punycode_label(label) for label in name.split("."))


def _bad_punycode_label(label: str) -> bool:
    if not label.startswith("xn--"):
        return False
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
        if not decoded or decoded.isascii() or decoded.startswith("xn--"):
            return True
        return idna.uts46_remap(decoded, std3_rules=False, transitional=False) != decoded
    except (UnicodeError, idna.IDNAError):
        return True


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


def is_public_suffix(name: str) -> bool:
    """True if the host name ``name`` is a public suffix (com, co.uk, github.io), after the
    Public Suffix List; an IP address never is.

    >>> is_public_suffix("github.io"), is_public_suffix("alice.github.io"), is_public_suffix("127.0.0.1")
    (True, False, False)
    """
    name = name.rstrip(".").lower()
    return bool(name) and not _is_ipv4(name) and not name.startswith("[") and _suffixes().is_public(name)


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


def is_localhost(host: str) -> bool:
    """Whether ``host`` (as a URL gives it) is ``localhost`` or a name under it: this machine's
    loopback address to Chromium, which asks no resolver for it (RFC 6761, section 6.3; net's
    IsLocalHostname), and a potentially trustworthy origin's host over http.

    >>> [is_localhost(host) for host in ("localhost", "Shop.localhost.", "localhost.localdomain")]
    [True, True, False]
    """
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")
