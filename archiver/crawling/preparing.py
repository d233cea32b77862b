"""What preparing a capture is, in whichever process does it: its links parsed (and, for a
page inspected for rendering, what its scripts suggest), its records encoded, its mirror file
drafted. CaptureWorkers (capture_workers.py) decides where each capture is prepared; serve()
is the loop of a worker process, here so that a worker imports neither asyncio nor ssl."""

from __future__ import annotations

import io
import logging
import pickle
import signal
import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from archiver.content import HTML_TYPES, PARSED_TYPES, XHTML_TYPE, decode_payload, mime_type
from archiver.crawling import render_policy
from archiver.crawling.render_policy import Inspection
from archiver.findings import (
    Findings,
    read_document,
    read_page,
    root_findings,
    with_prolog_stylesheets,
    with_refresh,
)
from archiver.link_requests import Hint
from archiver.memory import map_large_blocks
from archiver.mirror.document import Draft, draft
from archiver.mirror.linker import Memo
from archiver.mirror.local_paths import LocalPaths
from archiver.scope import Scope
from archiver.store.manifest import Manifest
from archiver.warc.capture import Capture
from archiver.warc.exchange import Exchange, encode_exchange

log = logging.getLogger("archiver.crawl")


Parsed = tuple[Findings, Inspection | None, str | None]
"""A document's findings, for an HTML page inspected for rendering what its scripts suggest,
and the encoding it is read in (findings.document_encoding(): what a stylesheet it refers to is
read in when that names none)."""


def parse_document(
    raw: bytes,
    url: str,
    content_type: str | None,
    content_encoding: str | None,
    inspect: bool = False,
    referrer_encoding: str | None = None,
    refresh: str | None = None,
) -> Parsed:
    """Title, base URL and {url: kind} links of a document as fetched (still content-encoded);
    with ``inspect``, an HTML page's render_policy.Inspection too (from the same parse).
    ``referrer_encoding``: of a stylesheet, the encoding of the document that refers to it;
    ``refresh``: the answer's Refresh header (findings.findings()).

    Plain values, not a Page: they cross the process boundary several times cheaper.
    """
    body = decode_payload(raw, content_encoding)
    mime = mime_type(content_type)
    if inspect and mime in HTML_TYPES:
        root, page_encoding = read_page(body, content_type, mime)
        found = root_findings(root, url, page_encoding, xml=mime == XHTML_TYPE)
        if mime == XHTML_TYPE:
            found = with_prolog_stylesheets(found, body, page_encoding)
        return with_refresh(found, refresh, page_encoding), render_policy.inspect(root, body), page_encoding
    found, encoding = read_document(
        body, url, mime, content_type, referrer_encoding=referrer_encoding, refresh=refresh
    )
    return found, None, encoding


class Drafting:
    """What a process needs to draft mirror files: the manifest's local paths (read-only, the
    crawl's scope for the links it has not recorded yet) and a memo; one thread uses it at a time."""

    def __init__(self, manifest_path: str, scope: Scope) -> None:
        self.manifest_path = manifest_path
        self.scope = scope
        self._paths: LocalPaths | None = None
        self._memo = Memo()

    def draft(self, raw: bytes, capture: Capture, referrer_encoding: str | None = None) -> Draft | None:
        """The mirror draft of an HTML, CSS or SVG capture (None if it is none of them, or fails);
        ``referrer_encoding``: see parse_document()."""
        content_type = capture.content_type
        if mime_type(content_type) not in PARSED_TYPES:
            return None
        return self._draft(raw, capture, content_type, referrer_encoding)

    def _draft(
        self, raw: bytes, capture: Capture, content_type: str | None, referrer_encoding: str | None
    ) -> Draft | None:
        if self._paths is None:  # opened at first use: the writer has made the manifest by then
            connection = Manifest.open(self.manifest_path, readonly=True).connection
            self._paths = LocalPaths(connection, guessing=self.scope)
        try:
            encoding = capture.header("content-encoding")
            with self._paths.one_read():
                return draft(
                    raw,
                    capture.url,
                    content_type,
                    encoding,
                    self._paths,
                    self._memo,
                    referrer_encoding,
                    capture.header("refresh"),
                )
        except Exception as exc:  # noqa: BLE001 - the writer rewrites it at the end, from its record
            log.warning("cannot draft the mirror file of %s (%s: %s)", capture.url, type(exc).__name__, exc)
            return None


_DRAFTING: dict[str, Drafting] = {}
"""A worker process's Drafting, by manifest (one crawl's, in practice)."""


def prepare_capture(
    capture: Capture,
    parse: bool,
    inspect: bool = False,
    mirror: tuple[str, Scope] | None = None,
    referrer_encoding: str | None = None,
) -> tuple[Parsed | None, Exchange, Draft | None]:
    """What a worker does with one capture: its links (if ``parse``), its records, and its mirror
    draft (when the crawl writes a mirror: ``mirror`` is its manifest's path and its scope).
    ``referrer_encoding``: see parse_document().

    ``capture.body`` holds the whole body (a BytesIO crosses the pipe).
    """
    raw = capture.body.getvalue() if isinstance(capture.body, io.BytesIO) else capture.body.read()
    parsed = None
    if parse:
        parsed = parse_document(
            raw,
            capture.url,
            capture.content_type,
            capture.header("content-encoding"),
            inspect,
            referrer_encoding,
            capture.header("refresh"),
        )
    drafted = None
    if mirror is not None:
        drafting = _DRAFTING.get(mirror[0]) or _DRAFTING.setdefault(mirror[0], Drafting(*mirror))
        drafted = drafting.draft(raw, capture, referrer_encoding)
    return parsed, encode_exchange(capture), drafted


@dataclass(frozen=True)
class Prepared:
    """A capture's links and title, and its records when a worker encoded them."""

    links: dict[str, str] = field(default_factory=dict)
    """{normalised URL: links.LINK or links.REQUISITE}, in the page's order."""
    title: str | None = None
    exchange: Exchange | None = None
    """None: the writer encodes the records itself."""
    nofollow: frozenset[str] = frozenset()
    """The names of its robots metas that say not to follow its links (robots_directives.meta_nofollow())."""
    inspection: Inspection | None = None
    """For an HTML page inspected for rendering: what its scripts suggest."""
    draft: Draft | None = None
    """Its mirror file as drafted (HTML, CSS and SVG, when the crawl writes a mirror)."""
    hints: dict[str, Hint] = field(default_factory=dict)
    """{normalised URL: (referrer policy, destination)} of the links whose element (or the page's
    <meta name="referrer">) says how a browser requests them (link_requests.Hint)."""
    encoding: str | None = None
    """The encoding an HTML page or a stylesheet is read in (findings.document_encoding())."""

    @classmethod
    def of(
        cls, parsed: Parsed | None, exchange: Exchange | None = None, drafted: Draft | None = None
    ) -> Prepared:
        """What parse_document() found (None: nothing parsed), with the records and draft if made."""
        if parsed is None:
            return cls(exchange=exchange, draft=drafted)
        (title, _base_url, links, nofollow, hints), inspection, encoding = parsed
        return cls(links, title, exchange, nofollow, inspection, drafted, hints, encoding)


class Prepare(Protocol):
    """What the crawler needs done to a capture before the writer stores it (CaptureWorkers does it)."""

    async def prepare(
        self, capture: Capture, parse: bool, inspect: bool = False, referrer_encoding: str | None = None
    ) -> Prepared:
        """The links of ``capture`` (when ``parse``) and, if encoded already, its records;
        with ``inspect``, what an HTML page's scripts suggest for rendering. A stylesheet that
        names no encoding is read in ``referrer_encoding``, its referring document's.

        The body is left at its start.
        """


HEADER = struct.Struct("!I")
"""What precedes each pickle between the crawl and a worker process: its length."""
READY = HEADER.pack(0)
"""What a worker process writes first, once imported (no answer is empty)."""


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """A worker process's loop: do each pickled task from ``requests`` (prepare_capture's
    arguments), answer on ``answers``; see capture_workers.py."""
    # Ctrl-C reaches the terminal's whole process group: the crawl stops cleanly and
    # ends its workers itself, so a worker does not die under a task in hand.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    map_large_blocks()  # bodies of up to a MiB arrive one after another
    answers.write(READY)
    answers.flush()
    while header := requests.read(HEADER.size):
        (size,) = HEADER.unpack(header)
        result = prepare_capture(*pickle.loads(requests.read(size)))
        answer = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        answers.write(HEADER.pack(len(answer)) + answer)
        answers.flush()
