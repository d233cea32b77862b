"""kill -9 at random moments, resume to the end: each URL has exactly one response or revisit record.

A site of a few thousand pages (with redirects, dead links, shared requisites
and identical bodies, so revisits too) is crawled by ``archiver crawl``
subprocesses killed with SIGKILL after a random number of requests: one crawl
killed again and again, and fresh crawls killed once. Each is resumed to its
end; then ``archiver verify`` must pass and warcio must find exactly one
response or revisit record per URL across all the WARC files.

CRASH_TRIALS=N (environment) runs N fresh crawls instead of the default few; there are
never fewer than MIN_KILLS kills in all.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

from aiohttp import web
from subprocesses import track
from warcio.archiveiterator import ArchiveIterator

from archiver.store.lock import is_locked

BIG = 2000
"""Pages of the section one crawl is killed in again and again."""
SMALL = 250
"""Pages of the section fresh crawls are killed in, once each (kept small: each is crawled whole)."""
REPEATED_KILLS = 7
MIN_KILLS = 10
"""Kills in all, at the least (the repeated ones and one a fresh crawl)."""
FRESH_TRIALS = int(os.environ.get("CRASH_TRIALS", "4"))


def section(app: web.Application, name: str, pages: int) -> int:
    """Pages /NAME/p0.. linking onward, with redirects, dead links, shared requisites and
    identical bodies (revisits); returns the URLs a complete crawl of /NAME/p0 fetches."""
    same, redirects, images, gone = pages // 60, pages // 50, pages // 40, pages // 80

    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        links = [f"p{k}" for k in (n + 1, n + 2, (n * 7) % pages) if k < pages]
        links += [f"r{n % redirects}", f"gone{n % gone}", f"same{n % same}"]
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        filler = random.Random(n).randbytes(300).hex()
        body = (
            f'<html><head><title>p{n}</title><link rel="stylesheet" href="s.css"></head>'
            f'<body><img src="i{n % images}.png">{anchors}<p>{filler}</p></body></html>'
        )
        return web.Response(text=body, content_type="text/html")

    async def identical(request: web.Request) -> web.Response:
        return web.Response(text="<p>the same body on every /same page</p>", content_type="text/html")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"p{(int(request.match_info['n']) * 13) % pages}")

    async def image(request: web.Request) -> web.Response:
        return web.Response(body=random.Random(request.path).randbytes(2000), content_type="image/png")

    async def style(request: web.Request) -> web.Response:
        return web.Response(text="body { color: #333 }", content_type="text/css")

    async def missing(request: web.Request) -> web.Response:
        raise web.HTTPNotFound()

    for path, handler in [
        ("p{n:\\d+}", page),
        ("same{n:\\d+}", identical),
        ("r{n:\\d+}", redirect),
        ("i{n:\\d+}.png", image),
        ("gone{n:\\d+}", missing),
        ("s.css", style),
    ]:
        app.router.add_get(f"/{name}/{path}", handler)
    return pages + same + redirects + images + gone + 1


class CountingSite:
    """An aiohttp server on 127.0.0.1 that counts its requests."""

    def __init__(self) -> None:
        self.app = web.Application()
        self.requests = 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        @web.middleware
        async def count(request: web.Request, handler):
            self.requests += 1
            return await handler(request)

        self.app.middlewares.append(count)
        self.runner = web.AppRunner(self.app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/"

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def crawl(seed: str, output: Path, resume: bool) -> subprocess.Popen[str]:
    """archiver crawl of ``seed`` into ``output``, or its resume. A crawl killed before it wrote its
    crawl.json left nothing to resume: it is started again (its folder counts as empty)."""
    resume = resume and (output / "crawl.json").exists()
    where = ["--resume", "-o", str(output)] if resume else [seed, "-o", str(output)]
    return track(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "archiver",
                "crawl",
                *where,
                "--concurrency",
                "8",
                "--no-mirror",
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )


async def kill_at_random(
    site: CountingSite, process: subprocess.Popen[str], most: int, chance: random.Random
) -> bool:
    """SIGKILL ``process`` at a random moment: after a random time (often while it starts, or
    resumes) or after a random number of requests up to ``most``. False if it ended first."""
    if chance.random() < 0.3:
        deadline = asyncio.get_running_loop().time() + chance.uniform(0, 1.5)
        done = lambda: asyncio.get_running_loop().time() >= deadline  # noqa: E731
    else:
        target = site.requests + chance.randint(1, most)
        done = lambda: site.requests >= target  # noqa: E731
    while not done():
        if process.poll() is not None:
            return False
        await asyncio.sleep(0.002)
    process.kill()
    await asyncio.to_thread(process.communicate, timeout=60)
    return True


async def finish(process: subprocess.Popen[str]) -> None:
    _, stderr = await asyncio.to_thread(process.communicate, timeout=300)
    assert process.returncode == 4, stderr  # complete, with the site's gone pages answered 404
    assert "Traceback" not in stderr, stderr


def killed_as_it_made_its_manifest(manifest: Path) -> None:
    """Leave ``manifest`` as a process killed while it made it leaves it: SQLite had written
    pages into the new file and not yet deleted the rollback journal that undoes them (as when
    it switches a new manifest to WAL). That journal is hot: a read-only connection cannot
    roll it back, and fails on the file ("attempt to write a readonly database")."""
    code = (
        "import os, signal, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('PRAGMA cache_size=1')\n"  # a small cache: pages go to the file before the commit
        "db.execute('BEGIN')\n"
        "db.execute('CREATE TABLE filler(x)')\n"
        "db.executemany('INSERT INTO filler VALUES (?)', [(bytes(3000),)] * 50)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(manifest)], timeout=60)
    assert killed.returncode == -9
    assert manifest.with_name(manifest.name + "-journal").stat().st_size > 0
    assert manifest.stat().st_size > 0


def records_by_url(snapshot: Path) -> Counter[str]:
    """Response and revisit records per URL across every WARC file, as warcio reads them."""
    found: Counter[str] = Counter()
    for path in sorted((snapshot / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type in ("response", "revisit"):
                    found[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return found


async def check_snapshot(snapshot: Path, urls: int) -> None:
    verified = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "archiver", "verify", str(snapshot), "--no-mirror"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    found = records_by_url(snapshot)
    assert {url: n for url, n in found.items() if n != 1} == {}
    assert len(found) == urls + 2  # and robots.txt and /sitemap.xml (404s), kept once each too


async def test_kill_9_at_random_moments_then_resume_leaves_one_record_per_url(tmp_path: Path) -> None:
    site = CountingSite()
    big = section(site.app, "big", BIG)
    small = section(site.app, "small", SMALL)
    await site.start()
    chance = random.Random()
    try:
        # One crawl killed again and again, at any moment of its own or of a resume.
        snapshot = tmp_path / "again"
        process = crawl(site.url + "big/p0", snapshot, resume=False)
        kills = 0
        while kills < REPEATED_KILLS and await kill_at_random(site, process, 300, chance):
            kills += 1
            process = crawl(site.url + "big/p0", snapshot, resume=True)
        await finish(process)
        assert kills >= 4, "the crawl ended before it could be killed"
        await check_snapshot(snapshot, big)
        repeated = kills
        # Fresh crawls, each killed once, until there were at least MIN_KILLS kills in all.
        trial = 0
        while trial < FRESH_TRIALS or kills < MIN_KILLS:
            assert trial < FRESH_TRIALS + 2 * MIN_KILLS, "the fresh crawls ended before they could be killed"
            snapshot = tmp_path / f"fresh-{trial}"
            process = crawl(site.url + "small/p0", snapshot, resume=False)
            if await kill_at_random(site, process, small, chance):
                kills += 1
                process = crawl(site.url + "small/p0", snapshot, resume=True)
            await finish(process)
            await check_snapshot(snapshot, small)
            trial += 1
        print(f"{kills} kills: {repeated} of one crawl, {kills - repeated} of {trial} fresh crawls")
    finally:
        await site.close()


_FORKS_AND_IS_KILLED = """
import sys, time
from pathlib import Path
from archiver.mirror.processes import build_in_processes
from archiver.mirror.stats import MirrorStats
from archiver.store.lock import snapshot_lock

class Slow:
    stats = MirrorStats()
    def build(self, root, part=0, parts=1):
        (root / f"part-{part}").write_text("building")
        time.sleep(120)
        return set()
    def reopen(self): pass
    def close(self): pass

root = Path(sys.argv[1])
with snapshot_lock(root, "archiver mirror", create=True):
    build_in_processes(Slow(), root, 2)
"""


async def test_a_mirror_process_ends_with_its_parent_killed_and_holds_no_lock(tmp_path: Path) -> None:
    """A crawl killed (kill -9) while its forked mirror processes built left them running: they
    wrote the mirror on, and held the snapshot's lock (a copy of its descriptor) for as long as
    they ran, so a resume was refused ("being written by archiver crawl (pid N)", N dead). Now
    each ends with its parent, and keeps no copy of the lock."""
    root = tmp_path / "snap"
    parent = track(subprocess.Popen([sys.executable, "-c", _FORKS_AND_IS_KILLED, str(root)]))
    for _ in range(600):
        if (root / "part-1").exists() and (root / "part-0").exists():
            break
        await asyncio.sleep(0.05)
    assert (root / "part-1").exists(), "the forked process never began"
    children = [
        pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if _parent_of(pid) == parent.pid
    ]
    assert children
    assert is_locked(root)
    parent.kill()
    parent.wait(timeout=30)
    for _ in range(200):
        if not is_locked(root) and not any(_alive(pid) for pid in children):
            break
        await asyncio.sleep(0.05)
    assert not is_locked(root)
    assert not any(_alive(pid) for pid in children)


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
