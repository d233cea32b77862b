"""An answer as it arrives: its head checked as a browser checks it, its body streamed
into a file and hashed, how far it came when it was cut short, and the Capture it makes.

The fetcher (fetch.py) sends the request and bounds the try; this reads what came back.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Collection
from datetime import datetime
from typing import IO

import aiohttp

from archiver.crawling.connections import ConnectionUse
from archiver.errors import FetchError, cannot_write
from archiver.request_headers import withheld
from archiver.warc.capture import Capture
from archiver.warc.records import sha1_digest

CHUNK = 64 * 1024
"""Bytes of a body read at a time."""


def peer_ip(response: aiohttp.ClientResponse) -> str | None:
    """The server's IP address, for WARC-IP-Address.

    aiohttp hands a connection back to its pool as soon as a small body is
    read, so ``response.connection`` is often None by now; the protocol that
    carried the response still knows its transport.
    """
    protocol = response.connection.protocol if response.connection else None
    protocol = protocol or getattr(response, "_protocol", None)
    transport = getattr(protocol, "transport", None)
    peer = transport.get_extra_info("peername") if transport else None
    return str(peer[0]) if peer else None


def received_text(parsed: str) -> str:
    """Text aiohttp decoded from received bytes (UTF-8, surrogateescape: the status line's reason)
    as the fetcher keeps every received head: one character per byte (latin-1), so the WARC
    gets those bytes back.

    >>> received_text("\\xc7a va")   # the bytes C3 87 61 20 76 61 ('Ça va' in UTF-8)
    '\\xc3\\x87a va'
    """
    return parsed.encode("utf-8", "surrogateescape").decode("latin-1")


SINGLE_FIELDS = ("Location", "Content-Disposition")
"""Fields an answer may repeat only with the same value: Chromium fails an answer whose fields
of one of these names differ (ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION, ..._CONTENT_DISPOSITION),
as a server's answer split by an attacker may show them."""


def check_single_fields(url: str, response: aiohttp.ClientResponse) -> None:
    """Refuse an answer that gives a field of SINGLE_FIELDS twice with values that differ (two
    Locations: which one a browser would follow is none, it shows an error). The same value
    repeated is taken once, as Chromium takes it."""
    for name in SINGLE_FIELDS:
        values = {value.strip(" \t") for value in response.headers.getall(name, ())}
        if len(values) > 1:
            raise FetchError(url, f"bad response: {name} headers that differ", retryable=False)


TRAILER = "X-Archiver-Trailer"
"""What each line of the trailers after a chunked body is kept under, after the answer's fields,
in its WARC head: the body is stored de-chunked, and a trailer is no field of the head (RFC 9110,
section 6.5.1: a client merges one into the head only when it knows it safe to), so no tool
takes one for the head's own, while the record holds all the server sent."""


class Received:
    """How far a response came: filled in as it arrives, so a try cut short still has it."""

    def __init__(self) -> None:
        self.response: aiohttp.ClientResponse | None = None
        self.ip: str | None = None
        self.length = 0
        self.hasher = hashlib.sha1()
        self.truncated: str | None = None
        self.connection: ConnectionUse | None = None

    @property
    def lost_on_reuse(self) -> bool:
        """True if no answer came because a reused connection was lost before its first byte."""
        return (
            self.response is None
            and self.connection is not None
            and self.connection.lost_before_answer_on_reuse
        )

    @property
    def on_reused_connection(self) -> bool:
        """True if the request went out on a connection that had carried an earlier answer."""
        return self.connection is not None and self.connection.reused

    @property
    def trailers(self) -> list[bytes]:
        """The lines of the trailers after the answer's chunked body, if any came."""
        return self.connection.trailers if self.connection is not None else []

    def add(self, body: IO[bytes], chunk: bytes) -> None:
        """Append ``chunk`` to ``body``. Raises WriteError if the disk refuses it: a body too big
        to hold in memory goes to a scratch file, and a full disk there is no peer that cut the
        body short (tried again, it fails alike; failed, the URL would seem lost to the network)."""
        try:
            body.write(chunk)
        except OSError as exc:
            raise cannot_write(f"a scratch file in {tempfile.gettempdir()}", exc) from None
        self.hasher.update(chunk)
        self.length += len(chunk)

    async def read_body(self, response: aiohttp.ClientResponse, body: IO[bytes], limit: int) -> None:
        """Stream the body into ``body``; cut it at ``limit``, note it if the peer cuts it."""
        try:
            async for chunk in response.content.iter_chunked(CHUNK):
                if self.length + len(chunk) > limit:
                    self.add(body, chunk[: limit - self.length])
                    self.truncated = "length"
                    return
                self.add(body, chunk)
        except (aiohttp.ClientError, OSError):
            # aiohttp raises ClientPayloadError for a body short of its Content-Length or
            # of its last chunk, and for a connection reset half way: the peer cut it.
            self.truncated = "disconnect"
        if self.connection is not None and self.connection.answer_broken:
            self.truncated = "unspecified"

    def capture(
        self, url: str, date: datetime, body: IO[bytes], given_cookies: Collection[str] = ()
    ) -> Capture:
        """The Capture of the answer received for ``url``, requested at ``date``, its body in
        ``body`` (read from its start): the request as sent (credentials withheld, the cookies
        of a Cookie header given with --header, ``given_cookies``, among them) and the
        answer's head as received."""
        response = self.response
        assert response is not None, "no answer to capture"
        sent = response.request_info
        target = sent.url.raw_path_qs if sent.url.raw_path_qs else "/"
        version = response.version
        request_headers = withheld(sent.headers.items(), given_cookies)
        if not any(k.lower() == "host" for k, _ in request_headers):
            request_headers.insert(0, ("Host", sent.url.raw_authority))
        return Capture(
            url=url,
            date=date,
            request_line=f"{sent.method} {target} HTTP/1.1",
            request_headers=request_headers,
            # Three digits at least, as a status line has them (a code of two, 20, read as Chromium
            # reads it, would make the record one that replay tools and HTTP clients refuse).
            status_line=f"{response.status:03d} {received_text(response.reason or '')}".rstrip(),
            http_version=f"HTTP/{version.major}.{version.minor}" if version else "HTTP/1.1",
            response_headers=[
                *((k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers),
                *((TRAILER, line.decode("latin-1")) for line in self.trailers),
            ],
            body=body,
            body_length=self.length,
            payload_digest=sha1_digest(self.hasher),
            ip_address=self.ip,
            truncated=self.truncated,
        ).sniffed_type()
