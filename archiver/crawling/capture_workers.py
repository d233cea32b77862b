"""The CPU work each capture needs, in this process or in worker processes.

Three things cost most of the CPU a crawl spends per page: parsing it for links
(lxml, then resolving and normalising every link), drafting its mirror file
(its links rewritten as the crawl knows them: mirror/document.py) and
encoding its WARC records (a digest and gzip over the whole body). Both hold the GIL for long
stretches or give it up and wait to get it back, and the event loop needs it.
Once a crawl has ``start_after`` URLs queued and has prepared FIRST_HERE captures
itself, CaptureWorkers hands the next ones to worker processes: a worker parses the
page and returns its links together with its mirror draft and its request and
response records as gzip members, so the writer only appends bytes. A worker reads the mirror's local paths
from the manifest, with a read-only connection of its own. The first worker
starts half way there and says when it has imported what it needs; until then
captures are still prepared here, so none waits for it. Small crawls (and most
tests) never start a worker; their records are encoded by the writer.

A worker is a fresh interpreter running preparing.serve() (it never imports the
caller's ``__main__``), fed length-prefixed pickles on its stdin and
answering in order on its stdout. The event loop talks to it through asyncio
pipes, with no thread in between (concurrent.futures' process pool spent more
CPU in its two threads than the parsing it moved away).

>>> import asyncio, io
>>> from datetime import UTC, datetime
>>> capture = Capture("http://h/a", datetime.now(UTC), "GET /a HTTP/1.1", [], "200 OK",
...                   "HTTP/1.1", [("Content-Type", "text/html")], io.BytesIO(b'<a href="/b">b</a>'),
...                   18, "sha1:...")
>>> async def demo():
...     async with CaptureWorkers(processes=0) as workers:
...         prepared = await workers.prepare(capture, parse=True)
...     return list(prepared.links), prepared.exchange
>>> asyncio.run(demo())
(['http://h/b'], None)
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import io
import logging
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any

from archiver.content import PARSED_TYPES, mime_type
from archiver.crawling.mirror_choice import DraftingJudge
from archiver.crawling.preparing import HEADER, READY, Drafting, Parsed, Prepared, parse_document
from archiver.mirror.document import Draft
from archiver.scope import Scope
from archiver.warc.capture import Capture

log = logging.getLogger("archiver.crawl")

IN_THREAD_BYTES = 256 * 1024
"""In this process, documents larger than this are parsed off the event loop."""
FIRST_HERE = 60
"""Captures a crawl prepares in this process before it hands work to a worker (``start_after``
if fewer). A site of big pages keeps the event loop's process busy from its first pages: the
sooner a worker takes them, the sooner that process is free."""
TO_WORKER_BYTES = 1024 * 1024
"""Larger bodies (which the fetcher spooled to disk) are not read into RAM for a worker:
the writer encodes them, streaming."""


def default_processes() -> int:
    """One worker process per CPU beyond the first (the event loop's), at most 4."""
    return max(0, min((os.cpu_count() or 1) - 1, 4))


WORKER_CODE = (
    # preparing.py, not this module: a worker needs neither asyncio nor the ssl it imports.
    "import sys; from archiver.crawling.preparing import serve; serve(sys.stdin.buffer, sys.stdout.buffer)"
)


class _Worker:
    """One worker process and the answers it owes, in order."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.reader = asyncio.create_task(self._read_answers())

    @classmethod
    async def start(cls) -> _Worker:
        """Start a worker process; returns once it has imported what it needs and said so.

        Raises OSError, or EOFError if the process ends first.
        """
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORKER_CODE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            # Its own session: Ctrl-C reaches the crawl, which decides how to stop.
            # When the crawl ends, even by kill -9, the worker reads EOF and exits.
            start_new_session=True,
        )
        assert process.stdout is not None
        try:
            if await process.stdout.readexactly(HEADER.size) != READY:
                raise EOFError("the worker process said something else than that it was ready")
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
        return cls(process)

    async def ask(self, args: tuple[Any, ...]) -> Any:
        """Send one task (prepare_capture's arguments); its answer, in order."""
        assert self.process.stdin is not None
        request = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting.append(answer)
        self.process.stdin.write(HEADER.pack(len(request)) + request)
        await self.process.stdin.drain()
        return await asyncio.shield(answer)  # cancelled, the answer still arrives and is dropped

    async def _read_answers(self) -> None:
        assert self.process.stdout is not None
        try:
            while True:
                (size,) = HEADER.unpack(await self.process.stdout.readexactly(HEADER.size))
                parsed = pickle.loads(await self.process.stdout.readexactly(size))
                answer = self.waiting.popleft()
                if not answer.done():
                    answer.set_result(parsed)
        except Exception as exc:  # EOF, a broken pipe, a garbled answer: no answer will come
            # Nor will the process read what it is sent: end it, or a capture still being
            # written to its stdin would wait for the pipe to drain forever, and the crawl with it.
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            while self.waiting:
                answer = self.waiting.popleft()
                if not answer.done():
                    answer.set_exception(ChildProcessError(f"worker process ended: {exc!r}"))

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


class CaptureWorkers:
    """Parses captures for links and encodes their records; see the module docstring.

    Use with ``async with``.
    """

    def __init__(
        self,
        processes: int | None = None,
        start_after: int = 200,
        mirror: tuple[str, Scope] | None = None,
        backlog: Callable[[], int] | None = None,
        judge: tuple[DraftingJudge, Callable[[], None]] | None = None,
    ) -> None:
        """``mirror``: the manifest's path and the crawl's scope, when the crawl writes a mirror
        (HTML, CSS and SVG captures are drafted, see Drafting). ``backlog``: how many URLs the crawl
        has queued; the first worker starts only once it is ``start_after`` or more.

        ``judge``: (judge, call), with ``mirror``. Once the judge sees that drafting holds the crawl back,
        drafting stops (``mirror`` is dropped) and ``call()`` is called, once, so the mirror
        is built after the crawl instead (crawling/mirror_choice.py)."""
        self.processes = default_processes() if processes is None else processes
        self.start_after = start_after
        self.backlog = backlog
        self.judge = judge
        self.mirror = mirror
        self._drafting = Drafting(*mirror) if mirror is not None else None
        # Large documents are prepared in one thread of their own, one at a time, with a
        # Drafting of their own: the event loop never waits for them (nor for a lock).
        self._aside = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="archiver-prepare")
        self._drafting_aside = Drafting(*mirror) if mirror is not None else None
        self.done_in_workers = 0
        self._done = 0
        self._workers: list[_Worker] = []
        self._starting: asyncio.Task[None] | None = None

    async def __aenter__(self) -> CaptureWorkers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def prepare(
        self, capture: Capture, parse: bool, inspect: bool = False, referrer_encoding: str | None = None
    ) -> Prepared:
        """The links of ``capture`` (when ``parse``) and, from a worker, its encoded records;
        with ``inspect``, what an HTML page's scripts suggest (render_policy.inspect). A
        stylesheet that names no encoding is read in ``referrer_encoding`` (Prepare.prepare()).

        The body is read and left at its start. Cancelled, the worker's answer is dropped.
        """
        self._done += 1
        worker = self._worker() if capture.body_length <= TO_WORKER_BYTES else None
        if self.judge is not None:
            self._judge(len(worker.waiting) if worker is not None else None)
        drafts = self._drafting is not None and mime_type(capture.content_type) in PARSED_TYPES
        if worker is None and not parse and not drafts:
            return Prepared()
        raw = capture.body.read()
        capture.body.seek(0)
        if worker is None:
            return await self._prepare_here(raw, capture, parse, inspect, drafts, referrer_encoding)
        try:
            parsed, exchange, drafted = await worker.ask(
                (
                    dataclasses.replace(capture, body=io.BytesIO(raw)),
                    parse,
                    inspect,
                    self.mirror,
                    referrer_encoding,
                )
            )
        except (ChildProcessError, ConnectionError) as exc:
            # Killed, or crashed on this document: its links are lost (the writer still
            # stores it), the next capture gets a fresh worker.
            log.warning(
                "a worker process ended while preparing %s (%s); its links are not followed", capture.url, exc
            )
            return Prepared()
        self.done_in_workers += 1
        return Prepared.of(parsed, exchange, drafted)

    def _judge(self, waiting: int | None) -> None:
        """Stop drafting if it holds the crawl back (see ``judge``)."""
        assert self.judge is not None
        judge, call = self.judge
        if judge.captured(waiting):
            log.info("the crawl is bound by CPU (%s): the mirror is built after the crawl", judge.reason)
            self.mirror = self._drafting = self._drafting_aside = None
            self.judge = None
            call()

    async def _prepare_here(
        self,
        raw: bytes,
        capture: Capture,
        parse: bool,
        inspect: bool,
        drafts: bool,
        referrer_encoding: str | None = None,
    ) -> Prepared:
        """prepare() in this process: large documents in a thread, off the event loop."""
        aside = len(raw) > IN_THREAD_BYTES
        drafting = (self._drafting_aside if aside else self._drafting) if drafts else None

        def work() -> tuple[Parsed | None, Draft | None]:
            parsed = None
            if parse:
                try:
                    parsed = parse_document(
                        raw,
                        capture.url,
                        capture.content_type,
                        capture.header("content-encoding"),
                        inspect,
                        referrer_encoding,
                        capture.header("refresh"),
                    )
                except Exception as exc:  # noqa: BLE001 - as when a worker fails on it: the page is kept
                    log.warning(
                        "cannot parse %s (%s: %s); its links are not followed",
                        capture.url,
                        type(exc).__name__,
                        exc,
                    )
            drafted = drafting.draft(raw, capture, referrer_encoding) if drafting is not None else None
            return parsed, drafted

        if aside:
            parsed, drafted = await asyncio.get_running_loop().run_in_executor(self._aside, work)
        else:
            parsed, drafted = work()
        return Prepared.of(parsed, None, drafted)

    async def ready(self) -> None:
        """Start a worker now, if none runs, and return once it takes work (prepare() itself never
        waits for one: until one is ready, captures are prepared here)."""
        if self.processes <= 0:
            return
        self._keep_starting()
        if not self._workers and self._starting is not None:
            await asyncio.shield(self._starting)

    def _keep_starting(self) -> None:
        """Drop the workers that ended, and start one if fewer than ``processes`` run and none is
        starting."""
        self._workers = [worker for worker in self._workers if worker.alive]
        if len(self._workers) < self.processes and (self._starting is None or self._starting.done()):
            self._starting = asyncio.create_task(self._start_worker())

    def _worker(self) -> _Worker | None:
        # The first worker starts half way to FIRST_HERE, so it is ready when work goes to it.
        here = min(self.start_after, FIRST_HERE)
        if self.processes <= 0 or self._done <= here // 2:
            return None
        if self._starting is None and self.backlog is not None and self.backlog() < self.start_after:
            # A worker costs an interpreter's start and its imports (about half a second of
            # CPU): a crawl that has little left to do finishes sooner without one.
            return None
        self._keep_starting()
        if self._done <= here or not self._workers:
            # Until the first worker has started (an interpreter's start and imports: half a second
            # on a busy machine), captures are prepared here: waiting for it held every fetch.
            return None
        return min(self._workers, key=lambda worker: len(worker.waiting))

    async def _start_worker(self) -> None:
        try:
            worker = await _Worker.start()
        except Exception as exc:  # noqa: BLE001 - whatever stops a worker, the work goes on here
            log.warning("cannot start a worker process (%s); working in this one", exc)
            self.processes = 0
            return
        # Appended only now: _worker() may have replaced the list while this one started.
        self._workers.append(worker)

    async def close(self) -> None:
        """Stop the worker processes; safe to call twice. Cancelled, they are killed."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        workers, self._workers = self._workers, []
        await asyncio.gather(*(worker.stop() for worker in workers))
        self._aside.shutdown(wait=False, cancel_futures=True)
