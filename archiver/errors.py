"""The exceptions archiver raises; every one carries what it concerns.

ArchiverError                 base: the CLI prints its message on one line
├── BadURL                    a URL that cannot be fetched (bad syntax, scheme, host)
├── ConfigError               options that conflict or make no sense
├── SnapshotError             the output folder cannot be used as a snapshot
├── FetchError                a fetch failed (network, timeout, protocol)
│   └── RedirectError         a redirect loop or a chain past --max-redirects
└── WriteError                the writer could not store a record (disk full...)
"""

from __future__ import annotations


class ArchiverError(Exception):
    """Base of archiver's errors; str() is a one-line message for users."""


class BadURL(ArchiverError, ValueError):
    """A URL that is not an absolute http(s) URL we can fetch."""

    def __init__(self, url: str, why: str) -> None:
        self.url = url
        self.why = why
        super().__init__(f"bad URL {url!r}: {why}")


class ConfigError(ArchiverError):
    """Options that conflict or are out of range."""


class SnapshotError(ArchiverError):
    """The output folder cannot be written, or is not a snapshot."""


class FetchError(ArchiverError):
    """A fetch that did not produce a response."""

    def __init__(self, url: str, why: str, *, retryable: bool = True) -> None:
        self.url = url
        self.why = why
        self.retryable = retryable
        super().__init__(f"{url}: {why}")


class RedirectError(FetchError):
    """A redirect loop, or a chain longer than --max-redirects."""

    def __init__(self, url: str, why: str) -> None:
        super().__init__(url, why, retryable=False)


class WriteError(ArchiverError):
    """The writer could not store a record; the crawl stops cleanly."""
