"""Parsing fetched documents for links, in this process or in worker processes.

Parsing (lxml, then resolving and normalising every link) is most of the CPU a
crawl spends per page, and it holds the GIL. Once a crawl has parsed
``start_after`` documents, PageParser hands them to worker processes, so the
event loop keeps fetching and the writer keeps writing on another core. Small
crawls (and most tests) never start a worker.

A worker is a fresh interpreter running serve() (it never imports the
caller's ``__main__``), fed length-prefixed pickles on its stdin and
answering in order on its stdout. The event loop talks to it through asyncio
pipes, with no thread in between (concurrent.futures' process pool spent more
CPU in its two threads than the parsing it moved away).

>>> import asyncio
>>> async def demo():
...     async with PageParser(processes=0) as parser:
...         page = await parser.parse(b'<a href="/b">b</a>', "http://h/a", "text/html", None)
...     return [link.url for link in page.links]
>>> asyncio.run(demo())
['http://h/b']
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import pickle
import struct
import sys
from typing import Any, BinaryIO

from .content import decode_payload, mime_type
from .links import Link, Page, extract

log = logging.getLogger("archiver.crawl")

IN_THREAD_BYTES = 256 * 1024
"""In this process, documents larger than this are parsed off the event loop."""
_HEADER = struct.Struct("!I")

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


def default_processes() -> int:
    """One parser process per CPU beyond the first (the event loop's), at most 4."""
    return max(0, min((os.cpu_count() or 1) - 1, 4))


WORKER_CODE = "import sys; from archiver.parsing import serve; serve(sys.stdin.buffer, sys.stdout.buffer)"


class _Worker:
    """One worker process and the answers it owes, in order."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.waiting: collections.deque[asyncio.Future[_Parsed]] = collections.deque()
        self.reader = asyncio.create_task(self._read_answers())

    @classmethod
    async def start(cls) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WORKER_CODE,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            # Its own session: Ctrl-C reaches the crawl, which decides how to stop.
            # When the crawl ends, even by kill -9, the worker reads EOF and exits.
            start_new_session=True,
        )
        return cls(process)

    async def parse(self, args: tuple[Any, ...]) -> _Parsed:
        assert self.process.stdin is not None
        request = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
        answer: asyncio.Future[_Parsed] = asyncio.get_running_loop().create_future()
        self.waiting.append(answer)
        self.process.stdin.write(_HEADER.pack(len(request)) + request)
        await self.process.stdin.drain()
        return await asyncio.shield(answer)  # cancelled, the answer still arrives and is dropped

    async def _read_answers(self) -> None:
        assert self.process.stdout is not None
        try:
            while True:
                (size,) = _HEADER.unpack(await self.process.stdout.readexactly(_HEADER.size))
                parsed = pickle.loads(await self.process.stdout.readexactly(size))
                answer = self.waiting.popleft()
                if not answer.done():
                    answer.set_result(parsed)
        except Exception as exc:  # EOF, a broken pipe, a garbled answer: no answer will come
            while self.waiting:
                answer = self.waiting.popleft()
                if not answer.done():
                    answer.set_exception(ChildProcessError(f"parser process ended: {exc!r}"))

    @property
    def alive(self) -> bool:
        return not self.reader.done()

    async def stop(self) -> None:
        """End the process (EOF on its stdin), killing it if it does not go."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader


class PageParser:
    """Parses documents for links; see the module docstring. Use with ``async with``."""

    def __init__(self, processes: int | None = None, start_after: int = 200) -> None:
        self.processes = default_processes() if processes is None else processes
        self.start_after = start_after
        self.parsed_in_workers = 0
        self._parsed = 0
        self._workers: list[_Worker] = []
        self._starting: asyncio.Task[None] | None = None

    async def __aenter__(self) -> PageParser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def parse(self, raw: bytes, url: str, content_type: str | None,
                    content_encoding: str | None) -> Page:
        """The links and title of one document. Cancelled, its answer is dropped."""
        self._parsed += 1
        args = (raw, url, content_type, content_encoding)
        worker = await self._worker()
        if worker is not None:
            try:
                parsed = await worker.parse(args)
            except (ChildProcessError, ConnectionError) as exc:
                # Killed, or crashed on this document: its links are lost, the next
                # document gets a fresh worker.
                log.warning("a parser process ended while parsing %s (%s); its links are not followed",
                            url, exc)
                return Page(base_url=url)
            self.parsed_in_workers += 1
            return _page(parsed)
        if len(raw) > IN_THREAD_BYTES:
            return _page(await asyncio.to_thread(parse_document, *args))
        return _page(parse_document(*args))

    async def _worker(self) -> _Worker | None:
        if self.processes <= 0 or self._parsed <= self.start_after:
            return None
        self._workers = [worker for worker in self._workers if worker.alive]
        if len(self._workers) < self.processes:
            if self._starting is None or self._starting.done():
                self._starting = asyncio.create_task(self._start_worker())
            if not self._workers:
                await asyncio.shield(self._starting)  # the first one: wait for it
        if not self._workers:
            return None
        return min(self._workers, key=lambda worker: len(worker.waiting))

    async def _start_worker(self) -> None:
        try:
            self._workers.append(await _Worker.start())
        except OSError as exc:
            log.warning("cannot start a parser process (%s); parsing in this one", exc)
            self.processes = 0

    async def close(self) -> None:
        """Stop the worker processes; safe to call twice. Cancelled, they are killed."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        workers, self._workers = self._workers, []
        await asyncio.gather(*(worker.stop() for worker in workers))


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """A worker's loop: parse each pickled request from ``requests``, answer on ``answers``."""
    while header := requests.read(_HEADER.size):
        (size,) = _HEADER.unpack(header)
        parsed = parse_document(*pickle.loads(requests.read(size)))
        answer = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
        answers.write(_HEADER.pack(len(answer)) + answer)
        answers.flush()

