"""The fetcher owns the network: one pooled aiohttp session, raw bodies, one try at a time.

``Fetch`` is the seam the crawler fetches through, one method as httpx's
transport is: ``Fetcher`` (HTTP) implements it, and so can a fetcher that
drives a browser and sends the browser's own requests through a Fetcher.

Redirects are not followed here (the crawler records each hop), bodies are not
decompressed (the WARC keeps them as sent), and each body streams into a
spooled temporary file, so memory per response is bounded (received.py reads
the answer as it comes).

A try is one request, bounded as a whole by --timeout (connection, headers
and body); a request that a reused connection lost before its answer began,
which no server took, is sent again within the try (see Fetcher.fetch_once).
Whether a try failed transiently (no answer, a body cut short, a status in
--retry-on) and when to try again is decided here; the waiting is the
crawler's, which puts the URL back in its queue meanwhile, so a URL waiting
out a backoff holds neither a worker nor its host's slot.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Protocol

import aiohttp
import aiohttp.abc
from aiohttp.http_exceptions import HttpProcessingError

from archiver.config import CrawlConfig
from archiver.crawling.answer_heads import SWITCHING_PROTOCOLS
from archiver.crawling.answer_parser import MAX_HEAD_BYTES, MAX_HEADERS
from archiver.crawling.connections import WatchedConnector, connection_use
from archiver.crawling.cookie_rules import request_context
from archiver.crawling.cookies import CookiesInOrder, SiteCookieJar
from archiver.crawling.failures import UNASKED_UPGRADE, no_answer
from archiver.crawling.fetch_request import FetchRequest, request_url
from archiver.crawling.given_cookies import load_cookies
from archiver.crawling.network import EnvironmentProxies, PinnedResolver, ssl_setting
from archiver.crawling.received import Received, check_single_fields, peer_ip
from archiver.crawling.tries import (
    BROKEN_FOR_GOOD,
    REFUSED,
    counted,
    cut_reason,
    parse_retry_after,
    retry_delay,
)
from archiver.errors import FetchError, NoSuchHost
from archiver.header_order import in_chromium_order, origin_place
from archiver.referrer_policy import referer
from archiver.request_headers import (
    ACCEPT_DOCUMENT,
    ACCEPT_ENCODING,
    ACCEPT_LANGUAGE,
    UPGRADE_INSECURE_REQUESTS,
    Credentials,
    is_navigation,
    with_negotiation,
)
from archiver.warc.capture import Capture

SPOOL_IN_MEMORY = 1024 * 1024
"""Bodies up to this size stay in RAM; larger ones spill to a temporary file."""
KEEPALIVE_SECONDS = 4.0


@dataclass(frozen=True)
class FetchOutcome:
    """What one try of a URL gave."""

    capture: Capture | None
    """The response received, or None if none came (or another try is due)."""
    tries: int
    """Tries made so far, this one included."""
    error: str | None = None
    """Why the fetch failed: no response, a body cut short, or a --retry-on status."""
    retry_in: float | None = None
    """Seconds to wait before the next try, when this one failed transiently and tries
    remain (capture is then None); None when this outcome is final."""
    no_such_host: bool = False
    """No answer came because the host has no address or no name (errors.NoSuchHost): no server
    is there, to answer this URL or to have robots.txt rules."""


class Fetch(Protocol):
    """What the crawler needs to fetch a URL."""

    async def fetch(self, request: FetchRequest, tries: int = 0) -> FetchOutcome:
        """One try of ``request`` (redirects not followed) after ``tries`` earlier ones, sent with
        the headers and cookies a browser would send it with (see FetchRequest); never raises
        for network trouble.

        A failure is an outcome with an error (and no capture if none came); one
        whose ``retry_in`` is set asks to be tried again that much later. Cancelled,
        the fetch is abandoned and nothing is returned.
        """


class _SendOnNewConnection(Exception):
    """A request a reused connection lost before one byte of its answer came, or whose answer's
    head it gave broken: to send again, on a new connection."""


class Fetcher:
    """Fetches URLs for the crawler; use as an async context manager.

    >>> async def example(config):
    ...     async with Fetcher(config) as fetcher:
    ...         outcome = await fetcher.fetch(FetchRequest("http://127.0.0.1:8000/"))
    """

    def __init__(self, config: CrawlConfig, resolver: aiohttp.abc.AbstractResolver | None = None) -> None:
        """``resolver``: what host names are resolved with, but those --resolve pins and
        ``localhost`` names (network.PinnedResolver); the system's getaddrinfo when None."""
        self.config = config
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None
        self._proxies = EnvironmentProxies()
        self.credentials = Credentials.build(
            config.seeds,
            extra_hosts=config.credentials_hosts,
            headers=config.headers,
            user=config.http_user,
            password=config.http_password,
        )
        self._retry_on = frozenset(config.retry_on)
        self._defaults = (
            ("User-Agent", config.user_agent),
            ("Accept", ACCEPT_DOCUMENT),
            ("Accept-Encoding", ACCEPT_ENCODING),
            ("Accept-Language", ACCEPT_LANGUAGE),
        )
        """The headers of every request that gives none of its own (request_headers())."""

    async def __aenter__(self) -> Fetcher:
        resolver = PinnedResolver(dict(self.config.resolve), self._resolver)
        connector = WatchedConnector(
            limit=self.config.concurrency,
            # A connection idle this long is not reused: servers close idle ones (Apache
            # after 5 s), and a request sent on one as it closes is a failed try.
            keepalive_timeout=KEEPALIVE_SECONDS,
            ttl_dns_cache=300,
            resolver=resolver,
            ssl=ssl_setting(self.config),
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            # The whole try is bounded by --timeout in fetch_once(); the connection alone,
            # DNS included, by --connect-timeout within it.
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.config.connect_timeout),
            # No default headers: each request's are all request_headers()'s, in Chromium's order
            # (aiohttp would write a session's first, in its own order).
            cookie_jar=load_cookies(self.config, self.credentials.hosts),
            request_class=CookiesInOrder,
            # Proxies come from EnvironmentProxies: aiohttp's trust_env re-reads the
            # environment and ~/.netrc in a thread for every request.
            trust_env=False,
            # A head is bounded by its bytes, as browsers bound it (answer_parser.MAX_HEAD_BYTES),
            # never by one of its lines or its count of fields.
            max_line_size=MAX_HEAD_BYTES,
            max_field_size=MAX_HEAD_BYTES,
            max_headers=MAX_HEADERS,
        )
        # aiohttp sends a request a second time, silently, whenever its connection closes
        # before the answer, even a new connection whose server took the request: a try
        # must be one request. fetch_once() sends again only what a reused connection lost
        # unanswered. aiohttp has no public switch; its own test client does the same.
        self._session._retry_connection = False
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def cookies(self) -> SiteCookieJar | None:
        """The crawl's cookie jar, which a rendered page's browser shares (None until the session
        opens): what the browser sends joins it, what it holds the browser gets."""
        jar = self._session.cookie_jar if self._session is not None else None
        return jar if isinstance(jar, SiteCookieJar) else None

    async def close(self) -> None:
        """Close the session and its connections; safe to call twice."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def fetch(self, request: FetchRequest, tries: int = 0) -> FetchOutcome:
        """One try of ``request`` (``tries``: those made before); never raises for network
        trouble. Cancellation propagates at once.

        A try that failed transiently (no response, a body the peer cut short but not where
        its framing broke, a --retry-on status) while tries remain gives ``retry_in``: the caller waits
        that long (the server's Retry-After, bounded, or a backoff) and calls again
        with the tries made. The last try's response is kept even when it failed.
        """
        tries += 1
        last = tries >= self.config.max_tries
        try:
            site_for_cookies = request.site_for_cookies or request.referrer
            with request_context(site_for_cookies, not request.requisite, request.credentials):
                capture = await self.fetch_once(request)
        except FetchError as exc:
            if exc.retryable and not last:
                return FetchOutcome(None, tries, exc.why, self._backoff(tries, None))
            return FetchOutcome(
                None, tries, counted(exc.why, tries), no_such_host=isinstance(exc, NoSuchHost)
            )
        if capture.status == SWITCHING_PROTOCOLS:
            # No upgrade was asked for: past the answer the connection speaks another protocol,
            # so there is no HTTP response to keep. Browsers fail the request; so does the crawl.
            capture.body.close()
            return FetchOutcome(None, tries, counted(UNASKED_UPGRADE, tries))
        status_error = f"HTTP {capture.status}" if capture.status in self._retry_on else None
        error = cut_reason(capture, self.config.timeout) or status_error
        if error is None:
            return FetchOutcome(capture, tries, self._refusal(request, capture.status))
        if last or capture.truncated in BROKEN_FOR_GOOD:
            return FetchOutcome(capture, tries, counted(error, tries))
        retry_after = parse_retry_after(capture.header("retry-after")) if status_error else None
        capture.body.close()
        return FetchOutcome(None, tries, error, self._backoff(tries, retry_after))

    def _refusal(self, request: FetchRequest, status: int) -> str | None:
        """Why an answer refusing access failed the fetch (None for any other answer)."""
        what = REFUSED.get(status)
        if what is None:
            return None
        if status == 401:
            if "Authorization" in self.credentials.headers_for(request.url, request.credentials):
                what += " (the credentials sent were refused)"
            elif not request.credentials:
                what += " (asked as a browser asks it: without credentials)"
            elif self.credentials.auth:
                what += " (credentials go only to the seeds' hosts: see --credentials-host)"
            else:
                what += " (see --http-user)"
        return f"HTTP {status}: {what}"

    def _backoff(self, tries: int, retry_after: float | None) -> float:
        return retry_delay(tries, self.config.retry_base_delay, retry_after, self.config.max_retry_after)

    def request_headers(self, request: FetchRequest) -> dict[str, str]:
        """Headers of ``request`` (but Host and Cookie, aiohttp's), in Chromium's order: those a
        browser chose its answer with and Upgrade-Insecure-Requests for a navigation, its host's
        credentials (a --header wins over the browser's), a Referer (as its referrer policy
        gives it), its conditions, and the crawl's User-Agent, Accept-Encoding, Accept-Language
        and a page's Accept where none of those gave one."""
        url = request.url
        pairs = request.negotiation
        if is_navigation(request.requisite, pairs):
            pairs += (UPGRADE_INSECURE_REQUESTS,)
        headers = with_negotiation(self.credentials.headers_for(url, request.credentials), pairs)
        headers = with_negotiation(headers, self._defaults)
        sent_referer = referer(request.hop_referrer or request.referrer, url, request.referrer_policy)
        if sent_referer is not None:
            headers["Referer"] = sent_referer
        headers.update(request.conditions or {})
        return in_chromium_order(headers, origin_place(request.negotiation))

    async def fetch_once(self, request: FetchRequest) -> Capture:
        """One GET of ``request``, bounded as a whole by --timeout; raises FetchError when no
        response comes.

        A request that a reused connection lost before one byte of its answer came was
        taken by no server: it is sent once more at once, on a new connection, within
        the same try (RFC 9112, section 9.3.1; browsers do the same). A connection
        lost on a new connection is the try's failure: a try is one request a server
        may have taken. An answer whose head is broken (past MAX_HEAD_BYTES, or one no parser
        reads) fails the fetch for good, not to be tried again: it comes back the same.

        A body the peer cut short is kept as far as it came, with ``truncated`` saying
        why (disconnect, or time when the timeout ended it), as is one cut at
        --max-file-size, or at the request's max_bytes (truncated: length).
        """
        assert self._session is not None, "use Fetcher as an async context manager"
        deadline = asyncio.get_running_loop().time() + self.config.timeout
        try:
            return await self._exchange(request, deadline, new_connection=False)
        except _SendOnNewConnection:
            return await self._exchange(request, deadline, new_connection=True)

    async def _exchange(self, request: FetchRequest, deadline: float, *, new_connection: bool) -> Capture:
        """One request of ``request`` and its answer (fetch_once); ``new_connection``: sent on a new
        connection. Raises _SendOnNewConnection when a reused connection lost it unanswered or gave
        its answer a broken head."""
        assert self._session is not None
        url = request.url
        date = datetime.now(UTC)
        body_limit = min(request.max_bytes or self.config.max_file_size, self.config.max_file_size)
        body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        received = Received()
        try:
            target_url = request_url(url)
            proxy, proxy_headers = self._proxies.for_url(target_url)
            headers = self.request_headers(request)
            # Proxy credentials go in the CONNECT request for https, in the request
            # itself for http (never into the WARC: see withheld()).
            https = target_url.scheme == "https"
            if proxy_headers and not https:
                headers.update(proxy_headers)
            try:
                with connection_use(new_only=new_connection) as received.connection:
                    async with (
                        asyncio.timeout_at(deadline),
                        self._session.get(
                            target_url,
                            allow_redirects=False,
                            proxy=proxy,
                            proxy_headers=dict(proxy_headers) if proxy_headers and https else None,
                            headers=headers or None,
                        ) as response,
                    ):
                        received.response = response
                        received.ip = received.connection.peer_ip or peer_ip(response)
                        check_single_fields(url, response)
                        await received.read_body(response, body, body_limit)
            except TimeoutError:
                if received.response is None:
                    raise FetchError(
                        url, f"no response within the {self.config.timeout:g} s timeout"
                    ) from None
                received.truncated = "time"  # a body still coming (or stalled) at the deadline
        except aiohttp.ClientResponseError as exc:
            body.close()
            if not isinstance(exc.__cause__, HttpProcessingError):  # a proxy's refusal: it may pass
                raise FetchError(url, f"bad response: {exc.message}") from None
            if received.on_reused_connection and not new_connection:
                # Perhaps bytes an earlier answer left on the connection: sent again on a new one.
                raise _SendOnNewConnection from None
            # A head past MAX_HEAD_BYTES, or one no parser reads, comes back the same when asked
            # again: the fetch fails at once, its tries left unspent.
            raise FetchError(url, f"bad response: {exc.message}", retryable=False) from None
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            body.close()
            lost = isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError))
            if lost and received.lost_on_reuse and not new_connection:
                raise _SendOnNewConnection from None
            raise no_answer(url, exc) from None
        except BaseException:
            body.close()
            raise
        body.seek(0)
        return received.capture(url, date, body, self.credentials.given_cookies)
