"""Crawl nodes: processes, on one machine or several, that share one crawl through Redis.

Start the same ``archiver crawl ... --frontier redis://HOST:PORT/DB --crawl-id NAME``
as often as wanted, at any time: each process is a node. The snapshot
folder holds::

    crawl.json                  the crawl's settings (its first node writes them)
    warc/PREFIX-NODE-...        every node's WARC files, side by side
    nodes/NODE/                 a node's part: manifest.sqlite3, indexes/, logs/, crawl.json
    manifest.sqlite3, indexes/  the whole crawl, joined from the parts (crawling/merge.py)

A node locks its own part, never the folder, so nodes on one machine share the
folder; the last node to leave merges the parts and builds the mirror, while the
others of a finished crawl wait, and take it over if it is lost meanwhile. Every name
is unique to its node, so folders from several machines join by copying them
together, then ``archiver merge``.

A node heartbeats in Redis every quarter of --node-timeout and reaps the nodes
that stopped: their leased URLs go back to the queue (crawling/redis_scripts.py).
A node reaped so while it still ran (stopped, or its machine too busy) learns it
from Redis, which refuses it from then on, and stops (NodeGivenUp): started
again, under its name or another, it goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

from archiver.config import CrawlConfig
from archiver.crawling.backend import Backend
from archiver.crawling.cookies import SiteCookieJar
from archiver.crawling.merge import merge_nodes, not_merged
from archiver.crawling.node_membership import halt_on, heartbeat, membership
from archiver.crawling.node_parts import NodeParts
from archiver.crawling.policy_options import policy_options
from archiver.crawling.politeness import FetchRobots
from archiver.crawling.redis_budget import RedisBudget
from archiver.crawling.redis_control import RedisControlSource
from archiver.crawling.redis_cookies import RedisCookies
from archiver.crawling.redis_encodings import RedisEncodings
from archiver.crawling.redis_frontier import Commits, RedisFrontier
from archiver.crawling.redis_politeness import RedisHostPolicy
from archiver.crawling.redis_state import Membership, RedisCrawl, call, connect, redis_error
from archiver.crawling.referrers import LookUp, ReferrerEncodings
from archiver.crawling.run import CrawlResult, run_crawl
from archiver.crawling.run_stages import ProgressCallback
from archiver.errors import ConfigError, FrontierLost, NodeGivenUp, SnapshotError, SnapshotLocked
from archiver.store.crawl_record import CrawlRecord
from archiver.store.lock import snapshot_lock
from archiver.store.manifest import Manifest
from archiver.store.seeds import seed_ends, seed_failure
from archiver.store.snapshot import Snapshot
from archiver.store.totals import summary
from archiver.urls import normalize_url

log = logging.getLogger("archiver")
T = TypeVar("T")

SHARED_SETTINGS = (
    "seeds",
    "scope",
    "include",
    "exclude",
    "max_depth",
    "max_links_per_page",
    "max_redirects",
    "max_pages",
    "max_bytes",
    "max_file_size",
    "warc_prefix",
    "obey_robots",
    "user_agent",
    "sitemaps",
)
"""Settings every node of a crawl must have alike: they decide what the crawl holds (the seeds
make the scope of each node, the user agent which robots.txt rules apply; a node that reads no
sitemaps would drop the item that asks for them; a page's links past another node's
--max-links-per-page, a chain past its --max-redirects, were lost or kept by whichever node
took them)."""
_SAID = {"seeds": "seed URLs", "obey_robots": "--ignore-robots", "sitemaps": "--no-sitemaps"}
"""How a shared setting is named to the user where it is not its option's name."""
FINISHED_KEY = "finished"
"""Set (to the snapshot's folder) by the last node of a crawl that finished."""
JOIN_WAIT = 60.0
"""Seconds a node waits for the folder's lock while another node sets it up or merges."""
LAST_POLL = 0.25
"""Seconds between two looks, by a node that left, whether the nodes left are gone."""


async def crawl_node(
    config: CrawlConfig,
    *,
    progress: ProgressCallback | None = None,
    stop: asyncio.Future[str] | None = None,
    mirror: bool = True,
) -> CrawlResult:
    """Run this process as a node of the shared crawl ``config.crawl_id``, in ``config.output``.

    Returns the node's result. The last node out merges the parts, and its result is the
    whole crawl's; with ``mirror``, it builds the mirror once the crawl is finished.
    (A node started again joins the crawl where Redis holds it: there is nothing to resume.)
    """
    assert config.frontier is not None and config.crawl_id is not None
    seeds = [normalize_url(seed) for seed in config.seeds]
    crawl = connect(config.frontier, config.crawl_id)
    try:
        try:
            await _agree(crawl, config)  # the first call: a Redis away now is a bad --frontier
            finished = await call(crawl.client.get(crawl.key(FINISHED_KEY)))
        except redis_error() as exc:
            raise ConfigError(f"cannot use the crawl's Redis at {config.frontier}: {exc}") from None
        if finished is not None:
            # Its seen set has every URL: a node joining would archive nothing, and say it was done.
            raise ConfigError(
                f"crawl {config.crawl_id} is finished (its snapshot: {finished.decode(errors='replace')}): "
                "give another --crawl-id to crawl again"
            )
        try:
            return await _crawl_node(crawl, config, seeds, progress, stop, mirror)
        except NodeGivenUp as exc:
            raise _given_up(config, str(exc)) from None
        except redis_error() as exc:
            raise _lost(config, exc) from None
        except BaseExceptionGroup as group:  # the crawl's tasks: one met Redis gone
            given_up = group.subgroup(NodeGivenUp)
            if given_up is not None:
                raise _given_up(config, str(_first_leaf(given_up))) from None
            lost = group.subgroup(redis_error())
            if lost is None:
                raise
            raise _lost(config, _first_leaf(lost)) from None
    finally:
        with contextlib.suppress(Exception):
            await crawl.close()


def _lost(config: CrawlConfig, exc: BaseException) -> FrontierLost:
    return FrontierLost(
        f"lost the crawl's Redis at {config.frontier} ({type(exc).__name__}: {exc}); "
        "what this node stored is kept: start it again under another --node name to go on"
    )


def _given_up(config: CrawlConfig, node: str) -> NodeGivenUp:
    return NodeGivenUp(
        f"crawl node {node} was given up by the others: it was silent "
        f"for more than --node-timeout ({config.node_timeout:g} s: stopped, or its machine too busy), "
        "and the URLs it held went to them; what it stored is kept"
    )


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception of ``group`` that is no group itself."""
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


async def _crawl_node(
    crawl: RedisCrawl,
    config: CrawlConfig,
    seeds: list[str],
    progress: ProgressCallback | None,
    stop: asyncio.Future[str] | None,
    mirror: bool,
) -> CrawlResult:
    root = Snapshot(config.output)
    await _prepare(root, config)
    halt = halt_on(stop)
    async with membership(crawl, root, config) as (member, joined):
        node = member.node
        part = root.node_part(node)
        node_config = dataclasses.replace(config, node=node, warc_prefix=f"{config.warc_prefix}-{node}")
        beating = asyncio.create_task(heartbeat(crawl, member, halt))
        try:
            result = await run_crawl(
                node_config,
                seeds,
                None,
                part,
                part.crawl_json_path.is_file(),
                progress,
                halt,
                False,  # the mirror is the whole crawl's: built once the parts are merged
                _backend(crawl, member, joined, root),
            )
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        if member.given_up:
            raise NodeGivenUp(node)
    # Out of the crawl once the part is whole and unlocked: the last node out merges it.
    last = await _last_out(crawl, member, wait=not result.interrupted)
    result.seeds_failed = []  # said of the whole crawl, by the node that merges it
    if not last:
        return result
    async with _merging(crawl, member):
        outstanding = int((await crawl.run("outstanding", args=[crawl.prefix]))[0])
        done = outstanding == 0 and not result.interrupted
        merged, warnings = await _unlocked(functools.partial(merge_nodes, done=done), root.root)
        result.warnings += warnings
        result.parts_left_out = not_merged(root.root, merged)
        result.snapshot = root
        with Manifest.open(root.manifest_path, readonly=True) as manifest:
            result.totals = summary(manifest)
            failed = [
                (seed, seed_failure(seed, end, manifest))
                for seed, end in seed_ends(manifest)
                if seed in seeds
            ]
        result.seeds_failed = [(seed, why) for seed, why in failed if why is not None]
        if done:
            if mirror:
                from archiver.mirror.build import build_mirror

                result.mirror = await _unlocked(build_mirror, root.root)
            # Only now: this node killed before, a node started again merges and builds the mirror.
            await call(crawl.client.set(crawl.key(FINISHED_KEY), str(root.root)))
    return result


async def _last_out(crawl: RedisCrawl, member: Membership, wait: bool) -> bool:
    """Leave the crawl; True if this node is the one to merge the parts: the last one out, or
    one that takes the merge over from a merging node lost.

    With ``wait`` (the crawl is done), the node stays until the parts are merged: the nodes
    left are waited for (those silent, killed less than --node-timeout ago, until their time
    runs out and they are reaped), then the node merging them, as long as it lives; lost, this
    node takes the merge over. So a crawl done is merged while one of its nodes runs. A node
    stopped leaves at once.
    """
    ttl = round(member.timeout * 1000)
    answer = await crawl.run("leave", args=[crawl.prefix, member.node, member.token, ttl])
    said = False
    while int(answer[0]) != 1:
        left = [name.decode() for name in answer[1::2]]
        if int(answer[0]) == 2 or not wait:
            log.info("crawl node %s leaves; %d other node(s) still running", member.node, len(left))
            return False
        if not said:
            waited = f"node(s) {', '.join(left)} to leave" if left else "the parts to be merged"
            log.info("crawl node %s waits for %s", member.node, waited)
            said = True
        await asyncio.sleep(LAST_POLL)
        answer = await crawl.run("last_out", args=[crawl.prefix, member.token, ttl])
    return True


async def _unlocked(work: Callable[[Path], T], root: Path) -> T:
    """``work(root)`` in a thread, once no other process holds the snapshot's lock: the merging
    node this one took over from may hold it yet (it was stopped, or its machine too busy)."""
    said = False
    while True:
        try:
            return await asyncio.to_thread(work, root)
        except SnapshotLocked as exc:
            if not said:
                log.info("%s: waiting for it", exc)
                said = True
            await asyncio.sleep(LAST_POLL)


@contextlib.asynccontextmanager
async def _merging(crawl: RedisCrawl, member: Membership) -> AsyncIterator[None]:
    """While this node merges the parts and builds the mirror, tell the nodes waiting that it
    lives (every quarter of --node-timeout); once done, that the parts are merged. Lost
    meanwhile, its time runs out and a node waiting takes the merge over."""
    ttl = round(member.timeout * 1000)

    async def renew() -> None:
        while True:
            await asyncio.sleep(member.timeout / 4)
            try:
                await crawl.run("merging", ("merger",), [member.token, ttl])
            except Exception as exc:  # Redis away for a moment: the next beat tries again
                log.warning("cannot reach the crawl's Redis: %s", exc)

    renewing = asyncio.create_task(renew())
    try:
        yield
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing
    await crawl.run("merging", ("merger",), [member.token, ""])


async def _agree(crawl: RedisCrawl, config: CrawlConfig) -> None:
    """Record the crawl's settings in Redis (first node), or check this node's agree with them."""
    mine = {name: value for name, value in config.to_json().items() if name in SHARED_SETTINGS}
    key = crawl.key("settings")
    if await call(crawl.client.set(key, json.dumps(mine, sort_keys=True), nx=True)):
        return
    theirs = json.loads(await call(crawl.client.get(key)) or b"{}")
    differ = [name for name in SHARED_SETTINGS if name in theirs and theirs[name] != mine.get(name)]
    if differ:
        options = ", ".join(_SAID.get(name, "--" + name.replace("_", "-")) for name in differ)
        raise ConfigError(
            f"this node's {options} differ from those of crawl {crawl.crawl_id}: "
            "start every node of a crawl with the same options"
        )


async def _prepare(root: Snapshot, config: CrawlConfig) -> None:
    """Make the shared folder (the first node) or check it holds this crawl (the others)."""
    deadline = time.monotonic() + JOIN_WAIT
    while True:
        try:
            with snapshot_lock(root.root, "archiver crawl (a crawl node joining)", create=True):
                if root.crawl_json_path.is_file():
                    settings = root.read_crawl_json().get("settings") or {}
                    if settings.get("crawl_id") != config.crawl_id:
                        raise SnapshotError(
                            f"{root.root} holds another crawl than {config.crawl_id} "
                            f"({settings.get('crawl_id') or 'not a shared one'}): give another folder"
                        )
                    return
                root.create()
                root.nodes_dir.mkdir(exist_ok=True)
                settings = config.to_json()
                settings["node"] = None  # each part's crawl.json names its node
                CrawlRecord.start(root, settings, resume=False)
                return
        except SnapshotLocked:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def _backend(crawl: RedisCrawl, member: Membership, joined: int, root: Snapshot) -> Backend:
    def policy(config: CrawlConfig, fetch_robots: FetchRobots) -> RedisHostPolicy:
        return RedisHostPolicy(
            crawl, member, **policy_options(config, fetch_robots), hold=config.timeout + 30
        )

    def referrers(read_back: LookUp) -> ReferrerEncodings:
        # Every node's documents, not this part's alone: where the others noted theirs.
        shared = RedisEncodings(crawl)
        return ReferrerEncodings(shared.look_up, share=shared.share)

    frontiers: list[RedisFrontier] = []

    def frontier(snapshot: Snapshot, writer: Commits) -> RedisFrontier:
        frontiers.append(RedisFrontier(crawl, member, writer, NodeParts(root, member.node)))
        return frontiers[-1]

    def cookies(jar: SiteCookieJar) -> RedisCookies:
        shared = RedisCookies(crawl, jar)
        for made in frontiers:
            made.cookies = shared  # a page's cookies go out before its links (redis_cookies.py)
        return shared

    return Backend(
        frontier=frontier,
        referrers=referrers,
        cookies=cookies,
        policy=policy,
        budget=lambda config: RedisBudget(crawl, config.max_pages, config.max_bytes),
        controls=lambda snapshot: RedisControlSource(crawl, member.node, joined),
        reload=False,
    )
