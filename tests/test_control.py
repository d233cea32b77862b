"""archiver control on a running crawl, of one process (its snapshot folder) and of crawl nodes
(its Redis crawl): pause stops new fetches within 2 s, resume continues, an added exclude skips
matching URLs from then on (reason ``excluded``), each noted in crawl.json; status and errors."""

from __future__ import annotations

import asyncio
import json
import random
import re
import resource
import signal
import statistics
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from node_site import TreeSite, archiver, assert_verified, finish, node_args, run_archiver
from subprocesses import track

from archiver.scope import EXCLUDED
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED, SKIPPED

PAGES = 600
EXCLUDE = r"/p[0-9]*7$"


@pytest.fixture
async def slow_tree() -> AsyncIterator[TreeSite]:
    site = TreeSite(PAGES, latency=0.02)
    await site.start()
    yield site
    await site.close()


async def control(target: str, *args: str) -> str:
    code, text = await run_archiver("control", target, *args)
    assert code == 0, text
    return text


async def steer(site: TreeSite, target: list[str], output: Path) -> dict[str, float]:
    """Pause, check no fetch starts 2 s on, exclude, resume; returns when each was given."""
    await site.wait_for(60)
    loop = asyncio.get_running_loop()
    await control(*target, "pause")
    paused_at = loop.time()
    await asyncio.sleep(3)
    late = [path for when, path in site.log if when > paused_at + 2]
    assert late == [], f"fetched after the pause took effect: {late}"
    status = await control(*target, "status", "--json")
    assert json.loads(status)["state"] == "paused", status
    await control(*target, "exclude", EXCLUDE)
    excluded_at = loop.time()
    await asyncio.sleep(2)  # taken in within a second or two, while paused
    await control(*target, "resume")
    return {"paused": paused_at, "excluded": excluded_at}


def check_outcome(site: TreeSite, output: Path, times: dict[str, float]) -> None:
    after = [path for when, path in site.log if when > times["excluded"] + 2]
    assert after, "the crawl did not continue after resume"
    assert not [path for path in after if re.search(EXCLUDE, path)]
    with Manifest.open(output / "manifest.sqlite3", readonly=True) as manifest:
        rows = {row.url: row for row in manifest.rows() if not row.for_crawlers}
    excluded = [row for row in rows.values() if row.outcome == SKIPPED and row.reason == EXCLUDED]
    assert excluded and all(re.search(EXCLUDE, row.url) for row in excluded)
    for row in rows.values():
        if not re.search(EXCLUDE, row.url):
            assert row.outcome == FETCHED, row
    crawl = json.loads((output / "crawl.json").read_text())
    given = [entry["command"] for entry in crawl["controls"]]
    assert {"pause", "exclude", "resume"} <= set(given), crawl["controls"]
    assert all(entry["applied"] for entry in crawl["controls"])
    assert EXCLUDE in crawl["settings"]["exclude"] or any(
        entry["argument"] == EXCLUDE for entry in crawl["controls"]
    )


async def test_control_a_crawl_of_one_process(slow_tree, tmp_path):
    output = tmp_path / "snap"
    crawl = archiver("crawl", slow_tree.url(), "-o", str(output), "--concurrency", "4", "--quiet")
    times = await steer(slow_tree, [str(output)], output)
    code, text = await finish(crawl)
    assert code == 0, text
    check_outcome(slow_tree, output, times)
    assert EXCLUDE in json.loads((output / "crawl.json").read_text())["settings"]["exclude"]
    assert_verified(output)
    status = await control(str(output), "status")
    assert status.startswith("finished: ") and " fetched, 0 queued" in status, status


async def test_control_crawl_nodes_through_redis(slow_tree, tmp_path, redis_url):
    output = tmp_path / "snap"
    args = node_args(slow_tree.url(), output, redis_url, "steered", "--concurrency", "4")
    nodes = [archiver(*args, "--node", name) for name in ("n1", "n2")]
    times = await steer(slow_tree, [redis_url, "--crawl-id", "steered"], output)
    for process in nodes:
        code, text = await finish(process)
        assert code == 0, text
    check_outcome(slow_tree, output, times)
    assert_verified(output)


async def test_stop_ends_the_crawl_resumably_and_a_stopped_folder_takes_no_command(slow_tree, tmp_path):
    # The delay and concurrency the operator set hold after --resume too, as an exclude does:
    # a resumed crawl went back to those of its options, and hammered the site that complained.
    output = tmp_path / "snap"
    crawl = archiver("crawl", slow_tree.url(), "-o", str(output), "--concurrency", "2", "--quiet")
    await slow_tree.wait_for(20)
    await control(str(output), "delay", "0.001")
    await control(str(output), "concurrency", "2")
    await control(str(output), "stop")
    code, text = await finish(crawl, 30)
    assert code == 130 and "stopped by archiver control" in text, text
    code, text = await run_archiver("control", str(output), "pause")
    assert code == 2 and "no crawl is running" in text and text.count("\n") == 1, text
    code, text = await run_archiver("crawl", "--resume", str(output), "--quiet")
    assert code == 0, text
    settings = json.loads((output / "crawl.json").read_text())["settings"]
    assert (settings["delay"], settings["host_concurrency"]) == (0.001, 2)


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["delay", "soon"], "delay takes seconds"),
        (["concurrency", "0"], "from 1 to 1000"),
        # Past what the crawl's own --delay and --host-concurrency take: the crawl stalled, wrote
        # "Infinity" into crawl.json, and its resume refused the settings it left.
        (["delay", "inf"], "delay takes seconds from 0 to 86400"),
        (["delay", "86401"], "delay takes seconds from 0 to 86400"),
        (["concurrency", "100000000000000000000"], "from 1 to 1000"),
        (["exclude", "("], "bad regular expression"),
        (["pause", "now"], "takes no argument"),
        (["exclude"], "takes a regular expression"),
    ],
)
async def test_bad_commands_are_one_line(tmp_path, args, word):
    (tmp_path / "crawl.json").write_text(json.dumps({"settings": {"seeds": ["http://h/"]}}))
    code, text = await run_archiver("control", str(tmp_path), *args)
    assert code == 2 and word in text and text.count("\n") == 1, text


async def test_a_redis_target_needs_a_crawl_id_and_a_known_crawl(redis_url):
    code, text = await run_archiver("control", redis_url, "pause")
    assert code == 2 and "--crawl-id" in text, text
    code, text = await run_archiver("control", redis_url, "--crawl-id", "nothing", "pause")
    assert code == 2 and "holds no crawl named nothing" in text, text


def test_the_progress_line_says_what_the_operator_changed():
    from archiver.crawling.control import Controls, describe
    from archiver.crawling.crawl_report import progress_line
    from archiver.crawling.stats import CrawlStats

    controls = Controls()
    controls.pause()
    controls.excludes = (re.compile("x"),)
    stats = CrawlStats(note=describe(controls, {"delay": "2", "concurrency": "1"}))
    assert progress_line(stats, 3).endswith("(paused, delay 2s, 1 a host, 1 exclude added)")


def crawl_filling_the_disk(seed: str, output: Path, max_file_bytes: int) -> subprocess.Popen[str]:
    """archiver crawl whose files may not grow past ``max_file_bytes`` (EFBIG, as a full disk)."""

    def full_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    command = [sys.executable, "-m", "archiver", "crawl", seed, "-o", str(output), "--no-mirror", "--quiet"]
    return track(
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=full_disk
        )
    )


async def until_paused(output: Path) -> None:
    for _ in range(50):
        if json.loads(await control(str(output), "status", "--json"))["state"] == "paused":
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the crawl did not pause: {await control(str(output), 'status', '--json')}")


LIMIT = 6_000_000
"""Bytes a file of the crawl below may hold: more than the manifest's write-ahead log reaches
(a checkpoint each 1,000 pages of 4 KB), less than the WARC file with the held body."""


@pytest.mark.parametrize("end", ["disk full", "stop", "SIGINT"])
async def test_a_paused_crawl_still_ends_when_it_fails_or_is_stopped(site, tmp_path, end):
    # Every worker waits for a resume that never comes: the crawl must end all the same.
    release = asyncio.Event()

    async def held(request: web.Request) -> web.Response:
        await release.wait()  # in flight while the crawl pauses
        return web.Response(
            body=random.Random(1).randbytes(LIMIT - 1), content_type="application/octet-stream"
        )

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.1)  # many pages still queued when the crawl pauses
        n = int(request.path.strip("/p") or 0)
        links = "".join(f'<a href="/p{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2) if k < 200)
        return web.Response(text=f"{links}<a href=/held>held</a>", content_type="text/html")

    site.handler("/", page)
    for n in range(200):
        site.handler(f"/p{n}", page)
    site.handler("/held", held)
    await site.start()
    output = tmp_path / "snap"
    crawl = crawl_filling_the_disk(site.url("/"), output, max_file_bytes=LIMIT)
    for _ in range(1500):
        if site.hits["/held"]:
            break
        await asyncio.sleep(0.02)
    assert site.hits["/held"], "the crawl did not get going"
    await control(str(output), "pause")
    await until_paused(output)
    if end == "disk full":
        release.set()  # the WARC file grows past LIMIT: the writer fails while paused
    elif end == "stop":
        await control(str(output), "stop")
    else:
        crawl.send_signal(signal.SIGINT)
    code, text = await finish(crawl, 30)
    release.set()
    assert code == (3 if end == "disk full" else 130), text  # a write error; a stop as Ctrl-C
    reason = {"disk full": "write error", "stop": "stopped by archiver control", "SIGINT": "SIGINT"}[end]
    assert reason in text and "--resume" in text and "Traceback" not in text, text


async def test_whoever_waits_for_a_resume_goes_on_once_the_crawl_ends():
    from archiver.crawling.control import Controls

    controls = Controls()
    controls.pause()
    waiting = asyncio.ensure_future(controls.running())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    controls.end()
    await asyncio.wait_for(waiting, 1)
    controls.pause()  # a pause read after the end holds nothing back
    await asyncio.wait_for(controls.running(), 1)


async def slow_down(site: TreeSite, target: list[str]) -> None:
    """concurrency 1, then delay 0.5: each holds at the server (across every node) within 2 s."""
    await site.wait_for(40)
    await control(*target, "concurrency", "1")
    await asyncio.sleep(2)
    site.most_in_flight = site.in_flight
    await asyncio.sleep(2)
    assert site.most_in_flight <= 1, site.most_in_flight
    await control(*target, "delay", "0.5")
    loop = asyncio.get_running_loop()
    since = loop.time() + 2
    await asyncio.sleep(4)
    starts = [when for when, _ in site.log if when > since]
    assert len(starts) >= 2, starts
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    # 0.5 s between two requests (each takes 0.1; with no delay they come 0.1 s apart). Each gap
    # is timed as the test's server saw the request come, late by as much as the machine keeps
    # this process from its loop: one gap short by that, the next long by it.
    assert statistics.median(gaps) > 0.45 and min(gaps) > 0.3, gaps
    await control(*target, "stop")


@pytest.mark.parametrize("shared", [False, True], ids=["one process", "crawl nodes"])
async def test_delay_and_concurrency_hold_at_the_server_from_within_two_seconds(tmp_path, request, shared):
    site = TreeSite(2000, latency=0.1)
    await site.start()
    output = tmp_path / "snap"
    try:
        if shared:
            redis_url = request.getfixturevalue("redis_url")
            args = node_args(site.url(), output, redis_url, "slowed", "--concurrency", "4", "--no-mirror")
            crawls = [archiver(*args, "--node", name) for name in ("n1", "n2")]
            target = [redis_url, "--crawl-id", "slowed"]
        else:
            crawls = [archiver("crawl", site.url(), "-o", str(output), "--concurrency", "4", "--quiet")]
            target = [str(output)]
        await slow_down(site, target)
        for crawl in crawls:
            code, text = await finish(crawl)
            assert code == 130 and "stopped by archiver control" in text, text
    finally:
        await site.close()
    record = json.loads((output / ("nodes/n1/crawl.json" if shared else "crawl.json")).read_text())
    given = [(entry["command"], entry["argument"]) for entry in record["controls"]]
    assert given == [("concurrency", "1"), ("delay", "0.5"), ("stop", None)], given


async def test_the_control_loop_ends_only_once_its_thread_is_out_of_sqlite():
    # A thread still writing control.sqlite3 when the crawl returns held SQLite's locks
    # while verify forked: the forked process waited for them forever.
    import threading
    import time as clock
    from types import SimpleNamespace

    from archiver.crawling.control import Controls, follow_controls

    started, finished = threading.Event(), threading.Event()

    class SlowSource:
        async def new_commands(self) -> list:
            return []

        async def publish(self, status: dict) -> None:
            def write() -> None:
                started.set()
                clock.sleep(0.5)
                finished.set()

            await asyncio.to_thread(write)

    crawler = SimpleNamespace(controls=Controls(), stats=SimpleNamespace(note=""))
    done = asyncio.Event()
    loop = asyncio.create_task(follow_controls(SlowSource(), crawler, None, None, dict, done))
    await asyncio.to_thread(started.wait, 5)
    done.set()
    await asyncio.wait_for(loop, 5)
    assert finished.is_set()


async def test_status_of_a_killed_crawl_says_it_stopped_with_its_manifests_counts(slow_tree, tmp_path):
    """A crawl killed (kill -9) never saves its counts and leaves crawl.json saying it runs:
    status said "running: 0 fetched, 0 queued, 0 in flight" (state "running" in --json) of a
    crawl nothing ran. Now it says it stopped before its end, with the counts its manifest holds."""
    output = tmp_path / "snap"
    crawl = archiver("crawl", slow_tree.url(), "-o", str(output), "--concurrency", "4", "--quiet")
    await slow_tree.wait_for(60)
    await asyncio.sleep(0.5)  # its first batches committed
    crawl.kill()
    crawl.wait(timeout=30)
    counts = json.loads(await control(str(output), "status", "--json"))
    with Manifest.open(output / "manifest.sqlite3", readonly=True) as manifest:
        outcomes = manifest.count_by("outcome")
    assert counts["state"] == "stopped before its end" and counts["in_flight"] == 0, counts
    assert (counts["fetched"], counts["queued"]) == (outcomes.get(FETCHED, 0), outcomes.get("queued", 0))
    assert counts["fetched"] > 0 and counts["queued"] > 0
    line = await control(str(output), "status")
    assert line.startswith(f"stopped before its end: {counts['fetched']} fetched, "), line
