"""Crawl nodes sharing one crawl through a real Redis (Debian's redis-server, started by the
test): every URL fetched once across the nodes, a host's concurrency held across them, a
node started late joins, a node killed with kill -9 loses nothing, and verify passes on the
merged snapshot."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import socket
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from node_site import (
    FOR_CRAWLERS,
    NoCommits,
    TreeSite,
    archiver,
    assert_verified,
    finish,
    joined,
    node_args,
    run_archiver,
    started_together,
)
from test_crash import records_by_url
from test_verify_tamper import members

from archiver.cli.exits import EXIT_PROBLEMS, EXIT_STOPPED
from archiver.config import CrawlConfig
from archiver.crawling.run import CrawlResult, crawl
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED

PAGES = 500
"""Pages of the tree site: enough for every node to take a share (the nodes start together, and a
page held keeps the crawl running as long as a test needs it), few enough to crawl and verify
in seconds."""


@pytest.fixture
async def tree() -> AsyncIterator[TreeSite]:
    site = TreeSite(PAGES)
    await site.start()
    yield site
    await site.close()


async def handed_over(
    seed: str, output: Path, asked: asyncio.Event, pause: float = 0, **shared: Any
) -> CrawlResult:
    """Crawl ``seed`` with node n1 until ``asked`` is set (a fetch of n1 under way), stop n1 (it
    leaves that fetch unfinished), wait ``pause`` seconds, then crawl with node n2 to the end;
    n2's CrawlResult."""
    stop: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    first = CrawlConfig(seeds=(seed,), output=output, node="n1", **shared)
    running = asyncio.create_task(crawl(first, stop=stop))
    await asyncio.wait_for(asked.wait(), 30)
    stop.set_result("stopped by the test")
    assert (await asyncio.wait_for(running, 30)).interrupted
    await asyncio.sleep(pause)
    second = CrawlConfig(seeds=(seed,), output=output, node="n2", **shared)
    return await asyncio.wait_for(crawl(second), 30)


def rows_of(path: Path) -> dict[str, str]:
    with Manifest.open(path, readonly=True) as manifest:
        return {row.url: row.outcome for row in manifest.rows() if not row.for_crawlers}


async def test_three_nodes_fetch_each_url_once_and_share_a_host_limit(tree, tmp_path, redis_url):
    import redis.asyncio

    output = tmp_path / "snap"
    args = node_args(tree.url(), output, redis_url, "three", "--host-concurrency", "2", "--concurrency", "8")
    _, answer = tree.hold(tree.last_leaf(), every=True)  # the crawl runs until n3 joined it
    first = await started_together(tree, redis_url, "three", args, ["n1", "n2"])
    await tree.wait_for(200)
    late = archiver(*args, "--node", "n3")  # a node started late joins the crawl under way
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        await joined(client, "three", 3)
    finally:
        answer.set()
        await client.aclose()
    for process in (*first.values(), late):
        code, output_text = await finish(process)
        assert code == 0, output_text
    assert set(tree.hits) - FOR_CRAWLERS == tree.page_paths()
    fetched_twice = [path for path, count in tree.hits.items() if count > 1]
    assert fetched_twice == [], fetched_twice  # robots.txt and sitemap.xml too: once for the crawl
    assert tree.most_in_flight == 2  # --host-concurrency 2 across three nodes, not per node
    parts = {name: rows_of(output / "nodes" / name / "manifest.sqlite3") for name in ("n1", "n2", "n3")}
    worked = [name for name, rows in parts.items() if FETCHED in rows.values()]
    assert len(worked) >= 2, {name: len(rows) for name, rows in parts.items()}
    merged = rows_of(output / "manifest.sqlite3")
    assert len(merged) == PAGES and set(merged.values()) == {FETCHED}
    warcs = sorted(path.name for path in (output / "warc").glob("*.warc.gz"))
    assert {name.split("-")[1] for name in warcs} == set(worked)  # archiver-NODE-...: one set a node
    assert_verified(output)


async def test_a_node_killed_with_kill_9_loses_nothing_and_stores_nothing_twice(tree, tmp_path, redis_url):
    tree.latency = 0.01  # slow enough that the killed node has fetches in flight
    _, answer = tree.hold(tree.last_leaf(), every=True)  # the crawl runs until n2 is killed
    output = tmp_path / "snap"
    args = node_args(tree.url(), output, redis_url, "killed", "--node-timeout", "2", "--concurrency", "8")
    nodes = await started_together(tree, redis_url, "killed", args, ["n1", "n2", "n3"])
    await tree.wait_for(PAGES // 2)
    os.kill(nodes["n2"].pid, signal.SIGKILL)
    code, _ = await finish(nodes.pop("n2"))
    answer.set()
    assert code == -signal.SIGKILL
    for process in nodes.values():
        code, text = await finish(process)
        assert code == 0, text
    assert set(tree.hits) - FOR_CRAWLERS == tree.page_paths()
    killed = rows_of(output / "nodes" / "n2" / "manifest.sqlite3")
    assert FETCHED in killed.values(), "the node was killed before it did anything"
    merged = rows_of(output / "manifest.sqlite3")
    assert len(merged) == PAGES and set(merged.values()) == {FETCHED}
    # What the killed node stored and had not yet said so in Redis was fetched and stored again
    # by another node: a second record of the URL, in another part.
    found = records_by_url(output)
    assert {url: count for url, count in found.items() if count != 1} == {}
    assert_verified(output)


async def two_nodes(args: list[str]) -> None:
    """Run crawl nodes n1 and n2 with ``args`` to their end; each must finish the crawl."""
    nodes = [archiver(*args, "--node", name) for name in ("n1", "n2")]
    for process in nodes:
        code, text = await finish(process)
        assert code == 0, text


async def nodes_started_together(
    tree: TreeSite, redis_url: str, crawl_id: str, args: list[str], names: list[str]
) -> None:
    """Run crawl nodes ``names`` with ``args`` to their end, each finishing the crawl, the seed
    answering once all joined: one node alone could crawl it all before another started, which
    then found the crawl finished."""
    nodes = await started_together(tree, redis_url, crawl_id, args, names)
    for node in nodes.values():
        code, text = await finish(node)
        assert code == 0, text


async def test_max_pages_counts_every_node(tree, tmp_path, redis_url):
    """--max-pages is the whole crawl's. The seed answers once both nodes joined: one node alone
    could crawl the 50 pages before the other started, which then found the crawl finished."""
    output = tmp_path / "snap"
    args = node_args(tree.url(), output, redis_url, "limited", "--max-pages", "50", "--no-mirror")
    await nodes_started_together(tree, redis_url, "limited", args, ["n1", "n2"])
    assert tree.fetched() == 50
    merged = rows_of(output / "manifest.sqlite3")
    assert list(merged.values()).count(FETCHED) == 50


async def test_a_node_joins_only_its_own_crawl_with_the_same_options(tree, tmp_path, redis_url):
    output = tmp_path / "snap"
    first = await run_archiver(*node_args(tree.url(), output, redis_url, "one", "--max-pages", "5"))
    assert first[0] == 0, first[1]
    code, text = await run_archiver(*node_args(tree.url(), output, redis_url, "two", "--max-pages", "5"))
    assert code == 2 and "holds another crawl" in text, text
    code, text = await run_archiver(
        *node_args(tree.url(), tmp_path / "b", redis_url, "one", "--max-depth", "1")
    )
    assert code == 2 and text.count("\n") == 1 and "--max-depth" in text and "--max-pages" in text, text
    # Each node judged the scope by its own seeds, and its own excludes: both must be alike too.
    code, text = await run_archiver(
        *node_args(tree.url("/p1"), tmp_path / "c", redis_url, "one", "--max-pages", "5", "--exclude", "x")
    )
    assert code == 2 and "this node's seed URLs, --exclude differ" in text, text
    # A node that reads no sitemaps would take the item asking to read them, and drop it.
    code, text = await run_archiver(
        *node_args(tree.url(), tmp_path / "e", redis_url, "one", "--max-pages", "5", "--no-sitemaps")
    )
    assert code == 2 and "this node's --no-sitemaps differ" in text, text
    # A page's links past another node's limit, a chain past its limit, were kept or lost by
    # whichever node took them.
    code, text = await run_archiver(
        *node_args(
            tree.url(), tmp_path / "f", redis_url, "one", "--max-pages", "5", "--max-links-per-page", "1"
        )
    )
    assert code == 2 and "this node's --max-links-per-page differ" in text, text
    code, text = await run_archiver(
        *node_args(tree.url(), tmp_path / "g", redis_url, "one", "--max-pages", "5", "--max-redirects", "2")
    )
    assert code == 2 and "this node's --max-redirects differ" in text, text
    # Crawl "one" is finished: a node joining it would archive nothing, and exit 0 for it.
    code, text = await run_archiver(
        *node_args(tree.url(), tmp_path / "d", redis_url, "one", "--max-pages", "5")
    )
    assert code == 2 and "crawl one is finished" in text and "another --crawl-id" in text, text
    assert not (tmp_path / "d").exists()


def test_a_shared_crawl_without_the_redis_package_is_one_line(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['redis'] = None; sys.modules['redis.asyncio'] = None\n"
        "from archiver.cli import main\n"
        f"sys.exit(main(['crawl', 'http://127.0.0.1:9/', '-o', {str(tmp_path / 's')!r}, "
        "'--frontier', 'redis://127.0.0.1:9/0', '--crawl-id', 'x']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr == "archiver: error: --frontier redis:// needs the redis package: "
        "pip install 'archiver[redis]'\n"
    )
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("options", "word"),
    [
        ({"frontier": "redis://h:6379/0"}, "--crawl-id"),
        ({"crawl_id": "x"}, "--frontier"),
        ({"frontier": "http://h/", "crawl_id": "x"}, "Redis URL"),
        ({"frontier": "redis://h/0", "crawl_id": "a b"}, "--crawl-id may hold"),
        ({"frontier": "redis://h/0", "crawl_id": "x", "node": "n-1"}, "--node may hold"),
        ({"frontier": "redis://h/0", "crawl_id": "x", "node": ".."}, "--node may hold"),
        ({"frontier": "redis://h/0", "crawl_id": "x", "node": ".hidden"}, "begins with no '.'"),
        ({"frontier": "redis://h/0", "crawl_id": "x", "browser": "auto"}, "--browser"),
        ({"frontier": "redis://h/0", "crawl_id": "x", "previous": "old"}, "--previous"),
    ],
)
def test_shared_crawl_options_that_do_not_go_together(tmp_path, options, word):
    from archiver.config import CrawlConfig
    from archiver.errors import ConfigError

    with pytest.raises(ConfigError, match=word):
        CrawlConfig(seeds=("http://h/",), output=tmp_path, **options)


async def test_a_url_a_lost_node_claimed_and_never_queued_is_queued_for_the_others(redis_url, tmp_path):
    """Node A claimed a URL (a page's link, a seed, a URL a sitemap lists) and was lost before it
    queued it. The crawl unclaimed the URL, for the page that found it to find it again when
    fetched again: a seed or a sitemap's URL has no such page, and was lost for good."""
    from archiver.crawling.frontier import QueueItem
    from archiver.crawling.node_parts import NodeParts
    from archiver.crawling.redis_frontier import RedisFrontier
    from archiver.crawling.redis_state import Membership, connect
    from archiver.store.snapshot import Snapshot

    crawl = connect(redis_url, "given-back")
    frontiers = {}
    try:
        for node in ("A", "B"):
            member = Membership(node, f"token-{node}", 100.0)
            await crawl.run("register", args=[crawl.prefix, node, member.token, 100_000])
            parts = NodeParts(Snapshot(tmp_path), node)
            frontiers[node] = RedisFrontier(crawl, member, NoCommits(), parts)
        a, b = frontiers["A"], frontiers["B"]
        url = "http://site.test/linked"
        item = QueueItem(url, 1, 5, found_by="link", parent="http://site.test/")
        assert await a.claim([url], [item]) == [True]
        assert await b.claim([url], [item]) == [False]
        await crawl.client.delete(crawl.key("node:A"))  # its heartbeat ran out: kill -9
        assert await crawl.run("reap", args=[crawl.prefix]) == [b"A", 1]
        assert await asyncio.wait_for(b.get(), 10) == item
    finally:
        for frontier in frontiers.values():
            await frontier.close()
        await crawl.close()


class _WriterBehind:
    """The writer has not committed all that was put before."""

    items_enqueued = 1
    items_committed = 0


async def test_an_item_put_back_to_wait_is_queued_once_when_its_node_is_lost(redis_url, tmp_path):
    """A node put back an item to try it again later (or because its host was busy), and was
    lost before its lease was released (the lease went only once the writer had committed all
    that came before): the item was queued twice, and stored twice."""
    from archiver.crawling.frontier import QueueItem
    from archiver.crawling.node_parts import NodeParts
    from archiver.crawling.redis_frontier import RedisFrontier
    from archiver.crawling.redis_state import Membership, connect
    from archiver.store.snapshot import Snapshot

    crawl = connect(redis_url, "retried")
    try:
        member = Membership("A", "token-A", 100.0)
        await crawl.run("register", args=[crawl.prefix, "A", member.token, 100_000])
        frontier = RedisFrontier(crawl, member, _WriterBehind(), NodeParts(Snapshot(tmp_path), "A"))
        item = QueueItem("http://site.test/flaky", 1, 5)
        assert await frontier.claim([item.url], [item]) == [True]
        await frontier.put(item)
        got = await asyncio.wait_for(frontier.get(), 10)
        await frontier.put(dataclasses.replace(got, tries=1), delay=60)  # a 503: tried again in a minute
        await frontier.task_done(got)
        for _ in range(100):  # pushed by the frontier's own task, a moment later
            if await crawl.client.zcard(crawl.key("delayed")):
                break
            await asyncio.sleep(0.05)
        await crawl.client.delete(crawl.key("node:A"))  # kill -9
        await crawl.run("reap", args=[crawl.prefix])
        queued = await crawl.client.zcard(crawl.key("queue")) + await crawl.client.zcard(crawl.key("delayed"))
        assert queued == 1
        await frontier.close()
    finally:
        await crawl.close()


async def test_a_merge_by_hand_builds_the_mirror_again_and_verify_sees_a_mirror_it_forgot(
    tree, tmp_path, redis_url
):
    """archiver merge writes the manifest anew from the parts: it held no local path and no file
    the mirror build wrote, so verify checked none of them and passed a mirror changed by hand.
    It builds the mirror again now, as the node that merged did; a mirror the manifest records
    no file of is reported."""
    output = tmp_path / "snap"
    args = node_args(tree.url(), output, redis_url, "again", "--max-pages", "40")
    await nodes_started_together(tree, redis_url, "again", args, ["a", "b"])
    assert_verified(output)
    with sqlite3.connect(output / "manifest.sqlite3") as db:
        written = db.execute("SELECT count(*) FROM mirror_files").fetchone()[0]
    code, text = await run_archiver("merge", str(output))
    assert code == 0 and "mirror:" in text, text
    with sqlite3.connect(output / "manifest.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM mirror_files").fetchone()[0] == written
        page = db.execute("SELECT local_path FROM urls WHERE local_path LIKE '%.html' LIMIT 1").fetchone()[0]
    with open(output / "mirror" / page, "ab") as changed:
        changed.write(b"<p>changed by hand</p>")
    assert "changed_mirror_file" in verify_text(output)
    with sqlite3.connect(output / "manifest.sqlite3") as db:  # as the merge left it before
        db.execute("DELETE FROM mirror_files")
        db.execute("UPDATE urls SET local_path = NULL")
    assert "the manifest records none of the mirror's files" in verify_text(output)


def verify_text(snapshot: Path) -> str:
    """What verify reports of ``snapshot``, which it finds not complete and intact."""
    from archiver.verify.verifier import verify_snapshot

    report = verify_snapshot(snapshot)
    assert not report.ok
    return report.render_text(str(snapshot))


async def test_merge_leaves_out_a_part_it_cannot_join_as_it_is(tree, tmp_path, redis_url):
    """Two killed nodes' parts: a's manifest is gone (an rsync that skipped it), and bytes were
    inserted into one of b's WARC files, moving the records after them. Recovering a would cut
    every record its manifest no longer names; recovering b would take its first moved record
    for a crash's tail and cut the rest, and joining it would keep rows naming other bytes. Then
    a row of c's manifest is damaged: joining it would bring the damage into the snapshot's. Each
    is left out, its WARC files as they were, as --resume refuses them, and the merge says which
    parts it joined."""
    output = tmp_path / "snap"
    tree.latency = 0.01
    args = node_args(tree.url(), output, redis_url, "lost", "--max-pages", "200")
    await nodes_started_together(tree, redis_url, "lost", args, ["a", "b", "c"])  # each has a part
    for name in ("a", "b"):
        part = output / "nodes" / name
        record = json.loads((part / "crawl.json").read_text())
        record["status"] = "running"  # as a node killed with kill -9 leaves it
        (part / "crawl.json").write_text(json.dumps(record))
    for lost in (output / "nodes" / "a").glob("manifest.sqlite3*"):
        lost.unlink()
    warc = max((output / "warc").glob("archiver-b-*.warc.gz"), key=lambda path: path.stat().st_size)
    middle = members(warc)[len(members(warc)) // 2]
    data = warc.read_bytes()
    warc.write_bytes(data[:middle] + b"\r\n" + data[middle:])
    warcs = {path: path.read_bytes() for path in output.rglob("*.warc.gz")}
    code, text = await run_archiver("merge", str(output))
    assert code == EXIT_PROBLEMS, text  # as verify's on the snapshot
    assert "crawl node a's part has WARC records but no manifest: it is left out" in text
    assert f"crawl node b's part is left out: warc/{warc.name}@" in text
    assert "is not where the manifest says (" in text
    assert f"merged the parts of {output}: c (left out: a, b)" in text
    # archiver mirror merges first the parts not merged as they are: it says the same, and builds.
    code, text = await run_archiver("mirror", str(output))
    assert code == EXIT_PROBLEMS, text
    assert "crawl node b's part is left out: " in text and "mirror:" in text
    assert text.endswith(
        f"archiver: error: the merge left out the parts of crawl nodes a, b (see why above): {output} "
        f"lacks them, and archiver verify says so; once they are mended: archiver merge {output}\n"
    ), text
    assert {path: path.read_bytes() for path in output.rglob("*.warc.gz")} == warcs
    assert not list(output.rglob("crash-tails/*"))
    with sqlite3.connect(output / "nodes" / "c" / "manifest.sqlite3") as db:
        db.execute("UPDATE urls SET depth = 'deep' WHERE url = (SELECT max(url) FROM urls)")
    db.close()
    code, text = await run_archiver("merge", str(output))
    assert code == EXIT_PROBLEMS, text
    assert "crawl node c's part is left out: " in text and "depth 'deep' is not a whole number" in text
    assert f"merged the parts of {output}: none (left out: a, b, c)" in text
    assert text.endswith(
        f"archiver: error: the merge left out the parts of crawl nodes a, b, c (see why above): {output} "
        f"lacks them, and archiver verify says so; once they are mended: archiver merge {output}\n"
    ), text


async def test_a_node_that_loses_redis_stops_in_one_line_and_goes_on_when_started_again(
    tree, tmp_path, redis_url
):
    """Redis refused the node mid-crawl (its connections cut, and a password set meanwhile): a
    traceback of 92 lines and exit 1, or, the loss met under a fetch, the page recorded as
    failed by an "internal error". Now one line, the resumable exit of a stopped crawl, no
    page failed for it, and the node started again finishes the crawl."""
    tree.latency = 0.01
    _, answer = tree.hold(tree.last_leaf(), every=True)  # the crawl runs until Redis is lost
    output = tmp_path / "snap"
    args = node_args(tree.url(), output, redis_url, "dropped", "--node", "n1", "--node-timeout", "2")
    node = archiver(*args)
    await tree.wait_for(100)
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port)) as admin:
        admin.sendall(b"CONFIG SET requirepass sesame\r\nCLIENT KILL TYPE normal SKIPME yes\r\n")
        assert admin.recv(64).startswith(b"+OK\r\n:")
        code, text = await finish(node)
        admin.sendall(b"AUTH sesame\r\nCONFIG SET requirepass ''\r\n")
        assert admin.recv(64) == b"+OK\r\n+OK\r\n"
    answer.set()
    assert code == EXIT_STOPPED, (code, text)
    assert "Traceback" not in text and text.strip().count("\n") == 0, text
    assert "lost the crawl's Redis" in text and "start it again under another --node" in text, text
    with Manifest.open(output / "nodes" / "n1" / "manifest.sqlite3", readonly=True) as manifest:
        assert "failed" not in manifest.count_by("outcome")
    code, text = await run_archiver(*args[:-4], "--node", "n2")
    assert code == 0, text
    assert set(tree.hits) - FOR_CRAWLERS == tree.page_paths()
    assert_verified(output)


async def test_where_a_seed_redirects_is_in_scope_on_every_node(site, tmp_path, redis_url):
    """A seed that redirects to another host brings that host into the crawl's scope. Only the
    node that fetched the seed knew it: another node took the pages of that host from the queue
    and skipped their links as out of scope, so the pages only it met were not archived."""
    tree = TreeSite(300, latency=0.01)
    await tree.start()
    try:
        site.redirect("/", tree.url("/"))
        await site.start()
        output = tmp_path / "snap"
        args = node_args(site.url("/"), output, redis_url, "landed", "--concurrency", "4", "--no-sitemaps")
        nodes = [archiver(*args, "--node", name) for name in ("n1", "n2")]
        for process in nodes:
            code, text = await finish(process)
            assert code == 0, text
        merged = rows_of(output / "manifest.sqlite3")
        assert {url for url, outcome in merged.items() if outcome == FETCHED} >= {
            tree.url(path) for path in tree.page_paths()
        }
        assert_verified(output)
    finally:
        await tree.close()


async def test_a_node_starts_where_the_first_node_was_killed_as_it_made_the_folder(tree, tmp_path, redis_url):
    """The first node makes the shared folder, then writes its crawl.json. Killed in between, it
    left an empty nodes/ folder, and every node started after it was refused ("output folder is
    not empty") until the folder was removed by hand."""
    output = tmp_path / "snap"
    for folder in ("warc", "indexes", "logs", "nodes"):
        (output / folder).mkdir(parents=True)
    (output / ".lock").write_bytes(b"")
    code, text = await run_archiver(*node_args(tree.url(), output, redis_url, "made", "--max-pages", "5"))
    assert code == 0, text
    assert len(rows_of(output / "manifest.sqlite3")) >= 5


async def test_a_shared_robots_txt_out_of_reach_is_asked_again_by_the_nodes(redis_url):
    """The robots.txt answer one node stores for all says how long it is good for: one out of
    reach is asked again after robots_retry (doubled while it stays out of reach), by any node."""
    from archiver.crawling.redis_politeness import RedisHostPolicy
    from archiver.crawling.redis_state import Membership, connect
    from archiver.scope import ROBOTS_UNREACHABLE

    crawl = connect(redis_url, "asked-again")
    answers = [(503, b""), (503, b""), (200, b"User-agent: *\nDisallow: /private")]
    asked: list[str] = []

    async def fetch_robots(origin: str, again: bool) -> tuple[int | None, bytes, str]:
        asked.append(origin)
        return (*answers[len(asked) - 1], origin + "/robots.txt")

    try:
        policies = []
        for node in ("A", "B"):
            member = Membership(node, f"token-{node}", 100.0)
            await crawl.run("register", args=[crawl.prefix, node, member.token, 100_000])
            options = dict(concurrency=1, delay=0.0, obey_robots=True, user_agent="archiver")
            policies.append(
                RedisHostPolicy(crawl, member, **options, fetch_robots=fetch_robots, robots_retry=0.5)
            )
        a, b = policies
        assert await a.refusal("http://h.test/public") == ROBOTS_UNREACHABLE
        assert await b.refusal("http://h.test/public") == ROBOTS_UNREACHABLE  # A's answer, kept
        assert asked == ["http://h.test"]
        await asyncio.sleep(0.7)  # past robots_retry
        assert await b.refusal("http://h.test/public") == ROBOTS_UNREACHABLE  # asked again, by B
        assert await a.refusal("http://h.test/public") == ROBOTS_UNREACHABLE  # B's answer, kept
        assert len(asked) == 2
        entry = await crawl.client.hget(crawl.key("robots"), "http://h.test")
        assert entry.startswith(b"503 ") and entry.endswith(
            b" 2 http://h.test/robots.txt\n"
        )  # twice in a row: kept twice as long
        await asyncio.sleep(1.2)
        assert await a.refusal("http://h.test/public") is None
        assert await b.refusal("http://h.test/private") == "robots"
        assert len(asked) == 3
    finally:
        await crawl.close()


async def test_urls_parked_for_a_robots_txt_out_of_reach_outlive_the_node_that_parked_them(
    redis_url, tmp_path
):
    """A node keeps the URLs it skipped for a robots.txt out of reach, to queue them again once it
    answers. Kept in that node alone, they were lost with it: another node that found the
    robots.txt answering queued only its own. They are kept in Redis, for any node to queue."""
    from archiver.crawling.frontier import QueueItem
    from archiver.crawling.node_parts import NodeParts
    from archiver.crawling.redis_frontier import RedisFrontier
    from archiver.crawling.redis_state import Membership, connect
    from archiver.store.snapshot import Snapshot

    crawl = connect(redis_url, "parked")
    frontiers = {}
    try:
        for node in ("A", "B"):
            member = Membership(node, f"token-{node}", 100.0)
            await crawl.run("register", args=[crawl.prefix, node, member.token, 100_000])
            frontiers[node] = RedisFrontier(crawl, member, NoCommits(), NodeParts(Snapshot(tmp_path), node))
        a, b = frontiers["A"], frontiers["B"]
        item = QueueItem("http://site.test/kept-out", 1, 5, found_by="link")
        await a.park("site.test", item)
        await crawl.client.delete(crawl.key("node:A"))  # kill -9
        await crawl.run("reap", args=[crawl.prefix])
        assert await b.unpark("site.test") == 1
        assert await asyncio.wait_for(b.get(), 10) == item
        assert await b.unpark("site.test") == 0
    finally:
        for frontier in frontiers.values():
            await frontier.close()
        await crawl.close()


async def test_a_stylesheet_fetched_by_another_node_is_read_in_its_pages_encoding(site, tmp_path, redis_url):
    """A windows-1252 page's stylesheet names no encoding: it is read in the page's. Node n1
    read the page and stopped before it fetched the stylesheet; n2, which fetched it, knew
    nothing of the page's encoding and read it as UTF-8: its url(café.png) became a URL the
    page's browser never asks for."""
    from aiohttp import web

    asked = asyncio.Event()

    async def stylesheet(request: web.Request) -> web.Response:
        asked.set()
        await asyncio.sleep(0.5)  # n1 stops meanwhile: it leaves this fetch unfinished
        return web.Response(body=b"a{background:url(caf\xe9.png)}", content_type="text/css")

    site.file("/", b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>', "text/html; charset=windows-1252")
    site.handler("/l.css", stylesheet)
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    output = tmp_path / "snap"
    shared = dict(frontier=redis_url, crawl_id="encodings", sitemaps=False, retry_base_delay=0.01)
    assert not (await handed_over(site.url("/"), output, asked, **shared)).interrupted
    assert rows_of(output / "nodes" / "n2" / "manifest.sqlite3")[site.url("/l.css")] == FETCHED
    rows = rows_of(output / "manifest.sqlite3")
    assert rows[site.url("/caf%C3%A9.png")] == FETCHED
    assert not [url for url in rows if "%EF%BF%BD" in url]


async def test_the_merged_crawl_keeps_the_cookies_of_every_node(site, tmp_path, redis_url):
    """Each node keeps the cookies its own answers set. The merged manifest kept no cookie jar
    at all, so what a later run of the crawl starts with lost every node's cookies."""
    import redis.asyncio
    from aiohttp import web

    from archiver.crawling.kept_state import COOKIES

    pages = [f"/p{n}" for n in range(24)]
    for n, path in enumerate(pages):
        site.file(path, f"<p>{n}</p>".encode(), headers={"Set-Cookie": f"c{n}={n}; Path=/; Max-Age=3600"})
    client = redis.asyncio.Redis.from_url(redis_url)

    async def seed(request: web.Request) -> web.Response:
        # The seed answers once both nodes joined: else one may crawl it all before the other starts.
        await joined(client, "jars", 2)
        links = "".join(f'<a href="{path}">{path}</a>' for path in pages)
        return web.Response(text=links, content_type="text/html")

    site.handler("/", seed)
    await site.start()
    output = tmp_path / "snap"
    args = node_args(site.url("/"), output, redis_url, "jars", "--no-sitemaps", "--concurrency", "2")
    await two_nodes(args)
    await client.aclose()
    with Manifest.open(output / "manifest.sqlite3", readonly=True) as manifest:
        kept = json.loads(manifest.state(COOKIES) or "[]")
    assert {cookie["name"] for cookie in kept} == {f"c{n}" for n in range(len(pages))}


async def test_the_merge_keeps_the_latest_answer_of_a_url_stored_by_two_nodes(site, tmp_path, redis_url):
    """A robots.txt asked again by another node than the one that first stored it: both parts
    hold a capture of it, and the merge kept the first part's, the rules no longer used."""
    from aiohttp import web

    later = "User-agent: *\nDisallow: /late\n"
    versions = iter(["User-agent: *\nDisallow: /nothing\n"])

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text=next(versions, later))

    asked = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        asked.set()
        await asyncio.sleep(0.5)  # n1 stops meanwhile: it leaves this fetch unfinished
        return web.Response(text="<p>slow</p>", content_type="text/html")

    site.handler("/robots.txt", robots)
    site.page("/", links=["/slow"])
    site.handler("/slow", slow)
    await site.start()
    output = tmp_path / "snap"
    shared = dict(frontier=redis_url, crawl_id="twice", sitemaps=False, robots_max_age=0.2)
    # n2 starts past the robots.txt's age limit: it asks it again.
    assert not (await handed_over(site.url("/"), output, asked, pause=0.3, **shared)).interrupted
    assert site.hits["/robots.txt"] == 2
    with Manifest.open(output / "manifest.sqlite3", readonly=True) as manifest:
        robots_row = manifest.get(site.url("/robots.txt"))
    assert robots_row is not None and robots_row.length == len(later)


async def test_a_cookie_one_node_was_set_goes_with_the_other_nodes_requests(site, tmp_path, redis_url):
    """Each node kept its own cookie jar: a page's Set-Cookie reached only the requests of the
    node that fetched it, where a crawl of one process sends it with every later request."""
    from aiohttp import web

    sent: list[str | None] = []
    asked = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        sent.append(request.headers.get("Cookie"))
        asked.set()
        await asyncio.sleep(0.5)  # n1 stops meanwhile: it leaves this fetch unfinished
        return web.Response(text="<p>slow</p>", content_type="text/html")

    site.file("/", b'<a href="/slow">s</a>', headers={"Set-Cookie": "sid=1; Path=/"})
    site.handler("/slow", slow)
    await site.start()
    output = tmp_path / "snap"
    shared = dict(frontier=redis_url, crawl_id="one-jar", sitemaps=False)
    assert not (await handed_over(site.url("/"), output, asked, **shared)).interrupted
    assert sent == ["sid=1", "sid=1"]  # n1's request, then n2's


async def test_node_jars_agree_on_cookies_set_changed_and_deleted(redis_url):
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar
    from archiver.crawling.redis_cookies import RedisCookies
    from archiver.crawling.redis_state import connect

    crawl = connect(redis_url, "jars")
    try:
        jars = [SiteCookieJar(unsafe=True), SiteCookieJar(unsafe=True)]
        shared = [RedisCookies(crawl, jar) for jar in jars]

        def held(jar: SiteCookieJar) -> dict[str, str]:
            return {name: morsel.value for name, morsel in jar.filter_cookies(URL("http://h.test/p")).items()}

        jars[0].update_cookies_from_headers(["sid=1; Max-Age=600", "pref=a"], URL("http://h.test/"))
        for side in (*shared, *shared):
            await side.sync()
        assert held(jars[1]) == {"sid": "1", "pref": "a"}
        jars[1].update_cookies_from_headers(["sid=2; Max-Age=600", "pref=; Max-Age=0"], URL("http://h.test/"))
        for side in (shared[1], shared[0]):
            await side.sync()
        assert held(jars[0]) == held(jars[1]) == {"sid": "2"}
        before = await crawl.client.hgetall(crawl.key("cookies"))
        for side in (*shared, *shared):
            await side.sync()  # nothing changed: the expiries a jar rounds are the same cookie
        assert await crawl.client.hgetall(crawl.key("cookies")) == before
    finally:
        await crawl.close()


async def test_two_cookies_of_one_name_reach_every_node_and_both_go(redis_url):
    """Two cookies of one name, one set for / and one for /dir on one node, both go from every
    node to /dir/p, the one of the longer path first, as a browser sends them."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar
    from archiver.crawling.redis_cookies import RedisCookies
    from archiver.crawling.redis_state import connect

    crawl = connect(redis_url, "same-name")
    try:
        jars = [SiteCookieJar(unsafe=True), SiteCookieJar(unsafe=True)]
        shared = [RedisCookies(crawl, jar) for jar in jars]
        jars[0].update_cookies_from_headers(["a=1; Path=/", "a=2; Path=/dir"], URL("http://h.test/"))
        for side in (*shared, *shared):
            await side.sync()
        for jar in jars:
            sent = jar.filter_cookies(URL("http://h.test/dir/p"))
            assert [(morsel.key, morsel.value) for morsel in sent.in_order] == [("a", "2"), ("a", "1")]
    finally:
        await crawl.close()


async def test_cookies_of_one_name_and_path_go_from_every_node_in_the_order_they_were_created(redis_url):
    """A host-only cookie set on one node, then one of the same name and path set for the host's
    domain on another, before the nodes exchanged their jars: every node sends the one created
    first first, as one jar (and Chromium) sends them. A node took in the other's cookie as
    created when it took it in, and sent its own first."""
    from yarl import URL

    from archiver.crawling.cookies import SiteCookieJar
    from archiver.crawling.redis_cookies import RedisCookies
    from archiver.crawling.redis_state import connect

    crawl = connect(redis_url, "creation")
    try:
        jars = [SiteCookieJar(unsafe=True), SiteCookieJar(unsafe=True)]
        shared = [RedisCookies(crawl, jar) for jar in jars]
        jars[0].update_cookies_from_headers(["c=host; Path=/"], URL("http://www.h.test/"))
        jars[1].update_cookies_from_headers(["c=domain; Domain=h.test; Path=/"], URL("http://www.h.test/"))
        for side in (*shared, *shared):
            await side.sync()
        for jar in jars:
            sent = jar.filter_cookies(URL("http://www.h.test/p"))
            assert [morsel.value for morsel in sent.in_order] == ["host", "domain"]
    finally:
        await crawl.close()


async def test_a_pages_links_go_with_the_cookies_its_answer_set_on_every_node(site, tmp_path, redis_url):
    """A page's answer sets a cookie; its links, taken by any node, go with it, as a browser sends
    them. A node took the links another node queued before its jar took in the cookie (up to
    half a second later), and asked for them without it."""
    import redis.asyncio
    from aiohttp import web

    pages = [f"/p{n}" for n in range(24)]
    sent: dict[str, str | None] = {}

    async def page(request: web.Request) -> web.Response:
        sent[request.path] = request.headers.get("Cookie")
        await asyncio.sleep(0.1)  # one node alone takes over half a second: both take links
        return web.Response(text="<p>page</p>", content_type="text/html")

    for path in pages:
        site.handler(path, page)
    client = redis.asyncio.Redis.from_url(redis_url)

    async def seed(request: web.Request) -> web.Response:
        await joined(client, "links-cookie", 2)  # both nodes wait for links
        links = "".join(f'<a href="{path}">{path}</a>' for path in pages)
        response = web.Response(text=links, content_type="text/html")
        response.headers.add("Set-Cookie", "sid=1; Path=/")
        return response

    site.handler("/", seed)
    await site.start()
    output = tmp_path / "snap"
    args = node_args(site.url("/"), output, redis_url, "links-cookie", "--no-sitemaps", "--concurrency", "4")
    await two_nodes(args)
    await client.aclose()
    assert sent == dict.fromkeys(pages, "sid=1")
    parts = [rows_of(output / "nodes" / name / "manifest.sqlite3") for name in ("n1", "n2")]
    assert all(FETCHED in rows.values() for rows in parts)  # both nodes took links
