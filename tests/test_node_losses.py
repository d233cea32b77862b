"""Crawl nodes lost at awkward moments, through a real Redis and real node processes: killed
(SIGKILL), stopped (SIGSTOP) past --node-timeout, started again under their name. The crawl
finishes, each URL has one record, none is lost, and verify passes on the merged snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import manifest_rows
from node_site import (
    FOR_CRAWLERS,
    NoCommits,
    TreeSite,
    archiver,
    assert_verified,
    finish,
    node_args,
    run_archiver,
    started_together,
)
from test_crash import killed_as_it_made_its_manifest, records_by_url

from archiver.cli.exits import EXIT_PROBLEMS, EXIT_STOPPED
from archiver.store.manifest import Manifest
from archiver.store.rows import FAILED, FETCHED, ManifestRow


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[Any]:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    yield client
    await client.aclose()


async def node_key(client: Any, crawl_id: str, node: str) -> bool:
    """Whether crawl node ``node``'s heartbeat is alive in Redis."""
    return bool(await client.exists(f"archiver:{crawl_id}:node:{node}"))


async def until(condition: Callable[[], Awaitable[bool]], seconds: float = 60) -> None:
    """Wait (a hang guard of ``seconds``) until ``condition`` says True."""
    for _ in range(int(seconds / 0.05)):
        if await condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"still not so after {seconds} s")


PAGES = 600
"""Pages of the TreeSite of the tests that lose a node mid-crawl: the nodes start together, and
its last page, held, keeps the crawl running until the node is lost, so a small site will do."""
LEAVES = 330
"""Pages of that site fetched before a node is held between storing and releasing: past page
300 they link to nothing, so a node stores them with no write to Redis (a page with links
claims them first, a write CLIENT PAUSE holds, and its row waits for it)."""


def quick_args(site: TreeSite, output: Path, redis_url: str, crawl_id: str) -> list[str]:
    """A crawl node's arguments: its node given up 2 s after it falls silent, 8 fetches at once."""
    return node_args(site.url(), output, redis_url, crawl_id, "--node-timeout", "2", "--concurrency", "8")


def fetched(snapshot: Path) -> set[str]:
    """The paths of the URLs the merged manifest says were fetched."""
    with Manifest.open(snapshot / "manifest.sqlite3", readonly=True) as manifest:
        return {urlsplit(row.url).path for row in manifest.rows(FETCHED) if not row.for_crawlers}


async def check_snapshot(snapshot: Path, site: TreeSite, said: str = "") -> None:
    """Every page archived, each URL with one response record, and verify passes (mirror links
    too). ``said``, what the crawl nodes printed, is shown with a failure: the merge's warnings
    say why it left a part out."""
    assert fetched(snapshot) == site.page_paths(), said
    found = records_by_url(snapshot)
    assert {url: count for url, count in found.items() if count != 1} == {}, said
    assert_verified(snapshot, f"the crawl nodes said:\n{said}")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
async def test_the_sitemaps_are_read_when_the_node_reading_them_is_lost(tmp_path, redis_url, how):
    """The node that queued the seed read the seed's sitemaps; lost (killed, or stopped) before it
    was done, no other node read them, and the pages only a sitemap lists were not archived."""
    site = TreeSite(20, sitemap=("/only-in-sitemap-1", "/only-in-sitemap-2"))
    arrived, _ = site.hold("/sitemap.xml")
    await site.start()
    try:
        output = tmp_path / "snap"
        args = node_args(site.url(), output, redis_url, "maps", "--node-timeout", "2")
        first = archiver(*args, "--node", "n1")
        await asyncio.wait_for(arrived.wait(), 60)
        os.kill(first.pid, how)
        await finish(first)
        code, text = await run_archiver(*args, "--node", "n2")
        assert code == 0, text
        assert site.hits["/sitemap.xml"] == 2
        await check_snapshot(output, site)
        # Its row too: claimed outside the queue by the node lost, it was recorded by nobody.
        rows = manifest_rows(output, for_crawlers=True)
        assert rows[site.url("/sitemap.xml")].status == 200 and rows[site.url("/robots.txt")].status == 404
    finally:
        await site.close()


async def test_a_node_killed_while_it_fetches_robots_txt_holds_up_nobody_and_loses_no_row(
    tmp_path, redis_url
):
    """A node killed while it fetched a host's robots.txt held the crawl's lock on it for --timeout
    + 30 s (here 150 s): the other nodes waited that long for its answer. And nobody recorded the
    robots.txt (claimed outside the queue by the node lost): the merged manifest had no row of it.
    Now another node takes its turn once its heartbeat has run out (--node-timeout), and records it."""
    site = TreeSite(20)
    arrived, _ = site.hold("/robots.txt")
    await site.start()
    try:
        output = tmp_path / "snap"
        args = node_args(site.url(), output, redis_url, "robots", "--node-timeout", "2", "--timeout", "120")
        first = archiver(*args, "--node", "n1")
        await asyncio.wait_for(arrived.wait(), 60)
        os.kill(first.pid, signal.SIGKILL)
        await finish(first)
        code, text = await run_archiver(*args, "--node", "n2", seconds=60)  # a hang guard: not 150 s
        assert code == 0, text
        assert manifest_rows(output, for_crawlers=True)[site.url("/robots.txt")].status == 404
        await check_snapshot(output, site)
    finally:
        await site.close()


async def test_a_node_stopped_past_its_timeout_stops_when_continued(tmp_path, redis_url, redis_client):
    """A node stopped (SIGSTOP) past --node-timeout was given up, its URLs given to the others;
    continued, it went on as if nothing had happened, storing a second capture of URLs the others
    fetched again. Now Redis refuses it, and it stops in one line (exit 3); the URLs it stored
    before it knew are not fetched again by the others."""
    site = TreeSite(PAGES, latency=0.01)
    _, answer = site.hold(site.last_leaf(), every=True)  # the crawl runs until n2 has stopped
    await site.start()
    try:
        output = tmp_path / "snap"
        args = quick_args(site, output, redis_url, "stalled")
        nodes = await started_together(site, redis_url, "stalled", args, ["n1", "n2", "n3"])
        await site.wait_for(PAGES // 3)
        os.kill(nodes["n2"].pid, signal.SIGSTOP)
        # The others reap it at a heartbeat of theirs once its own has expired.
        await until(lambda: _reaped(redis_client, "stalled", "n2"))
        os.kill(nodes["n2"].pid, signal.SIGCONT)
        code, text = await finish(nodes.pop("n2"))
        answer.set()
        assert code == EXIT_STOPPED, text
        assert "crawl node n2 was given up by the others" in text and text.strip().count("\n") == 0, text
        for process in nodes.values():
            code, text = await finish(process)
            assert code == 0, text
        await check_snapshot(output, site)
    finally:
        await site.close()


async def _building(output: Path) -> None:
    """Return once the mirror of ``output`` is being built: its build folder is there. The
    build of a few hundred pages lasts a fraction of a second, so it is looked for every
    10 ms (``until``'s 50 ms missed it on a busy machine)."""
    from archiver.mirror.build import BUILD_FOLDER

    for _ in range(12_000):  # a hang guard of 120 s
        if (output / BUILD_FOLDER).is_dir():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the mirror was never being built")


async def _merging_and_other(
    output: Path, args: list[str]
) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """Two nodes started with ``args``, once one of them builds the mirror: (that one, the other)."""
    from archiver.store.snapshot import LOCK_NAME

    nodes = {archiver(*args, "--node", name) for name in ("n1", "n2")}
    await _building(output)
    merging = int((output / LOCK_NAME).read_text().split()[1])
    (busy,) = [node for node in nodes if node.pid == merging]
    (other,) = nodes - {busy}
    return busy, other


async def _gone(client: Any, crawl_id: str, node: str) -> bool:
    return not await node_key(client, crawl_id, node)


async def _reaped(client: Any, crawl_id: str, node: str) -> bool:
    """Whether the other nodes gave ``node`` up: it is no member any more (its items went back)."""
    return not await client.hexists(f"archiver:{crawl_id}:nodes", node)


async def test_a_url_stored_by_a_node_killed_before_it_said_so_is_not_fetched_again(
    tmp_path, redis_url, redis_client
):
    """A node stores an outcome in its part, then releases the URL's lease in Redis. Killed in
    between, its lease went back to the queue, and another node stored the URL a second time.
    Redis refusing writes for a moment (CLIENT PAUSE) holds the node there: it stores, and
    cannot release."""
    site = TreeSite(PAGES, latency=0.01)
    _, answer = site.hold(site.last_leaf(), every=True)  # the crawl runs until n2 is killed
    await site.start()
    try:
        output = tmp_path / "snap"
        args = quick_args(site, output, redis_url, "window")
        nodes = await started_together(site, redis_url, "window", args, ["n1", "n2", "n3"])
        await site.wait_for(LEAVES)
        await _kill_between_store_and_release(redis_client, nodes.pop("n2"), output, "window", "n2")
        answer.set()
        for process in nodes.values():
            code, text = await finish(process)
            assert code == 0, text
        await check_snapshot(output, site)
    finally:
        await site.close()


async def _kill_between_store_and_release(
    client: Any, process: subprocess.Popen[str], output: Path, crawl_id: str, node: str
) -> None:
    """Kill ``node`` once it has stored a URL whose lease it has not released: Redis refuses
    writes meanwhile (CLIENT PAUSE), so the node stores what it fetched, and releases nothing.
    A pause ends by itself after 10 s: on a busy machine the node may store nothing in one, so
    pauses follow each other (each one a chance) up to the hang guard, a second apart: a node
    that held no lease in one takes new ones only while Redis takes writes."""
    for _ in range(6):
        await client.execute_command("CLIENT", "PAUSE", "10000", "WRITE")
        try:
            for _ in range(180):  # 9 s of the pause's 10
                if await _stored_and_leased(client, output, crawl_id, node):
                    os.kill(process.pid, signal.SIGKILL)
                    await finish(process)
                    return
                await asyncio.sleep(0.05)
        finally:
            await client.execute_command("CLIENT", "UNPAUSE")
        await asyncio.sleep(1)
    raise AssertionError(f"{node} stored no URL it held within six pauses of Redis")


async def _stored_and_leased(client: Any, output: Path, crawl_id: str, node: str) -> bool:
    """Whether ``node`` holds the lease of a URL its part has stored (reading Redis only)."""
    members = await client.hvals(f"archiver:{crawl_id}:leases:{node}")
    leased = {json.loads(member)[0] for member in members}
    part = output / "nodes" / node / "manifest.sqlite3"
    if not leased or not part.is_file():
        return False
    with Manifest.open(part, readonly=True) as manifest:
        return any(row.url in leased for row in manifest.rows(FETCHED))


@dataclasses.dataclass
class HeldCrawl:
    """A shared crawl of a TreeSite(2) whose first node, n1, is held at /p1 until ``answer`` is set."""

    site: TreeSite
    output: Path
    args: list[str]
    working: subprocess.Popen[str]
    answer: asyncio.Event


@contextlib.asynccontextmanager
async def first_node_held(tmp_path: Path, redis_url: str, crawl_id: str) -> AsyncIterator[HeldCrawl]:
    """Node n1 crawling a TreeSite(2), held at /p1 (--node-timeout 2): the moment to start, kill
    or damage another node's part, before /p1 is answered and n1 ends the crawl."""
    site = TreeSite(2)
    arrived, answer = site.hold("/p1")
    await site.start()
    try:
        output = tmp_path / "snap"
        args = node_args(site.url(), output, redis_url, crawl_id, "--node-timeout", "2")
        working = archiver(*args, "--node", "n1")
        await asyncio.wait_for(arrived.wait(), 60)
        yield HeldCrawl(site, output, args, working, answer)
    finally:
        await site.close()


async def test_the_last_node_merges_once_a_node_killed_before_the_end_times_out(
    tmp_path, redis_url, redis_client
):
    """A node killed (idle) less than --node-timeout before the crawl ended still looked alive:
    the last node left it the merge, and nobody merged the parts. The last node now waits for the
    silent node to time out, then merges (and builds the mirror).

    The merge recovered the killed node's part and noted it interrupted, which made the whole
    crawl's crawl.json say interrupted though Redis said every URL was done (and refused a node
    joining it: "crawl ... is finished"). The crawl is finished now, in the last node's merge and
    in a merge run again by hand; the killed node's own part says interrupted."""
    async with first_node_held(tmp_path, redis_url, "ending") as crawl:
        idle = archiver(*crawl.args, "--node", "n2")
        part = crawl.output / "nodes" / "n2" / "crawl.json"

        # Joined, and its part made (it joins Redis first: a node killed between made no part).
        async def joined_with_its_part() -> bool:
            return part.exists() and await node_key(redis_client, "ending", "n2")

        await until(joined_with_its_part)
        os.kill(idle.pid, signal.SIGKILL)
        await finish(idle)
        crawl.answer.set()
        code, text = await finish(crawl.working)
        assert code == 0, text
        await check_snapshot(crawl.output, crawl.site, text)
        assert json.loads(part.read_text())["status"] == "interrupted"
        assert json.loads((crawl.output / "crawl.json").read_text())["status"] == "finished"
        code, text = await run_archiver("merge", str(crawl.output))
        assert code == 0, text
        assert json.loads((crawl.output / "crawl.json").read_text())["status"] == "finished"


async def test_the_last_node_merges_the_part_of_a_node_killed_as_it_made_its_manifest(tmp_path, redis_url):
    """A node killed as it made its manifest (SQLite had written the new file's first page and
    not yet deleted its rollback journal, as it switched the file to WAL) left a hot journal
    beside it. The merge read the part with a read-only connection, which cannot roll a
    journal back ("attempt to write a readonly database"): it left the part out with a
    warning, the last node still exited 0, and verify failed (unmerged_node). The merge, which
    holds the part's lock, now rolls the journal back first, and joins the part."""
    async with first_node_held(tmp_path, redis_url, "unmade") as crawl:
        _killed_as_it_made_its_manifest(crawl.output, "n2", beside="n1")
        crawl.answer.set()
        code, text = await finish(crawl.working)
        assert code == 0, text
        assert "left out" not in text
        await check_snapshot(crawl.output, crawl.site, text)


async def test_a_node_killed_as_it_made_its_manifest_starts_again_under_its_name(
    tmp_path, redis_url, redis_client
):
    """Started again under its name, a node killed as it made its manifest (a hot rollback
    journal beside it) resumes its part: the part's manifest was read read-only, which cannot
    roll the journal back, and the node was refused in one line ("resuming would build on it")
    every time it was started. It now rolls the journal back, under its part's lock, and
    goes on."""
    async with first_node_held(tmp_path, redis_url, "again") as crawl:
        _killed_as_it_made_its_manifest(crawl.output, "n2", beside="n1")
        again = archiver(*crawl.args, "--node", "n2")
        await until(lambda: node_key(redis_client, "again", "n2"))  # it joined: the crawl waits for it
        crawl.answer.set()
        for node in (crawl.working, again):
            code, text = await finish(node)
            assert code == 0, text
        await check_snapshot(crawl.output, crawl.site)


def _killed_as_it_made_its_manifest(output: Path, node: str, beside: str) -> None:
    """Write ``node``'s part as a kill left it while the node made its manifest: its crawl.json
    (taken from node ``beside``'s, still running), and a manifest with a hot rollback journal."""
    part = output / "nodes" / node
    for folder in ("indexes", "logs"):
        (part / folder).mkdir(parents=True)
    record = json.loads((output / "nodes" / beside / "crawl.json").read_text())
    record["settings"].update(node=node, warc_prefix=f"archiver-{node}")
    (part / "crawl.json").write_text(json.dumps(record))  # "running", as the kill left it
    killed_as_it_made_its_manifest(part / "manifest.sqlite3")


async def test_the_last_node_says_so_when_its_merge_leaves_a_damaged_part_out(tmp_path, redis_url):
    """A part the merge cannot join (here a damaged manifest) was left out with a warning, and
    the last node exited 0 while archiver verify failed on the snapshot (unmerged_node). The
    node now says in one line that the snapshot lacks that part, and exits 1, as verify does."""
    async with first_node_held(tmp_path, redis_url, "damaged") as crawl:
        output, site = crawl.output, crawl.site
        part = output / "nodes" / "n2"
        part.mkdir()
        (part / "crawl.json").write_text((output / "nodes" / "n1" / "crawl.json").read_text())
        with Manifest.open(part / "manifest.sqlite3") as manifest:
            manifest.upsert(ManifestRow(url=site.url("/p9"), found_by="link", depth=1, outcome="queued"))
        with sqlite3.connect(part / "manifest.sqlite3") as db:
            db.execute("UPDATE urls SET depth = 'deep'")
        db.close()
        crawl.answer.set()
        code, text = await finish(crawl.working)
        assert code == EXIT_PROBLEMS, text
        assert "crawl node n2's part is left out: " in text and "'deep' is not a whole number" in text
        assert text.endswith(
            f"archiver: error: the merge left out the part of crawl node n2 (see why above): {output} "
            f"lacks it, and archiver verify says so; once it is mended: archiver merge {output}\n"
        ), text
        code, report = await run_archiver("verify", str(output))
        assert code == EXIT_PROBLEMS and "unmerged_node (1)" in report, report


async def test_a_seed_claimed_by_a_node_lost_before_queueing_it_is_crawled(tmp_path, redis_url):
    """A node claimed the seed and was lost before it queued it: the crawl unclaimed it when the
    node was reaped (for a page fetched again to find it again), but no page links to a seed, so
    the crawl archived nothing. Now the item claimed goes to the queue."""
    from archiver.crawling.frontier import QueueItem
    from archiver.crawling.node_parts import NodeParts
    from archiver.crawling.redis_frontier import RedisFrontier
    from archiver.crawling.redis_state import Membership, connect
    from archiver.store.snapshot import Snapshot

    site = TreeSite(50)
    await site.start()
    output = tmp_path / "snap"
    crawl = connect(redis_url, "seedless")
    try:
        # Node "lost" claims the seed, as crawler.add() does, and dies before its push.
        lost = Membership("lost", "its-token", 1.0)
        await crawl.run("register", args=[crawl.prefix, lost.node, lost.token, 1000])
        frontier = RedisFrontier(crawl, lost, NoCommits(), NodeParts(Snapshot(output), lost.node))
        seed = QueueItem(site.url(), 0, 10, found_by="seed")
        assert await frontier.claim([seed.url], [seed]) == [True]
        args = node_args(site.url(), output, redis_url, "seedless", "--node", "n1", "--node-timeout", "2")
        code, text = await run_archiver(*args)
        assert code == 0, text
        assert set(site.hits) - FOR_CRAWLERS == site.page_paths()
        await check_snapshot(output, site)
    finally:
        await crawl.close()
        await site.close()


async def test_a_node_killed_and_started_again_under_its_name_finishes_the_crawl(
    tmp_path, redis_url, redis_client
):
    """A node killed, then started again under its --node name once its heartbeat ran out, found
    the leases of its first run in its name: nobody released them, and the crawl never ended.
    Dropping them as the name registered again was not enough: the URLs its first run had stored
    and not released were fetched again, as revisits of their own first record, which their new
    row replaced; the mirror of such a page had no payload, and links to it were broken."""
    site = TreeSite(PAGES, latency=0.01)
    _, answer = site.hold(site.last_leaf(), every=True)  # the crawl runs until n1 is killed
    await site.start()
    try:
        output = tmp_path / "snap"
        args = quick_args(site, output, redis_url, "again")
        first = archiver(*args, "--node", "n1")
        await site.wait_for(LEAVES)
        await _kill_between_store_and_release(redis_client, first, output, "again", "n1")
        answer.set()
        await until(lambda: _gone(redis_client, "again", "n1"))
        code, text = await finish(archiver(*args, "--node", "n1"), seconds=120)
        assert code == 0, text
        await check_snapshot(output, site)
    finally:
        await site.close()


async def test_a_node_killed_in_a_fetch_frees_its_host_slot_once_it_is_given_up(tmp_path, redis_url):
    """A host's slots are shared: a node killed in a fetch held its slot until the slot expired,
    --timeout + 30 s later (here 150 s); with --host-concurrency 1, no node fetched from that
    host meanwhile. Now the slot of a node given up (its heartbeat ran out) is free at once."""
    site = TreeSite(20)
    arrived, _ = site.hold("/p1")
    await site.start()
    try:
        output = tmp_path / "snap"
        args = node_args(site.url(), output, redis_url, "slot", "--node-timeout", "2", "--timeout", "120")
        args += ["--host-concurrency", "1"]
        first = archiver(*args, "--node", "n1")
        await asyncio.wait_for(arrived.wait(), 60)
        os.kill(first.pid, signal.SIGKILL)
        await finish(first)
        code, text = await run_archiver(*args, "--node", "n2", seconds=60)  # a hang guard: not 150 s
        assert code == 0, text
        await check_snapshot(output, site)
    finally:
        await site.close()


async def test_a_crawl_whose_last_node_is_killed_building_the_mirror_is_finished_by_a_node_started_again(
    tmp_path, redis_url
):
    """The last node out merged the parts, marked the crawl finished in Redis, then built the
    mirror. Killed while it built it, it left a finished crawl with no mirror: a node started
    again was refused ("crawl ... is finished"). The crawl is marked finished once its mirror is
    built: a node started again merges the parts and builds the mirror."""

    site = TreeSite(300)
    await site.start()
    try:
        output = tmp_path / "snap"
        args = node_args(site.url(), output, redis_url, "mirrored", "--node", "n1")
        node = archiver(*args)

        await _building(output)
        os.kill(node.pid, signal.SIGKILL)
        await finish(node)
        code, text = await run_archiver(*args)
        assert code == 0, text
        await check_snapshot(output, site)
    finally:
        await site.close()


@pytest.mark.parametrize(
    "defective",
    ["archiver.crawling.sitemap_stage.read_sitemap", "archiver.crawling.discovery.Discovery.found"],
)
async def test_a_sitemap_whose_reading_fails_gets_a_failed_row(
    tmp_path, redis_url, run_crawl, monkeypatch, defective
):
    """A defect in reading a sitemap (parsing it, judging its URLs) left the sitemap without a
    manifest row: claimed by its node and never recorded, by it or any other."""

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("reader defect")

    monkeypatch.setattr(defective, broken)
    site = TreeSite(3, sitemap=("/only-in-sitemap",))
    await site.start()
    try:
        result = await run_crawl(site.url(), frontier=redis_url, crawl_id="broken-map", node="n1")
        row = manifest_rows(result.snapshot.root, for_crawlers=True)[site.url("/sitemap.xml")]
    finally:
        await site.close()
    assert (row.outcome, row.status) == (FAILED, 200)
    assert row.reason is not None and "reader defect" in row.reason


async def test_a_node_killed_takes_none_of_the_bytes_it_stored_out_of_the_byte_budget(
    tmp_path, redis_url, redis_client
):
    """A node sent the bytes it fetched to the crawl's --max-bytes count only with its next page:
    killed before, the bytes it had stored were never counted, and the crawl could overshoot
    the limit by that much. Here it stores / and /p2, and waits on /p1 (held), its last page."""
    site = TreeSite(3)
    arrived, _ = site.hold("/p1")
    await site.start()
    try:
        output = tmp_path / "snap"
        args = node_args(site.url(), output, redis_url, "bytes", "--max-bytes", "1000000")
        node = archiver(*args, "--node", "n1")
        await asyncio.wait_for(arrived.wait(), 60)
        part = output / "nodes" / "n1" / "manifest.sqlite3"

        async def others_stored() -> bool:
            if not part.is_file():
                return False
            with Manifest.open(part, readonly=True) as manifest:
                return len([row for row in manifest.rows(FETCHED) if not row.for_crawlers]) == 2

        await until(others_stored)
        os.kill(node.pid, signal.SIGKILL)
        await finish(node)
        with Manifest.open(part, readonly=True) as manifest:
            stored = sum(row.length or 0 for row in manifest.rows(FETCHED) if not row.for_crawlers)
        assert stored > 0
        assert int(await redis_client.hget("archiver:bytes:budget", "bytes")) == stored
    finally:
        await site.close()


async def test_a_node_waits_for_the_merge_and_takes_it_over_when_the_merging_node_is_killed(
    tmp_path, redis_url
):
    """The first node out of a finished crawl left at once, the last one merging: killed while it
    built the mirror, nothing finished the crawl until a node was started again. A node now stays
    until the parts are merged, and takes the merge over once the merging node is lost."""
    site = TreeSite(300)
    await site.start()
    try:
        output = tmp_path / "snap"
        args = quick_args(site, output, redis_url, "takeover")
        killed, other = await _merging_and_other(output, args)
        os.kill(killed.pid, signal.SIGKILL)
        await finish(killed)
        code, text = await finish(other)
        assert code == 0, text
        assert (output / "mirror").is_dir()
        await check_snapshot(output, site)
    finally:
        await site.close()


async def test_a_node_taking_the_merge_over_waits_for_the_lock_of_a_merging_node_stopped(
    tmp_path, redis_url, redis_client
):
    """A merging node stopped (SIGSTOP) past --node-timeout still holds the snapshot's lock: the
    node that took the merge over failed on it. It now waits for the lock, then merges."""
    site = TreeSite(600)
    await site.start()
    try:
        output = tmp_path / "snap"
        args = quick_args(site, output, redis_url, "stalled")
        stopped, other = await _merging_and_other(output, args)
        os.kill(stopped.pid, signal.SIGSTOP)
        try:
            merger = await redis_client.get("archiver:stalled:merger")

            async def taken_over() -> bool:
                return await redis_client.get("archiver:stalled:merger") != merger

            await until(taken_over)

            async def other_ended() -> bool:
                return other.poll() is not None

            with contextlib.suppress(AssertionError):  # it waits for the lock: still running
                await until(other_ended, seconds=1)
        finally:
            os.kill(stopped.pid, signal.SIGCONT)
        for node in (other, stopped):
            code, text = await finish(node)
            assert code == 0, text
        await check_snapshot(output, site)
    finally:
        await site.close()


@pytest.mark.parametrize("shared", [True, False])
async def test_urls_claimed_before_a_failure_are_still_queued(
    site, run_crawl, redis_url, monkeypatch, shared
):
    """A sitemap's pages were claimed (Discovery.found), then storing the sitemap's row failed:
    the claims stayed held, unqueued, so a shared crawl waited for them forever and a crawl of
    one process never fetched them."""
    from archiver.crawling.recorded import RecordedFetch

    site.page("/", links=[])
    site.page("/listed", links=[])
    await site.start()
    site.file("/sitemap.xml", f"{site.url('/listed')}\n".encode(), "text/plain")
    keep = RecordedFetch.keep

    async def failing(self: RecordedFetch, answer: Any, met: Any = ()) -> None:
        if met:
            answer.capture.body.close()
            raise RuntimeError("the row could not be stored")
        await keep(self, answer, met)

    monkeypatch.setattr(RecordedFetch, "keep", failing)
    options = {"frontier": redis_url, "crawl_id": "claimed"} if shared else {}
    result = await asyncio.wait_for(run_crawl(site.url("/"), **options), 30)
    assert not result.interrupted
    assert manifest_rows(result.snapshot.root)[site.url("/listed")].status == 200


async def test_a_task_stopped_while_redis_swallows_the_stop_and_fails_ends():
    """redis.asyncio may swallow a cancellation that comes while a command is under way, and
    the command then fails (Redis cut the connection, or refuses it): the heartbeat and the
    frontier's sync, which try again on a failure, went on, and a node that lost Redis never
    stopped (it waited for them). A command stands in here for that behaviour of the package."""
    import redis.exceptions

    from archiver.crawling.redis_state import call

    asked = asyncio.Event()

    async def command_swallowing_a_cancellation() -> None:
        if not asked.is_set():  # the first: the cancellation comes while it is under way
            asked.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(60)
        raise redis.exceptions.ConnectionError("Connection closed by server.")

    async def trying_again() -> None:  # as the heartbeat does
        while True:
            try:
                await call(command_swallowing_a_cancellation())
            except Exception:
                await asyncio.sleep(0.01)

    task = asyncio.create_task(trying_again())
    await asked.wait()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    task.cancel()  # ends one that went on, at its next pause
    assert task in done, "the task went on after it was told to stop"
    assert task.cancelled()
