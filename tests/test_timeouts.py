"""--timeout bounds a whole try (connection, headers and body), and a try is one request."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import manifest_rows
from raw_server import RawRequest, RawServer

from archiver.scope import ROBOTS_UNREACHABLE

HOME = b'<html><title>home</title><a href="/slow">slow</a></html>'


async def headers_a_byte_at_a_time(writer: asyncio.StreamWriter) -> None:
    # Never silent for as long as the timeout: a per-read timeout would never fire.
    writer.write(b"HTTP/1.1 200 OK\r\n")
    for byte in b"X-Slow: " + b"a" * 200:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.3)


async def no_answer(writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(120)


async def status_line_then_nothing(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
    await writer.drain()
    await asyncio.sleep(120)


SLOW = {
    "headers a byte at a time": headers_a_byte_at_a_time,
    "no answer at all": no_answer,
    "status line, then nothing": status_line_then_nothing,
}


def answer(writer: asyncio.StreamWriter, body: bytes, status: bytes = b"200 OK") -> None:
    writer.write(
        b"HTTP/1.1 " + status + b"\r\nConnection: close\r\nContent-Type: text/html\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )


@pytest.fixture
async def servers():
    started: list[RawServer] = []

    async def start(handler):
        server = await RawServer(handler).start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.close()


@pytest.mark.parametrize("kind", SLOW)
async def test_a_slow_answer_is_cut_at_the_timeout_with_one_request_a_try(kind, servers, run_crawl):
    slow = SLOW[kind]

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/slow":
            await slow(writer)
        elif request.path == "/":
            answer(writer, HOME)
        else:
            answer(writer, b"", b"404 Not Found")

    server = await servers(handler)
    started = time.monotonic()
    result = await run_crawl(server.url("/"), timeout=1.0, max_tries=1)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, f"one try with --timeout 1 took {elapsed:.1f} s"
    assert server.hits("/slow") == 1, "a try is one request"
    row = manifest_rows(result.snapshot.root)[server.url("/slow")]
    assert row.outcome == "failed" and row.tries == 1
    assert row.reason == "no response within the 1 s timeout"


async def test_each_try_is_one_request_and_all_are_bounded(servers, run_crawl):
    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/slow":
            await headers_a_byte_at_a_time(writer)
        elif request.path == "/":
            answer(writer, HOME)
        else:
            answer(writer, b"", b"404 Not Found")

    server = await servers(handler)
    started = time.monotonic()
    await run_crawl(server.url("/"), timeout=1.0, max_tries=3)
    assert time.monotonic() - started < 3 * 3.0
    assert server.hits("/slow") == 3


async def test_a_robots_txt_sent_a_byte_at_a_time_holds_its_host_no_longer_than_the_timeout(
    servers, run_crawl
):
    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
        if request.path == "/robots.txt":
            await headers_a_byte_at_a_time(writer)
        else:
            answer(writer, b"<title>home</title>")

    server = await servers(handler)
    started = time.monotonic()
    result = await run_crawl(server.url("/"), timeout=1.0, max_tries=1)
    assert time.monotonic() - started < 3.0
    assert server.hits("/robots.txt") == 1
    # No whole answer: a robots.txt out of reach keeps its host out (RFC 9309).
    assert manifest_rows(result.snapshot.root)[server.url("/")].reason == ROBOTS_UNREACHABLE
