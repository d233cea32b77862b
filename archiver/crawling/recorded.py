"""Fetches that find URLs rather than pages (robots.txt, sitemaps), every answer kept.

robots.txt and sitemaps are fetched outside the frontier, when the crawl needs
them, through the same Fetch seam and retry policy as pages, with their
redirects followed here hop by hop (resolved by urls.py, as the crawl resolves
a Location). Every answer, a 404 and each redirect included, becomes a WARC
request/response pair and a manifest row of depth 0 found by ``robots`` or
``sitemap``, as wget, grab-site and Heritrix keep robots.txt.

A URL the crawl has claimed already (a page linked to it, or an earlier run
of a resumed crawl archived it) is fetched again for its content but not
recorded twice: each URL has one record. A robots.txt the crawl asks again (a
day old, or out of reach when asked before) is recorded again, each hop, as it
was the first time: the snapshot holds every answer the crawl read rules
from, and its row names the latest. Each URL is claimed with the job that
records it again (``redo``: fetch the robots.txt, read the sitemaps of its
origin), which a crawl shared by nodes queues if this node is lost before the
row is stored.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from archiver.content import CHUNK, Decoding, mime_type
from archiver.crawling import log as crawl_log
from archiver.crawling.fetch import Fetch, FetchOutcome
from archiver.crawling.fetch_request import FetchRequest
from archiver.crawling.frontier import ROBOTS_JOB, Frontier, QueueItem
from archiver.crawling.politeness import Politeness
from archiver.crawling.tries import CUT_BY_PEER
from archiver.crawling.writer import WriteItem, WriteQueue
from archiver.redirects import (
    REDIRECT_STATUSES,
    redirect_failure,
    redirect_fragment,
    redirect_nowhere,
    redirect_target,
    robots_redirects,
)
from archiver.robots_answer import NO_SUCH_HOST, ROBOTS_MAX_BYTES, robots_body
from archiver.sitemaps import sitemap_answered
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, SKIPPED, ManifestRow
from archiver.warc.capture import Capture

FOUND_BY_ROBOTS = "robots"
FOUND_BY_SITEMAP = "sitemap"


@dataclass
class Answer:
    """Where a recorded fetch ended: the last URL of its redirect chain and its answer."""

    url: str
    capture: Capture | None
    """The answer (body at 0), or None if none came, robots.txt forbade it or the chain failed;
    hand it to RecordedFetch.keep() once read."""
    row: ManifestRow | None
    """Its manifest row, written by keep(); None when the URL is recorded elsewhere."""
    given_up_at: int | None = None
    """The status of the redirect a chain was given up at (a loop, too many hops); capture is
    None then."""
    no_such_host: bool = False
    """No answer came because the last URL's host has no address or no name
    (FetchOutcome.no_such_host); capture is None then."""

    @property
    def ok(self) -> bool:
        """True for a 2xx answer whose body came whole, or as far as the crawl received it (cut at
        --max-file-size or the request's max_bytes, not by the server): what came is read."""
        capture = self.capture
        return (
            capture is not None and sitemap_answered(capture.status) and capture.truncated in (None, "length")
        )

    def body(self) -> Iterator[bytes]:
        """The stored body (still content-encoded), a chunk at a time, from its start."""
        assert self.capture is not None
        body = self.capture.body
        body.seek(0)
        return iter(lambda: body.read(CHUNK), b"")


class RecordedFetch:
    """Fetches a URL, following its redirects, and records each hop (see the module docstring)."""

    def __init__(self, fetcher: Fetch, frontier: Frontier, writer: WriteQueue, *, max_redirects: int) -> None:
        self._fetcher = fetcher
        self._frontier = frontier
        self._writer = writer
        self._max_redirects = max_redirects

    async def get(
        self,
        url: str,
        found_by: str,
        parent: str | None = None,
        *,
        policy: Politeness | None = None,
        redo: QueueItem | None = None,
        again: bool = False,
        max_redirects: int | None = None,
        max_bytes: int | None = None,
    ) -> Answer:
        """Fetch ``url`` and the URLs it redirects to; write a row for each hop but the last,
        whose Answer the caller reads and gives to keep().

        With ``policy``, each hop waits for its host's slot and obeys its robots.txt (a
        robots.txt itself is fetched without). ``redo``: the job that records these URLs
        again if this node is lost first (Frontier.claim). ``again``: these URLs were recorded
        before, and are recorded again (a robots.txt asked again). ``max_redirects``: the
        redirects followed, --max-redirects when None; ``max_bytes``: the bytes of a body received
        at most (FetchRequest.max_bytes). Cancelled, nothing more is written.
        """
        hops = self._max_redirects if max_redirects is None else max_redirects
        chain: list[str] = []
        while True:
            recorded = (await self._frontier.claim([url], redo=redo))[0] or again
            row = ManifestRow(url=url, found_by=found_by, parent=parent, depth=0, outcome=FETCHED)
            refusal = await policy.refusal(url) if policy is not None else None
            if refusal is not None:
                return await self._end(url, row if recorded else None, outcome=SKIPPED, reason=refusal)
            outcome = await self._fetch(FetchRequest(url, max_bytes=max_bytes), policy)
            capture = outcome.capture
            if capture is None:
                failed = dataclasses.replace(row, outcome=FAILED, reason=outcome.error, tries=outcome.tries)
                ended = await self._end(url, failed if recorded else None)
                return dataclasses.replace(ended, no_such_host=outcome.no_such_host)
            row = dataclasses.replace(
                row,
                tries=outcome.tries,
                status=capture.status,
                content_type=mime_type(capture.content_type) or None,
                length=capture.body_length,
                truncated=capture.truncated is not None,
                outcome=FAILED if outcome.error else FETCHED,
                reason=outcome.error or redirect_nowhere(capture.status, capture.header("location"), url),
            )
            location = capture.header("location")
            target = redirect_target(location, url)
            if capture.status not in REDIRECT_STATUSES or target is None:
                return Answer(url, capture, row if recorded else None)
            chain.append(url)
            failure = redirect_failure(target, chain, len(chain) - 1, hops)
            if failure is not None:
                row = dataclasses.replace(row, outcome=FAILED, reason=failure)
            elif not outcome.error:
                row = dataclasses.replace(row, outcome=REDIRECTED)
            row = dataclasses.replace(
                row, redirect_to=target, redirect_fragment=redirect_fragment(location, url)
            )
            await self.keep(Answer(url, capture, row if recorded else None))
            if row.outcome != REDIRECTED:
                return Answer(url, None, None, given_up_at=capture.status)
            url, parent = target, url

    async def keep(self, answer: Answer, met: Sequence[ManifestRow] = ()) -> None:
        """Write the answer's capture and row (if it is recorded here) with ``met``, the rows of
        URLs first met in it; its body is closed either way."""
        if answer.row is None and answer.capture is not None:
            answer.capture.body.close()
        if answer.row is not None or met:
            capture = answer.capture if answer.row is not None else None
            await self._writer.put(WriteItem(answer.row, capture, met))
            if answer.row is not None:
                self._frontier.recorded([answer.row.url])

    async def _end(self, url: str, row: ManifestRow | None, **facts: object) -> Answer:
        """Write the row of a hop that ended without an answer to read."""
        if row is not None:
            await self._writer.put(WriteItem(dataclasses.replace(row, **facts)))  # type: ignore[arg-type]
            self._frontier.recorded([url])
        return Answer(url, None, None)

    async def _fetch(self, request: FetchRequest, policy: Politeness | None) -> FetchOutcome:
        """Try ``request`` until an outcome is final, waiting out backoffs in between; each try is
        logged as a page's is."""
        url = request.url
        tries = 0
        while True:
            if policy is None:
                outcome = await self._fetcher.fetch(request, tries)
            else:
                async with policy.slot(url):
                    outcome = await self._fetcher.fetch(request, tries)
            capture = outcome.capture
            if outcome.retry_in is not None:
                crawl_log.retrying(url, outcome.tries, outcome.error, outcome.retry_in)
            elif capture is None:
                crawl_log.failed(url, outcome.tries, outcome.error)
            else:
                length = capture.body_length
                crawl_log.fetched(url, capture.status, mime_type(capture.content_type), length, outcome.error)
            if outcome.retry_in is None:
                return outcome
            tries = outcome.tries
            await asyncio.sleep(outcome.retry_in)

    async def fetch_robots(self, origin: str, again: bool = False) -> tuple[int | None, bytes, str]:
        """Status, body and URL of the answer of ``origin``/robots.txt (redirects followed, every
        answer recorded, ``again`` too: see the module docstring),
        decoded up to ROBOTS_MAX_BYTES (robots_body()); status None when no whole answer came (none at all, or
        a body the server cut short: its rules are unknown), that of the last redirect when
        the chain was given up, NO_SUCH_HOST when its host has no address or no name."""
        redo = QueueItem(origin, 0, 0, found_by=ROBOTS_JOB)
        hops = robots_redirects(self._max_redirects)
        robots_url = origin + "/robots.txt"
        answer = await self.get(
            robots_url,
            FOUND_BY_ROBOTS,
            redo=redo,
            again=again,
            max_redirects=hops,
            max_bytes=ROBOTS_MAX_BYTES,
        )
        capture = answer.capture
        if capture is None:
            return (NO_SUCH_HOST if answer.no_such_host else answer.given_up_at), b"", answer.url
        if capture.truncated in CUT_BY_PEER:
            await self.keep(answer)
            return None, b"", answer.url
        try:
            decoding = Decoding(answer.body(), capture.header("content-encoding"), ROBOTS_MAX_BYTES)
            # Cut here or by the server's sending more than ROBOTS_MAX_BYTES (truncated: length).
            text = robots_body(b"".join(decoding), decoding.cut or capture.truncated is not None)
        finally:
            capture.body.seek(0)
            await self.keep(answer)
        return capture.status, text, answer.url

    async def robots_job(self, item: QueueItem) -> None:
        """Fetch and record the robots.txt of the origin ``item.url`` (a ROBOTS_JOB: the crawl node
        that fetched it was lost before its rows were stored). Its rules are not read here: every
        node has those that node shared."""
        await self.fetch_robots(item.url)
