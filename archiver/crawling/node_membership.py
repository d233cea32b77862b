"""A crawl node's membership: joining a shared crawl under a name (--node, or the first one
free on this machine) with its part of the folder locked, the heartbeat that tells Redis it
lives and reaps the nodes gone silent, and the stop of a node the others gave up.

crawling/nodes.py runs a node from its joining to its leaving; this keeps it a member meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from archiver.config import CrawlConfig
from archiver.crawling.redis_state import Membership, RedisCrawl
from archiver.errors import SnapshotError, SnapshotLocked
from archiver.store.lock import snapshot_lock
from archiver.store.snapshot import Snapshot

log = logging.getLogger("archiver")

PART_WAIT = 2.0
"""Seconds a node named with --node waits for its part's lock, which another node may hold a
moment to read what an earlier run under that name stored (crawling/node_parts.py)."""
GIVEN_UP_STOP = "given up by the other crawl nodes"
"""The stop reason of a node the others gave up (it stops: see NodeGivenUp)."""


def halt_on(stop: asyncio.Future[str] | None) -> asyncio.Future[str]:
    """A future the crawl stops on: given the reason of ``stop`` once it has one, or this node's
    heartbeat's once the others gave the node up."""
    halt: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def forward(future: asyncio.Future[str]) -> None:
        if not future.cancelled() and not halt.done():
            halt.set_result(future.result())

    if stop is not None:
        stop.add_done_callback(forward)
    return halt


def _default_names() -> Any:
    host = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname().split(".")[0]) or "node"
    number = 1
    while True:
        yield f"{host}_{number}"
        number += 1


@contextlib.asynccontextmanager
async def membership(
    crawl: RedisCrawl, root: Snapshot, config: CrawlConfig
) -> AsyncIterator[tuple[Membership, int]]:
    """This process's node: its name (--node, or the first free one), its part locked, its
    heartbeat registered in Redis; yields its membership and the Redis time it joined (ms)."""
    ttl = round(config.node_timeout * 1000)
    names = iter([config.node]) if config.node else _default_names()
    for name in names:
        with contextlib.ExitStack() as held:
            try:
                await _lock_part(held, root, name, PART_WAIT if config.node else 0)
            except SnapshotLocked:
                if config.node:
                    raise
                continue
            member = Membership(name, uuid.uuid4().hex, config.node_timeout)
            joined = int(await crawl.run("register", args=[crawl.prefix, name, member.token, ttl]))
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
            yield member, joined
            return
    raise SnapshotError("no free crawl node name")  # pragma: no cover (names never run out)


async def _lock_part(held: contextlib.ExitStack, root: Snapshot, name: str, wait: float) -> None:
    """Take the lock of node ``name``'s part into ``held`` (SnapshotLocked if it is still held
    by another after ``wait`` seconds)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            held.enter_context(
                snapshot_lock(root.node_part(name).root, f"archiver crawl node {name}", create=True)
            )
            return
        except SnapshotLocked:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.1)


async def heartbeat(crawl: RedisCrawl, member: Membership, halt: asyncio.Future[str]) -> None:
    """Tell the crawl this node lives, and give the URLs of nodes that went silent to the others.
    Once the others gave this node up, stop the crawl (``halt``)."""
    ttl = round(member.timeout * 1000)
    while True:
        await asyncio.sleep(member.timeout / 4)
        try:
            alive = await crawl.run("heartbeat", args=[crawl.prefix, member.node, member.token, ttl])
            if not alive:
                member.given_up = True
                if not halt.done():
                    halt.set_result(GIVEN_UP_STOP)
                return
            reaped = await crawl.run("reap", args=[crawl.prefix])
            for name, count in zip(reaped[::2], reaped[1::2], strict=True):
                log.warning(
                    "crawl node %s went silent: its %d URL(s) in flight go back to the queue",
                    name.decode(),
                    int(count),
                )
        except Exception as exc:  # Redis away for a moment: the next beat tries again
            log.warning("cannot reach the crawl's Redis: %s", exc)
