"""A generated site for the crawl node and control tests: page n links to pages 2n+1 and 2n+2,
served on 127.0.0.1; the server counts each path's requests and the most in flight at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
        self.held_every: set[str] = set()
        """Held paths whose every request waits, not the first alone (``hold(path, every=True)``)."""
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
            if path in self.held and (self.hits[path] == 1 or path in self.held_every):
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

    def hold(self, path: str, every: bool = False) -> tuple[asyncio.Event, asyncio.Event]:
        """Have the first request of ``path`` wait: (set when it arrives, set it to answer). With
        ``every``, each request of it waits until answered: a node killed or stopped with it in
        flight gives it back, and the node that takes it over waits too, so the crawl cannot end
        before the test answers, however fast the machine crawls the rest."""
        self.held[path] = (asyncio.Event(), asyncio.Event())
        if every:
            self.held_every.add(path)
        return self.held[path]

    def last_leaf(self) -> str:
        """The path of the site's last page, which links to nothing: held (``hold(..., every=True)``)
        it keeps a crawl running until answered, and holds up no other page."""
        return f"/p{self.pages - 1}"

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


async def joined(client: Any, crawl_id: str, nodes: int) -> None:
    """Return once ``nodes`` nodes joined crawl ``crawl_id`` (a hang guard of a minute)."""
    for _ in range(1200):
        if await client.hlen(f"archiver:{crawl_id}:nodes") >= nodes:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {nodes} nodes joined crawl {crawl_id} within a minute")


async def started_together(
    site: TreeSite, redis_url: str, crawl_id: str, args: list[str], names: Iterable[str]
) -> dict[str, subprocess.Popen[str]]:
    """Crawl nodes ``names`` started with ``args``, by name, the seed answered once all joined: one
    node alone could crawl much of the site before another started (a node takes seconds to start
    on a busy machine), which then found little or nothing to do."""
    import redis.asyncio

    arrived, answer = site.hold("/")
    nodes = {name: archiver(*args, "--node", name) for name in names}
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        await asyncio.wait_for(arrived.wait(), 60)
        await joined(client, crawl_id, len(nodes))
    finally:
        answer.set()
        await client.aclose()
    return nodes


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


def assert_verified(snapshot: Path, said: str = "") -> None:
    """Fail, with verify's report (then ``said``), unless archiver verify finds ``snapshot``
    complete and intact. The command prints what verify_snapshot() says and exits 0 when it is
    ok: asked here, in this process, it costs no second start of Python and the package."""
    from archiver.verify.verifier import verify_snapshot

    report = verify_snapshot(snapshot)
    assert report.ok, f"{report.render_text(str(snapshot))}\n{said}"


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
