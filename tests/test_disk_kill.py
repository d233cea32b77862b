"""A crawl killed (SIGKILL) while the writer is in the middle of a record: the WARC file ends in
a torn record, which the resume cuts off and keeps aside; the URL is fetched again, once, and
verify finds the snapshot complete. The kill is real and comes while the record is written:
bodies large enough that writing one takes a while, and the file watched as it grows."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from conftest import Site
from crawl_processes import run_archiver, start_crawl, warc_responses

from archiver.cli.exits import EXIT_OK
from archiver.warc.members import torn_offset

BODY = 24 * 1024 * 1024
"""Bytes of each large body: random, so its record is as large once compressed."""


async def test_a_kill_in_the_middle_of_a_record_is_mended_by_the_resume(site: Site, tmp_path: Path) -> None:
    bodies = [random.Random(n).randbytes(BODY) for n in range(3)]

    def serve(n: int) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def large(request: web.Request) -> web.Response:
            return web.Response(body=bodies[n], content_type="application/octet-stream")

        return large

    site.page("/", links=[f"/large{n}" for n in range(3)])
    for n in range(3):
        site.handler(f"/large{n}", serve(n))
    await site.start()
    # The kill must land while a record is written, a window of some milliseconds a record: on a
    # machine busy enough to miss all three, the crawl is made again (into a new folder).
    for attempt in range(5):
        output = tmp_path / f"snap{attempt}"
        torn = await kill_in_a_record(start_crawl(site.url("/"), output), output)
        if torn is not None:
            break
    assert torn is not None, "every crawl ended before it could be killed in a record"
    assert torn_offset(torn) is not None, "the kill came between two records"

    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(output), "--quiet")
    assert resumed.returncode == EXIT_OK, resumed.stderr
    assert f"{torn.name}: cut the " in resumed.stderr, resumed.stderr
    assert torn_offset(torn) is None
    assert list((output / "crash-tails").iterdir()), "the torn tail was not kept aside"
    captured = Counter(warc_responses(output))
    assert all(captured[site.url(f"/large{n}")] == 1 for n in range(3)), captured
    verified = await asyncio.to_thread(run_archiver, "verify", str(output), "--no-mirror")
    assert verified.returncode == EXIT_OK, verified.stdout + verified.stderr


async def kill_in_a_record(crawl: subprocess.Popen[str], output: Path) -> Path | None:
    """Kill ``crawl`` once a WARC file holds a large record half written: that file, or None if
    the crawl ended first."""
    torn = None
    while torn is None and crawl.poll() is None:
        for warc in (output / "warc").glob("*.warc.gz"):
            if 1024 * 1024 < warc.stat().st_size < BODY // 2:  # a large record half written
                os.kill(crawl.pid, signal.SIGKILL)
                torn = warc
        await asyncio.sleep(0.001)
    await asyncio.to_thread(crawl.communicate, timeout=60)
    return torn
