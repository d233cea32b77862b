"""The mirror written during the crawl: byte for byte what `archiver mirror` rebuilds from the WARCs,
with only the pages whose links changed state written again at the end."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from conftest import Site, StartedWorkers, manifest_rows
from demo_site import png

from archiver import CrawlConfig, cli, crawl
from archiver.cli.exits import EXIT_PROBLEMS
from archiver.crawling import mirror_choice, run
from archiver.crawling.capture_workers import CaptureWorkers
from archiver.crawling.mirror_choice import DraftingJudge
from archiver.mirror.build import build_mirror
from archiver.mirror.plan import PathPlan
from archiver.store import manifest as manifest_module
from archiver.verify.verifier import verify_snapshot

PNG = png()


@pytest.fixture
def live(monkeypatch: Any) -> None:
    """The mirror written during the crawl whatever the machine's load (mirror_choice judges
    nothing)."""
    monkeypatch.setattr(mirror_choice, "BUSY_SHARE", float("inf"))
    monkeypatch.setattr(mirror_choice, "BEHIND_AFTER", 10**9)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _recorded(root: Path) -> tuple[dict[str, str | None], list[tuple[str, str, int, str | None]]]:
    """Each row's local path, and the mirror files the manifest records."""
    paths = {url: row.local_path for url, row in manifest_rows(root).items()}
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        files = db.execute("SELECT path, sha256, size, note FROM mirror_files ORDER BY path").fetchall()
    return paths, files


def _stop_at(site: Site, path: str) -> asyncio.Future[str]:
    """A stop asked as ``path`` is first requested (before the site starts)."""
    stop: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    later = site.routes[path]

    async def stop_here(request: web.Request) -> web.StreamResponse:
        if not stop.done():
            stop.set_result("test stop")
        return await later(request)

    site.handler(path, stop_here)
    return stop


def _rebuilt_alike(root: Path) -> None:
    """The snapshot verifies, and `archiver mirror` rebuilds the same files and rows."""
    crawled, recorded = _tree(root / "mirror"), _recorded(root)
    assert verify_snapshot(root).ok
    build_mirror(root)
    assert _tree(root / "mirror") == crawled
    assert _recorded(root) == recorded


def tricky_site(site: Site, pages: int = 12) -> None:
    """Forward links, redirects (a chain, a loop), failures, 404s, CSS, identical payloads, a
    stylesheet whose URL says nothing of its type, names equal but for case, a gzipped page."""
    head = '<link rel="stylesheet" href="/static/site.css"><link rel="stylesheet" href="/theme">'
    for n in range(pages):
        links = [f"/p/{n + 1}.html", f"/p/{n + 2}.html", "/", "/dir/", "/img/a.png"]
        links += ["https://elsewhere.invalid/"]
        if n % 4 == 0:  # some pages link to what will fail, redirect, or be placed elsewhere
            links += ["/go", "/gone", "/loop", "/drop", "/Case", "/case", "/img/same.png"]
        site.page(f"/p/{n}.html", links=links, head=head, body='<img src="/img/b.png">')
    site.page("/", links=["/p/0.html", "/dir/index.html", "/gz"], head=head)
    home = "<html><title>Dir</title><a href='/dir/index.html'>Home</a><a href='/p/5.html'>5</a>"
    site.file("/dir/", home)
    site.file("/dir/index.html", home)
    site.redirect("/go", "/go2")
    site.redirect("/go2", f"/p/{pages - 1}.html", status=302)
    site.redirect("/loop", "/loop2")
    site.redirect("/loop2", "/loop")
    site.file("/gone", "<h1>gone</h1><a href='/p/1.html'>1</a>", status=404)
    site.page("/Case", links=["/case"])
    site.page("/case", links=["/Case"])
    site.file("/static/site.css", "body{background:url(../img/bg.png)} @import '/theme';", "text/css")
    site.file("/theme", "h1{background:url(/img/a.png)}", "text/css")
    for name in ("a", "b", "bg"):
        site.file(f"/img/{name}.png", png(rgb=(len(name) * 50, 0, 0)) if name != "b" else PNG, "image/png")
    site.file("/img/same.png", PNG, "image/png")  # the payload of b.png: one file
    page = b'<html><a href="/p/3.html">3</a><a href="/go">go</a></html>'
    site.file("/gz", gzip.compress(page), "text/html", headers={"Content-Encoding": "gzip"})

    async def drop(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # no answer at all: the link stays absolute
        return web.Response()

    site.handler("/drop", drop)


async def test_the_crawls_mirror_is_the_rebuilt_mirror(site: Any, run_crawl: Any, live: None) -> None:
    tricky_site(site)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, worker_processes=0)
    root = result.snapshot.root
    stats = result.mirror
    assert stats is not None and not stats.errors
    # Written as the crawl went: most pages stayed as drafted, some were written again.
    assert 0 < stats.rewritten < stats.pages
    crawled, recorded = _tree(root / "mirror"), _recorded(root)
    host = site.host.replace(":", "+")
    home = crawled[f"{host}/p/0.html"].decode()
    assert 'href="1.html"' in home and 'href="../dir/index.html"' in home
    assert 'href="11.html"' in home  # /go -> /go2 -> /p/11.html, fetched after this page
    assert f'href="{site.url("/drop")}"' in home and f'href="{site.url("/loop")}"' in home
    assert 'href="../static/site.css"' in home and 'href="../theme.css"' in home
    assert recorded[0][site.url("/img/same.png")] == recorded[0][site.url("/img/b.png")]
    assert verify_snapshot(root).ok

    rebuilt = build_mirror(root)
    assert not rebuilt.errors
    assert _tree(root / "mirror") == crawled
    assert _recorded(root) == recorded
    assert (rebuilt.pages, rebuilt.stylesheets, rebuilt.other, rebuilt.shared, rebuilt.redirects) == (
        stats.pages,
        stats.stylesheets,
        stats.other,
        stats.shared,
        stats.redirects,
    )


async def test_dead_links_answered_by_one_page_cost_no_second_write(
    site: Any, run_crawl: Any, live: None
) -> None:
    """Every dead link of a site gets the same 404 page: each keeps a file of its own, so the
    pages that linked to it before it was fetched guessed right and are not written twice."""
    pages = 20
    for n in range(pages):
        site.page(f"/p/{n}.html", links=[f"/p/{n + 1}.html", f"/dead/{n + 1}", f"/dead/{n + 2}"])
    site.page(f"/p/{pages}.html")  # not the site's 404 in text/plain: a file of its own type, .txt
    for n in range(pages + 2):
        site.file(f"/dead/{n}", "<h1>Not found</h1>", status=404)
    await site.start()
    result = await run_crawl(site.url("/p/0.html"), max_tries=1, worker_processes=0)
    assert result.mirror is not None and not result.mirror.errors
    assert result.mirror.rewritten == 0, result.mirror
    root = result.snapshot.root
    host = site.host.replace(":", "+")
    crawled = _tree(root / "mirror")
    assert 'href="../dead/2.html"' in crawled[f"{host}/p/0.html"].decode()
    assert verify_snapshot(root).ok
    build_mirror(root)
    assert _tree(root / "mirror") == crawled


async def test_pages_drafted_by_worker_processes_are_the_rebuilt_mirror(
    site: Any, run_crawl: Any, live: None
) -> None:
    # Past 200 captures, pages are parsed and drafted by a worker process.
    tricky_site(site, pages=260)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, worker_processes=1, concurrency=8)
    root = result.snapshot.root
    assert result.mirror is not None and not result.mirror.errors
    assert result.mirror.rewritten < result.mirror.pages / 2
    crawled, recorded = _tree(root / "mirror"), _recorded(root)
    build_mirror(root, workers=2)
    assert _tree(root / "mirror") == crawled
    assert _recorded(root) == recorded


async def test_files_a_worker_process_encoded_are_copied_whole_to_the_mirror(
    site: Any, run_crawl: Any, live: None, monkeypatch: Any
) -> None:
    # Once a worker has encoded a capture's records, its body goes, unless the mirror
    # copies it as received (an image, while the mirror is written during the crawl).
    made: list[CaptureWorkers] = []

    def workers(processes: int | None, **options: Any) -> CaptureWorkers:
        made.append(StartedWorkers(processes=1, start_after=0, **options))
        return made[-1]

    monkeypatch.setattr(run, "CaptureWorkers", workers)
    tricky_site(site)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1)
    root = result.snapshot.root
    assert made[0].done_in_workers > 20
    assert result.mirror is not None and not result.mirror.errors and result.mirror.rewritten > 0
    host = site.host.replace(":", "+")
    crawled = _tree(root / "mirror")
    assert crawled[f"{host}/img/a.png"] == png(rgb=(50, 0, 0))
    assert crawled[f"{host}/img/b.png"] == PNG
    _rebuilt_alike(root)


def _tables(root: Path) -> set[str]:
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _behind_at_once(monkeypatch: Any) -> None:
    """Crawls prepare captures in a worker process from the first, and judge it behind at once."""

    def workers(processes: int | None, **options: Any) -> CaptureWorkers:
        return StartedWorkers(processes=1, start_after=0, **options)

    monkeypatch.setattr(run, "CaptureWorkers", workers)
    monkeypatch.setattr(mirror_choice, "BEHIND_AFTER", 0)
    monkeypatch.setattr(run, "_behind", lambda _config: 0)


def test_workers_falling_behind_stop_drafting() -> None:
    judge = DraftingJudge(backlog=4, clock=lambda: 0.0, cpu=lambda: 0.0)  # no window ever ends
    assert not any(judge.captured(3) for _ in range(500))  # busy workers, keeping up
    judged = 1
    while not judge.captured(10):
        judged += 1
    # From about 3, the average moves 2% of the way to 10 each capture: 10 - 7 * 0.98 ** k >= 4
    # from k = 8.
    assert judged == 8 and judge.reason == "4.0 captures wait for a worker, on average"
    assert judge.captured(0)  # the choice stays


def test_a_process_busy_half_the_time_or_more_stops_drafting() -> None:
    """Its CPU over a window of half a second and 25 captures: 0.6 s a second stops drafting, 0.4
    not."""

    def judge(share: float) -> tuple[DraftingJudge, int]:
        ticks = itertools.count()
        calls = itertools.count()
        made = DraftingJudge(
            backlog=4, clock=lambda: next(ticks) * 0.01, cpu=lambda: next(calls) * 0.01 * share
        )
        for capture in range(1, 1000):
            if made.captured():
                return made, capture
        return made, 0

    busy, at = judge(0.6)
    assert at == 51 and busy.reason == "its process used or waited for 0.60 CPU seconds a second"
    assert judge(0.4)[1] == 0


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.mark.skipif(not Path("/proc/thread-self/schedstat").exists(), reason="Linux's schedstat")
def test_a_crawl_that_waits_for_the_cpu_counts_as_bound_by_it() -> None:
    """A crawl on a machine whose CPUs other programs keep busy gets less CPU than it asks for: it
    is bound by the CPU all the more, though its CPU seconds a second fall below BUSY_SHARE.
    Here a process spinning on the same CPU as this thread takes about half of it: the CPU this
    process used is well under the time it spun, what it used or waited for is all of it."""
    cpus = os.sched_getaffinity(0)
    one = {min(cpus)}
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {one!r})\nwhile True: pass"]
    )
    try:
        os.sched_setaffinity(0, one)
        _spin(0.3)  # the hog started, on that CPU
        began, used, busy = time.monotonic(), time.process_time(), mirror_choice.busy_seconds()
        _spin(1.0)
        wall = time.monotonic() - began
        used, busy = time.process_time() - used, mirror_choice.busy_seconds() - busy
    finally:
        os.sched_setaffinity(0, cpus)
        hog.kill()
        hog.wait()
    assert used < 0.75 * wall
    assert busy > 0.9 * wall


async def test_a_crawl_bound_by_cpu_builds_its_mirror_after_the_crawl(
    site: Any, run_crawl: Any, monkeypatch: Any
) -> None:
    """Workers that fall behind stop drafting; the mirror is the rebuilt one, built at the end."""
    _behind_at_once(monkeypatch)
    tricky_site(site, pages=260)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, concurrency=8)
    root = result.snapshot.root
    assert "the mirror is built after the crawl" in (root / "logs" / "crawl.log").read_text()
    assert result.mirror is not None and not result.mirror.errors
    assert result.mirror.rewritten == 0 and result.mirror.pages > 260
    assert not {"mirror_pending", "mirror_taken"} & _tables(root)
    assert all(_recorded(root)[0][site.url(f"/p/{n}.html")] for n in range(260))
    _rebuilt_alike(root)


async def test_a_crawl_stopped_after_deferring_its_mirror_builds_it_on_resume(
    site: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    _behind_at_once(monkeypatch)
    tricky_site(site, pages=300)
    stop = _stop_at(site, "/p/280.html")
    await site.start()
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=1, concurrency=8)
    first = await crawl(config, stop=stop)
    root = first.snapshot.root
    assert (
        first.interrupted
        and "the mirror is built after the crawl" in (root / "logs" / "crawl.log").read_text()
    )
    assert "mirror_taken" not in _tables(root)  # so the resumed crawl knows: its mirror is rebuilt
    resumed = await crawl(config, resume=True)
    assert not resumed.interrupted and resumed.mirror is not None and not resumed.mirror.errors
    _rebuilt_alike(root)


async def test_a_crawl_killed_as_it_planned_its_mirror_builds_it_on_resume(
    site: Any, run_crawl: Any, monkeypatch: Any
) -> None:
    """The rebuild after the crawl keeps its path plan in the tables the live mirror keeps
    its own in: killed there, they were taken for a live mirror with nothing left to write."""
    _behind_at_once(monkeypatch)
    tricky_site(site, pages=60)
    await site.start()
    root = (await run_crawl(site.url("/"), max_tries=1, concurrency=8)).snapshot.root
    expected = _tree(root / "mirror")
    shutil.rmtree(root / "mirror")
    db = sqlite3.connect(root / "manifest.sqlite3")
    PathPlan(db, fresh=True)  # what the kill left: the plan begun, no mirror yet
    db.commit()
    db.close()
    resumed = await run_crawl(site.url("/"), resume=True, max_tries=1, concurrency=8)
    assert resumed.mirror is not None and resumed.mirror.pages > 60
    assert _tree(root / "mirror") == expected


async def test_no_mirror_writes_none_and_archiver_mirror_writes_it(site: Any, tmp_path: Path) -> None:
    tricky_site(site, pages=3)
    await site.start()
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=1)
    result = await crawl(config, mirror=False)
    root = result.snapshot.root
    assert result.mirror is None and not (root / "mirror").exists()
    assert all(row.local_path is None for row in manifest_rows(root).values())
    stats = build_mirror(root)
    assert stats.pages > 3 and verify_snapshot(root).ok


async def test_an_interrupted_crawl_resumed_writes_the_rebuilt_mirror(site: Any, tmp_path: Path) -> None:
    tricky_site(site, pages=30)
    stop = _stop_at(site, "/p/12.html")
    await site.start()
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=1, concurrency=2)
    first = await crawl(config, stop=stop)
    assert first.interrupted and first.mirror is None
    resumed = await crawl(config, resume=True)
    assert not resumed.interrupted and resumed.mirror is not None and not resumed.mirror.errors
    _rebuilt_alike(resumed.snapshot.root)


async def test_a_page_whose_record_is_damaged_before_the_last_pass_keeps_its_file(
    site: Any, tmp_path: Path
) -> None:
    """A page whose guesses turned out wrong is written again from its record at the crawl's
    end. Its record damaged by then (here between a stopped crawl and its resume), the file the
    crawl wrote is the best copy left: kept where it is, said in one line, as a rebuild keeps it."""
    tricky_site(site, pages=8)
    stop = _stop_at(site, "/p/4.html")
    await site.start()
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=1, concurrency=2)
    root = (await crawl(config, stop=stop)).snapshot.root
    url = site.url("/p/0.html")
    row = manifest_rows(root)[url]
    path, file = str(row.local_path), root / "mirror" / str(row.local_path)
    crawled = file.read_bytes()
    warc = root / "warc" / str(row.warc_file)
    data = bytearray(warc.read_bytes())
    data[int(row.warc_offset or 0) + int(row.warc_length or 0) // 2] ^= 0x55
    warc.write_bytes(bytes(data))
    resumed = await crawl(config, resume=True)
    stats = resumed.mirror
    assert stats is not None and not stats.errors
    line = f"{url}: kept mirror/{path} as the crawl wrote it; its WARC record cannot be read ("
    assert [kept for kept in stats.kept if kept.startswith(line)] == stats.kept != [], stats.kept
    assert file.read_bytes() == crawled
    assert manifest_rows(root)[url].local_path == path
    notes = {path: note for path, _, _, note in _recorded(root)[1]}
    assert str(notes[path]).startswith("kept as the crawl wrote it: its WARC record cannot be read (")
    report = verify_snapshot(root)
    assert not {"lost_mirror_file", "changed_mirror_file", "unrecorded_mirror_file"} & set(report.counts)


async def test_a_crawl_whose_last_pass_keeps_a_file_exits_as_archiver_mirror_does(
    site: Any, tmp_path: Path
) -> None:
    """The file of a page whose record was damaged before the crawl's last pass is kept, as
    archiver mirror keeps it: the command says so in one line and exits 1 as archiver mirror
    does for the same file, not 4 (some URLs failed) nor 0."""
    tricky_site(site, pages=8)
    stop = _stop_at(site, "/p/4.html")
    await site.start()
    config = CrawlConfig(seeds=(site.url("/"),), output=tmp_path / "snap", max_tries=1, concurrency=2)
    root = (await crawl(config, stop=stop)).snapshot.root
    row = manifest_rows(root)[site.url("/p/0.html")]
    warc = root / "warc" / str(row.warc_file)
    data = bytearray(warc.read_bytes())
    data[int(row.warc_offset or 0) + int(row.warc_length or 0) // 2] ^= 0x55
    warc.write_bytes(bytes(data))
    resumed = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "archiver", "crawl", "--resume", str(root), "--quiet"],
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(resumed.communicate(), 120)
    assert err.decode() == (
        "archiver: error: the mirror left 0 captures without a file and kept 1 as the crawl wrote them, "
        f"whose records cannot be read (archiver verify {root} names each; archiver crawl --resume {root} "
        "--repair fetches them again)\n"
    )
    assert resumed.returncode == EXIT_PROBLEMS
    assert cli.main(["mirror", str(root)]) == EXIT_PROBLEMS


async def test_one_page_answered_at_many_urls_leaves_no_broken_link(site: Any, run_crawl: Any) -> None:
    """A server answers the same page at many URLs (a catch-all route, robots.txt included, or
    ``/../`` links normalized to paths it does not have): those in one folder share the file of
    the first. The seed, drafted before it was placed at robots.txt's file, guessed its own path
    for its link to itself, and that guess must not reach the other pages, nor outlive the crawl."""
    pages = 240
    shared = "<html><title>p0</title>" + "".join(f'<a href="/p{k}">{k}</a>' for k in range(20)) + "</html>"
    aliases = {"/": ("/robots.txt", "/p0", "/b", "/c"), "/etc/": ("/etc/passwd", "/etc/group")}
    for path in (*aliases["/"], *aliases["/etc/"]):
        site.file(path, shared)
    for n in range(1, pages):
        links = [f"/p{(n * 7 + k) % pages}" for k in range(12)]
        if n % 10 == 0:
            links += ["/etc/passwd", "/etc/group", "/b", "/c"]
        site.page(f"/p{n}", links=links)
    await site.start()
    result = await run_crawl(site.url("/p0"), max_tries=1, worker_processes=0, concurrency=8)
    root = result.snapshot.root
    assert result.mirror is not None and not result.mirror.errors
    paths = {url: row.local_path for url, row in manifest_rows(root, for_crawlers=True).items()}
    for folder in aliases.values():
        assert len({paths[site.url(path)] for path in folder}) == 1, folder
    host = site.host.replace(":", "+")
    first = paths[site.url("/robots.txt")]
    assert first == f"{host}/robots.txt.html"
    linking = [n for n in range(1, pages) if any((n * 7 + k) % pages == 0 for k in range(12))]
    mirror = _tree(root / "mirror")
    assert linking and all('href="robots.txt.html"' in mirror[f"{host}/p{n}.html"].decode() for n in linking)
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    crawled, recorded = _tree(root / "mirror"), _recorded(root)
    build_mirror(root, workers=2)
    assert _tree(root / "mirror") == crawled
    assert _recorded(root) == recorded


async def test_the_manifest_gives_back_the_space_of_the_mirrors_scratch_tables(
    site: Any, run_crawl: Any, monkeypatch: Any
) -> None:
    """The pages to check again and the path plan live in the manifest while the crawl runs;
    dropped at its end, they left four fifths of the file free, which is given back."""
    monkeypatch.setattr(manifest_module, "COMPACT_FROM_PAGES", 0)  # this small site's too
    tricky_site(site, pages=40)
    await site.start()
    result = await run_crawl(site.url("/"), max_tries=1, worker_processes=0)
    path = result.snapshot.root / "manifest.sqlite3"

    def free_share() -> float:
        with sqlite3.connect(path) as db:
            return (
                db.execute("PRAGMA freelist_count").fetchone()[0]
                / db.execute("PRAGMA page_count").fetchone()[0]
            )

    assert free_share() < 0.25
    before = manifest_rows(result.snapshot.root)
    build_mirror(result.snapshot.root)
    assert free_share() < 0.25
    assert manifest_rows(result.snapshot.root) == before
    assert verify_snapshot(result.snapshot.root).ok


LONG = "n" * 300
CLASHES = {
    # URL path: content type (None: the server names none, so no extension is added)
    "/a": None,
    "/a/b": "text/html",
    "/c.html": "text/html",
    "/c.html/x": "text/html",
    "/d/": "text/html",
    "/d/index.html": "text/html",
    "/E.html": "text/html",
    "/e.html": "text/html",
    "/F": None,
    "/f/g": "text/html",
    "/h.png": "image/png",
    "/h.png/i": "text/html",
    f"/{LONG}": None,
    f"/{LONG}/x": "text/html",
    f"/{LONG}.html": "text/html",
    "/con": "text/html",
    "/CON/x": "text/html",
    "/aux.txt": "text/plain",
    "/%C3%A9.html": "text/html",  # é, one code point
    "/e%CC%81.html": "text/html",  # é, an e and a combining accent: one name on macOS
    "/j": "text/html",
    "/j?": "text/html",
    "/trailing.": "text/html",
    "/trailing": "text/html",
}


def _file_system_key(path: str) -> str:
    """A path as a case-insensitive, normalisation-insensitive file system (macOS, Windows) sees it."""
    import unicodedata

    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", path).casefold())


@pytest.mark.parametrize("order", ["as listed", "reversed"])
async def test_urls_whose_files_would_clash_each_get_their_own(
    order: str, site: Any, run_crawl: Any, live: None
) -> None:
    # A file where another URL needs a folder, names equal but for case or Unicode normalisation,
    # /d/ and /d/index.html, names too long or reserved: each URL its own file, whatever the order.
    paths = list(CLASHES) if order == "as listed" else list(reversed(CLASHES))
    site.page("/", links=paths)
    for n, path in enumerate(paths):
        kind = CLASHES[path]
        body = (
            f"<title>{n}</title><p>{path}</p><a href='/'>home</a>" if kind == "text/html" else f"{n}:{path}"
        )
        site.file(path, body.encode(), kind or "", headers={} if kind else {"Content-Type": ""})
    await site.start()
    root = (await run_crawl(site.url("/"), concurrency=1, sitemaps=False)).snapshot.root
    rows = manifest_rows(root)
    placed = {path: rows[site.url(path)].local_path for path in paths}
    assert all(placed.values()), placed
    assert len({_file_system_key(p) for p in placed.values()}) == len(paths), sorted(placed.items())
    files = {_file_system_key(p) for p in placed.values()}
    folders = {
        _file_system_key(p).rsplit("/", depth)[0] for p in placed.values() for depth in range(1, p.count("/"))
    }
    assert not files & folders, files & folders  # no file where a folder is needed
    for path in paths:
        assert path.encode() in (root / "mirror" / placed[path]).read_bytes(), path
    _rebuilt_alike(root)
