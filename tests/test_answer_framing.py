"""A body's framing as Chromium reads it, byte by byte from a raw server: which answers it
de-chunks, which codings it reads past, and the interim answers it skips. Each answer is
archived with the body Chromium shows, or refused with a one-line reason where Chromium fails it."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path
from typing import Any

from conftest import manifest_rows
from raw_server import RawRequest, RawServer
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.answer_heads import HEADLESS_AFTER_INTERIM
from archiver.crawling.tries import CUT_BY_PEER
from archiver.report import CUT_BODY
from archiver.store.rows import FAILED, FETCHED
from archiver.verify.verifier import verify_snapshot

CHUNKS = b"5\r\nhello\r\n0\r\n\r\n"


def _chunked(word: bytes) -> bytes:
    """``word`` in one chunk and the last chunk (each body its own, so none is a revisit)."""
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(word), word)


PACKED = gzip.compress(b"hello")
CODED_ANSWERS = {
    # path: (the head's status line and fields, the body as sent, the body Chromium 156 shows)
    "/http10-chunked": (b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked", CHUNKS, CHUNKS),
    "/http10-chunked-length": (
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 4",
        CHUNKS,
        CHUNKS[:4],
    ),
    "/gzip-chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked",
        b"%x\r\n" % len(PACKED) + PACKED + b"\r\n0\r\n\r\n",
        PACKED,
    ),
    "/gzip-then-chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked",
        _chunked(b"two fields"),
        b"two fields",
    ),
    "/foo": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: foo", b"hello world", b"hello world"),
    "/foo-length": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: foo\r\nContent-Length: 5",
        b"hullo world",
        b"hullo",
    ),
    "/gzip": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip", b"gzip world", b"gzip world"),
    "/identity": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity", b"same world", b"same world"),
    "/not-quite-chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=y",
        _chunked(b"almost"),
        _chunked(b"almost"),
    ),
    "/upper-case-chunked": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED", _chunked(b"upper"), b"upper"),
    # Chromium de-chunks each, where the crawl's HTTP client reads the body to the close.
    "/chunked-gzip": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip", _chunked(b"first"), b"first"),
    "/chunked-comma": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,", _chunked(b"comma"), b"comma"),
    "/folded-chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,\r\n chunked",
        _chunked(b"folded"),
        b"folded",
    ),
    "/chunked-chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked",
        _chunked(b"chunked twice"),
        b"chunked twice",
    ),
    "/chunked-then-gzip": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip",
        _chunked(b"gzip last"),
        b"gzip last",
    ),
    "/chunked-gzip-length": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 3",
        b"3\r\nlen\r\n4;x=y\ngths\n0\r\nX-Trailer: t\r\n\r\nafter the body",
        b"lengths",
    ),
}
REFUSED_CODINGS = {
    # Chromium fails each: two lengths (ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_LENGTH), whatever
    # coding the answer gives beside them unless it de-chunks the body.
    "/foo-lengths-differ": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: foo\r\nContent-Length: 5\r\nContent-Length: 7",
        b"hello world",
        "bad response: Duplicate Content-Length",
    ),
    "/http10-chunked-lengths-differ": (
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\nContent-Length: 6",
        CHUNKS,
        "bad response: Duplicate Content-Length",
    ),
}


async def _coded(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    answers = {**CODED_ANSWERS, **REFUSED_CODINGS}
    if request.path == "/":
        links = "".join(f'<a href="{path}">{path}</a>' for path in answers).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(links))
        writer.write(links)
    elif request.path in answers:
        head, body, _ = answers[request.path]
        writer.write(head + b"\r\nContent-Type: text/plain\r\n\r\n" + body)
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


def _responses(root: Path) -> dict[str, Any]:
    """(the HTTP head, the payload) of each response record in the snapshot at ``root``, by URL."""
    responses = {}
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as warc:
            for record in ArchiveIterator(warc):
                if record.rec_type == "response":
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    responses[url] = (record.http_headers, record.content_stream().read())
    return responses


async def _crawled(
    run_crawl: Any, answers: Any, max_tries: int
) -> tuple[str, Path, dict[str, Any], dict[str, Any]]:
    """A raw server giving ``answers`` crawled from its root (no sitemaps): its base URL, the
    snapshot's folder, its manifest rows and its responses (_responses()), by URL."""
    server = await RawServer(answers).start()
    base = server.url("")
    try:
        result = await run_crawl(base + "/", max_tries=max_tries, sitemaps=False)
    finally:
        await server.close()
    root = result.snapshot.root
    return base, root, manifest_rows(root), _responses(root)


async def test_transfer_codings_are_read_as_chromium_reads_them(run_crawl):
    """Chromium de-chunks a body only in an HTTP/1.1 answer whose Transfer-Encoding lists
    ``chunked``, and reads past every other coding: an HTTP/1.0 answer's chunked body is shown
    as it came (to its Content-Length, else to the close), a ``gzip, chunked`` body de-chunked
    and still gzip-coded, a ``foo`` one as it came. The WARC keeps that body, its
    Transfer-Encoding renamed so no tool de-chunks it, and verify finds it whole."""
    base, root, rows, responses = await _crawled(run_crawl, _coded, max_tries=3)
    for path, (head, _, shown) in CODED_ANSWERS.items():
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries, row.length) == (FETCHED, 200, 1, len(shown)), row
        http, payload = responses[base + path]
        assert payload == shown, path
        assert not http.get_header("Transfer-Encoding"), path
        unfolded = head.replace(b"\r\n ", b" ")  # a fold is part of its field, as Chromium reads it
        sent = [line.split(b": ", 1)[1].decode() for line in unfolded.split(b"\r\n") if b"Transfer" in line]
        assert [value for name, value in http.headers if name == "X-Archiver-Transfer-Encoding"] == sent
    for path, (_, _, why) in REFUSED_CODINGS.items():
        row = rows[base + path]
        assert (row.outcome, row.tries) == (FAILED, 1), row
        assert row.reason is not None and row.reason.startswith(why), row
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


def _final(body: bytes, content_type: bytes = b"text/plain") -> bytes:
    """An answer of ``body``, framed by its length."""
    return b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        content_type,
        len(body),
        body,
    )


INTERIM_ANSWERS = {
    # path: (what the server sends, the body Chromium 156 shows)
    "/http10-continue": (b"HTTP/1.0 100 Continue\r\n\r\n" + _final(b"after 1.0"), b"after 1.0"),
    "/hints-closing": (
        b"HTTP/1.1 103 Early Hints\r\nConnection: close\r\nLink: </s.css>; rel=preload\r\n\r\n"
        + _final(b"after close"),
        b"after close",
    ),
    "/odd-199": (
        b"HTTP/1.1 199 Odd\r\nno colon\r\nContent-Length: 9\r\nX-Interim : b\r\n\r\n" + _final(b"after 199"),
        b"after 199",
    ),
    "/lower-case-102": (b"http/1.1 102\r\n\r\n" + _final(b"after 102"), b"after 102"),
    "/hints-chunked": (
        b"HTTP/1.0 103 Early Hints\r\nTransfer-Encoding: chunked\r\n\r\n" + _final(b"after chunked"),
        b"after chunked",
    ),
    "/many-http10": (
        b"HTTP/1.0 100 Continue\r\n\r\n" * 3
        + b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nto the close",
        b"to the close",
    ),
}
BODY_AFTER_HINTS = b"HTTP/1.1 103 Early Hints\r\nContent-Length: 5\r\n\r\nhello" + _final(b"hello")
"""An interim answer given a body: Chromium reads no body after it, finds no status line where
the answer should start, and fails it (ERR_INVALID_HTTP_RESPONSE)."""
BIG_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: <" + b"h" * 10_000 + b">; rel=preload\r\n\r\n"
"""An interim answer of some 10 KB: 30 of them, with the answer, run past the 256 KiB that
bound an answer's heads, interim ones included (answer_parser.MAX_HEAD_BYTES)."""


async def _interim(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/":
        paths = [*INTERIM_ANSWERS, "/body-after-hints", "/big-hints"]
        writer.write(_final("".join(f'<a href="{path}">{path}</a>' for path in paths).encode(), b"text/html"))
    elif request.path in INTERIM_ANSWERS:
        writer.write(INTERIM_ANSWERS[request.path][0])
    elif request.path == "/body-after-hints":
        writer.write(BODY_AFTER_HINTS)
    elif request.path == "/big-hints":
        writer.write(BIG_HINTS * 30 + _final(b"after big hints"))
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


async def test_interim_answers_are_skipped_as_chromium_skips_them(run_crawl):
    """Chromium skips each interim (1xx) answer before the answer itself, whatever its version and
    fields (HTTP/1.0, ``Connection: close``, a line that is no field, a coding): the WARC keeps
    the answer itself, its head and body, and none of the interim answers' fields. An interim
    answer given a body, which Chromium fails, fails the fetch at once in one line, as do interim
    heads past the bound of an answer's heads, counted as they came."""
    base, root, rows, responses = await _crawled(run_crawl, _interim, max_tries=3)
    for path, (_, shown) in INTERIM_ANSWERS.items():
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries) == (FETCHED, 200, 1), row
        http, payload = responses[base + path]
        assert (http.get_statuscode(), payload) == ("200", shown), path
        assert [name for name, _ in http.headers] == ["Content-Type"] + ["Content-Length"] * (
            path != "/many-http10"
        ), path
    hinted = rows[base + "/body-after-hints"]
    assert (hinted.outcome, hinted.tries, hinted.reason) == (
        FAILED,
        1,
        f"bad response: {HEADLESS_AFTER_INTERIM}",
    )
    big = rows[base + "/big-hints"]
    assert (big.outcome, big.tries, big.reason) == (
        FAILED,
        1,
        "bad response: the answer's head runs past 256 KiB",
    )
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


VERSIONS = {
    # path: (the status line, the status and version Chromium 156 reads, whether it de-chunks)
    "/http12": (b"HTTP/1.2 200 OK", 200, "HTTP/1.1", True),
    "/http30": (b"HTTP/3.0 200 OK", 200, "HTTP/1.1", True),
    "/http110": (b"HTTP/1.10 201 Made", 201, "HTTP/1.1", True),
    "/http08": (b"HTTP/0.8 200 OK", 200, "HTTP/1.0", False),
    "/http1x": (b"HTTP/1.x 200 OK", 200, "HTTP/1.0", False),
    "/no-slash": (b"HTTP 202 OK", 202, "HTTP/1.0", False),
}
"""Versions aiohttp's parser refuses: Chromium reads the digits after ``HTTP/`` and after the
first dot, takes any version from 1.1 on as 1.1 (it de-chunks the body) and any other as 1.0
(it shows the chunks as they came). Each answer's body is its path, chunked."""


async def _versions(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/":
        writer.write(
            _final("".join(f'<a href="{path}">{path}</a>' for path in VERSIONS).encode(), b"text/html")
        )
    elif request.path in VERSIONS:
        status_line = VERSIONS[request.path][0]
        head = status_line + b"\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        writer.write(head + _chunked(request.path.encode()))
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


async def test_a_version_the_client_refuses_is_read_as_chromium_reads_it(run_crawl):
    """An answer of HTTP/1.2, 3.0, 1.10, 0.8, 1.x or no version at all failed the fetch (the
    client reads four versions only); Chromium shows each, as HTTP/1.1 or 1.0 by its digits. The
    WARC keeps the version Chromium reads and the body it shows."""
    base, root, rows, responses = await _crawled(run_crawl, _versions, max_tries=3)
    for path, (_, status, version, dechunked) in VERSIONS.items():
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries) == (FETCHED, status, 1), row
        http, payload = responses[base + path]
        shown = path.encode() if dechunked else _chunked(path.encode())
        assert (http.protocol, payload) == (version, shown), path
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


CUT_HEADS = {
    # path: (what the server sends before it closes, the fields Chromium 156 shows)
    "/cut-in-a-field": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Cut: b",
        ["Content-Type", "X-Cut"],
    ),
    "/cut-after-a-field": (b"HTTP/1.2 200 OK\r\nContent-Type: text/html\r\n", ["Content-Type"]),
    "/cut-in-the-status-line": (b"HTTP/1.1 200 OK", []),
    "/cut-after-hints": (b"HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\nX-After: hints", ["X-After"]),
}
"""Heads the close cuts short: over http Chromium reads what came as the whole head, and the
answer as one with an empty body."""
CUT_WITH_A_LENGTH = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100"
"""A head cut short that gives a body none of which came: Chromium shows an empty page, the
crawl a body cut short (what it archives must not pass for whole)."""


async def _cut_heads(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/":
        paths = [*CUT_HEADS, "/cut-with-a-length"]
        writer.write(_final("".join(f'<a href="{path}">{path}</a>' for path in paths).encode(), b"text/html"))
    elif request.path in CUT_HEADS:
        writer.write(CUT_HEADS[request.path][0])
    elif request.path == "/cut-with-a-length":
        writer.write(CUT_WITH_A_LENGTH)
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


async def test_a_head_the_close_cuts_short_is_read_as_chromium_reads_it(run_crawl):
    """A server that closes the connection within an answer's head (after a field, within one,
    within the status line) had the fetch fail, tried again up to --max-tries, with the client's
    message as its reason; over http Chromium shows such an answer, its head what came and its
    body empty. So does the crawl, and verify finds it whole; one whose head gives a body that
    never came is a body cut short."""
    base, root, rows, responses = await _crawled(run_crawl, _cut_heads, max_tries=2)
    for path, (_, fields) in CUT_HEADS.items():
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries, row.length) == (FETCHED, 200, 1, 0), row
        http, payload = responses[base + path]
        assert ([name for name, _ in http.headers], payload) == (fields, b""), path
    assert responses[base + "/cut-in-a-field"][0].get_header("X-Cut") == "b"
    cut = rows[base + "/cut-with-a-length"]
    assert (cut.outcome, cut.tries, cut.reason) == (
        FAILED,
        2,
        "body cut short after 0 of 100 bytes when the connection ended after 2 tries",
    )
    report = verify_snapshot(root)
    assert report.counts == {CUT_BODY: 1}, report.render_text(str(root))


CHUNKED_GZIP = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"
"""A head whose body Chromium de-chunks and the crawl's HTTP client would read to the close."""


async def _dechunked_here(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/":
        paths = ("/slow", "/cut", "/broken")
        writer.write(_final("".join(f'<a href="{path}">{path}</a>' for path in paths).encode(), b"text/html"))
        return False
    if request.path == "/slow":  # a byte at a time, on a connection the server keeps open
        for byte in CHUNKED_GZIP + b"4;x\r\nslow\r\n3\r\n bo\r\n2\ndy\n0\nT: t\n\n":
            writer.write(bytes([byte]))
            await writer.drain()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nextra")  # unasked: dropped
        await writer.drain()
        await asyncio.sleep(1)
        return True
    if request.path == "/cut":
        writer.write(CHUNKED_GZIP + b"5\r\nhel")
    elif request.path == "/broken":
        writer.write(CHUNKED_GZIP + b"3\r\nabc\r\n0x5\r\nhello")
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


async def test_a_body_chromium_dechunks_and_the_client_reads_to_the_close_ends_as_chromium_ends_it(
    run_crawl,
):
    """A ``chunked, gzip`` body ends where its last chunk's trailers end, however it came and
    though the server keeps its connection open (the fetch does not wait for the close, and what
    the server sends past the body answers nothing); one the close cuts short, or whose framing
    breaks, is a body cut short, as Chromium fails it (ERR_INCOMPLETE_CHUNKED_ENCODING,
    ERR_INVALID_CHUNKED_ENCODING): tried again when the close cut it, not when its framing broke."""
    base, root, rows, responses = await _crawled(run_crawl, _dechunked_here, max_tries=2)
    slow = rows[base + "/slow"]
    assert (slow.outcome, slow.status, slow.tries, slow.length) == (FETCHED, 200, 1, 9), slow
    assert responses[base + "/slow"][1] == b"slow body"
    cut, broken = rows[base + "/cut"], rows[base + "/broken"]
    assert (cut.outcome, cut.tries, cut.reason) == (
        FAILED,
        2,
        "body cut short after 3 bytes when the connection ended after 2 tries",
    )
    assert (broken.outcome, broken.tries, broken.reason) == (
        FAILED,
        1,
        f"body cut short after 3 bytes {CUT_BY_PEER['unspecified']}",
    )
    assert (responses[base + "/cut"][1], responses[base + "/broken"][1]) == (b"hel", b"abc")
    report = verify_snapshot(root)
    assert report.counts == {CUT_BODY: 2}, report.render_text(str(root))


STATUSES = {
    # path: (the status line, the status Chromium 156 reads, the body it shows)
    "/long": (b"HTTP/1.1 2000 OK", 2000, b"long"),
    "/thousand": (b"HTTP/1.1 1000", 1000, b"thousand"),
    "/run-into-reason": (b"HTTP/1.1 2000x", 2000, b"run into its reason"),
    "/http10-long": (b"HTTP/1.0 4010 Odd", 4010, b"http/1.0"),
    "/past-int": (b"HTTP/1.1 99999999999999999999999 OK", 2**31 - 1, b"past an int"),
    "/zero-led": (b"HTTP/1.1 0200 OK", 200, b"zeros before"),
    "/zero-led-interim": (b"HTTP/1.1 0100 Continue\r\n\r\nHTTP/1.1 201 Made", 201, b"after 0100"),
}
"""Status codes aiohttp's parser does not read (it reads three digits): Chromium reads the number
their digits give, as large as an int holds, shows the body of any but a 1xx, 204 or 304 (zeros
before one of those make it no other), and skips an interim answer. Each body is chunked (an
HTTP/1.0 one shown as it came)."""


async def _statuses(request: RawRequest, writer: asyncio.StreamWriter) -> bool:
    if request.path == "/":
        paths = [*STATUSES, "/zero-led-no-content"]
        writer.write(_final("".join(f'<a href="{path}">{path}</a>' for path in paths).encode(), b"text/html"))
    elif request.path in STATUSES:
        status_line, _, body = STATUSES[request.path]
        head = status_line + b"\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        writer.write(head + _chunked(body))
    elif request.path == "/zero-led-no-content":
        writer.write(b"HTTP/1.1 0204 No Content\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nbody")
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return False


async def test_a_status_code_the_client_does_not_read_is_read_as_chromium_reads_it(run_crawl):
    """A status code of four digits or more (``2000``), or one with zeros before it (``0200``),
    failed the fetch as a bad response; Chromium reads its number and shows the answer. The
    crawl archives it with that status, the WARC's status line giving it, and verify finds the
    snapshot whole; zeros before a 204 leave it a 204, with no body."""
    base, root, rows, responses = await _crawled(run_crawl, _statuses, max_tries=3)
    for path, (status_line, status, body) in STATUSES.items():
        shown = _chunked(body) if status_line.startswith(b"HTTP/1.0") else body  # 1.0: no chunks
        row = rows[base + path]
        assert (row.outcome, row.status, row.tries, row.length) == (FETCHED, status, 1, len(shown)), row
        http, payload = responses[base + path]
        assert (http.get_statuscode(), payload) == (str(status), shown), path
    assert responses[base + "/run-into-reason"][0].statusline == "2000 x"
    no_content = rows[base + "/zero-led-no-content"]
    assert (no_content.outcome, no_content.status, no_content.length) == (FETCHED, 204, 0), no_content
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
