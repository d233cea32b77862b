"""The fetcher's pool of keep-alive connections: it never lets bytes that came unasked answer a
request, and it tells a request sent on a reused connection from one sent on a new connection.

A server may send bytes after an answer (a Content-Length too small, bytes after the last
chunk, an answer of its own shaped for the next request), which RFC 9112 (section 6.3)
forbids a client to take for the answer to a later request. Those that come with the answer
are its parser's to drop (answer_parser.py); those that come later, while the connection
waits in the pool, aiohttp parsed and kept, and the next request sent on it got them as its
answer. Here they are dropped, whenever they come, and the connection is closed: the pool
never hands it out.

A server may also close a kept-alive connection as a request goes out on it (a short
keep-alive timeout, or a close after each answer without ``Connection: close``): that
request was never taken, and RFC 9112 (section 9.3.1) lets a client send it again on a
new connection, as browsers do. ``ConnectionUse`` tells the fetcher whether that is
what happened, and asks the pool for a new connection for the request sent again.

Each answer is read by an AnswerParser (answer_parser.py), which wraps aiohttp's parser of the
connection's protocol: heads read as Chromium reads them and bounded by their bytes, bodies
framed as Chromium frames them.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ConnectionKey

from archiver.crawling.answer_parser import AnswerParser

if TYPE_CHECKING:
    import asyncio

    from aiohttp.connector import Connection
    from aiohttp.tracing import Trace


class WatchedHandler(ResponseHandler):
    """aiohttp's protocol of a connection, closing it when bytes come while it is idle, and
    counting what it carried."""

    idle = False
    """True while the connection waits in the pool, from its last answer to its next request."""
    released = 0
    """Times the connection was handed back after a request: to the pool, or closed. One the
    pool hands out with this above 0 is a reused connection (a closed one is never handed out)."""
    received = 0
    """Bytes received since the current request went out."""
    broken = False
    """True if the current answer's body broke HTTP's framing: it ended there, cut short."""
    peer_ip: str | None = None
    """The IP address the connection reached, kept when it is made: a transport forgets it once
    closed, as it is by the time a server that closes after its answer is read from."""
    scheme = "http"
    port: int | None = None
    """The scheme and port of the URL of the request it carries (takes_headless())."""
    use: ConnectionUse | None = None
    """The ConnectionUse of the request it carries (None when no one watches that request): what
    is known of the answer once it is whole goes there, as the connection may carry the next
    request before the fetcher reads the answer's end."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.peer_ip = str(peer[0]) if peer else None
        super().connection_made(transport)

    def set_response_params(self, **params: Any) -> None:
        self.idle = False  # a request is about to be sent: what comes next is its answer
        self.received = 0
        self.broken = False
        super().set_response_params(**params)
        self._parser = AnswerParser(self._parser, self)  # type: ignore[assignment]

    def answer_trailers(self, trailers: list[bytes]) -> None:
        """Note the trailers that came after the answer's chunked body (chunked_framing.py)."""
        if self.use is not None:
            self.use.trailers = list(trailers)

    def eof_received(self) -> None:
        # An answer with no head shorter than what tells it from a head is whole now: parsed
        # here, as the connection is not lost yet (its parser's messages are dropped then).
        if isinstance(self._parser, AnswerParser) and self._parser.end_of_input():
            self.data_received(b"")
        super().eof_received()

    def data_received(self, data: bytes) -> None:
        if self.idle and data:
            # Nothing was asked: none of it is an answer. Closed, the pool drops the connection.
            if self.transport is not None:
                self.transport.close()
            return
        self.received += len(data)
        super().data_received(data)


@dataclass
class ConnectionUse:
    """The connection one request went out on, as the pool handed it out (see ``connection_use``)."""

    new_only: bool = False
    """True to have the request sent on a new connection, none from the pool."""
    reused: bool = False
    """True if the pool handed out a connection that had carried an earlier answer."""
    protocol: WatchedHandler | None = None
    """The connection's protocol; None until the pool hands one out."""
    trailers: list[bytes] = field(default_factory=list)
    """The lines that came after the answer's chunked body, its trailers (ChunkedFraming)."""

    @property
    def peer_ip(self) -> str | None:
        """The IP address the connection reached (None until the pool hands one out)."""
        return self.protocol.peer_ip if self.protocol is not None else None

    @property
    def answer_broken(self) -> bool:
        """True if the answer's body broke HTTP's framing half way (a chunk size that is no
        number): the body the fetcher read ends there, cut short."""
        return self.protocol is not None and self.protocol.broken

    @property
    def lost_before_answer_on_reuse(self) -> bool:
        """True if the request went out on a reused connection and not one byte of its answer
        came on it: the server had closed it, unasked, for requests to come (RFC 9112, 9.3.1)."""
        return self.reused and self.protocol is not None and self.protocol.received == 0


_current_use: ContextVar[ConnectionUse | None] = ContextVar("connection_use", default=None)


@contextlib.contextmanager
def connection_use(*, new_only: bool = False) -> Iterator[ConnectionUse]:
    """Watch the connection that requests sent from this task within the block go out on
    (WatchedConnector fills the ConnectionUse in); ``new_only``: on a new connection only.

    >>> with connection_use() as use:
    ...     pass  # session.get(url) on a session whose connector is a WatchedConnector
    >>> use.lost_before_answer_on_reuse
    False
    """
    use = ConnectionUse(new_only)
    token = _current_use.set(use)
    try:
        yield use
    finally:
        _current_use.reset(token)


class WatchedConnector(aiohttp.TCPConnector):
    """A TCPConnector whose idle connections are closed when bytes come on them, and which
    reports the connection it hands out to ``connection_use`` (module docstring)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # aiohttp makes each connection's protocol with this factory (its own, with our class).
        self._factory = functools.partial(WatchedHandler, loop=self._loop)  # type: ignore[assignment]

    async def connect(
        self, req: aiohttp.ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> Connection:
        """A connection for ``req``: one from the pool or a new one, a new one only when the
        task's ConnectionUse asks for it."""
        use = _current_use.get()
        while True:
            connection = await super().connect(req, traces, timeout)
            protocol = connection.protocol
            if isinstance(protocol, WatchedHandler):
                protocol.scheme, protocol.port, protocol.use = req.url.scheme, req.url.port, use
            if use is None or not isinstance(protocol, WatchedHandler):
                return connection
            reused = protocol.released > 0
            if use.new_only and reused:
                # An idle one from the pool: closed, so that the next one the pool holds or,
                # when it holds none, a new one is handed out. A pool holds few of a host's.
                connection.close()
                continue
            use.protocol, use.reused = protocol, reused
            return connection

    def _release(self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False) -> None:
        if isinstance(protocol, WatchedHandler):
            protocol.idle = True  # its answer is whole: from now on, until the next request
            protocol.released += 1
        super()._release(key, protocol, should_close=should_close)
