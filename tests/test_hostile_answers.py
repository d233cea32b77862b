"""Answers a server should not send, byte by byte: each is archived as it came, or refused with a
one-line reason, and none becomes an internal error or a wrong capture."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import manifest_rows
from raw_server import RawRequest, RawServer, reset
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.answer_heads import HEADLESS_AFTER_INTERIM, HEADLESS_REFUSED
from archiver.crawling.tries import parse_retry_after
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED
from archiver.verify.verifier import verify_snapshot


def _answer(writer: asyncio.StreamWriter, status: bytes, body: bytes = b"", *extra: bytes) -> None:
    head = [b"HTTP/1.1 " + status, b"Content-Type: text/html", b"Content-Length: %d" % len(body), *extra]
    writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)


async def _crawl(handler: Any, run_crawl: Any, **options: Any) -> tuple[Any, str]:
    """Crawl a RawServer serving ``handler``; (the crawl's result, the server's base URL)."""
    server = await RawServer(handler).start()
    base = server.url("")
    try:
        return await run_crawl(base + "/", **options), base
    finally:
        await server.close()


PATHS = (
    "/retry-after",
    "/retry-after-digits",
    "/retry-after-hour",
    "/te-gzip",
    "/utf8-location",
    "/reason",
    "/short-length",
    "/no-content",
    "/last-chunk",
    "/many-chunks",
    "/bad-cookie",
    "/length-twice",
    "/lengths-differ",
    "/length-list",
    "/length-list-differs",
    "/length-zero-led",
    "/chunked-length",
    "/chunked-lengths",
    "/length-list-in-pieces",
    "/lax-head",
    "/not-modified",
    "/http2-status",
    "/http2-status-closed",
    "/plus-length",
    "/plus-length-kept",
    "/huge-length",
    "/te-identity",
    "/locations-differ",
    "/location-twice",
    "/dispositions-differ",
    "/to-script",
    "/to-bad-host",
    "/to-nowhere",
    "/no-status-code",
    "/short-status",
    "/long-status",
    "/http09",
    "/icy",
    "/junk-before",
    "/junk-past",
    "/tab-status",
    "/no-digits",
    "/no-content",
    "/reset-content",
)
NOWHERE = {
    "/to-script": (
        b"javascript:alert(1)",
        "a 302 to 'javascript:alert(1)', no http or https URL: archived as sent, not followed",
    ),
    "/to-bad-host": (
        b"http://[::1/x",
        "a 302 to 'http://[::1/x', no http or https URL: archived as sent, not followed",
    ),
    "/to-nowhere": (b"", "a 302 without a Location: a page, as browsers show it"),
}
LENGTH_LISTS = {
    "/length-list": b"Content-Length: 5 ,5\r\nContent-Length: 5",
    "/length-list-differs": b"Content-Length: 5, 6",
    "/length-zero-led": b"Content-Length: 5\r\nContent-Length: 05",
}
REPEATED = {  # fields an answer gives once: Chromium fails it when their values differ
    "/locations-differ": (b"Location: /first", b"Location: /second"),
    "/location-twice": (b"Location: /first", b"location:  /first"),
    "/dispositions-differ": (b"Location: /first", b"Content-Disposition: inline", b"Content-Disposition: a"),
}
AFTER_THE_BODY = b" world: bytes past the answer that read as no answer"


async def _odd_answers(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    path = request.path
    if path == "/":
        _answer(writer, b"200 OK", "".join(f'<a href="{p}">{p}</a>' for p in PATHS).encode())
    elif path in ("/robots.txt", "/sitemap.xml"):
        _answer(writer, b"404 Not Found")
    elif path == "/retry-after":  # superscript two: str.isdigit() says yes, float() says no
        _answer(writer, b"503 Service Unavailable", b"busy", b"Retry-After: \xb2")
    elif path == "/retry-after-digits":  # more digits than int() reads
        _answer(writer, b"503 Service Unavailable", b"busier", b"Retry-After: " + b"9" * 5000)
    elif path == "/retry-after-hour":  # an hour of more digits than a C long holds
        _answer(
            writer,
            b"429 Too Many Requests",
            b"slow",
            b"Retry-After: Mon, 01 Jan 2024 99999999999999999999:00:00 GMT",
        )
    elif path == "/te-gzip":  # gzip as a transfer coding: Chromium undoes only the chunks
        packed = gzip.compress(b'<a href="/inside">in</a>')
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        writer.write(head + b"%x\r\n" % len(packed) + packed + b"\r\n0\r\n\r\n")
    elif path == "/utf8-location":  # a path written in UTF-8, as many servers write it
        _answer(writer, b"302 Found", b"", "Location: /café".encode())
    elif path == "/caf%C3%A9":
        _answer(writer, b"200 OK", b"<p>coffee</p>")
    elif path == "/reason":  # a reason in UTF-8, a header in latin-1
        _answer(writer, "200 OK →".encode(), b"<p>fine</p>", b"X-Name: caf\xe9")
    elif path == "/short-length":  # a Content-Length short of the body (characters, not bytes)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello" + AFTER_THE_BODY
        )
    elif path == "/no-content":  # a 204 has no body, whatever its head says
        writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello" + AFTER_THE_BODY)
    elif path in NOWHERE:
        location = NOWHERE[path][0]
        _answer(writer, b"302 Found", b"<p>moved</p>", *([b"Location: " + location] if location else []))
    elif path in ("/length-twice", "/lengths-differ"):  # the same length twice, or two lengths
        first = b"Content-Length: 3" if path == "/lengths-differ" else b"Content-Length: 5"
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + first + b"\r\ncontent-length: 5\r\n\r\ntwice"
        )
    elif path in LENGTH_LISTS:  # one field holding a list, or lengths equal as numbers only
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + LENGTH_LISTS[path] + b"\r\n\r\nlists"
        )
    elif path in ("/chunked-length", "/chunked-lengths"):  # Transfer-Encoding overrides them
        lengths = b"Content-Length: 3\r\n" + (b"Content-Length: 4\r\n" if path == "/chunked-lengths" else b"")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            + lengths
            + b"Transfer-Encoding: chunked\r\n\r\n"
            b"7\r\n"
            + path[1:8].encode()
            + b"\r\n"
            + (b"1\r\ns\r\n" if path.endswith("s") else b"")
            + b"0\r\n\r\n"
        )
    elif path == "/length-list-in-pieces":  # a head in several reads is read as one in a read
        for piece in (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r",
            b"\nContent-Length: 6, 6\r\n",
            b"\r\npieces",
        ):
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)
    elif path == "/lax-head":  # what Chromium reads past: http in lower case, 200OK, a space before ":"
        writer.write(b"http/1.1 200OK\r\nContent-Type : text/plain\r\nContent-Length: 3\r\n\r\nlax")
    elif path in ("/no-content", "/reset-content"):  # a link to either leaves a browser where it was
        status = b"204 No Content" if path == "/no-content" else b"205 Reset Content"
        writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\nContent-Length: 0\r\n\r\n")
    elif path == "/not-modified":  # a 304 to a request that asked for no revalidation
        writer.write(b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Type: text/html\r\n\r\n')
    elif path.startswith("/http2-status"):  # no HTTP/1 version: Chromium reads it as HTTP/1.0
        close = path.endswith("closed")
        writer.write(
            b"HTTP/2 200\r\nContent-Type: text/plain\r\n" + (b"" if close else b"Content-Length: 2\r\n")
        )
        writer.write(b"\r\nh2" + (b" and the rest, to the close" if close else b""))
        return not close
    elif path == "/no-status-code":  # a version alone: 200 OK to Chromium
        writer.write(b"HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nnone")
    elif path == "/short-status":  # Chromium reads the digits there are: status 20, reason "x"
        writer.write(b"HTTP/1.1 20x\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nshort")
    elif path == "/long-status":  # Chromium reads 2000 and shows the answer
        _answer(writer, b"2000 OK", b"long")
    elif path.startswith("/junk-"):  # Chromium reads past four bytes before HTTP, not five
        junk = b"wxyz" if path == "/junk-before" else b"vwxyz"
        writer.write(junk + b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\njunk")
    elif path == "/tab-status":  # tabs for spaces
        writer.write(b"HTTP/1.1\t201\tMade\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\ntab")
    elif path == "/no-digits":  # no code where it goes: 200 to Chromium
        writer.write(b"HTTP/1.1 -201 Made\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\ndigits")
    elif path == "/http09":  # HTTP/0.9: a body without a head, to the close
        writer.write(b"<p>a body without a head, as HTTP/0.9 sent it</p>")
        return False
    elif path == "/icy":  # a Shoutcast stream's answer: HTTP/0.9 that Chromium takes on any port
        writer.write(b"ICY 200 OK\r\nicy-name: radio\r\n\r\nsound")
        return False
    elif path == "/te-identity":  # a coding that frames nothing: the length beside it counts
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: identity\r\n"
            b"Content-Length: 8\r\n\r\nidentity"
        )
    elif path == "/huge-length":  # past 64 bits: no length to Chromium either
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1" + b"0" * 30 + b"\r\n\r\nhuge"
        )
        return False
    elif path.startswith("/plus-length"):  # a length that is no number: Chromium reads to the close
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: +4\r\n\r\nplus and more"
        )
        if path.endswith("kept"):
            await asyncio.sleep(0.3)
            writer.write(b", later")
        return False
    elif path in REPEATED:
        _answer(writer, b"302 Found", b"<p>moved</p>", *REPEATED[path])
    elif path == "/bad-cookie":  # a cookie name that is no token: dropped, as browsers drop it
        _answer(writer, b"200 OK", b"<p>cookie</p>", b"Set-Cookie: \xff\xfe=x")
    elif path == "/many-chunks":  # more than the parser holds at once: it pauses, then goes on
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        writer.write(head + b"1\r\nx\r\n" * 200_000 + b"0\r\n\r\n")
    elif path == "/last-chunk":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhullo\r\n0\r\n\r\n" + AFTER_THE_BODY
        )
        return False
    else:
        _answer(writer, b"404 Not Found")
    return True


async def test_odd_answers_are_archived_as_sent_or_refused_in_one_line(run_crawl, tmp_path):
    result, base = await _crawl(_odd_answers, run_crawl, max_tries=2)
    rows = manifest_rows(result.snapshot.root)

    for path, status in (("/retry-after", 503), ("/retry-after-digits", 503), ("/retry-after-hour", 429)):
        retried = rows[base + path]
        assert (retried.outcome, retried.status, retried.tries) == (FAILED, status, 2), retried
        assert retried.warc_file is not None and "internal error" not in (retried.reason or "")

    # gzip as a transfer coding: Chromium de-chunks the body and reads past the gzip, showing the
    # coded bytes (no Content-Encoding undoes them), so no link in them is followed.
    te = rows[base + "/te-gzip"]
    assert (te.outcome, te.tries) == (FETCHED, 1), te
    assert gzip.decompress(_payloads(result.snapshot.root)[base + "/te-gzip"]) == b'<a href="/inside">in</a>'
    assert base + "/inside" not in rows

    moved = rows[base + "/utf8-location"]
    assert (moved.outcome, moved.redirect_to) == (REDIRECTED, base + "/caf%C3%A9")
    assert rows[base + "/caf%C3%A9"].status == 200

    reason = rows[base + "/reason"]
    assert reason.outcome == FETCHED and reason.warc_file is not None and reason.warc_offset is not None
    with open(result.snapshot.root / "warc" / reason.warc_file, "rb") as warc:
        warc.seek(reason.warc_offset)
        record = gzip.GzipFile(fileobj=warc).read1(1 << 20)
    # Each line of the head as it came: the reason's UTF-8 and the header's latin-1 side by side.
    assert "HTTP/1.1 200 OK →\r\n".encode() in record and b"X-Name: caf\xe9\r\n" in record

    # Bytes after a whole answer, in the same read: the answer is kept as its head frames it.
    payloads = _payloads(result.snapshot.root)
    for path, status, payload in (
        ("/short-length", 200, b"hello"),
        ("/no-content", 204, b""),
        ("/last-chunk", 200, b"hullo"),
    ):
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries) == (FETCHED, status, 1), row
        assert payloads[base + path] == payload

    # The same length twice is one length, as browsers read it; two lengths are a broken answer.
    assert (rows[base + "/length-twice"].outcome, rows[base + "/length-twice"].length) == (FETCHED, 5)
    assert payloads[base + "/length-twice"] == b"twice"
    twice = rows[base + "/length-twice"]
    with open(result.snapshot.root / "warc" / twice.warc_file, "rb") as warc:
        warc.seek(twice.warc_offset)
        head = next(iter(ArchiveIterator(warc))).http_headers.headers
    assert ("Content-Length", "5") in head and ("X-Archiver-content-length", "5") in head
    differ = rows[base + "/lengths-differ"]
    assert differ.outcome == FAILED and differ.reason.startswith("bad response: Duplicate Content-Length")
    # A list in one field is as many fields (Fetch's "extract a length"); values are compared as
    # strings, as Fetch and Chromium compare them: 5 and 05 are two lengths.
    listed = rows[base + "/length-list"]
    assert (listed.outcome, listed.length, payloads[base + "/length-list"]) == (FETCHED, 5, b"lists")
    with open(result.snapshot.root / "warc" / listed.warc_file, "rb") as warc:
        warc.seek(listed.warc_offset)
        head = next(iter(ArchiveIterator(warc))).http_headers.headers
    lengths = [(name, value) for name, value in head if "content-length" in name.lower()]
    assert lengths == [("Content-Length", "5"), *[("X-Archiver-Content-Length", "5")] * 2]
    for path in ("/length-list-differs", "/length-zero-led"):
        assert rows[base + path].outcome == FAILED and rows[base + path].reason.startswith("bad response"), (
            path
        )

    pieces = rows[base + "/length-list-in-pieces"]
    assert (pieces.outcome, payloads.get(base + "/length-list-in-pieces")) == (FETCHED, b"pieces"), pieces

    lax = rows[base + "/lax-head"]
    assert (lax.outcome, lax.status, lax.content_type, payloads.get(base + "/lax-head")) == (
        FETCHED,
        200,
        "text/plain",
        b"lax",
    ), lax

    # What Chromium reads where RFC 9112 refuses: a status line of HTTP/2 on an HTTP/1 connection
    # is HTTP/1.0 (a body to its length, else to the close); a Content-Length that is no number
    # (+4) gives no length, the body runs to the close. The WARC says so.
    for path, body in (
        ("/http2-status", b"h2"),
        ("/http2-status-closed", b"h2 and the rest, to the close"),
        ("/plus-length", b"plus and more"),
        ("/plus-length-kept", b"plus and more, later"),
        ("/huge-length", b"huge"),
    ):
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries, payloads.get(base + path)) == (FETCHED, 200, 1, body), row
        with open(result.snapshot.root / "warc" / row.warc_file, "rb") as warc:
            warc.seek(row.warc_offset)
            http = next(iter(ArchiveIterator(warc))).http_headers
        if path.startswith("/http2"):
            assert http.protocol == "HTTP/1.0", http
        else:
            renamed = http.get_header("X-Archiver-Content-Length")
            assert renamed in ("+4", "1" + "0" * 30) and not http.get_header("Content-Length")
    # A status line of a version alone (or of no digits after it) is 200 to Chromium, one of two
    # digits that number, one of four that number too, one after up to four stray bytes or with
    # tabs for spaces as any; an HTTP/0.9 answer (no head: Chromium takes one only from the
    # scheme's default port, but an ICY one over http, whose head is then its body's first line)
    # is refused, with its reason.
    for path, status, body in (
        ("/long-status", 2000, b"long"),
        ("/icy", 200, b"ICY 200 OK\r\nicy-name: radio\r\n\r\nsound"),
        ("/no-status-code", 200, b"none"),
        ("/short-status", 20, b"short"),
        ("/junk-before", 200, b"junk"),
        ("/tab-status", 201, b"tab"),
        ("/no-digits", 200, b"digits"),
    ):
        row = rows[base + path]
        assert (row.outcome, row.status, payloads.get(base + path)) == (FETCHED, status, body), row
    # The WARC keeps a code of two digits as Chromium read it, in the three an HTTP status line
    # has (HTTP/1.1 020 x): replay tools and HTTP clients refuse a status line of two.
    short = rows[base + "/short-status"]
    with open(result.snapshot.root / "warc" / short.warc_file, "rb") as warc:
        warc.seek(short.warc_offset)
        assert next(iter(ArchiveIterator(warc))).http_headers.statusline == "020 x"
    for path, why in (
        ("/http09", HEADLESS_REFUSED),
        ("/junk-past", HEADLESS_REFUSED),
    ):
        # Asked again, they would come back the same: one try.
        assert (rows[base + path].outcome, rows[base + path].reason, rows[base + path].tries) == (
            FAILED,
            f"bad response: {why}",
            1,
        )
    te = rows[base + "/te-identity"]
    assert (te.outcome, te.tries, payloads.get(base + "/te-identity")) == (FETCHED, 1, b"identity"), te

    # A chunked body overrides any Content-Length (RFC 9112, 6.3), as browsers read it.
    for path, body in (("/chunked-length", b"chunked"), ("/chunked-lengths", b"chunkeds")):
        assert (rows[base + path].outcome, payloads.get(base + path)) == (FETCHED, body), rows[base + path]

    # Two Locations that differ lead nowhere (Chromium shows ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION);
    # the same one twice is taken once.
    for path, name in (("/locations-differ", "Location"), ("/dispositions-differ", "Content-Disposition")):
        assert (rows[base + path].outcome, rows[base + path].reason) == (
            FAILED,
            f"bad response: {name} headers that differ",
        ), path
    assert (rows[base + "/location-twice"].outcome, rows[base + "/location-twice"].redirect_to) == (
        REDIRECTED,
        base + "/first",
    )
    assert base + "/second" not in rows

    # What the HTTP client refused of an answer is in the crawl's log, not bare on stderr.
    assert rows[base + "/bad-cookie"].outcome == FETCHED
    assert (
        "Can not load cookies: Illegal cookie name"
        in (result.snapshot.root / "logs" / "crawl.log").read_text()
    )

    chunked = rows[base + "/many-chunks"]
    assert (chunked.outcome, chunked.length, chunked.tries) == (FETCHED, 200_000, 1), chunked

    # A 304 nobody asked for (the crawl sent no condition) holds no page: Chromium fails such a
    # load. The WARC keeps it as sent; the mirror has no empty page for it, its links stay absolute.
    unasked = rows[base + "/not-modified"]
    assert (unasked.outcome, unasked.status, unasked.local_path) == (FETCHED, 304, None), unasked
    assert (
        unasked.reason == "a 304 to a request that asked for no revalidation: archived as sent, not mirrored"
    )
    assert unasked.warc_file is not None and unasked.record_type == "response"
    home = (result.snapshot.mirror_dir / rows[base + "/"].local_path).read_text()
    assert f'href="{base}/not-modified"' in home
    # A 204 or 205 holds no page either: Chromium stays on the page whose link it followed.
    for path, status in (("/no-content", 204), ("/reset-content", 205)):
        row = rows[base + path]
        assert (row.outcome, row.status, row.local_path) == (FETCHED, status, None), row
        assert (
            row.reason
            == f"a {status}: no page (a browser stays where it was): archived as sent, not mirrored"
        )
        assert f'href="{base}{path}"' in home
    report = verify_snapshot(result.snapshot.root)
    assert not [
        line
        for line in report.render_text(str(result.snapshot.root)).splitlines()
        if "not-modified" in line or "-content" in line
    ]

    # A redirect that leads nowhere a crawl can go is archived as sent, and its row says why.
    for path, (_location, why) in NOWHERE.items():
        row = rows[base + path]
        assert (row.outcome, row.status, row.redirect_to) == (FETCHED, 302, None), row
        assert row.reason == why
        assert row.local_path and (result.snapshot.mirror_dir / row.local_path).is_file()


HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"


async def _big_heads(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    path = request.path
    if path == "/":
        links = ("/cookies", "/headers", "/many-fields", "/hinted", "/huge-head", "/endless-hints")
        _answer(writer, b"200 OK", "".join(f'<a href="{p}">{p}</a>' for p in links).encode())
    elif path == "/cookies":  # many headers, a small head: browsers take it
        _answer(writer, b"200 OK", b"<p>cookies</p>", *(b"Set-Cookie: c%d=v; Path=/" % i for i in range(150)))
    elif path == "/headers":
        _answer(writer, b"200 OK", b"<p>headers</p>", *(b"X-H%d: v" % i for i in range(900)))
    elif path == "/many-fields":  # thousands of fields, a head of some 40 KiB: Chromium takes it
        _answer(writer, b"200 OK", b"<p>fields</p>", *(b"Set-Cookie: c%d=v" % i for i in range(2500)))
    elif path == "/hinted":  # interim answers before the answer itself
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n" + HINTS * 3)
        _answer(writer, b"200 OK", b"<p>hinted</p>")
    elif path == "/huge-head":  # a head of 1 MiB in few headers, each under aiohttp's bound
        _answer(writer, b"200 OK", b"<p>huge</p>", *(b"X-Big%d: " % i + b"b" * 10_000 for i in range(100)))
    elif path == "/endless-hints":  # interim answers that never end: each one small
        with contextlib.suppress(ConnectionError):
            while not writer.transport.is_closing():
                writer.write(HINTS * 100)
                await writer.drain()
                await asyncio.sleep(0.001)
    else:
        _answer(writer, b"404 Not Found")
    return False


async def test_a_head_is_bounded_by_its_size_not_by_its_count_of_headers(run_crawl):
    """Browsers take an answer with hundreds of headers, and bound its head at 256 KiB; so do
    we, interim (1xx) answers included: a head without end is refused well before --timeout."""
    result, base = await _crawl(_big_heads, run_crawl, max_tries=1, timeout=30, sitemaps=False)
    rows = manifest_rows(result.snapshot.root)
    for path, body in (
        ("/cookies", b"<p>cookies</p>"),
        ("/headers", b"<p>headers</p>"),
        ("/many-fields", b"<p>fields</p>"),
        ("/hinted", b"<p>hinted</p>"),
    ):
        row = rows[base + path]
        assert (row.outcome, row.status, row.length) == (FETCHED, 200, len(body)), row
    for path in ("/huge-head", "/endless-hints"):
        row = rows[base + path]
        assert (row.outcome, row.reason) == (FAILED, "bad response: the answer's head runs past 256 KiB"), row
    with open(result.snapshot.root / "warc" / rows[base + "/cookies"].warc_file, "rb") as warc:
        warc.seek(rows[base + "/cookies"].warc_offset)
        record = next(iter(ArchiveIterator(warc)))
        cookies = [value for name, value in record.http_headers.headers if name.lower() == "set-cookie"]
        assert len(cookies) == 150


async def test_a_head_broken_for_good_fails_at_once_while_a_lost_connection_is_tried_again(run_crawl):
    """A head past 256 KiB, or one no parser reads, comes back the same however often it is
    asked for: one request, a failure with its reason. A connection reset may not come again:
    it is tried up to --max-tries."""
    hits: dict[str, int] = {}

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        hits[request.path] = hits.get(request.path, 0) + 1
        if request.path == "/":
            links = ("/huge-head", "/no-status", "/reset")
            _answer(writer, b"200 OK", "".join(f'<a href="{p}">{p}</a>' for p in links).encode())
        elif request.path == "/huge-head":
            _answer(writer, b"200 OK", b"<p>huge</p>", *(b"X-Big%d: " % i + b"b" * 10_000 for i in range(30)))
        elif request.path == "/no-status":  # no status line, from a port not HTTP's: Chromium fails it
            writer.write(b"<p>no status</p>")
        elif request.path == "/reset":
            reset(writer)
        else:
            _answer(writer, b"404 Not Found")
        return False

    result, base = await _crawl(handler, run_crawl, max_tries=3, sitemaps=False)
    rows = manifest_rows(result.snapshot.root)
    failures = {
        path: (rows[base + path].outcome, rows[base + path].tries) for path in ("/huge-head", "/no-status")
    }
    assert failures == {"/huge-head": (FAILED, 1), "/no-status": (FAILED, 1)}
    assert rows[base + "/huge-head"].reason == "bad response: the answer's head runs past 256 KiB"
    assert rows[base + "/no-status"].reason.startswith("bad response: "), rows[base + "/no-status"]
    assert (rows[base + "/reset"].outcome, rows[base + "/reset"].tries) == (FAILED, 3)
    assert {path: hits[path] for path in ("/huge-head", "/no-status", "/reset")} == {
        "/huge-head": 1,
        "/no-status": 1,
        "/reset": 3,
    }


def _payloads(root: Path) -> dict[str, bytes]:
    """The payload of each response record in the snapshot at ``root``, by URL."""
    payloads = {}
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as warc:
            for record in ArchiveIterator(warc):
                if record.rec_type == "response":
                    payloads[record.rec_headers.get_header("WARC-Target-URI")] = (
                        record.content_stream().read()
                    )
    return payloads


async def _busy_robots(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/robots.txt":
        _answer(writer, b"503 Service Unavailable", b"", b"Retry-After: \xb9\xb2")
    else:
        _answer(writer, b"200 OK", b"<p>home</p>")
    return True


async def test_a_robots_txt_with_a_retry_after_no_number_reads_is_a_busy_host(run_crawl):
    result, base = await _crawl(_busy_robots, run_crawl, max_tries=2)
    rows = manifest_rows(result.snapshot.root, for_crawlers=True)
    robots = rows[base + "/robots.txt"]
    assert (robots.status, robots.tries) == (503, 2) and robots.warc_file is not None
    # A 5xx robots.txt asks to be left alone: the seed is skipped for it, not failed.
    assert rows[base + "/"].outcome == SKIPPED


async def _poisoning(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    """/a answers whole, then sends stray bytes on its connection once it is back in the pool,
    where the next request on it meets them before its own answer."""
    if request.path == "/":
        _answer(writer, b"200 OK", b'<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a>')
    elif request.path == "/a":
        _answer(writer, b"200 OK", b"<p>a</p>")
        await writer.drain()
        await asyncio.sleep(0.3)
        writer.write(b"JUNK\r\n\r\n")
    elif request.path in ("/b", "/c"):
        _answer(writer, b"200 OK", b"<p>page</p>")
    else:
        _answer(writer, b"404 Not Found")
    return True


async def test_stray_bytes_on_a_reused_connection_have_the_request_sent_again_on_a_new_one(run_crawl):
    """The head they give the next answer is broken by them, not by the server: the request is
    sent again at once, on a new connection, within its try."""
    server = await RawServer(_poisoning).start()
    base = server.url("")
    try:
        result = await run_crawl(base + "/", max_tries=2, concurrency=1, sitemaps=False)
    finally:
        await server.close()
    rows = manifest_rows(result.snapshot.root)
    for path in ("/a", "/b", "/c"):
        assert (rows[base + path].status, rows[base + path].tries) == (200, 1), rows[base + path]
    assert server.hits("/b") + server.hits("/c") == 3  # the one that met them, asked twice


@pytest.mark.parametrize("value", ["\u00b2", "\u00b9\u00b2", "\u0663", "1\u00b2", " 12 "])
def test_retry_after_reads_ascii_digits_only(value):
    assert parse_retry_after(value) == (12.0 if value == " 12 " else None)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("9" * 5000, None),  # int() refuses more than 4300 digits
        ("0" * 5000 + "12", 12.0),
        ("9" * 100, 1e100),
        ("Mon, 01 Jan 2024 99999999999999999999:00:00 GMT", None),  # too big for a C long
        ("Mon, 01 Jan 99999999 00:00:00 GMT", None),
    ],
)
def test_retry_after_of_absurd_size_reads_as_none_or_a_number(value, seconds):
    assert parse_retry_after(value) == seconds


UNASKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 21\r\n\r\n<p>not yours</p>EVIL"
"""Bytes a server sends after an answer, shaped as an answer of its own (RFC 9112 forbids taking
them for one: a next request on the connection would be answered with them)."""
FRAMINGS = {
    "content-length": b"Content-Length: 5\r\n\r\nhello",
    "chunked": b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
}


def _junk_after_bodies(framing: bytes, later: bool, close: bool) -> Any:
    """/a answers ``hello`` framed by ``framing``, then sends UNASKED (in the same write, or once
    its answer is read and its connection idle); the other pages answer whole."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/":
            _answer(writer, b"200 OK", b'<a href="/a">a</a><a href="/b">b</a><a href="/c">c</a>')
        elif request.path == "/a":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + framing + (b"" if later else UNASKED)
            )
            if later:
                await writer.drain()
                await asyncio.sleep(0.1)
                writer.write(UNASKED)
            return not close
        elif request.path in ("/b", "/c"):
            _answer(writer, b"200 OK", b"<p>page " + request.path[1:].encode() + b"</p>")
        else:
            _answer(writer, b"404 Not Found")
        return True

    return handler


@pytest.mark.parametrize("close", [False, True], ids=["keep-alive", "close"])
@pytest.mark.parametrize("later", [False, True], ids=["same-write", "while-idle"])
@pytest.mark.parametrize("framing", FRAMINGS)
async def test_bytes_after_a_body_belong_to_no_answer(framing, later, close, run_crawl):
    server = await RawServer(_junk_after_bodies(FRAMINGS[framing], later, close)).start()
    base = server.url("")
    try:
        # One connection at a time, the next request a while after /a: its bytes have come by then.
        result = await run_crawl(base + "/", concurrency=1, delay=0.4, max_tries=1, sitemaps=False)
    finally:
        await server.close()
    root = result.snapshot.root
    rows = manifest_rows(root)
    assert {path: rows[base + path].status for path in ("/", "/a", "/b", "/c")} == dict.fromkeys(
        ("/", "/a", "/b", "/c"), 200
    )
    assert (rows[base + "/a"].outcome, rows[base + "/a"].length) == (FETCHED, 5)
    payloads = _payloads(root)
    assert payloads[base + "/a"] == b"hello"
    assert (payloads[base + "/b"], payloads[base + "/c"]) == (b"<p>page b</p>", b"<p>page c</p>")
    assert server.hits("/b") == server.hits("/c") == 1  # each answered by the server, to its request


def _closing_after_each_answer(pages: tuple[str, ...], linger: float) -> Any:
    """Every answer framed by Content-Length, with no Connection header, and the connection closed
    after it: at once, or ``linger`` seconds later (a short keep-alive timeout), when a request
    sent on it meanwhile is never answered."""

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/":
            _answer(writer, b"200 OK", "".join(f'<a href="{p}">{p}</a>' for p in pages).encode())
        elif request.path in pages:
            _answer(writer, b"200 OK", b"<p>page " + request.path.encode() + b"</p>")
        else:
            _answer(writer, b"404 Not Found")
        if linger:
            await writer.drain()
            await asyncio.sleep(linger)
        return False

    return handler


@pytest.mark.parametrize("linger", [0.0, 0.15], ids=["at-once", "a-moment-later"])
async def test_a_server_closing_each_connection_after_its_answer_costs_no_try(linger, run_crawl):
    """A request that a pooled connection lost before its answer began is sent again at once on
    a new connection, without counting a try (RFC 9112, 9.3.1): the server took it on none."""
    pages = tuple(f"/p{i}" for i in range(12))
    server = await RawServer(_closing_after_each_answer(pages, linger)).start()
    base = server.url("")
    try:
        result = await run_crawl(base + "/", concurrency=1, max_tries=1, sitemaps=False)
    finally:
        await server.close()
    root = result.snapshot.root
    rows = manifest_rows(root)
    for path in ("/", *pages):
        assert (rows[base + path].outcome, rows[base + path].tries) == (FETCHED, 1), rows[base + path]
        assert server.hits(path) == 1, path
    responses = []
    for warc_path in sorted((root / "warc").glob("*.warc.gz")):
        with open(warc_path, "rb") as warc:
            responses += [
                record.rec_headers.get_header("WARC-Target-URI")
                for record in ArchiveIterator(warc)
                if record.rec_type == "response"
            ]
    assert sorted(responses) == sorted(base + path for path in ("/", "/robots.txt", *pages))


async def test_the_pool_tells_a_reused_connection_from_a_new_one():
    """What sending a request again rests on: WatchedConnector counts the connections aiohttp's
    pool takes back through ``_release`` (not public API: this test guards it), knows whether
    the one it hands out is reused, and whether a byte of the answer came before it was lost."""
    from aiohttp import ClientError, ClientSession

    from archiver.crawling.connections import WatchedConnector, connection_use

    async def handler(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
        if request.path == "/half":  # a beginning of an answer, then the connection closes
            writer.write(b"HTTP/1.1 200")
            return False
        _answer(writer, b"200 OK", b"<p>kept</p>")
        if request.path == "/linger":  # a short keep-alive timeout: closed as the next request comes
            await writer.drain()
            await asyncio.sleep(0.3)
            return False
        return True

    steps = [  # path, new connection only, reused, answered, lost before its answer on reuse
        ("/", False, False, True, False),
        ("/a", False, True, True, False),
        ("/b", True, False, True, False),  # the pool's idle connection is closed for it
        ("/half", False, True, False, False),
        ("/linger", False, False, True, False),
        ("/lost", False, True, False, True),
        ("/after", False, False, True, False),
    ]
    server = await RawServer(handler).start()
    seen = []
    try:
        async with ClientSession(connector=WatchedConnector()) as session:
            session._retry_connection = False  # as the fetcher has it
            for path, new_only, *_ in steps:
                with connection_use(new_only=new_only) as use:
                    try:
                        async with session.get(server.url(path)) as response:
                            answered = await response.read() == b"<p>kept</p>"
                    except ClientError:
                        answered = False
                seen.append((path, new_only, use.reused, answered, use.lost_before_answer_on_reuse))
    finally:
        await server.close()
    assert seen == steps
    assert server.connections == 4  # /, /a; /b, /half; /linger and /lost; /after


async def _headless(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path in ("/robots.txt", "/sitemap.xml"):
        _answer(writer, b"404 Not Found")
    elif request.path == "/hinted":  # an interim answer, then none: Chromium refuses it
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n<p>no head</p>")
    else:
        bodies = {"/": b"<title>old</title><a href=/next>n</a><a href=/short>s</a><a href=/hinted>h</a>"}
        writer.write(bodies.get(request.path, b"<p>next</p>" if request.path == "/next" else b"hi"))
    return False


async def test_an_http09_answer_from_the_default_port_is_archived_as_chromium_shows_it(run_crawl):
    """An answer with no head (HTTP/0.9) from the scheme's default port is taken, as Chromium
    takes it there (it was refused): its WARC record holds the head Chromium gives it, ``HTTP/0.9
    200 OK`` with no field, and its body to the close, sniffed as a page whose links are
    followed, however short. One after an interim answer is refused, as Chromium refuses it."""
    server = RawServer(_headless)
    try:
        await server.start(f"127.80.{random.randrange(1, 255)}.{random.randrange(1, 255)}", 80)
    except PermissionError:
        pytest.skip("port 80 takes root")
    base = server.url("")
    try:
        result = await run_crawl(base + "/", max_tries=1)
    finally:
        await server.close()
    root = result.snapshot.root
    rows = manifest_rows(root)
    home = rows[base + "/"]
    assert (home.outcome, home.status, home.title, home.content_type) == (FETCHED, 200, "old", "text/html")
    assert _payloads(root) == {
        base + "/": b"<title>old</title><a href=/next>n</a><a href=/short>s</a><a href=/hinted>h</a>",
        base + "/next": b"<p>next</p>",
        base + "/short": b"hi",
        base + "/robots.txt": b"",
        base + "/sitemap.xml": b"",
    }
    heads = set()
    for path in (root / "warc").glob("*.warc.gz"):
        with open(path, "rb") as warc:
            for record in ArchiveIterator(warc):
                if record.rec_type == "response" and not record.rec_headers["WARC-Target-URI"].endswith(
                    ("robots.txt", "sitemap.xml")
                ):
                    heads.add((record.http_headers.protocol, record.http_headers.statusline))
                    assert not record.http_headers.headers
    assert heads == {("HTTP/0.9", "200 OK")}
    hinted = rows[base + "/hinted"]
    assert hinted.outcome == FAILED and HEADLESS_AFTER_INTERIM in (hinted.reason or "")
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
