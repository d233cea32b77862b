"""A TCP proxy that holds every byte coming back from the server for a fixed delay (netem's stand-in).

    python3 benchmarks/delayproxy.py --listen 10.203.0.2:8080 --upstream 127.0.0.1:8080 --delay-ms 50

Used where the kernel has no netem qdisc. Requests pass through at once; each chunk
of a response is delivered ``delay`` after it left the server, in order, so every
request/response round trip takes ``delay`` longer, whatever the concurrency. Unlike
netem it does not delay the TCP handshake, nor make TCP's congestion window grow
over a slow round trip (immaterial for responses of a few tens of KB).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from server import ServerError, stop_process

CHUNK = 256 * 1024
START_TIMEOUT = 10.0


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Request direction: forward at once; pass the client's end of stream on."""
    while chunk := await source.read(CHUNK):
        sink.write(chunk)
        await sink.drain()
    if sink.can_write_eof():
        sink.write_eof()


async def _copy_delayed(source: asyncio.StreamReader, sink: asyncio.StreamWriter, delay: float) -> None:
    """Response direction: deliver each chunk ``delay`` seconds after it arrived, in arrival order."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, chunk = await pending.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not chunk:
                return
            sink.write(chunk)
            await sink.drain()

    delivery = asyncio.create_task(deliver())
    try:
        while chunk := await source.read(CHUNK):
            pending.put_nowait((loop.time() + delay, chunk))
    finally:
        pending.put_nowait((loop.time() + delay, b""))  # the server's close arrives late too
        await delivery


async def _handle(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream: tuple[str, int],
    delay: float,
) -> None:
    try:
        server_reader, server_writer = await asyncio.open_connection(*upstream)
    except OSError:
        client_writer.close()
        return
    try:
        # A side that goes away ends its copy with an error: nothing to do but close both.
        await asyncio.gather(
            _copy(client_reader, server_writer),
            _copy_delayed(server_reader, client_writer, delay),
            return_exceptions=True,
        )
    finally:
        for writer in (server_writer, client_writer):
            writer.close()


async def serve(listen: tuple[str, int], upstream: tuple[str, int], delay_ms: float) -> None:
    """Accept connections on ``listen`` and relay them to ``upstream`` until killed."""
    server = await asyncio.start_server(
        lambda reader, writer: _handle(reader, writer, upstream, delay_ms / 1000),
        *listen,
        backlog=4096,
        reuse_address=True,
    )
    async with server:
        await server.serve_forever()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _accepts(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def running_delay_proxy(
    listen: tuple[str, int], upstream: tuple[str, int], delay_ms: float, netns: str | None = None
) -> Iterator[int]:
    """Run the proxy as a process of its own (inside ``netns`` if given); yields its pid once it accepts."""
    command = [
        sys.executable,
        __file__,
        "--listen",
        f"{listen[0]}:{listen[1]}",
        "--upstream",
        f"{upstream[0]}:{upstream[1]}",
        "--delay-ms",
        str(delay_ms),
    ]
    if netns:
        command = ["ip", "netns", "exec", netns, *command]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while not _accepts(listen):
                if process.poll() is not None:
                    errors.seek(0)
                    tail = errors.read().decode(errors="replace").strip()[-300:]
                    raise ServerError(f"delay proxy exited with {process.returncode}: {tail}")
                if time.monotonic() > deadline:
                    raise ServerError(f"delay proxy did not listen on {listen[0]}:{listen[1]}")
                time.sleep(0.05)
            yield process.pid
        finally:
            stop_process(process, polite=signal.SIGTERM)


def main() -> int:
    """Command line: run the proxy in the foreground."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=_address, required=True, help="HOST:PORT to accept on")
    parser.add_argument("--upstream", type=_address, required=True, help="HOST:PORT of the server")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="delay of the responses (default 50)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.listen, args.upstream, args.delay_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
