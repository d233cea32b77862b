"""A raw HTTP/1.1 server on 127.0.0.1 for misbehaving peers: it writes bytes, stalls, resets.

aiohttp's test server always speaks proper HTTP; a peer that stops half way through
a body, or sends its headers a byte a second, needs the socket itself.

>>> async def handler(request, writer):  # request: RawRequest, writer: asyncio.StreamWriter
...     writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RawRequest:
    """One request as the server read it."""

    path: str
    headers: dict[str, str]
    """Header names lowercased."""
    at: float = field(default_factory=time.monotonic)


RawHandler = Callable[[RawRequest, asyncio.StreamWriter], Awaitable[bool | None]]


def reset(writer: asyncio.StreamWriter) -> None:
    """Drop the connection with a TCP reset (RST), as a crashed peer or a middlebox does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class RawServer:
    """Serves each request with ``handler(request, writer)``; the connection closes after it
    unless the handler returns True (keep-alive). Records every request in ``requests``."""

    def __init__(self, handler: RawHandler) -> None:
        self.handler = handler
        self.requests: list[RawRequest] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.host = "127.0.0.1"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> RawServer:
        """Listen on ``host`` (any loopback address) and ``port`` (0: one free)."""
        self.host = host
        self._server = await asyncio.start_server(self._serve, host, port)
        return self

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def url(self, path: str = "/") -> str:
        port = "" if self.port == 80 else f":{self.port}"
        return f"http://{self.host}{port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for request in self.requests if request.path == path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                request = RawRequest(path, headers)
                self.requests.append(request)
                keep_alive = await self.handler(request, writer)
                if writer.transport.is_closing():
                    return
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None
