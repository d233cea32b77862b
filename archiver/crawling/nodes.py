"""Crawl nodes: processes, on one machine or several, that share one crawl through Redis.

Start the same ``archiver crawl ... --frontier redis://HOST:PORT/DB --crawl-id NAME``
as often as wanted, at any time: each process is a node. The snapshot
folder holds::

    crawl.json                  the crawl's settings (its first node writes them)
    warc/PREFIX-NODE-...        every node's WARC files, side by side
    nodes/NODE/                 a node's part: manifest.sqlite3, indexes/, logs/, crawl.json
    manifest.sqlite3, indexes/  the whole crawl, joined from the parts (crawling/merge.py)

A node locks its own part, never the folder, so nodes on one machine share the
folder; the last node to leave merges the parts (and the command line then builds
the mirror). Every name is unique to its node, so folders from several machines
join by copying them together, then ``archiver merge``.

A node heartbeats in Redis every quarter of --node-timeout and reaps the nodes
that stopped: their leased URLs go back to the queue (crawling/redis_state.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from archiver.config import CrawlConfig
from archiver.crawling.merge import merge_nodes
from archiver.crawling.politeness import FetchRobots, policy_options
from archiver.crawling.redis_budget import RedisBudget
from archiver.crawling.redis_control import RedisControlSource
from archiver.crawling.redis_frontier import RedisFrontier
from archiver.crawling.redis_politeness import RedisHostPolicy
from archiver.crawling.redis_state import RedisCrawl, call, connect, redis_error
from archiver.crawling.run import Backend, CrawlResult, ProgressCallback, run_crawl
from archiver.errors import ConfigError, FrontierLost, SnapshotError, SnapshotLocked
from archiver.store.crawl_record import CrawlRecord
from archiver.store.lock import snapshot_lock
from archiver.store.manifest import Manifest, seed_failure
from archiver.store.snapshot import Snapshot
from archiver.store.totals import summary
from archiver.urls import normalize_url

log = logging.getLogger("archiver")

SHARED_SETTINGS = (
    "seeds",
    "scope",
    "include",
    "exclude",
    "max_depth",
    "max_pages",
    "max_bytes",
    "max_file_size",
    "warc_prefix",
    "obey_robots",
    "user_agent",
)
"""Settings every node of a crawl must have alike: they decide what the crawl holds (the seeds
make the scope of each node, the user agent which robots.txt rules apply)."""
FINISHED_KEY = "finished"
"""Set (to the snapshot's folder) by the last node of a crawl that finished."""
JOIN_WAIT = 60.0
"""Seconds a node waits for the folder's lock while another node sets it up or merges."""


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
        except redis_error() as exc:
            raise _lost(config, exc) from None
        except BaseExceptionGroup as group:  # the crawl's tasks: one met Redis gone
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
    async with _membership(crawl, root, config) as (node, token, joined):
        part = root.node_part(node)
        node_config = dataclasses.replace(config, node=node, warc_prefix=f"{config.warc_prefix}-{node}")
        heartbeat = asyncio.create_task(_heartbeat(crawl, node, token, config.node_timeout))
        try:
            result = await run_crawl(
                node_config,
                seeds,
                None,
                part,
                part.crawl_json_path.is_file(),
                progress,
                stop,
                False,  # the mirror is the whole crawl's: built once the parts are merged
                _backend(crawl, node, joined),
            )
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
    live = int(await crawl.run("leave", args=[crawl.prefix, node, token]))
    outstanding = int((await crawl.run("outstanding", args=[crawl.prefix]))[0])
    result.seeds_failed = []  # said of the whole crawl, by the node that merges it
    if live:
        log.info("crawl node %s leaves; %d other node(s) still running", node, live)
        return result
    result.warnings += (await asyncio.to_thread(merge_nodes, root.root))[1]
    result.snapshot = root
    if outstanding == 0 and not result.interrupted:
        await call(crawl.client.set(crawl.key(FINISHED_KEY), str(root.root)))
    with Manifest.open(root.manifest_path, readonly=True) as manifest:
        result.totals = summary(manifest)
        failed = [
            (seed, seed_failure(seed, end, manifest)) for seed, end in manifest.seed_ends() if seed in seeds
        ]
    result.seeds_failed = [(seed, why) for seed, why in failed if why is not None]
    if mirror and outstanding == 0 and not result.interrupted:
        from archiver.mirror.build import build_mirror

        result.mirror = await asyncio.to_thread(build_mirror, root.root)
    return result


async def _agree(crawl: RedisCrawl, config: CrawlConfig) -> None:
    """Record the crawl's settings in Redis (first node), or check this node's agree with them."""
    mine = {name: value for name, value in config.to_json().items() if name in SHARED_SETTINGS}
    key = crawl.key("settings")
    if await call(crawl.client.set(key, json.dumps(mine, sort_keys=True), nx=True)):
        return
    theirs = json.loads(await call(crawl.client.get(key)) or b"{}")
    differ = [name for name in SHARED_SETTINGS if name in theirs and theirs[name] != mine.get(name)]
    if differ:
        options = ", ".join(
            "seed URLs" if name == "seeds" else "--" + name.replace("_", "-") for name in differ
        )
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


def _default_names() -> Any:
    host = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname().split(".")[0]) or "node"
    number = 1
    while True:
        yield f"{host}_{number}"
        number += 1


@contextlib.asynccontextmanager
async def _membership(
    crawl: RedisCrawl, root: Snapshot, config: CrawlConfig
) -> AsyncIterator[tuple[str, str, int]]:
    """This process's node: its name (--node, or the first free one), its part locked, its
    heartbeat registered in Redis; yields (name, token, Redis time it joined, ms)."""
    ttl = round(config.node_timeout * 1000)
    names = iter([config.node]) if config.node else _default_names()
    for name in names:
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(
                    snapshot_lock(root.node_part(name).root, f"archiver crawl node {name}", create=True)
                )
            except SnapshotLocked:
                if config.node:
                    raise
                continue
            token = uuid.uuid4().hex
            joined = int(await crawl.run("register", (f"node:{name}", "nodes"), [name, token, ttl]))
            if joined < 0:
                if config.node:
                    raise SnapshotError(
                        f"a crawl node named {name} is running in crawl {crawl.crawl_id} (or stopped "
                        "less than --node-timeout ago): give another --node"
                    )
                continue
            log.info("crawl node %s joins crawl %s", name, crawl.crawl_id)
            part = root.node_part(name)
            for folder in (part.index_dir, part.log_path.parent):
                folder.mkdir(exist_ok=True)
            yield name, token, joined
            return
    raise SnapshotError("no free crawl node name")  # pragma: no cover (names never run out)


async def _heartbeat(crawl: RedisCrawl, node: str, token: str, timeout: float) -> None:
    """Tell the crawl this node lives, and give the URLs of nodes that went silent to the others."""
    ttl = round(timeout * 1000)
    while True:
        await asyncio.sleep(timeout / 4)
        try:
            alive = await crawl.run("heartbeat", (f"node:{node}", "nodes"), [node, token, ttl])
            if not alive:
                log.warning("this crawl node was silent past --node-timeout: its URLs went to the others")
            reaped = await crawl.run("reap", args=[crawl.prefix])
            for name, count in zip(reaped[::2], reaped[1::2], strict=True):
                log.warning(
                    "crawl node %s went silent: its %d URL(s) in flight go back to the queue",
                    name.decode(),
                    int(count),
                )
        except Exception as exc:  # Redis away for a moment: the next beat tries again
            log.warning("cannot reach the crawl's Redis: %s", exc)


def _backend(crawl: RedisCrawl, node: str, joined: int) -> Backend:
    def policy(config: CrawlConfig, fetch_robots: FetchRobots) -> RedisHostPolicy:
        return RedisHostPolicy(crawl, **policy_options(config, fetch_robots), hold=config.timeout + 30)

    return Backend(
        frontier=lambda snapshot, writer: RedisFrontier(crawl, node, writer),
        policy=policy,
        budget=lambda config: RedisBudget(crawl, config.max_pages, config.max_bytes),
        controls=lambda snapshot: RedisControlSource(crawl, node, joined),
        reload=False,
    )
