"""How the fetcher reaches servers: certificates checked or not (--insecure, --ca-bundle), names
pinned to addresses (--resolve) or resolved as Chromium resolves them (``localhost`` names), and
proxies from the environment (HTTP_PROXY, NO_PROXY...)."""

from __future__ import annotations

import socket
import ssl
import urllib.request

import aiohttp
import aiohttp.abc
from aiohttp.abc import ResolveResult
from yarl import URL

from archiver.config import CrawlConfig
from archiver.domains import is_localhost
from archiver.errors import ConfigError
from archiver.urls import url_host


def ssl_setting(config: CrawlConfig) -> ssl.SSLContext | bool:
    """How certificates are checked: not at all, with --ca-bundle (ConfigError if no PEM), or the system's."""
    if config.insecure:
        return False
    if config.ca_bundle:
        try:
            return ssl.create_default_context(cafile=config.ca_bundle)
        except (OSError, ssl.SSLError) as exc:  # no such file, or not PEM certificates
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ConfigError(f"cannot read --ca-bundle {config.ca_bundle}: {why}") from None
    return True


LOOPBACK = ("127.0.0.1", "::1")
"""The addresses of a ``localhost`` name (is_localhost())."""


class PinnedResolver(aiohttp.abc.AbstractResolver):
    """DNS with some names pinned to addresses (``--resolve host:ip``), and ``localhost`` names
    resolved as Chromium resolves them (is_localhost()), unless pinned."""

    def __init__(self, pinned: dict[str, str], dns: aiohttp.abc.AbstractResolver | None = None) -> None:
        """``pinned``: host name -> IP address, a name as the user wrote it (``bücher.example``
        is asked for as the URL parser writes it, ``xn--bcher-kva.example``); ``dns``: what
        resolves the others (the system's getaddrinfo when None)."""
        self._pinned = {url_host(host): address for host, address in pinned.items()}
        self._dns = dns or aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self._pinned.get(host.lower())
        if address is not None:
            addresses: tuple[str, ...] = (address,)
        elif is_localhost(host):
            addresses = tuple(ip for ip in LOOPBACK if family in (socket.AF_UNSPEC, _family(ip)))
        else:
            return await self._dns.resolve(host, port, family)
        return [
            {
                "hostname": host,
                "host": ip,
                "port": port,
                "family": _family(ip),
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for ip in addresses
        ]

    async def close(self) -> None:
        await self._dns.close()


def _family(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


class EnvironmentProxies:
    """HTTP_PROXY, HTTPS_PROXY and NO_PROXY, read once (as curl and wget read them).

    >>> proxies = EnvironmentProxies({"http": "http://u:pw@p:3128", "no": "intra"})
    >>> proxies.for_url(URL("http://site/x"))
    (URL('http://p:3128'), {'Proxy-Authorization': 'Basic dTpwdw=='})
    >>> proxies.for_url(URL("http://intra/x"))
    (None, None)
    """

    def __init__(self, proxies: dict[str, str] | None = None) -> None:
        self._proxies = urllib.request.getproxies_environment() if proxies is None else proxies
        self._by_scheme: dict[str, tuple[URL, dict[str, str] | None]] = {}
        """The proxy of each scheme that has one, and the headers for it: read once. Whether a
        host goes around it is asked again for each request (a few string comparisons): kept
        for each host, it grew with every host a crawl met."""

    def for_url(self, url: URL) -> tuple[URL | None, dict[str, str] | None]:
        """The proxy to reach ``url`` through and headers for it; (None, None) to go direct."""
        proxy = self._proxies.get(url.scheme)
        if not proxy or urllib.request.proxy_bypass_environment(  # type: ignore[attr-defined]
            url.raw_authority, self._proxies
        ):
            return None, None
        if url.scheme not in self._by_scheme:
            proxy_url = URL(proxy if "://" in proxy else f"http://{proxy}")
            auth = aiohttp.BasicAuth.from_url(proxy_url)
            headers = {"Proxy-Authorization": auth.encode()} if auth else None
            self._by_scheme[url.scheme] = (proxy_url.with_user(None), headers)
        return self._by_scheme[url.scheme]
