"""Fixtures: test sites served by a real aiohttp server on 127.0.0.1, and crawls of them."""

from __future__ import annotations

import contextlib
import html
import signal
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from archiver.config import CrawlConfig
from archiver.crawling.capture_workers import CaptureWorkers
from archiver.crawling.run import CrawlResult, crawl
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.verify.verifier import verify_snapshot

# Tests stop commands with Ctrl-C (SIGINT) as a terminal would. A shell starts a job it puts
# in the background with SIGINT ignored, and a command inherits that: Python then never raises
# KeyboardInterrupt in it. The commands the tests start get the terminal's default instead.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Site:
    """A test site built in a line a page: ``site.page('/', links=['/a'])``.

    Counts every request by path in ``hits`` (and by User-Agent in ``agents``), so
    tests can assert what was fetched, and by whom; /robots.txt and /sitemap.xml,
    unless the test serves them, answer 404 and are counted apart (``robots_hits``,
    ``sitemap_hits``).
    """

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.hits: Counter[str] = Counter()
        self.agents: Counter[str] = Counter()
        self.robots_hits = 0
        self.sitemap_hits = 0
        self.server: TestServer | None = None

    def handler(self, path: str, handler: Handler) -> Site:
        self.routes[path] = handler
        return self

    def file(
        self,
        path: str,
        body: bytes | str,
        content_type: str = "text/html",
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> Site:
        data = body.encode() if isinstance(body, str) else body

        async def serve(request: web.Request) -> web.StreamResponse:
            return web.Response(
                body=data, status=status, headers={"Content-Type": content_type, **(headers or {})}
            )

        return self.handler(path, serve)

    def page(
        self,
        path: str,
        links: Sequence[str] = (),
        title: str | None = None,
        head: str = "",
        body: str = "",
        status: int = 200,
    ) -> Site:
        anchors = "".join(f'<a href="{html.escape(u)}">{html.escape(u)}</a>\n' for u in links)
        title = title if title is not None else f"Page {path}"
        doc = (
            f"<!doctype html><html><head><title>{html.escape(title)}</title>{head}</head>"
            f"<body>{body}{anchors}</body></html>"
        )
        return self.file(path, doc, "text/html; charset=utf-8", status)

    def redirect(self, path: str, to: str, status: int = 301) -> Site:
        async def serve(request: web.Request) -> web.StreamResponse:
            return web.Response(status=status, headers={"Location": to})

        return self.handler(path, serve)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.raw_path
        if path == "/robots.txt" and path not in self.routes:
            self.robots_hits += 1
            return web.Response(status=404, text="no robots.txt", content_type="text/plain")
        if path == "/sitemap.xml" and path not in self.routes:
            self.sitemap_hits += 1
            return web.Response(status=404, text="no sitemap", content_type="text/plain")
        self.hits[path] += 1
        self.agents[request.headers.get("User-Agent", "")] += 1
        handler = self.routes.get(path) or self.routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        return await handler(request)

    async def start(self, port: int | None = None) -> str:
        """Serve the site, on ``port`` if given (else a free one); returns its home URL."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self.server = TestServer(app, host="127.0.0.1", port=port)
        await self.server.start_server()
        return self.url("/")

    def url(self, path: str = "/") -> str:
        assert self.server is not None, "start the site first"
        return f"http://127.0.0.1:{self.server.port}{path}"

    @property
    def host(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.port}"

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


@pytest.fixture
async def site() -> Any:
    built = Site()
    yield built
    await built.close()


@pytest.fixture
async def other_site() -> Any:
    """A second site, on another port: another host for scope tests."""
    built = Site()
    yield built
    await built.close()


async def crawled_into(output: Path, *seeds: str, resume: bool = False, **options: Any) -> CrawlResult:
    """Crawl seeds into ``output`` (fast retries, 4 workers unless told); returns the result."""
    options.setdefault("retry_base_delay", 0.01)
    options.setdefault("concurrency", 4)
    return await crawl(CrawlConfig(seeds=tuple(seeds), output=output, **options), resume=resume)


@pytest.fixture
def run_crawl(tmp_path: Path) -> Callable[..., Awaitable[CrawlResult]]:
    """Crawl seeds into tmp_path/snap (fast retries); returns the result."""

    async def run(
        *seeds: str, output: Path | None = None, resume: bool = False, **options: Any
    ) -> CrawlResult:
        return await crawled_into(output or tmp_path / "snap", *seeds, resume=resume, **options)

    return run


@contextlib.contextmanager
def in_linear_time(seconds: int = 60) -> Iterator[None]:
    """Fails what runs inside with TimeoutError after ``seconds``: for work on hostile input that
    takes milliseconds when its time grows with the input's size, and hours when it grows with
    the size squared (a deadline so far out is no speed test)."""

    def too_long(_signal: int, _frame: object) -> None:
        raise TimeoutError(f"still at it after {seconds} s: time squared in the input's size?")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class StartedWorkers(CaptureWorkers):
    """Capture workers whose first process is ready before the crawl's first capture: every
    capture small enough is prepared in a worker (CaptureWorkers prepares captures itself while
    its first worker starts)."""

    async def __aenter__(self) -> CaptureWorkers:
        await self.ready()
        return self


def manifest_rows(snapshot_root: Path, *, for_crawlers: bool = False) -> dict[str, ManifestRow]:
    """The manifest rows of a snapshot, by URL: those of the site's pages, and with ``for_crawlers``
    those of robots.txt and sitemaps too (ManifestRow.for_crawlers)."""
    with Manifest.open(snapshot_root / "manifest.sqlite3", readonly=True) as manifest:
        return {row.url: row for row in manifest.rows() if for_crawlers or not row.for_crawlers}


async def crawled_rows(
    site: Site, run_crawl: Callable[..., Awaitable[CrawlResult]], **options: Any
) -> tuple[dict[str, ManifestRow], dict[str, ManifestRow]]:
    """Crawl ``site`` from / (one try), started unless it is, and check that verify passes on the
    snapshot; the rows of its pages, and those with robots.txt's and sitemaps', by path."""
    if site.server is None:
        await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, **options)
    root = result.snapshot.root
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    base = site.url("")
    pages = {url.removeprefix(base): row for url, row in manifest_rows(root).items()}
    kept = {url.removeprefix(base): row for url, row in manifest_rows(root, for_crawlers=True).items()}
    return pages, kept


@pytest.fixture
def redis_url(tmp_path: Path) -> Any:
    """redis://127.0.0.1:PORT/0 of Debian's redis-server, started for the test (tests/redis_server.py)."""
    from redis_server import running_redis

    with running_redis(tmp_path / "redis") as url:
        yield url


@pytest.fixture(autouse=True)
def _kill_leftover_subprocesses() -> Any:
    """Every subprocess a test started with subprocesses.track is killed once it ends."""
    from subprocesses import kill_leftovers

    yield
    kill_leftovers()
