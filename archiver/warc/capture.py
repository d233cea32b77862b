"""Capture: one HTTP exchange as the fetcher received it, the value that crosses from fetch to WARC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import IO


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
    """Why the body was cut short, as WARC-Truncated says it: length, time or disconnect."""

    @property
    def status(self) -> int:
        """The HTTP status code."""
        return int(self.status_line.split(" ", 1)[0])

    def header(self, name: str) -> str | None:
        """The first response header called ``name`` (any case), or None."""
        name = name.lower()
        return next((v for k, v in self.response_headers if k.lower() == name), None)
