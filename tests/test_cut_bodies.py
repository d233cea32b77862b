"""A body the peer cuts short is a failed try: retried, then kept as a truncated failure, never
a capture that verify calls complete. Bodies cut on purpose by --max-file-size stay captures."""

from __future__ import annotations

import asyncio
import gzip
import random

import pytest
from conftest import manifest_rows
from raw_server import RawRequest, RawServer, reset
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.crawl_report import render_report
from archiver.mirror.build import build_mirror
from archiver.report import CUT_BODY
from archiver.verify.verifier import verify_snapshot

PAGE = b'<html><title>home</title><a href="/cut">cut</a></html>'
SENT = 5000
DECLARED = 20000


def page(writer: asyncio.StreamWriter, body: bytes, content_type: bytes = b"text/html") -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body
    )


async def cut_content_length_reset(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 20000\r\n\r\n" + b"x" * SENT
    )
    await writer.drain()
    await asyncio.sleep(0.05)
    reset(writer)


async def cut_content_length_close(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 20000\r\n\r\n" + b"x" * SENT
    )
    await writer.drain()
    writer.close()


async def cut_chunked(writer: asyncio.StreamWriter) -> None:
    # One whole chunk, then the connection ends without the last (zero-size) chunk.
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
    writer.write(b"%x\r\n" % SENT + b"x" * SENT + b"\r\n")
    await writer.drain()
    writer.close()


async def cut_gzip_reset(writer: asyncio.StreamWriter) -> None:
    # Still content-encoded as received (the fetcher never decompresses): the count is of raw bytes.
    body = gzip.compress(random.Random(14).randbytes(DECLARED))  # incompressible: longer than SENT
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body[:SENT]
    )
    await writer.drain()
    await asyncio.sleep(0.05)
    reset(writer)


async def cut_chunk_framing(writer: asyncio.StreamWriter, later: bool = True) -> None:
    # One whole chunk, then (in a later packet, or the same) a chunk size that is no number.
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
    writer.write(b"%x\r\n" % SENT + b"x" * SENT + b"\r\n")
    if later:
        await writer.drain()
        await asyncio.sleep(0.05)
    writer.write(b"zz\r\nmore\r\n0\r\n\r\n")


async def cut_chunk_framing_at_once(writer: asyncio.StreamWriter) -> None:
    await cut_chunk_framing(writer, later=False)


async def stall(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 20000\r\n\r\n" + b"x" * SENT
    )
    await writer.drain()
    await asyncio.sleep(30)  # the rest never comes: the fetch's timeout ends it


CUTS = {
    "content-length then reset": (cut_content_length_reset, "disconnect"),
    "content-length then close": (cut_content_length_close, "disconnect"),
    "chunked without its last chunk": (cut_chunked, "disconnect"),
    "gzip body then reset": (cut_gzip_reset, "disconnect"),
    "chunk framing broken half way": (cut_chunk_framing, "unspecified"),
    "chunk framing broken with the head": (cut_chunk_framing_at_once, "unspecified"),
    "body stops until the timeout": (stall, "time"),
}


@pytest.fixture
async def cutting_server():
    servers: list[RawServer] = []

    async def start(cut):
        async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
            if request.path == "/":
                page(writer, PAGE)
            elif request.path == "/cut":
                await cut(writer)
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")

        server = await RawServer(handler).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.mark.parametrize("kind", CUTS)
async def test_a_cut_body_is_retried_then_kept_as_a_failure_verify_reports(kind, cutting_server, run_crawl):
    cut, truncated = CUTS[kind]
    server = await cutting_server(cut)
    result = await run_crawl(server.url("/"), max_tries=3, timeout=1.0)
    # A body cut by the connection or the clock is a failed try, retried like a connection error;
    # one whose framing broke comes back broken alike, as a broken head does: one try.
    tries = 1 if truncated == "unspecified" else 3
    assert server.hits("/cut") == tries
    row = manifest_rows(result.snapshot.root)[server.url("/cut")]
    assert row.outcome == "failed" and row.tries == tries
    assert row.truncated and row.status == 200 and row.length == SENT
    assert f"body cut short after {SENT}" in row.reason
    assert ("timeout" in row.reason) == (truncated == "time")
    assert ("framing" in row.reason) == (truncated == "unspecified")
    assert row.warc_file, "the last try is kept as a record"
    with open(result.snapshot.warc_dir / row.warc_file, "rb") as f:
        f.seek(row.warc_offset)
        record = next(iter(ArchiveIterator(f)))
        assert record.rec_headers.get_header("WARC-Truncated") == truncated
    assert any(url == server.url("/cut") for url, _ in result.totals["errors"])
    assert "body cut short" in render_report(result.totals, result.stats)
    build_mirror(result.snapshot.root)
    index = (result.snapshot.root / "index.html").read_text()
    assert server.url("/cut") in index and "body cut short" in index
    report = verify_snapshot(result.snapshot.root)
    assert not report.ok and report.counts[CUT_BODY] == 1


async def test_a_body_cut_once_then_whole_is_a_capture(cutting_server, run_crawl):
    tries = []

    async def cut_then_whole(writer: asyncio.StreamWriter) -> None:
        tries.append(1)
        if len(tries) == 1:
            await cut_content_length_reset(writer)
        else:
            page(writer, b"y" * DECLARED, b"text/plain")

    server = await cutting_server(cut_then_whole)
    result = await run_crawl(server.url("/"), max_tries=3)
    row = manifest_rows(result.snapshot.root)[server.url("/cut")]
    assert row.outcome == "fetched" and row.tries == 2 and row.length == DECLARED and not row.truncated
    assert verify_snapshot(result.snapshot.root).ok


async def test_a_body_cut_by_max_file_size_stays_a_declared_capture(site, run_crawl):
    site.page("/", links=["/big"])
    site.file("/big", b"z" * 50_000, "application/octet-stream")
    await site.start()
    result = await run_crawl(site.url("/"), max_file_size=10_000)
    row = manifest_rows(result.snapshot.root)[site.url("/big")]
    assert row.outcome == "fetched" and row.truncated and row.length == 10_000 and row.tries == 1
    assert site.hits["/big"] == 1
    build_mirror(result.snapshot.root)
    assert verify_snapshot(result.snapshot.root).ok
