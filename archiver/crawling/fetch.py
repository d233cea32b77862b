"""The fetcher owns the network: one pooled aiohttp session, raw bodies, retries.

``Fetch`` is the seam the crawler fetches through, one method as httpx's
transport is: ``Fetcher`` (HTTP) implements it, and so can a fetcher that
drives a browser and sends the browser's own requests through a Fetcher.

Redirects are not followed here (the crawler records each hop), bodies are not
decompressed (the WARC keeps them as sent), and each body streams into a
spooled temporary file, so memory per response is bounded.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import http.cookiejar
import random
import socket
import ssl
import tempfile
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Protocol

import aiohttp
import aiohttp.abc
from aiohttp.abc import ResolveResult
from yarl import URL

from archiver.config import CrawlConfig
from archiver.content import decode_payload
from archiver.errors import ConfigError, FetchError
from archiver.redirects import REDIRECT_STATUSES
from archiver.warc.capture import Capture
from archiver.warc.records import sha1_digest

SPOOL_IN_MEMORY = 1024 * 1024
"""Bodies up to this size stay in RAM; larger ones spill to a temporary file."""
CHUNK = 64 * 1024
MAX_HEADER_BYTES = 64 * 1024
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class FetchOutcome:
    """What fetching one URL gave after all tries."""

    capture: Capture | None
    """The last response received, or None if no response ever came."""
    tries: int
    error: str | None = None
    """Why the fetch failed (no response, or a retryable status on the last try)."""


class Fetch(Protocol):
    """What the crawler needs to fetch a URL."""

    async def fetch(self, url: str) -> FetchOutcome:
        """Fetch ``url`` (redirects not followed); never raises for network trouble.

        A failure is an outcome with no capture and an error. Cancelled, the
        fetch is abandoned and nothing is returned.
        """


def retry_delay(tries: int, base: float, retry_after: float | None, cap: float) -> float:
    """Seconds before the next try: Retry-After if the server gave one, else backoff with jitter."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), cap)
    return min(base * (2 ** (tries - 1)) * random.uniform(0.5, 1.5), cap)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _peer_ip(response: aiohttp.ClientResponse) -> str | None:
    """The server's IP address, for WARC-IP-Address.

    aiohttp hands a connection back to its pool as soon as a small body is
    read, so ``response.connection`` is often None by now; the protocol that
    carried the response still knows its transport.
    """
    protocol = response.connection.protocol if response.connection else None
    protocol = protocol or getattr(response, "_protocol", None)
    transport = getattr(protocol, "transport", None)
    peer = transport.get_extra_info("peername") if transport else None
    return str(peer[0]) if peer else None


def _ssl_setting(config: CrawlConfig) -> ssl.SSLContext | bool:
    if config.insecure:
        return False
    if config.ca_bundle:
        return ssl.create_default_context(cafile=config.ca_bundle)
    return True


def load_cookies(config: CrawlConfig) -> aiohttp.CookieJar:
    """A cookie jar holding --cookie values (for the seeds' hosts) and a cookies.txt file."""
    jar = aiohttp.CookieJar(unsafe=True)
    for seed in config.seeds:
        if config.cookies:
            jar.update_cookies(dict(config.cookies), response_url=URL(seed))
    if config.cookies_file:
        mozilla = http.cookiejar.MozillaCookieJar()
        try:
            mozilla.load(config.cookies_file, ignore_discard=True, ignore_expires=True)
        except (OSError, http.cookiejar.LoadError) as exc:
            raise ConfigError(f"cannot read cookies file {config.cookies_file}: {exc}") from None
        for cookie in mozilla:
            scheme = "https" if cookie.secure else "http"
            host = cookie.domain.lstrip(".")
            jar.update_cookies(
                {cookie.name: cookie.value or ""}, response_url=URL(f"{scheme}://{host}{cookie.path or '/'}")
            )
    return jar


class PinnedResolver(aiohttp.abc.AbstractResolver):
    """DNS with some names pinned to addresses (``--resolve host:ip``)."""

    def __init__(self, pinned: dict[str, str]) -> None:
        self._pinned = pinned
        self._dns = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self._pinned.get(host.lower())
        if address is None:
            return await self._dns.resolve(host, port, family)
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        await self._dns.close()


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
        self._by_origin: dict[tuple[str, str], tuple[URL | None, dict[str, str] | None]] = {}

    def for_url(self, url: URL) -> tuple[URL | None, dict[str, str] | None]:
        """The proxy to reach ``url`` through and headers for it; (None, None) to go direct."""
        key = (url.scheme, url.raw_authority)
        if key not in self._by_origin:
            proxy = self._proxies.get(url.scheme)
            if not proxy or urllib.request.proxy_bypass_environment(  # type: ignore[attr-defined]
                url.raw_authority, self._proxies
            ):
                self._by_origin[key] = (None, None)
            else:
                proxy_url = URL(proxy if "://" in proxy else f"http://{proxy}")
                auth = aiohttp.BasicAuth.from_url(proxy_url)
                headers = {"Proxy-Authorization": auth.encode()} if auth else None
                self._by_origin[key] = (proxy_url.with_user(None), headers)
        return self._by_origin[key]


class Fetcher:
    """Fetches URLs for the crawler; use as an async context manager.

    >>> async def example(config):
    ...     async with Fetcher(config) as fetcher:
    ...         outcome = await fetcher.fetch("http://127.0.0.1:8000/")
    """

    def __init__(self, config: CrawlConfig) -> None:
        self.config = config
        self._session: aiohttp.ClientSession | None = None
        self._proxies = EnvironmentProxies()

    async def __aenter__(self) -> Fetcher:
        resolver = PinnedResolver(dict(self.config.resolve)) if self.config.resolve else None
        connector = aiohttp.TCPConnector(
            limit=self.config.concurrency,
            ttl_dns_cache=300,
            resolver=resolver,
            ssl=_ssl_setting(self.config),
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(
                total=None,
                sock_connect=self.config.connect_timeout,
                sock_read=self.config.timeout,
            ),
            headers={
                "User-Agent": self.config.user_agent,
                "Accept-Encoding": "gzip, deflate",
                "Accept": "text/html,application/xhtml+xml,*/*;q=0.8",
                **dict(self.config.headers),
            },
            cookie_jar=load_cookies(self.config),
            # Proxies come from EnvironmentProxies: aiohttp's trust_env re-reads the
            # environment and ~/.netrc in a thread for every request.
            trust_env=False,
            max_line_size=MAX_HEADER_BYTES,
            max_field_size=MAX_HEADER_BYTES,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the session and its connections; safe to call twice."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def fetch(self, url: str) -> FetchOutcome:
        """Fetch ``url`` with up to --max-tries tries; never raises for network trouble.

        Connection errors, timeouts, 5xx and 429 are retried with backoff
        (Retry-After honoured, bounded). Cancellation propagates at once.
        """
        tries = 0
        error = None
        capture = None
        while tries < self.config.max_tries:
            tries += 1
            retry_after = None
            try:
                capture = await self.fetch_once(url)
            except FetchError as exc:
                error = exc.why
                if not exc.retryable:
                    break
            else:
                if capture.status not in RETRY_STATUSES:
                    return FetchOutcome(capture, tries)
                error = f"HTTP {capture.status}"
                retry_after = parse_retry_after(capture.header("retry-after"))
            if tries < self.config.max_tries:
                if capture is not None:
                    capture.body.close()
                    capture = None
                await asyncio.sleep(
                    retry_delay(tries, self.config.retry_base_delay, retry_after, self.config.max_retry_after)
                )
        return FetchOutcome(capture, tries, f"{error} after {tries} tries" if tries > 1 else error)

    async def fetch_robots(self, origin: str) -> tuple[int | None, bytes]:
        """Status and body of ``origin``/robots.txt (one try, redirects followed by hand)."""
        url = origin + "/robots.txt"
        for _ in range(5):
            try:
                capture = await self.fetch_once(url)
            except FetchError:
                return None, b""
            with capture.body:
                location = capture.header("location")
                if capture.status in REDIRECT_STATUSES and location:
                    url = str(URL(url).join(URL(location)))
                    continue
                body = decode_payload(capture.body.read(), capture.header("content-encoding"), 512 * 1024)
                return capture.status, body
        return None, b""

    async def fetch_once(self, url: str) -> Capture:
        """One GET of ``url``; raises FetchError when no response comes."""
        assert self._session is not None, "use Fetcher as an async context manager"
        date = datetime.now(UTC)
        body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        try:
            target_url = URL(url, encoded=True)
            proxy, proxy_headers = self._proxies.for_url(target_url)
            # Proxy credentials go in the CONNECT request for https, in the request
            # itself for http (never into the WARC: see request_headers below).
            https = target_url.scheme == "https"
            async with self._session.get(
                target_url,
                allow_redirects=False,
                proxy=proxy,
                proxy_headers=dict(proxy_headers) if proxy_headers and https else None,
                headers=proxy_headers if proxy_headers and not https else None,
            ) as response:
                ip = _peer_ip(response)
                length, hasher, truncated = await self._read_body(response, body)
                request = response.request_info
                target = request.url.raw_path_qs if request.url.raw_path_qs else "/"
        except TimeoutError:
            body.close()
            raise FetchError(url, "timed out") from None
        except aiohttp.ClientResponseError as exc:
            body.close()
            raise FetchError(url, f"bad response: {exc.message}", retryable=False) from None
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            body.close()
            raise FetchError(url, f"{type(exc).__name__}: {exc}".rstrip(": ")) from None
        except BaseException:
            body.close()
            raise
        body.seek(0)
        version = response.version
        request_headers = [(k, v) for k, v in request.headers.items() if k.lower() != "proxy-authorization"]
        if not any(k.lower() == "host" for k, _ in request_headers):
            request_headers.insert(0, ("Host", request.url.raw_authority))
        return Capture(
            url=url,
            date=date,
            request_line=f"{request.method} {target} HTTP/1.1",
            request_headers=request_headers,
            status_line=f"{response.status} {response.reason or ''}".rstrip(),
            http_version=f"HTTP/{version.major}.{version.minor}" if version else "HTTP/1.1",
            response_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers],
            body=body,
            body_length=length,
            payload_digest=sha1_digest(hasher),
            ip_address=ip,
            truncated=truncated,
        )

    async def _read_body(
        self, response: aiohttp.ClientResponse, body: IO[bytes]
    ) -> tuple[int, hashlib._Hash, str | None]:
        """Stream the body into ``body``; cut it at --max-file-size or the fetch's timeout."""
        hasher = hashlib.sha1()
        length = 0
        limit = self.config.max_file_size
        try:
            async with asyncio.timeout(self.config.timeout):
                async for chunk in response.content.iter_chunked(CHUNK):
                    if length + len(chunk) > limit:
                        chunk = chunk[: limit - length]
                        body.write(chunk)
                        hasher.update(chunk)
                        return length + len(chunk), hasher, "length"
                    body.write(chunk)
                    hasher.update(chunk)
                    length += len(chunk)
        except TimeoutError:
            # A body that never ends is kept as far as it came, marked truncated.
            return length, hasher, "time"
        except aiohttp.ClientPayloadError:
            if length == 0:
                raise
            return length, hasher, "disconnect"
        return length, hasher, None
