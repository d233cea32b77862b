"""A generated site for the crawl node and control tests: page n links to pages 2n+1 and 2n+2,
served on 127.0.0.1; the server counts each path's requests and the most in flight at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer
from subprocesses import track

FOR_CRAWLERS = {"/robots.txt", "/sitemap.xml"}
"""Asked for by the crawl itself (404 here), not pages of the site."""


class TreeSite:
    """``pages`` small pages, each answered after ``latency`` seconds; with ``sitemap``, pages no
    page links to, that /sitemap.xml lists."""

    def __init__(self, pages: int, latency: float = 0.002, sitemap: tuple[str, ...] = ()) -> None:
        self.pages = pages
        self.latency = latency
        self.sitemap = sitemap
        self.held: dict[str, tuple[asyncio.Event, asyncio.Event]] = {}
        """Paths whose first request waits: (set when it arrives, set to answer it)."""
        self.hits: Counter[str] = Counter()
        self.log: list[tuple[float, str]] = []
        """(loop time, path) of every request, as it arrived."""
        self.in_flight = 0
        self.most_in_flight = 0
        self.server: TestServer | None = None

    async def _page(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            path = request.path
            self.hits[path] += 1
            self.log.append((asyncio.get_running_loop().time(), path))
            if path in self.held and self.hits[path] == 1:
                arrived, answer = self.held[path]
                arrived.set()
                await answer.wait()
            await asyncio.sleep(self.latency)
            if path == "/sitemap.xml" and self.sitemap:
                listed = "".join(f"<url><loc>{self.url(page)}</loc></url>" for page in self.sitemap)
                xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{listed}</urlset>'
                return web.Response(text=xml, content_type="application/xml")
            if path in self.sitemap:
                return web.Response(text=f"<title>{path}</title>", content_type="text/html")
            if path in FOR_CRAWLERS:
                return web.Response(status=404)
            number = 0 if path == "/" else int(path.removeprefix("/p"))
            links = "".join(
                f'<a href="/p{k}">{k}</a>' for k in (2 * number + 1, 2 * number + 2) if k < self.pages
            )
            return web.Response(text=f"<title>p{number}</title>{links}", content_type="text/html")
        except ValueError:
            return web.Response(status=404)
        finally:
            self.in_flight -= 1

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._page)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()
        return self.url()

    def url(self, path: str = "/") -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}{path}"

    def hold(self, path: str) -> tuple[asyncio.Event, asyncio.Event]:
        """Have the first request of ``path`` wait: (set when it arrives, set it to answer)."""
        self.held[path] = (asyncio.Event(), asyncio.Event())
        return self.held[path]

    def page_paths(self) -> set[str]:
        return {"/"} | {f"/p{n}" for n in range(1, self.pages)} | set(self.sitemap)

    def fetched(self) -> int:
        return sum(count for path, count in self.hits.items() if path not in FOR_CRAWLERS)

    async def wait_for(self, fetched: int, seconds: float = 60) -> None:
        for _ in range(int(seconds / 0.02)):
            if self.fetched() >= fetched:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"only {self.fetched()} fetches after {seconds} s")

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


class NoCommits:
    """The Commits of a RedisFrontier whose writer has committed nothing (yet)."""

    items_enqueued = 0
    items_committed = 0


def archiver(*args: str) -> subprocess.Popen[str]:
    """``python -m archiver ARGS`` as a subprocess (killed at the test's end if it still runs)."""
    return track(
        subprocess.Popen(
            [sys.executable, "-m", "archiver", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )


async def finish(process: subprocess.Popen[str], seconds: float = 240) -> tuple[int, str]:
    """Wait for ``process`` (the event loop serving the site goes on); its exit code and output."""
    out, err = await asyncio.to_thread(process.communicate, timeout=seconds)
    return process.returncode, out + err


async def run_archiver(*args: str, seconds: float = 120) -> tuple[int, str]:
    return await finish(archiver(*args), seconds)


def node_args(url: str, output: Path, redis_url: str, crawl_id: str, *extra: str) -> list[str]:
    return [
        "crawl",
        url,
        "-o",
        str(output),
        "--frontier",
        redis_url,
        "--crawl-id",
        crawl_id,
        "--quiet",
        *extra,
    ]
