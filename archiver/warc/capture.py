"""Capture: one HTTP exchange as the fetcher received it, the value that crosses from fetch to WARC."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import IO

from archiver.content import CHUNK, Decoding
from archiver.media_types import content_type_field, needs_sniffing, sniffed_as, with_charset
from archiver.mime_sniffing import SNIFF_BYTES
from archiver.redirects import REDIRECT_STATUSES


@dataclass(frozen=True)
class NotModified:
    """A server's 304 to a conditional request: what the revisit record of a re-archive keeps."""

    status_line: str
    """e.g. '304 Not Modified'."""
    headers: list[tuple[str, str]]
    """The 304's headers, as received."""
    refers_to_uri: str
    """WARC-Target-URI of the response record (in a previous snapshot) holding the payload."""
    refers_to_date: str
    """Its WARC-Date."""


@dataclass(frozen=True)
class Capture:
    """One HTTP exchange, ready to be written as a request/response pair."""

    url: str
    date: datetime
    request_line: str
    """e.g. 'GET /path?q HTTP/1.1'."""
    request_headers: list[tuple[str, str]]
    status_line: str
    """e.g. '200 OK' (warcio prefixes the protocol from http_version)."""
    http_version: str
    response_headers: list[tuple[str, str]]
    """As received; Transfer-Encoding is renamed when written."""
    body: IO[bytes]
    """The payload as received (de-chunked, still content-encoded), at position 0."""
    body_length: int
    payload_digest: str
    """sha1:BASE32 of the body, computed while it streamed in."""
    ip_address: str | None = None
    truncated: str | None = None
    """Why the body was cut short, as WARC-Truncated says it: length, time, disconnect or
    unspecified (the answer broke HTTP's framing half way)."""
    sniffed: str | None = None
    """The MIME type its body was sniffed as, when its Content-Type named none or was wrong
    (sniffed_type())."""
    not_modified: NotModified | None = None
    """Set when the server answered 304: the status, headers and body above are then those of
    the stored response it confirmed (so the page is parsed and mirrored as usual), and the
    WARC keeps the 304 as a server-not-modified revisit."""

    @property
    def status(self) -> int:
        """The HTTP status code."""
        return int(self.status_line.split(" ", 1)[0])

    @property
    def content_type(self) -> str | None:
        """The Content-Type the answer is taken as: the type its body was sniffed as (with the
        charset its Content-Type gave), else its Content-Type fields as one value
        (media_types.effective_content_type())."""
        sent = content_type_field(self.response_headers)
        return with_charset(self.sniffed, sent) if self.sniffed else sent

    def sniffed_type(self) -> Capture:
        """This capture with ``sniffed`` set where its Content-Type names no type, or is one images
        are mislabelled as and its body is an image (its first decoded bytes say, as
        media_types.sniffed_as() reads them); itself otherwise.

        A redirect a browser follows shows no body, and an empty body says nothing: neither is
        sniffed (the type stays unknown, as cdxj-indexer indexes it). A 300 or 305 with a Location
        is followed by no browser (Chromium follows the REDIRECT_STATUSES alone): a page, sniffed."""
        if not needs_sniffing(self.response_headers) or (
            self.status in REDIRECT_STATUSES and self.header("location") is not None
        ):
            return self
        start = self.body.tell()
        decoding = Decoding(
            iter(lambda: self.body.read(CHUNK), b""), self.header("content-encoding"), SNIFF_BYTES
        )
        head = b"".join(decoding)
        self.body.seek(start)
        sniffed = sniffed_as(self.response_headers, head) if head else None
        return replace(self, sniffed=sniffed) if sniffed is not None else self

    def header(self, name: str) -> str | None:
        """The first response header called ``name`` (any case), or None."""
        name = name.lower()
        return next((v for k, v in self.response_headers if k.lower() == name), None)
