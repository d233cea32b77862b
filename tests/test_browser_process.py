"""The browser a crawl runs, as processes: a crash of the browser or of a tab, recycling, the CPU
it may take, Playwright's driver, options checked at start, a signal in the middle of renders,
and which Chromium is found on PATH."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web
from browser_watch import BrowserWatch, children, subtree
from conftest import manifest_rows
from test_browser import CHROMIUM

from archiver.cli import main
from archiver.crawling import browser_pool as pool_module
from archiver.crawling.chromium import find_chromium
from archiver.mirror.build import build_mirror
from archiver.verify.verifier import verify_snapshot


@pytest.mark.parametrize("how", ["Browser.crash", "kill -9"])
async def test_crashed_browser_is_restarted_and_its_page_retried(site, run_crawl, monkeypatch, tmp_path, how):
    watch = BrowserWatch(monkeypatch)
    crashed: list[bool] = []
    pids = tmp_path / "chromium.pids"

    async def crash_the_browser(request: web.Request) -> web.StreamResponse:
        if not crashed:  # the first render asks for it: the whole browser dies meanwhile
            crashed.append(True)
            if how == "kill -9":
                os.kill(int(pids.read_text().split()[-1]), signal.SIGKILL)
            else:
                browser = watch.pools[0].browser
                assert browser is not None
                session = await browser.new_browser_cdp_session()
                asyncio.ensure_future(session.send("Browser.crash"))
            await asyncio.sleep(0.5)
        return web.json_response({"text": "after the crash"})

    site.page(
        "/",
        body="<div id='root'></div><script>fetch('/data.json').then(r => r.json())"
        ".then(d => { document.getElementById('root').textContent = d.text; });</script>",
    )
    site.handler("/data.json", crash_the_browser)
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", chromium=pid_noting_chromium(tmp_path, pids))
    rows = manifest_rows(result.snapshot.root)
    page = rows[site.url("/")]
    assert crashed and watch.pools[0].restarts == 1
    assert len(pids.read_text().split()) == 2
    assert page.dom_warc_file and page.render_error is None
    assert site.hits["/data.json"] == 1  # the retry was answered from the snapshot
    build_mirror(result.snapshot.root)
    html = (result.snapshot.root / "mirror" / site.host.replace(":", "+") / "index.html").read_text()
    assert "after the crash" in html


async def test_a_crashed_tab_is_tried_again_and_the_browser_kept(site, run_crawl, monkeypatch):
    """One tab's renderer crashed (a page's memory, a bug of the browser): that was taken for a
    crash of the whole browser, which was replaced, and the render of the other tab cut with it."""
    watch = BrowserWatch(monkeypatch)
    crashed = asyncio.Event()

    async def crash_its_tab(request: web.Request) -> web.StreamResponse:
        if not crashed.is_set():  # the first render asks for it: its tab's renderer dies meanwhile
            page = next(tab.page for tab in watch.tabs if tab.page.url == site.url("/crash"))
            devtools = await page.context.new_cdp_session(page)
            asyncio.ensure_future(devtools.send("Page.crash"))
            crashed.set()
            await asyncio.sleep(0.5)
        return web.json_response({"text": "after the crash"})

    async def after_the_crash(request: web.Request) -> web.StreamResponse:
        with contextlib.suppress(TimeoutError):  # the other tab renders meanwhile
            await asyncio.wait_for(crashed.wait(), 20)
        await asyncio.sleep(1.0)
        return web.json_response({"text": "rendered beside the crash"})

    script = (
        "<div id='root'></div><script>fetch('{data}').then(r => r.json())"
        ".then(d => {{ document.getElementById('root').textContent = d.text; }});</script>"
    )
    site.page("/crash", body=script.format(data="/crash.json"))
    site.handler("/crash.json", crash_its_tab)
    site.page("/other", body=script.format(data="/other.json"))
    site.handler("/other.json", after_the_crash)
    site.page("/", links=["/crash", "/other"], body="<p>Index</p>")
    await site.start()
    result = await run_crawl(site.url("/"), browser="always", browser_tabs=2, chromium=CHROMIUM)
    rows = manifest_rows(result.snapshot.root)
    routed = Counter(watch.routed)
    assert crashed.is_set() and watch.pools[0].restarts == 0
    assert routed[site.url("/crash")] == 2 and routed[site.url("/other")] == 1
    build_mirror(result.snapshot.root)
    for path, text in (("/crash", "after the crash"), ("/other", "rendered beside the crash")):
        assert rows[site.url(path)].render_error is None, path
        assert text in (result.snapshot.root / "mirror" / str(rows[site.url(path)].local_path)).read_text()


async def test_browser_pool_recycles_its_browser(tmp_path):
    """Memory does not grow with the crawl: the browser is replaced every ``recycle_after`` pages."""
    async with pool_module.BrowserPool(CHROMIUM, tabs=1, user_agent="t", recycle_after=2) as pool:
        generations = []
        for _ in range(3):
            async with pool.tab() as tab:
                await tab.page.set_content("<p>x</p>")
                generations.append(tab.generation)
        assert generations == [1, 1, 2]
    assert pool.browser is None


async def test_the_browser_runs_only_on_cpu_the_crawl_leaves_idle():
    """Every thread of Playwright's driver and of every Chromium process is SCHED_IDLE, so renders
    never slow the HTTP crawl; this process keeps its own class."""
    async with pool_module.BrowserPool(CHROMIUM, tabs=1, user_agent="t") as pool:
        async with pool.tab() as tab:
            await tab.page.set_content("<p>x</p><script>document.title = 'ran'</script>")
            assert await tab.page.title() == "ran"
        drivers = []
        for child in children(os.getpid()):
            with open(f"/proc/{child}/cmdline", "rb") as command:
                if b"run-driver" in command.read():
                    drivers.append(child)
        assert len(drivers) == 1
        browser_threads = {}
        for pid in subtree(drivers[0]):
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                for thread in os.listdir(f"/proc/{pid}/task"):
                    browser_threads[int(thread)] = os.sched_getscheduler(int(thread))
        assert len(browser_threads) > 10  # the driver's threads and Chromium's processes'
        assert set(browser_threads.values()) == {os.SCHED_IDLE}
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


STARTING_DRIVER = (
    "import os, sys, time\n"
    "end = time.process_time() + 0.3\n"
    "while time.process_time() < end: pass\n"  # a start that compiles: busy for 0.3 CPU s
    "print(os.sched_getscheduler(0), flush=True)\n"
    "sys.stdin.read()\n"
)
"""A stand-in for Playwright's driver (its command line names run-driver): busy as a start is,
then says its scheduling class, then waits."""


async def test_the_driver_is_lowered_as_soon_as_it_exists_not_once_it_has_started():
    """The driver spent its start (0.57 CPU s of compiling) at the crawl's own priority, taking that
    CPU from the crawl: it was lowered only once Playwright's start returned. It is lowered while
    it starts now (a real process standing in for it, which reports its class from within its start)."""
    from archiver.crawling.chromium import started_at_idle_priority

    async def start() -> tuple[asyncio.subprocess.Process, bytes]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            STARTING_DRIVER,
            "run-driver",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None
        return process, await asyncio.wait_for(process.stdout.readline(), 60)

    process, said = await started_at_idle_priority(start())
    try:
        assert int(said) == os.SCHED_IDLE
        assert os.sched_getscheduler(process.pid) == os.SCHED_IDLE
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
    finally:
        process.kill()
        await process.wait()


def _driver_environment() -> dict[str, str]:
    """The environment Playwright's driver (this process's child running run-driver) started with."""
    for child in children(os.getpid()):
        with open(f"/proc/{child}/cmdline", "rb") as command:
            if b"run-driver" not in command.read():
                continue
        with open(f"/proc/{child}/environ", "rb") as environ:
            pairs = [entry.partition(b"=") for entry in environ.read().split(b"\0") if entry]
        return {name.decode(): value.decode() for name, _, value in pairs}
    raise AssertionError("no driver process")


async def _render_once() -> dict[str, str]:
    async with pool_module.BrowserPool(CHROMIUM, tabs=1, user_agent="t") as pool:
        async with pool.tab() as tab:
            await tab.page.set_content("<p>x</p>")
        return _driver_environment()


@pytest.mark.parametrize("given", ["", "cache", "disabled"])
async def test_the_driver_keeps_its_compiled_code_in_nodes_compile_cache(tmp_path, monkeypatch, given):
    """Playwright's driver compiles 12 MB of JavaScript at each start: it is given Node's compile
    cache (in the temporary folder, where Node's module.enableCompileCache() puts it), and fills
    it; a user's own NODE_COMPILE_CACHE, or NODE_DISABLE_COMPILE_CACHE, is kept."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    for name in ("NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE"):
        monkeypatch.setenv(name, "x")  # so that the test's end takes away what the crawl set
        monkeypatch.delenv(name)
    if given == "cache":
        monkeypatch.setenv("NODE_COMPILE_CACHE", str(tmp_path / "mine"))
    if given == "disabled":
        monkeypatch.setenv("NODE_DISABLE_COMPILE_CACHE", "1")
    environment = await _render_once()
    expected = {"": tmp_path / "node-compile-cache", "cache": tmp_path / "mine", "disabled": None}[given]
    if expected is None:
        assert "NODE_COMPILE_CACHE" not in environment
        assert not (tmp_path / "node-compile-cache").exists()
        return
    assert environment["NODE_COMPILE_CACHE"] == str(expected)
    cached = [path for path in expected.rglob("*") if path.is_file()]
    assert cached and sum(path.stat().st_size for path in cached) > 1_000_000  # the bundles' code


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--browser", "auto", "--chromium", "/no/such/chromium"], "no Chromium at /no/such/chromium"),
        (["--browser", "fancy"], "invalid choice"),
        (["--browser", "always", "--browser-tabs", "0"], "--browser-tabs must be from 1"),
    ],
)
def test_browser_options_fail_at_start_in_one_line(tmp_path, capsys, args, words):
    try:
        code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"), *args])
    except SystemExit as exit:  # argparse's own usage error
        code = exit.code
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "snap").exists()


def test_missing_playwright_names_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import fails as when not installed
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"), "--browser", "auto"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "pip install 'archiver[browser]'" in err


@pytest.mark.parametrize(
    ("stop", "group"),
    [(signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGTERM, True)],
    ids=["SIGTERM", "Ctrl-C", "SIGTERM-to-the-group"],
)
async def test_a_signal_stops_renders_cleanly_and_resume_finishes_them(site, tmp_path, stop, group):
    """SIGTERM or Ctrl-C mid-render: the browser is gone, the snapshot resumable, one line said;
    --resume renders what was left. A terminal's Ctrl-C, timeout(1) and systemd signal the
    whole process group: Playwright's driver too, which ends at once."""
    started = asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        started.set()
        await asyncio.sleep(3)
        return web.json_response({"text": "slow data"})

    site.page(
        "/slow",
        body="<div id='root'></div><script>fetch('/slow.json').then(r => r.json())"
        ".then(d => { document.getElementById('root').textContent = d.text; });</script>",
    )
    # The home page's script asks for nothing: when /slow.json is asked, no other fetch is under
    # way, so every repeat on --resume is a capture the first crawl lost.
    site.page("/", links=["/slow"], body="<div id='root'></div><script>root.textContent = 'home';</script>")
    site.handler("/slow.json", slow)
    await site.start()
    pids = tmp_path / "chromium.pids"
    wrapper = pid_noting_chromium(tmp_path, pids)
    output = tmp_path / "snap"
    command = [sys.executable, "-m", "archiver", "crawl", site.url("/"), "-o", str(output), "--quiet"]
    command += ["--browser", "always", "--chromium", wrapper]
    process = await asyncio.create_subprocess_exec(
        *command, stderr=asyncio.subprocess.PIPE, start_new_session=True
    )
    await asyncio.wait_for(started.wait(), 60)
    if group:
        os.killpg(process.pid, stop)
    else:
        process.send_signal(stop)
    _out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 128 + stop, err.decode()  # 143 for SIGTERM, 130 for Ctrl-C
    # The command it names gives the Chromium again: a resume runs none only crawl.json names.
    assert len(err.splitlines()) == 1 and f"--resume {output} --chromium {wrapper}".encode() in err, (
        err.decode()
    )
    for pid in pids.read_text().split():
        assert not _alive(int(pid)), f"Chromium {pid} outlived the crawl"
    rows = manifest_rows(output)
    assert rows[site.url("/slow")].render_pending
    resumed = await asyncio.create_subprocess_exec(
        *[
            sys.executable,
            "-m",
            "archiver",
            "crawl",
            "--resume",
            "-o",
            str(output),
            "--quiet",
            "--chromium",
            wrapper,
        ],
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(resumed.communicate(), 120)
    assert resumed.returncode == 0, err.decode()
    rows = manifest_rows(output)
    assert not any(row.render_pending for row in rows.values())
    assert rows[site.url("/slow")].dom_warc_file
    # The fetch in flight at SIGTERM was abandoned (left queued), so it is made again: the only repeat.
    assert site.hits["/slow.json"] == 2
    repeated = {path: count for path, count in site.hits.items() if count != 1 and path != "/slow.json"}
    assert not repeated
    assert verify_snapshot(output).ok


def pid_noting_chromium(folder: Path, pids: Path) -> str:
    """A Chromium that notes its process id in ``pids`` (the same process: it execs Chromium)."""
    wrapper = folder / "chromium"
    wrapper.write_text(f'#!/bin/sh\necho $$ >> {pids}\nexec {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


def test_the_headless_shell_is_preferred_on_path(tmp_path, monkeypatch):
    for name in ("chromium", "chromium-headless-shell"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() == str(tmp_path / "chromium-headless-shell")
    (tmp_path / "chromium-headless-shell").unlink()
    assert find_chromium() == str(tmp_path / "chromium")


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ('echo "chromium: error while loading shared libraries: libnss3.so" >&2\nexit 127', "libnss3.so"),
        ("exit 1", "it exited with code 1"),
    ],
    ids=["a library missing", "not a Chromium"],
)
async def test_a_browser_that_exits_as_it_starts_stops_the_crawl_in_one_line(site, tmp_path, script, said):
    """A --chromium that is no Chromium, or one whose install is broken, exits as it is launched:
    every render failed, each row said so, and the crawl ended with code 0 as if it had rendered
    what it was asked to. It stops at the first launch instead, resumable, with one line saying
    why and what to give; --resume with a browser that starts renders the pages chosen."""
    site.page("/", links=["/next"], body="<div id='root'></div><script>root.textContent = 'built';</script>")
    site.page("/next")
    await site.start()
    broken = tmp_path / "chromium"
    broken.write_text(f"#!/bin/sh\n{script}\n")
    broken.chmod(0o755)
    output = tmp_path / "snap"
    command = [sys.executable, "-m", "archiver", "crawl", "-o", str(output), "--quiet", "--browser", "always"]
    process = await asyncio.create_subprocess_exec(
        *command, site.url("/"), "--chromium", str(broken), stderr=asyncio.subprocess.PIPE
    )
    _out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 2, err.decode()
    line = err.decode()
    assert line.count("\n") == 1 and "the browser cannot start" in line and said in line, line
    assert f"archiver crawl --resume {output} --chromium PATH" in line
    home = manifest_rows(output)[site.url("/")]
    assert home.render_pending and home.render_error is None
    resume = [*command[:4], "--resume", "-o", str(output), "--quiet", "--chromium", CHROMIUM]
    resumed = await asyncio.create_subprocess_exec(*resume, stderr=asyncio.subprocess.PIPE)
    _out, err = await asyncio.wait_for(resumed.communicate(), 120)
    assert resumed.returncode == 0, err.decode()
    assert manifest_rows(output)[site.url("/")].dom_warc_file
    assert verify_snapshot(output).ok
