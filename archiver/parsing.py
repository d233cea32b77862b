"""Parsing fetched documents for links, in this process or in worker processes.

Parsing (lxml, then resolving and normalising every link) is most of the CPU a
crawl spends per page, and it holds the GIL. Once a crawl has parsed
``start_after`` documents, PageParser hands them to a pool of processes, so
the event loop keeps fetching and the writer keeps writing on the other core.
Small crawls (and most tests) never start the pool.

>>> import asyncio
>>> async def demo():
...     with PageParser(processes=0) as parser:
...         page = await parser.parse(b'<a href="/b">b</a>', "http://h/a", "text/html", None)
...     return [link.url for link in page.links]
>>> asyncio.run(demo())
['http://h/b']
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import os
import signal
from concurrent.futures.process import BrokenProcessPool

from .content import decode_payload, mime_type
from .links import Link, Page, extract

log = logging.getLogger("archiver.crawl")

IN_THREAD_BYTES = 256 * 1024
"""Without a pool, documents larger than this are parsed off the event loop."""

_Parsed = tuple[str | None, str | None, list[tuple[str, str]]]


def parse_document(raw: bytes, url: str, content_type: str | None,
                   content_encoding: str | None) -> _Parsed:
    """Title, base URL and (url, kind) links of a document as fetched (still content-encoded).

    Plain tuples, not a Page: they cross the process boundary several times cheaper.
    """
    body = decode_payload(raw, content_encoding)
    page = extract(body, url, mime_type(content_type), content_type)
    return page.title, page.base_url, [(link.url, link.kind) for link in page.links]


def _page(parsed: _Parsed) -> Page:
    title, base_url, links = parsed
    return Page(links=tuple(Link(url, kind) for url, kind in links), title=title, base_url=base_url)


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group: the crawl decides how to stop, not the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_processes() -> int:
    """One parser process per CPU beyond the first (the event loop's), at most 4."""
    return max(0, min((os.cpu_count() or 1) - 1, 4))


class PageParser:
    """Parses documents for links; see the module docstring."""

    def __init__(self, processes: int | None = None, start_after: int = 200) -> None:
        self.processes = default_processes() if processes is None else processes
        self.start_after = start_after
        self._parsed = 0
        self.parsed_in_pool = 0
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def __enter__(self) -> PageParser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def parse(self, raw: bytes, url: str, content_type: str | None,
                    content_encoding: str | None) -> Page:
        """The links and title of one document. Cancelled, its result is dropped."""
        self._parsed += 1
        pool = self._ensure_pool()
        loop = asyncio.get_running_loop()
        args = (raw, url, content_type, content_encoding)
        if pool is not None:
            try:
                parsed = await loop.run_in_executor(pool, parse_document, *args)
            except BrokenProcessPool:
                # A worker died (killed, or a parser crash on this document): start afresh.
                log.warning("a parser process ended while parsing %s; its links are not followed", url)
                self.close()
                return Page(base_url=url)
            self.parsed_in_pool += 1
            return _page(parsed)
        if len(raw) > IN_THREAD_BYTES:
            return _page(await asyncio.to_thread(parse_document, *args))
        return _page(parse_document(*args))

    def _ensure_pool(self) -> concurrent.futures.ProcessPoolExecutor | None:
        if self._pool is None and self.processes > 0 and self._parsed > self.start_after:
            # forkserver: workers start from a clean process, never from a copy of
            # this one with its event loop and threads.
            self._pool = concurrent.futures.ProcessPoolExecutor(
                self.processes, mp_context=multiprocessing.get_context("forkserver"),
                initializer=_ignore_interrupts,
            )
        return self._pool

    def close(self) -> None:
        """Stop the worker processes; safe to call twice."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True, cancel_futures=True)
