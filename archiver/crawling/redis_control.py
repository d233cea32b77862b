"""Live control of crawl nodes through Redis: the ``control`` list of commands, which every
node reads from its start (a node started late replays it, so it is paused and excludes as
the others do), and the ``status`` hash where each node publishes its counts."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from archiver.crawling.control import Command
from archiver.crawling.redis_state import RedisCrawl, call

ISSUE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('RPUSH', KEYS[1], cjson.encode({ARGV[1], ARGV[2], now}))
"""


def _iso(milliseconds: int) -> str:
    return (
        datetime.fromtimestamp(milliseconds / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


class RedisControlSource:
    """The ControlSource of one node: the crawl's command list, from the start."""

    def __init__(self, crawl: RedisCrawl, node: str, joined_ms: int) -> None:
        self._crawl = crawl
        self._node = node
        self._joined_ms = joined_ms
        self._next = 0

    async def new_commands(self) -> list[Command]:
        found = await call(self._crawl.client.lrange(self._crawl.key("control"), self._next, -1))
        self._next += len(found)
        commands = []
        for raw in found:
            name, argument, issued = json.loads(raw)
            commands.append(Command(name, argument or None, _iso(issued), replayed=issued < self._joined_ms))
        return commands

    async def publish(self, status: dict[str, Any]) -> None:
        await call(self._crawl.client.hset(self._crawl.key("status"), self._node, json.dumps(status)))


async def issue(crawl: RedisCrawl, name: str, argument: str | None) -> None:
    """Add a command for every node of the crawl to apply."""
    script = crawl.client.register_script(ISSUE)
    await script(keys=[crawl.key("control")], args=[name, argument or ""])


async def crawl_status(crawl: RedisCrawl) -> dict[str, Any] | None:
    """The counts of the whole crawl: its live nodes' added up, and the queue's; None if Redis
    knows no such crawl."""
    client = crawl.client
    if not await call(client.exists(crawl.key("settings"))):
        return None
    published = await call(client.hgetall(crawl.key("status")))
    nodes = {}
    for node, raw in published.items():
        name = node.decode()
        if await call(client.exists(crawl.key(f"node:{name}"))):
            nodes[name] = json.loads(raw)
    total: dict[str, Any] = {"fetched": 0, "failed": 0, "skipped": 0, "in_flight": 0, "bytes": 0}
    for counts in nodes.values():
        for name in total:
            total[name] += int(counts.get(name, 0))
    total["pages_per_second"] = round(sum(float(c.get("pages_per_second", 0)) for c in nodes.values()), 2)
    total["queued"] = int(await call(client.zcard(crawl.key("queue")))) + int(
        await call(client.zcard(crawl.key("delayed")))
    )
    paused = any(counts.get("state") == "paused" for counts in nodes.values())
    total["state"] = ("paused" if paused else "running") if nodes else "no node running"
    total["nodes"] = sorted(nodes)
    total["updated"] = time.time()
    return total
