"""The exceptions archiver raises; every one carries what it concerns.

ArchiverError                   base: the CLI prints its message on one line
├── BadURL (ValueError)         a URL that cannot be fetched (bad syntax, scheme, host)
├── ConfigError                 options that conflict or make no sense
├── SnapshotError               the output folder cannot be used as a snapshot
│   ├── SnapshotLocked          another process is writing the snapshot
│   └── UnknownEncoding         the encoding the crawl read a document in cannot be read back
├── UnsafePathError (ValueError) a path that would leave its folder or pass a symbolic link
├── FetchError                  a fetch that got no response (network, timeout, protocol)
│   └── NoSuchHost              its host has no address, or no name a request can carry
├── WriteError                  the writer could not store a record (disk full...)
├── FrontierLost                a shared crawl's Redis went away while the crawl ran
│   └── NodeGivenUp             the other crawl nodes gave this one up (silent past --node-timeout)
├── PageHung                    a rendered page held its tab past its time limit (a loop, or no CPU)
├── BrowserUnusable             the browser --browser drives exits as it starts
├── ExportError                 an export file that cannot be written (it exists, no room...)
└── WarcDamage                  bytes of a WARC file that cannot be read as records
    ├── CorruptData             a gzip member that does not decompress, or fails its CRC
    ├── DigestMismatch          a record whose bytes its digests do not match (or cannot be checked)
    └── TornFile                the file ends inside a gzip member or a record

A builtin base in brackets is kept for callers that catch it.
"""

from __future__ import annotations

import re


class ArchiverError(Exception):
    """Base of archiver's errors; str() is a one-line message for users."""


class BadURL(ArchiverError, ValueError):
    """A URL that is not an absolute http(s) URL we can fetch."""

    def __init__(self, url: str, why: str) -> None:
        self.url = url
        self.why = why
        shown = password_withheld(url)
        shown = shown if len(shown) <= SHOWN_URL else shown[:SHOWN_URL] + "\u2026"
        super().__init__(f"bad URL {shown!r}: {why}")


SHOWN_URL = 200
"""Characters of a bad URL its error shows: what was given may be a line of megabytes."""

_AUTHORITY = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]*([^/\\?#]*)")
"""A URL's scheme and the authority after it, as a URL parser finds it (WHATWG: a special
scheme takes any run of slashes and backslashes before it)."""


def password_withheld(url: str) -> str:
    """``url`` as a message shows it: the password of its userinfo written ``[withheld]``, even
    when the rest of it is no URL (the userinfo ends at the authority's last ``@``, the
    password at its first ``:``, as a URL parser reads them).

    >>> password_withheld("http://u:SEKRET@host:99999/"), password_withheld("http://u@h/")
    ('http://u:[withheld]@host:99999/', 'http://u@h/')
    >>> password_withheld("http://u:a@b@h/p?q=x:y@z"), password_withheld("http:\\\\u:pw@h")
    ('http://u:[withheld]@h/p?q=x:y@z', 'http:\\\\u:[withheld]@h')
    """
    found = _AUTHORITY.match(url)
    if found is None:
        return url
    userinfo, at, host = found.group(1).rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.partition(":")[0]
    return f"{url[: found.start(1)]}{user}:[withheld]@{host}{url[found.end(1) :]}"


class ConfigError(ArchiverError):
    """Options that conflict or are out of range."""


class ExportError(ArchiverError):
    """An export (a WACZ file) that cannot be written: it exists already, or the disk refuses it."""


class FrontierLost(ArchiverError):
    """The Redis of a shared crawl went away while the crawl ran: what the node stored is whole,
    and the node, started again, goes on."""


class NodeGivenUp(FrontierLost):
    """The other nodes of a shared crawl gave this node up (it was silent past --node-timeout) and
    took back the URLs it held: it stops, what it stored whole, and goes on if started again."""


class PageHung(ArchiverError):
    """A page rendered in a browser whose scripts did not give its tab back by its time limit (a
    loop), or whose renderer the machine left no CPU to answer with until ``starved_past`` seconds
    after it: its tab is closed, the browser goes on."""

    def __init__(self, url: str, seconds: float, starved_past: float | None = None) -> None:
        self.url = url
        if starved_past is None:
            said = f"the page's scripts did not give the browser back within its time limit ({seconds:g} s)"
        else:  # its renderer waited for the machine, not for a script
            said = (
                "the browser got too little CPU to render the page within its time limit"
                f" ({seconds:g} s, and {starved_past:g} s past it): the machine is busy"
            )
        super().__init__(f"{said}; its tab was closed")


class BrowserUnusable(ArchiverError):
    """The Chromium a crawl renders pages with exits as it is launched (not a Chromium, a broken
    install, a library missing): no page can be rendered, and the crawl stops."""


class SnapshotError(ArchiverError):
    """The output folder cannot be written, or is not a snapshot."""


class SnapshotLocked(SnapshotError):
    """Another process holds the snapshot's lock: it is writing there."""


class UnknownEncoding(SnapshotError):
    """The encoding the crawl read a document of the snapshot in cannot be read back (its record
    is damaged or gone): a stylesheet it refers to that names no encoding of its own cannot be
    read as the crawl read it, and is not read in another."""

    def __init__(self, url: str, why: str) -> None:
        self.url = url
        self.why = why
        super().__init__(f"the encoding the crawl read {url} in cannot be read back: {why}")


class UnsafePathError(ArchiverError, ValueError):
    """A relative path that would leave its folder or pass through a symbolic link."""


def one_line(text: str) -> str:
    """``text`` on one line: an HTTP parser's message about a hostile answer spans several,
    with the bytes it refused and a line of carets under them.

    >>> one_line("Bad status line:\\nInvalid status code:\\n\\nb'HTTP/1.1 abc'\\n          ^")
    "Bad status line: Invalid status code: b'HTTP/1.1 abc'"
    """
    lines = (line.strip() for line in text.splitlines())
    return " ".join(line for line in lines if line.strip("^"))


class FetchError(ArchiverError):
    """A fetch that did not produce a response (``why`` is one line: it is the manifest's reason
    and a line of the report)."""

    def __init__(self, url: str, why: str, *, retryable: bool = True) -> None:
        self.url = url
        why = one_line(why)
        self.why = why
        self.retryable = retryable
        super().__init__(f"{url}: {why}")


class NoSuchHost(FetchError):
    """A fetch whose host the resolver says has no address (NXDOMAIN), or that IDNA encodes to no
    name (a label past 63 letters): asked again, it fails the same, and no server is there."""

    def __init__(self, url: str, why: str) -> None:
        super().__init__(url, why, retryable=False)


class WriteError(ArchiverError):
    """The writer could not store a record; the crawl stops cleanly."""


def cannot_write(target: object, exc: OSError) -> WriteError:
    """The WriteError of ``exc``, met as ``target`` (a file) was written: one line that names the
    file and the system's reason, so the user knows which disk is full or which file is refused.

    >>> import errno, os
    >>> str(cannot_write("snap/mirror/a.html", OSError(errno.EFBIG, os.strerror(errno.EFBIG))))
    'cannot write snap/mirror/a.html: File too large'
    """
    return WriteError(f"cannot write {target}: {exc.strerror or exc}")


class WarcDamage(ArchiverError):
    """Bytes of a WARC file that cannot be read as records, at ``offset`` of the file."""

    def __init__(self, offset: int, why: str) -> None:
        self.offset = offset
        self.why = why
        super().__init__(f"offset {offset}: {why}")


class CorruptData(WarcDamage):
    """A gzip member that does not decompress, or whose CRC does not match."""


class DigestMismatch(WarcDamage):
    """A record whose block or payload, read to its end, does not match its WARC-Block-Digest or
    WARC-Payload-Digest (its bytes changed since it was written), or that has no Content-Length
    to check them by."""


class TornFile(WarcDamage):
    """The file ends inside a gzip member or a record: it was cut short."""
