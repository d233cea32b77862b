"""The fetcher's pool of keep-alive connections, which never lets bytes that came unasked answer
a request.

A server may send bytes after an answer: a Content-Length too small, bytes after the last
chunk, or an answer of its own shaped for the next request on the connection. RFC 9112
(section 6.3, after RFC 7230 section 3.3.3) forbids a client to take them for the answer
to a later request. aiohttp closes a connection whose answer came with bytes after it in
the same read; bytes that come later, while the connection waits in the pool, it parses
and keeps, and the next request sent on it gets them as its answer. Here such a
connection is closed as soon as they come, and the pool never hands it out.
"""

from __future__ import annotations

import functools
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ConnectionKey


class _WatchedHandler(ResponseHandler):
    """aiohttp's protocol of a connection, closing it when bytes come while it is idle."""

    idle = False
    """True while the connection waits in the pool, from its last answer to its next request."""

    def set_response_params(self, **params: Any) -> None:
        self.idle = False  # a request is about to be sent: what comes next is its answer
        super().set_response_params(**params)

    def data_received(self, data: bytes) -> None:
        if self.idle and data:
            # Nothing was asked: none of it is an answer. Closed, the pool drops the connection.
            if self.transport is not None:
                self.transport.close()
            return
        super().data_received(data)


class WatchedConnector(aiohttp.TCPConnector):
    """A TCPConnector whose idle connections are closed when bytes come on them (module docstring)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # aiohttp makes each connection's protocol with this factory (its own, with our class).
        self._factory = functools.partial(_WatchedHandler, loop=self._loop)  # type: ignore[assignment]

    def _release(self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False) -> None:
        if isinstance(protocol, _WatchedHandler):
            protocol.idle = True  # its answer is whole: from now on, until the next request
        super()._release(key, protocol, should_close=should_close)
