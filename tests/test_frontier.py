"""Crawl state and work off the event loop: the frontier's FIFO across RAM and disk, join
semantics, a crawl through the disk queue, and one whose pages are parsed and encoded in
worker processes."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import hashlib
import io
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import StartedWorkers, manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling import backend, run
from archiver.crawling import capture_workers as workers_module
from archiver.crawling.capture_workers import CaptureWorkers
from archiver.crawling.frontier import QueueItem, SeenUrls
from archiver.crawling.local_frontier import MemoryFrontier, SqliteFrontier
from archiver.verify.verifier import verify_snapshot
from archiver.warc.capture import Capture


def item(n: int) -> QueueItem:
    return QueueItem(
        f"http://h/{n}",
        n % 3,
        5,
        requisite=n % 2 == 0,
        chain=(f"http://h/r{n}", "http://h/s") if n % 4 == 0 else (),
        found_by="redirect" if n % 4 == 0 else "link",
        parent=None if n % 5 == 0 else f"http://h/p{n}",
        negotiation=(("Accept", "*/*"), ("Origin", "http://h")) if n % 3 == 0 else (),
        referrer_policy="origin" if n % 3 == 1 else "",
        site_for_cookies=f"http://top/{n}" if n % 2 == 0 else None,
        cors="same-origin" if n % 3 == 0 else "",
        client="http://top" if n % 2 == 0 else None,
    )


@pytest.fixture(params=["memory", "sqlite"])
async def frontier(request, tmp_path: Path):
    built = MemoryFrontier() if request.param == "memory" else SqliteFrontier(tmp_path / "q", batch=3)
    yield built
    await built.close()


async def test_items_come_out_in_order_and_whole(frontier) -> None:
    for n in range(20):
        await frontier.put(item(n))
    assert frontier.pending() == 20
    got = [await frontier.get() for _ in range(8)]
    for n in range(20, 26):  # puts while the queue is part on disk
        await frontier.put(item(n))
    got += [await frontier.get() for _ in range(18)]
    assert got == [item(n) for n in range(26)]
    assert frontier.pending() == 0


async def test_join_waits_for_task_done_not_for_get(frontier) -> None:
    for n in range(5):
        await frontier.put(item(n))
    got = [await frontier.get() for _ in range(5)]
    joined = asyncio.ensure_future(frontier.join())
    for done in got[:4]:
        await frontier.task_done(done)
    await asyncio.sleep(0.01)
    assert not joined.done()
    await frontier.task_done(got[4])
    await asyncio.wait_for(joined, 1)


async def test_join_waits_for_a_retry_that_comes_due_as_the_last_item_is_done(frontier) -> None:
    # A worker marks the last item done and, in the same turn of the event loop, a failed
    # try's timer queues the URL again: the crawl is not done (a retry was lost this way).
    await frontier.put(item(1))
    await frontier.put(item(2))
    first, last = await frontier.get(), await frontier.get()
    await frontier.task_done(first)
    joined = asyncio.ensure_future(frontier.join())
    await asyncio.sleep(0)
    assert not joined.done()

    def finish_last() -> None:
        # Local frontiers complete task_done() without waiting: run it inside this callback.
        with pytest.raises(StopIteration):
            frontier.task_done(last).send(None)

    loop = asyncio.get_running_loop()
    loop.call_later(0.001, finish_last)
    await frontier.put(item(3), delay=0.002)
    time.sleep(0.01)  # both timers are due in the loop's next turn: the task_done first
    await asyncio.sleep(0.05)
    assert not joined.done()
    retried = await asyncio.wait_for(frontier.get(), 1)
    assert retried == item(3)
    await frontier.task_done(retried)
    await asyncio.wait_for(joined, 1)


async def test_get_waits_for_a_put(frontier) -> None:
    waiting = asyncio.ensure_future(frontier.get())
    await asyncio.sleep(0.01)
    assert not waiting.done()
    await frontier.put(item(7))
    assert await asyncio.wait_for(waiting, 1) == item(7)


async def test_claim_is_true_once(frontier) -> None:
    assert await frontier.claim(["http://h/a"]) == [True]
    assert await frontier.claim(["http://h/a", "http://h/c"]) == [False, True]
    assert frontier.seen("http://h/a") and not frontier.seen("http://h/b")


async def test_sqlite_frontier_keeps_at_most_a_batch_at_each_end_in_ram(tmp_path: Path) -> None:
    frontier = SqliteFrontier(tmp_path / "q", batch=10)
    for n in range(1000):
        await frontier.put(item(n))
    assert len(frontier._head) <= 10 and len(frontier._tail) <= 10
    assert frontier.pending() == 1000
    assert [(await frontier.get()).url for _ in range(1000)] == [f"http://h/{n}" for n in range(1000)]
    await frontier.close()
    await frontier.close()
    assert not (tmp_path / "q").exists()


async def test_a_stale_queue_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "q").write_bytes(b"left by a crash")
    frontier = SqliteFrontier(tmp_path / "q")
    assert frontier.pending() == 0
    await frontier.close()


async def test_crawl_through_the_disk_queue(site, run_crawl, tmp_path, monkeypatch) -> None:
    # A batch of 2 puts nearly every queued URL through the SQLite file.
    monkeypatch.setattr(backend, "SqliteFrontier", functools.partial(SqliteFrontier, batch=2))
    pages = 40
    for n in range(pages):
        site.page(f"/p{n}", links=[f"/p{k}" for k in range(pages)], title=f"p{n}")
    site.redirect("/", "/p0")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert {url for url, row in rows.items() if row.outcome == "fetched"} == {
        site.url(f"/p{n}") for n in range(pages)
    }
    assert all(hits == 1 for hits in site.hits.values())
    assert rows[site.url("/p0")].found_by == "redirect"
    assert rows[site.url("/p0")].parent == site.url("/")
    assert rows[site.url("/p5")].parent is not None
    assert not result.snapshot.frontier_path.exists()


async def test_crawl_with_captures_prepared_in_worker_processes(site, run_crawl, monkeypatch) -> None:
    made: list[CaptureWorkers] = []

    def workers_from_the_start(_processes: int | None, **options: object) -> CaptureWorkers:
        made.append(StartedWorkers(processes=2, start_after=0, **options))
        return made[-1]

    monkeypatch.setattr(run, "CaptureWorkers", workers_from_the_start)
    pages = 30
    for n in range(pages):
        site.page(
            f"/p{n}",
            links=[f"/p{(n + k) % pages}" for k in range(1, 4)]
            + ["/s.css", "/same.png", "/copy.png", "/gone", "/big"],
            title=f"page {n}",
        )
    site.file("/s.css", "body{background:url(/bg.png)}", "text/css")
    site.file("/bg.png", b"\x89PNG" + bytes(range(256)) * 40, "image/png")
    site.file("/same.png", b"\x89PNG same bytes", "image/png")
    site.file("/copy.png", b"\x89PNG same bytes", "image/png")
    # Over TO_WORKER_BYTES: prepared in this process, its records encoded by the writer.
    site.page("/big", title="big", body='<a href="/big-only">b</a>' + "<p>filler</p>" * 100_000)
    site.page("/big-only")
    site.redirect("/", "/p0")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert {url for url, row in rows.items() if row.outcome == "fetched"} == {
        *(site.url(f"/p{n}") for n in range(pages)),
        site.url("/big"),
        site.url("/big-only"),
        site.url("/s.css"),
        site.url("/bg.png"),
        site.url("/same.png"),
        site.url("/copy.png"),
        site.url("/gone"),
    }
    assert rows[site.url("/p7")].title == "page 7"
    assert rows[site.url("/big")].title == "big"
    assert rows[site.url("/bg.png")].found_by == "requisite"
    # Every fetch but the redirect's and the big page's went through a worker, which parsed the
    # pages and the stylesheet and encoded the records; one of the identical images became a revisit.
    assert made[0].done_in_workers == pages + 6
    assert sorted(rows[site.url(path)].record_type for path in ("/same.png", "/copy.png")) == [
        "response",
        "revisit",
    ]
    records = []
    for warc in (result.snapshot.root / "warc").iterdir():
        with open(warc, "rb") as f:
            records += [
                (record.rec_type, record.rec_headers.get_header("WARC-Concurrent-To"))
                for record in ArchiveIterator(f, check_digests="raise")
            ]
    kept = manifest_rows(result.snapshot.root, for_crawlers=True)  # robots.txt and /sitemap.xml too
    response_ids = {row.url for row in kept.values() if row.warc_file}
    assert len([r for r in records if r[0] in ("response", "revisit")]) == len(response_ids)
    assert len([r for r in records if r[0] == "request" and r[1]]) == len(response_ids)
    assert verify_snapshot(result.snapshot.root).ok


def page_capture(body: bytes, url: str = "http://h/a") -> Capture:
    return Capture(
        url=url,
        date=datetime.now(UTC),
        request_line="GET / HTTP/1.1",
        request_headers=[("Host", "h")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "text/html")],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest="sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
    )


async def prepared_links(workers: CaptureWorkers, body: bytes, url: str = "http://h/a") -> list[str]:
    prepared = await workers.prepare(page_capture(body, url), parse=True)
    return list(prepared.links)


@pytest.mark.parametrize("processes", [0, 1])
async def test_a_stylesheet_is_prepared_in_its_referrers_encoding_here_and_in_a_worker(processes) -> None:
    # The crawl hands the encoding of the page that links a stylesheet to whoever parses it.
    async with StartedWorkers(processes=processes, start_after=0) as workers:
        page = await workers.prepare(page_capture(b"<p>caf\xe9</p>"), parse=True)
        css = dataclasses.replace(
            page_capture(b"a{background:url(/\x80.png)}", "http://h/s.css"),
            response_headers=[("Content-Type", "text/css")],
        )
        stylesheet = await workers.prepare(css, parse=True, referrer_encoding=page.encoding)
    assert (page.encoding, list(stylesheet.links)) == ("cp1252", ["http://h/%E2%82%AC.png"])
    assert workers.done_in_workers == 2 * processes


async def test_a_worker_process_that_dies_is_replaced(caplog) -> None:
    async with StartedWorkers(processes=1, start_after=0) as workers:
        assert await prepared_links(workers, b'<a href="/b">b</a>') == ["http://h/b"]
        worker = workers._workers[0]
        worker.process.kill()
        await worker.process.wait()
        # The next ones are prepared here while a fresh worker starts, then go to it.
        links = [await prepared_links(workers, b'<a href="/c">c</a>') for _ in range(3)]
        await workers.ready()
        links += [await prepared_links(workers, b'<a href="/c">c</a>') for _ in range(2)]
        assert all(found == ["http://h/c"] for found in links)
        assert workers._workers and workers._workers[0] is not worker
    assert workers.done_in_workers >= 2


GARBLING_WORKER = (
    "import sys, time; sys.stdout.buffer.write(bytes(4)); sys.stdout.buffer.flush(); "
    "sys.stdin.buffer.read(4); sys.stdout.buffer.write(bytes([0, 0, 0, 5]) + b'xxxxx'); "
    "sys.stdout.buffer.flush(); time.sleep(60)"
)
"""Says it is ready, answers the first task with bytes that are no pickle, and reads no more."""


async def test_a_worker_whose_answer_cannot_be_read_holds_no_capture(monkeypatch, caplog) -> None:
    """A capture too large for the pipe's buffers waits for the worker to read it: once the
    worker's answers cannot be read, the worker is ended, so that capture does not wait forever."""
    monkeypatch.setattr(workers_module, "WORKER_CODE", GARBLING_WORKER)
    body = b'<a href="/b">b</a>' + b" " * 1_000_000
    async with StartedWorkers(processes=1, start_after=0) as workers:
        first = await asyncio.wait_for(workers.prepare(page_capture(body), parse=True), 20)
        assert first.links == {}  # lost with the worker, as the warning says
        assert "a worker process ended while preparing http://h/a" in caplog.text
        worker = workers._workers[0]
    assert worker.process.returncode is not None


async def test_captures_arriving_while_a_worker_starts_are_prepared_here_none_waiting() -> None:
    async def links_after(delay: float) -> list[str]:
        await asyncio.sleep(delay)
        return await prepared_links(workers, b'<a href="/b">b</a>')

    async with CaptureWorkers(processes=1, start_after=0) as workers:
        # Starting a process takes a tenth of a second or more: these arrive meanwhile, and none
        # waits for it (it held every fetch of a crawl for as long).
        links = await asyncio.gather(*(links_after(n / 1000) for n in range(20)))
        assert workers.done_in_workers == 0 and workers._starting is not None
        await workers._starting
        links += [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(5)]
        assert len(workers._workers) == 1
    assert all(found == ["http://h/b"] for found in links)
    assert workers.done_in_workers == 5


async def test_captures_are_prepared_here_until_the_worker_is_ready() -> None:
    async with CaptureWorkers(processes=1, start_after=10) as workers:
        # From the 6th capture on a worker starts; until the 11th nothing waits for it.
        links = [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(10)]
        assert workers.done_in_workers == 0
        await workers._starting
        links += [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(3)]
    assert all(found == ["http://h/b"] for found in links)
    assert workers.done_in_workers == 3


async def test_a_big_crawl_hands_work_to_a_worker_after_its_first_captures() -> None:
    async with CaptureWorkers(processes=1, backlog=lambda: 500) as workers:
        assert workers.start_after > workers_module.FIRST_HERE
        # A worker starts half way to FIRST_HERE; from there on, work goes to it once ready.
        links = [
            await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(workers_module.FIRST_HERE)
        ]
        assert workers._starting is not None and workers.done_in_workers == 0
        await workers._starting
        links += [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(3)]
    assert all(found == ["http://h/b"] for found in links)
    assert workers.done_in_workers == 3


async def test_no_worker_starts_for_a_crawl_with_little_left_to_do() -> None:
    queued = [5]
    async with CaptureWorkers(processes=1, start_after=10, backlog=lambda: queued[0]) as workers:
        # Past the 6th capture, but 5 URLs queued: a worker would cost more than it saves.
        links = [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(15)]
        assert workers._starting is None and workers.done_in_workers == 0
        queued[0] = 500  # a big crawl after all: the worker starts and takes the work
        links += [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(3)]
        assert workers._starting is not None
        await workers._starting
        links += [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(3)]
    assert all(found == ["http://h/b"] for found in links)
    assert workers.done_in_workers >= 3


async def test_a_worker_that_ends_before_it_is_ready_leaves_the_work_here(monkeypatch, caplog) -> None:
    monkeypatch.setattr(workers_module, "WORKER_CODE", "import sys; sys.exit(3)")
    async with CaptureWorkers(processes=1, start_after=0) as workers:
        await workers.ready()  # fails: nothing waits for it, the work stays here
        links = [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(3)]
    assert all(found == ["http://h/b"] for found in links)
    assert workers.done_in_workers == 0
    assert "cannot start a worker process" in caplog.text


async def test_any_failure_to_start_a_worker_leaves_the_work_here(monkeypatch, caplog) -> None:
    async def refuse() -> None:
        raise ValueError("unexpected keyword")

    monkeypatch.setattr(workers_module._Worker, "start", refuse)
    async with CaptureWorkers(processes=1, start_after=0) as workers:
        await workers.ready()  # fails: nothing waits for it, the work stays here
        links = [await prepared_links(workers, b'<a href="/b">b</a>') for _ in range(3)]
    assert all(found == ["http://h/b"] for found in links)
    assert "cannot start a worker process (unexpected keyword)" in caplog.text


async def test_a_page_the_parser_fails_on_is_still_written(site, run_crawl, monkeypatch, caplog) -> None:
    """As when a worker process fails on it: its links are lost, the capture is kept."""
    parse_document = workers_module.parse_document

    def fails_on_a(raw, url, content_type, content_encoding, *more):  # an unforeseen parser bug
        if url.endswith("/a"):
            raise RecursionError("deep")
        return parse_document(raw, url, content_type, content_encoding, *more)

    monkeypatch.setattr(workers_module, "parse_document", fails_on_a)
    site.page("/", links=["/a", "/b"])
    site.page("/a", links=["/only-from-a"])
    site.page("/b")
    await site.start()
    result = await run_crawl(site.url("/"))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/a")].outcome == "fetched" and rows[site.url("/a")].warc_file
    assert rows[site.url("/b")].outcome == "fetched"
    assert site.url("/only-from-a") not in rows
    assert "cannot parse" in caplog.text and "RecursionError" in caplog.text


def test_seen_urls_answer_alike_before_and_after_each_merge(monkeypatch) -> None:
    monkeypatch.setattr(SeenUrls, "MERGE_AT", 16)
    seen = SeenUrls()
    urls = [f"http://h/{n}" for n in range(1000)]
    for count, url in enumerate(urls, 1):
        assert seen.claim(url) and url in seen
        assert not seen.claim(urls[count // 2])  # met before: in the recent set or the merged array
        assert len(seen) == count
        if count % 97 == 0:  # many at once, as a page's links are judged: the same answers
            asked = [f"http://h/{n}" for n in range(count - 50, count + 50)]
            assert seen.missing(asked) == [url for url in asked if url not in seen] == asked[50:]
    assert all(url in seen for url in urls)
    assert not any(f"http://h/{n}" in seen for n in range(1000, 1100))
    assert seen.missing(reversed(urls[:20] + ["http://h/new", "http://h/5"])) == ["http://h/new"]
    assert seen.claim("http://h/new") and not seen.claim("http://h/new")


def test_a_shared_crawl_keeps_each_field_of_an_item() -> None:
    """A Redis queue member holds the whole item: its site for cookies too (SameSite judges it by it)."""
    from archiver.crawling.redis_state import decode_member, encode_item

    for n in range(6):
        assert decode_member(encode_item(item(n)))[0] == item(n)
