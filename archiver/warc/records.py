"""WARC/1.1 records, each written as its own gzip member: warcinfo, request, response, revisit.

Records are assembled here rather than through warcio's generic builder: we
already know every field, and for a response the payload digest, so a record is
a header block, a digest of its block and one pass of deflate, and it can be
encoded in any process before a WARC file is chosen (see crawling/capture_workers.py). warcio
still reads every record back in the tests, digests checked. Compression is
ISA-L's (isal), at its level 3: standard gzip that any reader inflates. On a
15 KB page it costs 58 us against 154 for zlib-ng at level 6 and 264 for
zlib's, for output about 2.5% larger (benchmarks/compression_bench.py).
Compression was the largest single cost of a crawl's CPU per page.

HTTP headers are stored as the bytes that came over the wire: the fetcher
decodes them as Latin-1, so encoding them back as Latin-1 is exact. Only a
header we made ourselves that Latin-1 cannot hold is written as UTF-8.

>>> import gzip, io
>>> out = io.BytesIO()
>>> write_record(out, [("WARC-Type", "request")], REQUEST_TYPE, b"GET / HTTP/1.1\\r\\n\\r\\n")
>>> record = gzip.decompress(out.getvalue()).decode()
>>> print(record[:record.index("\\r\\n\\r\\n")].replace("\\r\\n", "\\n"))
WARC/1.1
WARC-Type: request
WARC-Block-Digest: sha1:HZXZT4LLCPHWK5TQRRYZ7H7BIVEI4ETY
Content-Type: application/http; msgtype=request
Content-Length: 18
>>> record.endswith("\\r\\n\\r\\nGET / HTTP/1.1\\r\\n\\r\\n\\r\\n\\r\\n")
True
"""

from __future__ import annotations

import base64
import hashlib
import io
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import IO

from isal import isal_zlib

WARC_VERSION = "WARC/1.1"
GZIP_LEVEL = 3
CHUNK = 1024 * 1024
RESPONSE_TYPE = "application/http; msgtype=response"
REQUEST_TYPE = "application/http; msgtype=request"
WARC_FIELDS_TYPE = "application/warc-fields"
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
EMPTY_PAYLOAD_DIGEST = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
"""sha1 of no bytes: the payload digest of a request without a body."""

Fields = list[tuple[str, str]]


def warc_date(moment: datetime) -> str:
    """WARC/1.1 date with microseconds: 2026-01-02T03:04:05.123456Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_record_id() -> str:
    """A fresh WARC-Record-ID: <urn:uuid:...>."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def sha1_digest(digest: hashlib._Hash) -> str:
    """The sha1:BASE32 form used by Heritrix, warcio and pywb."""
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


def http_head(first_line: str, headers: Iterable[tuple[str, str]], encoding: str = "latin-1") -> bytes:
    """An HTTP message head: first line, headers, blank line, in the bytes that went over the wire.

    ``encoding`` maps its text back to those bytes: latin-1 for a head received
    (the fetcher decodes every received byte so), utf-8 for a request (aiohttp
    encodes what it sends so). A line latin-1 cannot hold (text from elsewhere)
    is written in UTF-8, that line alone: the others keep their bytes.

    >>> http_head("HTTP/1.1 200 OK", [("Content-Type", "text/html")])
    b'HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\n\\r\\n'
    >>> http_head("HTTP/1.1 200 OK \\u2192", [("X-Name", "caf\\xe9")])
    b'HTTP/1.1 200 OK \\xe2\\x86\\x92\\r\\nX-Name: caf\\xe9\\r\\n\\r\\n'
    """
    lines = [first_line, *(f"{name}: {value}" for name, value in headers), "", ""]
    return b"\r\n".join(_line_bytes(line, encoding) for line in lines)


def _line_bytes(line: str, encoding: str) -> bytes:
    try:
        return line.encode(encoding)
    except UnicodeEncodeError:
        return line.encode("utf-8", "surrogateescape")


def warc_fields(fields: Iterable[tuple[str, str]]) -> bytes:
    """A warcinfo block: ``name: value`` lines (application/warc-fields)."""
    return "".join(f"{name}: {value}\r\n" for name, value in fields).encode("utf-8")


def write_record(
    out: IO[bytes], fields: Fields, content_type: str, head: bytes, body: IO[bytes] | None = None
) -> None:
    """Write one record as one gzip member: ``fields``, then the block ``head`` + ``body``.

    WARC-Block-Digest, Content-Type and Content-Length are computed here. The
    body is read from where it stands, twice when it is large (digest, then
    compression), and left at its end.
    """
    block_digest = hashlib.sha1(head)
    length = len(head)
    data = b""
    start = 0
    whole = True  # the whole body is in ``data``: compressed in one call, read once
    if body is not None:
        start = body.tell()
        data = body.read(CHUNK)
        block_digest.update(data)
        length += len(data)
        while chunk := body.read(CHUNK):  # a large body: digested now, compressed below
            whole = False
            block_digest.update(chunk)
            length += len(chunk)
    header = (
        WARC_VERSION
        + "\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in fields)
        + f"WARC-Block-Digest: {sha1_digest(block_digest)}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
    ).encode("utf-8")
    compressor = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, 16 + isal_zlib.MAX_WBITS)
    if whole:
        out.write(compressor.compress(header + head + data + b"\r\n\r\n") + compressor.flush())
        return
    assert body is not None
    out.write(compressor.compress(header + head))
    body.seek(start)
    while chunk := body.read(CHUNK):
        out.write(compressor.compress(chunk))
    out.write(compressor.compress(b"\r\n\r\n") + compressor.flush())


def encode_record(fields: Fields, content_type: str, head: bytes, body: IO[bytes] | None = None) -> bytes:
    """One record as one gzip member, in memory (see write_record)."""
    out = io.BytesIO()
    write_record(out, fields, content_type, head, body)
    return out.getvalue()
