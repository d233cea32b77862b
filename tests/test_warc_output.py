"""What the crawl writes to WARC: the records, their headers and payloads, rollover, CDXJ."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import gzip
import hashlib
import io
import json
import random
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

import pytest
from aiohttp import web
from conftest import manifest_rows
from raw_server import RawRequest, RawServer
from warcio.archiveiterator import ArchiveIterator

from archiver.store.manifest import Manifest
from archiver.store.payloads import StoredPayloads
from archiver.store.rows import ManifestRow
from archiver.store.stored import payload_record
from archiver.warc import cdxj
from archiver.warc.capture import Capture
from archiver.warc.files import WarcFiles
from archiver.warc.reader import PARSE_ERRORS, WarcReader


def records(snapshot: Path) -> list:
    """(file name, offset, record type, headers, http headers, raw payload) of every record."""
    found = []
    for path in sorted((snapshot / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            iterator = ArchiveIterator(f, no_record_parse=False)
            for record in iterator:
                payload = record.raw_stream.read()
                found.append(
                    (
                        path.name,
                        iterator.get_record_offset(),
                        record.rec_type,
                        record.rec_headers,
                        record.http_headers,
                        payload,
                    )
                )
    return found


def response_for(snapshot: Path, url: str):
    for name, offset, kind, headers, http, payload in records(snapshot):
        if kind in ("response", "revisit") and headers.get_header("WARC-Target-URI") == url:
            return name, offset, kind, headers, http, payload
    raise AssertionError(f"no response for {url}")


async def test_request_response_pairs_follow_the_rules(site, run_crawl):
    site.page("/", links=["/a"])
    site.page("/a")
    await site.start()
    result = await run_crawl(site.url("/"))
    found = records(result.snapshot.root)
    assert found[0][2] == "warcinfo"
    responses = {r[3].get_header("WARC-Record-ID"): r for r in found if r[2] == "response"}
    requests = [r for r in found if r[2] == "request"]
    assert len(responses) == len(requests) == 4  # the two pages, robots.txt and /sitemap.xml (404s)
    for _, _, _, headers, http, _ in requests:
        response = responses[headers.get_header("WARC-Concurrent-To")]
        assert response[3].get_header("WARC-Target-URI") == headers.get_header("WARC-Target-URI")
        assert response[3].get_header("WARC-Date") == headers.get_header("WARC-Date")
        assert response[3].get_header("WARC-IP-Address") == "127.0.0.1"
        assert http.protocol == "GET"
    for _, _, _, headers, _, _ in found:
        assert headers.protocol == "WARC/1.1"
        assert headers.get_header("WARC-Block-Digest").startswith("sha1:")
    assert found[0][3].get_header("WARC-Payload-Digest") is None


async def test_every_record_names_the_address_of_a_server_that_closes_after_answering(run_crawl):
    """A server that sends its whole answer and closes (Connection: close, one write) has
    gone by the time the answer is read: its address is kept from when the connection was made."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> None:
        body = b"<a href='/a'>a</a>" if request.path == "/" else b"page"
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )

    server = await RawServer(handler).start()
    try:
        result = await run_crawl(server.url("/"))
    finally:
        await server.close()
    found = [r for r in records(result.snapshot.root) if r[2] in ("response", "revisit", "request")]
    assert len(found) == 8  # /, /a, robots.txt and sitemap.xml
    assert all(r[3].get_header("WARC-IP-Address") == "127.0.0.1" for r in found), [
        (r[2], r[3].get_header("WARC-Target-URI")) for r in found if not r[3].get_header("WARC-IP-Address")
    ]


async def test_gzip_and_chunked_body_stored_as_received(site, run_crawl):
    html = b"<title>zipped</title><a href='/inside'>in</a>" + b" " * 5000
    sent = gzip.compress(html)

    async def zipped(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Encoding": "gzip"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(sent), 100):
            await response.write(sent[start : start + 100])
        await response.write_eof()
        return response

    site.handler("/", zipped)
    site.page("/inside")
    await site.start()
    result = await run_crawl(site.url("/"))
    _, _, _, headers, http, payload = response_for(result.snapshot.root, site.url("/"))
    assert payload == sent  # still gzip, de-chunked
    assert http.get_header("Content-Encoding") == "gzip"
    assert http.get_header("Transfer-Encoding") is None
    assert http.get_header("X-Archiver-Transfer-Encoding") == "chunked"
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/inside")].outcome == "fetched"  # links found in the decoded body
    assert rows[site.url("/")].title == "zipped"


async def test_identical_body_becomes_revisit(site, run_crawl):
    body = b"\x89PNG same bytes" * 100
    site.page("/", body='<img src="/one.png"><img src="/two.png">')
    site.file("/one.png", body, "image/png")
    site.file("/two.png", body, "image/png")
    await site.start()
    result = await run_crawl(site.url("/"), concurrency=1)
    one = response_for(result.snapshot.root, site.url("/one.png"))
    two = response_for(result.snapshot.root, site.url("/two.png"))
    assert {one[2], two[2]} == {"response", "revisit"}
    original, revisit = (one, two) if one[2] == "response" else (two, one)
    headers = revisit[3]
    assert headers.get_header("WARC-Profile").endswith("/revisit/identical-payload-digest")
    assert headers.get_header("WARC-Refers-To-Target-URI") == original[3].get_header("WARC-Target-URI")
    assert headers.get_header("WARC-Refers-To-Date") == original[3].get_header("WARC-Date")
    assert headers.get_header("WARC-Payload-Digest") == original[3].get_header("WARC-Payload-Digest")
    assert revisit[5] == b""
    rows = manifest_rows(result.snapshot.root)
    assert {rows[site.url("/one.png")].record_type, rows[site.url("/two.png")].record_type} == {
        "response",
        "revisit",
    }


async def test_rollover_into_more_files_never_splits_a_record(site, run_crawl):
    site.page("/", links=[f"/p{i}" for i in range(12)])
    for i in range(12):
        site.page(f"/p{i}", body="x" * 800 + str(i))
    await site.start()
    result = await run_crawl(site.url("/"), warc_max_size=2048)
    files = sorted((result.snapshot.root / "warc").glob("*.warc.gz"))
    assert len(files) > 2
    serials = [int(f.name[: -len(".warc.gz")].rsplit("-", 1)[1]) for f in files]
    assert serials == list(range(1, len(files) + 1))
    pairs: dict[str, set[str]] = {}
    for name, _, kind, headers, _, _ in records(result.snapshot.root):
        if kind == "warcinfo":
            assert headers.get_header("WARC-Filename") == name
        pairs.setdefault(headers.get_header("WARC-Target-URI") or "", set()).add(name)
    for f in files:
        with open(f, "rb") as stream:
            assert next(iter(ArchiveIterator(stream))).rec_type == "warcinfo"
    # a request and its response always share a file
    assert all(len(names) == 1 for url, names in pairs.items() if url)


async def test_truncation_at_max_file_size(site, run_crawl):
    site.page("/", links=["/big"])
    site.file("/big", b"B" * 50_000, "application/octet-stream")
    await site.start()
    result = await run_crawl(site.url("/"), max_file_size=10_000)
    _, _, _, headers, _, payload = response_for(result.snapshot.root, site.url("/big"))
    assert headers.get_header("WARC-Truncated") == "length"
    assert payload == b"B" * 10_000
    row = manifest_rows(result.snapshot.root)[site.url("/big")]
    assert row.truncated and row.length == 10_000


async def test_cdxj_is_sorted_and_points_at_records(site, run_crawl):
    site.page("/", links=["/b", "/a", "/c?x=1"])
    for path in ("/a", "/b", "/c"):
        site.page(path)
    await site.start()
    result = await run_crawl(site.url("/"))
    lines = (result.snapshot.root / "indexes" / "index.cdxj").read_text().splitlines()
    assert lines == sorted(lines) and len(lines) == 6  # 4 pages, robots.txt and /sitemap.xml
    for line in lines:
        key, timestamp, block = line.split(" ", 2)
        entry = json.loads(block)
        with open(result.snapshot.root / "warc" / entry["filename"], "rb") as f:
            f.seek(int(entry["offset"]))
            member = f.read(int(entry["length"]))
        record = next(iter(ArchiveIterator(io.BytesIO(member))))
        assert record.rec_headers.get_header("WARC-Target-URI") == entry["url"]
        assert record.rec_headers.get_header("WARC-Payload-Digest") == entry["digest"]
        assert len(timestamp) == 14 and key.startswith("1,0,0,127:")


def test_golden_record_with_fixed_clock_and_ids(tmp_path):
    ids = (f"<urn:uuid:00000000-0000-0000-0000-{n:012d}>" for n in count(1))
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    capture = Capture(
        url="http://example.com/",
        date=moment,
        request_line="GET / HTTP/1.1",
        request_headers=[("Host", "example.com")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked")],
        body=io.BytesIO(b"hello"),
        body_length=5,
        payload_digest="sha1:AQMCYQ7PV4GVPOXWDGUKRTJU2HLVDI7V",
        ip_address="192.0.2.1",
    )
    with WarcFiles(tmp_path, "golden", 10**9, clock=lambda: moment, make_id=lambda: next(ids)) as w:
        written = w.write_capture(capture)
    data = gzip.decompress((tmp_path / written.warc_file).read_bytes()).decode()
    response = data[data.index("WARC/1.1\r\nWARC-Date: 2026") :]
    assert response.startswith(
        "WARC/1.1\r\n"
        "WARC-Date: 2026-01-02T03:04:05.678901Z\r\n"
        "WARC-IP-Address: 192.0.2.1\r\n"
        "WARC-Payload-Digest: sha1:AQMCYQ7PV4GVPOXWDGUKRTJU2HLVDI7V\r\n"
        "WARC-Type: response\r\n"
        "WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000002>\r\n"
        "WARC-Target-URI: http://example.com/\r\n"
    )
    assert (
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
        "X-Archiver-Transfer-Encoding: chunked\r\n\r\nhello\r\n\r\n"
    ) in response
    assert "WARC-Concurrent-To: <urn:uuid:00000000-0000-0000-0000-000000000002>" in response
    assert written.warc_file == "golden-20260102030405-00001.warc.gz"


def _capture(path: str, body: bytes) -> Capture:
    return Capture(
        url=f"http://example.com/{path}",
        date=datetime.now(UTC),
        request_line=f"GET /{path} HTTP/1.1",
        request_headers=[("Host", "example.com")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "image/png")],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest="sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
    )


def store(warcs: WarcFiles, manifest: Manifest, path: str, body: bytes):
    """Write a capture of http://example.com/PATH, and its row, as the writer does."""
    written = warcs.write_capture(_capture(path, body))
    manifest.upsert(
        ManifestRow(
            url=f"http://example.com/{path}",
            found_by="link",
            depth=1,
            outcome="fetched",
            length=len(body),
            payload_digest=written.payload_digest,
            fetched_at=written.date,
            warc_file=written.warc_file,
            warc_offset=written.offset,
            warc_length=written.length,
            record_type=written.record_type,
        )
    )
    return written


def test_payload_stored_by_an_earlier_run_becomes_a_revisit(tmp_path):
    """Stored payloads are looked up in the manifest, so a resumed crawl still deduplicates."""
    with Manifest.open(tmp_path / "manifest.sqlite3") as manifest:
        with WarcFiles(tmp_path, "run", 10**9, payloads=StoredPayloads(manifest)) as first_run:
            original = store(first_run, manifest, "a.png", b"same bytes")
            assert store(first_run, manifest, "b.png", b"same bytes").record_type == "revisit"
        manifest.commit()
    with (
        Manifest.open(tmp_path / "manifest.sqlite3") as manifest,
        WarcFiles(tmp_path, "run", 10**9, payloads=StoredPayloads(manifest)) as second_run,
    ):
        again = store(second_run, manifest, "c.png", b"same bytes")
        other = store(second_run, manifest, "d.png", b"other bytes")
    assert again.record_type == "revisit"
    with WarcReader(tmp_path) as reader:
        stored = reader.read(again.warc_file, again.offset, limit=0)
    assert stored.rec_headers.get_header("WARC-Refers-To-Target-URI") == "http://example.com/a.png"
    assert again.payload_digest == original.payload_digest
    assert other.record_type == "response"


def test_a_url_stored_again_is_no_revisit_of_its_own_record(tmp_path):
    """A URL captured a second time into one manifest (a crawl node started again under its name
    fetched what its first run had stored) became a revisit of its first record, and its new row
    replaced the one that named that record: the mirror found no payload for it, and the links
    to it were broken. It is stored whole; another URL with the same bytes is still a revisit."""
    with (
        Manifest.open(tmp_path / "manifest.sqlite3") as manifest,
        WarcFiles(tmp_path, "run", 10**9, payloads=StoredPayloads(manifest)) as warcs,
    ):
        store(warcs, manifest, "a.png", b"same bytes")
        assert store(warcs, manifest, "a.png", b"same bytes").record_type == "response"
        assert store(warcs, manifest, "b.png", b"same bytes").record_type == "revisit"
        manifest.commit()
    with Manifest.open(tmp_path / "manifest.sqlite3") as manifest, WarcReader(tmp_path) as reader:
        row = manifest.get("http://example.com/b.png")
        assert row is not None and row.warc_file is not None
        payload, _ = payload_record(manifest, reader, row)
        assert payload.raw_stream.read() == b"same bytes"


def test_cdxj_merge_sorts_in_runs_with_bounded_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(cdxj, "SORT_RUN_LINES", 7)
    rng = random.Random(3)
    lines = [f'k{rng.randrange(60):03d} 2026 {{"n": {rng.randrange(3)}}}' for _ in range(100)]
    index = tmp_path / "index.cdxj"
    assert cdxj.write_sorted(lines[:40], index) == len(set(lines[:40]))
    pending = tmp_path / "index.cdxj.pending"
    pending.write_text("".join(line + "\n" for line in lines[40:]) + "\n", encoding="utf-8")
    assert cdxj.merge_into_index(pending, index) == len(set(lines))
    assert index.read_text(encoding="utf-8").splitlines() == sorted(set(lines))
    assert not pending.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["index.cdxj"]


def test_response_headers_are_stored_as_the_bytes_received(tmp_path):
    """The fetcher decodes header bytes as Latin-1; the record holds those bytes again, not %-escapes."""
    capture = Capture(
        url="http://example.com/",
        date=datetime(2026, 1, 2, tzinfo=UTC),
        request_line="GET / HTTP/1.1",
        request_headers=[("Host", "example.com")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[
            ("Content-Disposition", b"attachment; filename=caf\xc3\xa9.txt".decode("latin-1")),
            ("X-Old", "na\xefve"),
        ],
        body=io.BytesIO(b"hi"),
        body_length=2,
        payload_digest="sha1:" + base64.b32encode(hashlib.sha1(b"hi").digest()).decode(),
    )
    with WarcFiles(tmp_path, "raw", 10**9) as warcs:
        written = warcs.write_capture(capture)
    raw = gzip.decompress((tmp_path / written.warc_file).read_bytes())
    assert b"Content-Disposition: attachment; filename=caf\xc3\xa9.txt\r\nX-Old: na\xefve\r\n" in raw
    with open(tmp_path / written.warc_file, "rb") as f:
        bodies = [
            r.content_stream().read()
            for r in ArchiveIterator(f, check_digests="raise")
            if r.rec_type == "response"
        ]
    assert bodies == [b"hi"]


@pytest.mark.parametrize(
    "body", [b"small body", b"\0" * (9 * 1024 * 1024)], ids=["small", "inflates-past-limit"]
)
def test_a_record_read_whole_by_its_length_equals_the_streamed_one(tmp_path, body):
    """WarcReader reads a record of known length in one go; a wrong length or a record that
    inflates past the limit falls back to streaming, with the same result."""
    from archiver.warc.reader import WarcReader

    capture = Capture(
        url="http://example.com/z",
        date=datetime(2026, 1, 2, tzinfo=UTC),
        request_line="GET /z HTTP/1.1",
        request_headers=[("Host", "example.com")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "application/octet-stream")],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest="sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
    )
    with WarcFiles(tmp_path, "whole", 10**9) as warcs:
        written = warcs.write_capture(capture)

    def read(length):
        record = reader.record(written.warc_file, written.offset, length)
        return (
            record.rec_headers.get_header("WARC-Record-ID"),
            record.http_headers.get_header("Content-Type"),
            record.raw_stream.read(),
        )

    with WarcReader(tmp_path) as reader:
        streamed = read(None)
        assert streamed[2] == body
        for length in (written.length, written.length - 5, written.length + 100, 3):
            assert read(length) == streamed


async def test_a_cancelled_writer_still_writes_the_item_in_hand(tmp_path):
    """The writer waits a moment for a batch to gather; cancelled meanwhile, it writes first."""
    from archiver.crawling.writer import WriteItem, Writer
    from archiver.store.snapshot import Snapshot

    snapshot = Snapshot(tmp_path / "snap")
    snapshot.create()
    body = b"kept"
    capture = Capture(
        url="http://example.com/kept",
        date=datetime.now(UTC),
        request_line="GET /kept HTTP/1.1",
        request_headers=[("Host", "example.com")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "text/plain")],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest="sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
    )
    row = ManifestRow(url=capture.url, found_by="seed", depth=0, outcome="fetched", status=200)
    with Manifest.open(snapshot.manifest_path) as manifest:
        writer = Writer(snapshot, WarcFiles(snapshot.warc_dir, "w", 10**9), manifest)
        task = asyncio.create_task(writer.run())
        await writer.put(WriteItem(row, capture))
        await asyncio.sleep(0.005)  # the writer has the item and waits for more
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await writer.close()
    stored = manifest_rows(snapshot.root)[capture.url]
    assert stored.warc_file and stored.record_type == "response"


async def test_the_writer_forgets_state_entries_the_crawl_no_longer_gives(tmp_path):
    """What the crawl keeps beside its rows is committed where it changed; an entry it stopped
    giving (a host's pages that waited for a verdict, once it came) is dropped from the manifest,
    or a resumed crawl would take it back."""
    from archiver.crawling.writer import Writer
    from archiver.store.snapshot import Snapshot

    snapshot = Snapshot(tmp_path / "snap")
    snapshot.create()
    with Manifest.open(snapshot.manifest_path) as manifest:
        for name in ("renders", "renders waiting h scripted 0", "cookies"):
            manifest.keep_state(name, "before")
        manifest.commit()
        writer = Writer(snapshot, WarcFiles(snapshot.warc_dir, "w", 10**9), manifest)
        writer.keep_state(lambda: {"renders": "now"}, manifest.states("renders"))
        task = asyncio.create_task(writer.run())
        await writer.finish()
        await task
        assert manifest.states("renders") == {"renders": "now"}
        assert manifest.states("") == {"renders": "now", "cookies": "before"}
        await writer.close()


def test_no_flipped_bit_is_read_as_other_bytes_without_an_error(tmp_path):
    """A bit flipped near the end of a record's gzip member can inflate with no error, the member
    not ended where it should, the bytes up to Content-Length all there: a reader that stops at
    Content-Length never reaches the CRC. Read by its length or streamed to its end, every
    record with a flipped bit is damage or the very bytes stored."""
    from archiver.errors import WarcDamage

    moment = datetime(2026, 1, 2, tzinfo=UTC)
    silent = []
    for n in range(4):
        body = b"".join(b"<p>line %d of page %d</p>\n" % (line, n) for line in range(40))
        ids = (f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>" for i in count(1))
        capture = dataclasses.replace(_capture("page", body), date=moment)
        folder = tmp_path / str(n)
        with WarcFiles(folder, "flip", 10**9, clock=lambda: moment, make_id=ids.__next__) as w:
            written = w.write_capture(capture)
        warc = folder / written.warc_file
        stored = warc.read_bytes()
        end = written.offset + written.length
        for bit in range(8 * (end - 8 - 48), 8 * (end - 8)):  # the deflate data's last bytes
            data = bytearray(stored)
            data[bit // 8] ^= 1 << bit % 8
            warc.write_bytes(bytes(data))
            for length in (written.length, None):
                with WarcReader(folder) as reader:
                    try:
                        record = reader.record(written.warc_file, written.offset, length)
                        payload = b"".join(iter(functools.partial(record.raw_stream.read, 65536), b""))
                    except (WarcDamage, *PARSE_ERRORS):
                        continue
                if payload != body:
                    silent.append((n, bit, length))
    assert silent == []


def test_no_flipped_byte_of_a_plain_warc_is_read_as_other_bytes_without_an_error(tmp_path):
    """An uncompressed WARC file (a user may gunzip one) has no gzip CRC: only the records' digests
    tell a changed byte. Each byte of a response and of a revisit (whose HTTP head the mirror
    reads) flipped in turn, the record read to its end gives the very head and payload stored, or
    damage."""
    from archiver.errors import DigestMismatch, WarcDamage

    body = b"".join(b"<p>line %d</p>\n" % line for line in range(30))
    with WarcFiles(tmp_path, "plain", 10**9) as warcs:
        written = [warcs.write_capture(_capture(path, body)) for path in ("page", "copy")]
    assert [one.record_type for one in written] == ["response", "revisit"]
    data = (tmp_path / written[0].warc_file).read_bytes()
    stored = gzip.decompress(data)
    plain = tmp_path / "plain.warc"

    def read(start: int) -> tuple[str, bytes]:
        with WarcReader(tmp_path) as reader:
            record = reader.record(plain.name, start)
            payload = b"".join(iter(functools.partial(record.raw_stream.read, 100), b""))
            return record.http_headers.to_str(), payload

    silent, told = [], set()
    for one in written:
        start = len(gzip.decompress(data[: one.offset]))
        end = start + len(gzip.decompress(data[one.offset : one.offset + one.length]))
        plain.write_bytes(stored)
        expected = read(start)
        for at in range(start, end):
            flipped = bytearray(stored)
            flipped[at] ^= 0x01
            plain.write_bytes(bytes(flipped))
            try:
                if read(start) != expected:
                    silent.append(at)
            except DigestMismatch:
                told.add(one.record_type)
            except (WarcDamage, *PARSE_ERRORS):
                pass
    assert silent == [] and told == {"response", "revisit"}
