"""A crawl's state in Redis: the connection, the names of its keys, and the scripts that
move items atomically between them.

Every key of crawl ``NAME`` starts with ``archiver:NAME:``::

    seen            set of 8-byte blake2b digests of the URLs claimed (about 60 bytes a URL in Redis)
    queue           sorted set of items waiting, by depth then by order of arrival (breadth first)
    delayed         sorted set of items waiting out a failed try, by the time they are due (ms)
    leases:NODE     hash of the items NODE holds, by lease number
    staged:NODE     set of digests NODE claimed and has not queued yet
    outside         set of digests claimed to be recorded outside the queue (robots.txt, sitemaps)
    nodes           set of node names; node:NODE their heartbeat (expires after --node-timeout)
    meta            hash of counters (arrival order, lease numbers)
    budget          hash: pages started and bytes stored, for --max-pages and --max-bytes
    slots:HOST, next:HOST, robots   politeness shared by every node (redis_politeness.py)
    control, status                 live control (redis_control.py)
    settings        the crawl's settings, as the first node gave them

A node that stops heartbeating is reaped by the others: its leased items go
back to the queue (their tries counted) and the URLs it claimed but never
queued are unclaimed, so that the page that found them, fetched again, claims
them again. Times are Redis's own (TIME), so the nodes' clocks need not agree.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from archiver.crawling.frontier import QueueItem
from archiver.errors import ConfigError
from archiver.request_headers import negotiation_pairs, negotiation_text

T = TypeVar("T")

DEPTH_SCALE = 2**32
"""Queue score: depth * DEPTH_SCALE + order of arrival, so a lower depth always comes first."""

_NOW = """
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

CLAIM = """
local out = {}
for i, digest in ipairs(ARGV) do
  if redis.call('SADD', KEYS[1], digest) == 1 then
    redis.call('SADD', KEYS[2], digest)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
"""
"""KEYS seen, staged:NODE; ARGV digests -> 1 for each one claimed here, 0 if claimed before."""

PUSH = (
    _NOW
    + """
local t = now()
for i = 1, #ARGV, 4 do
  redis.call('SREM', KEYS[2], ARGV[i])
  local delay = tonumber(ARGV[i + 3])
  if delay > 0 then
    redis.call('ZADD', KEYS[3], t + delay, ARGV[i + 1])
  else
    local order = redis.call('HINCRBY', KEYS[4], 'order', 1)
    redis.call('ZADD', KEYS[1], tonumber(ARGV[i + 2]) * 4294967296 + order, ARGV[i + 1])
  end
end
return redis.call('ZCARD', KEYS[1])
"""
)
"""KEYS queue, staged:NODE, delayed, meta; ARGV (digest, item, depth, delay ms)... -> queue length."""

TAKE = (
    _NOW
    + """
local t = now()
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', t, 'LIMIT', 0, 100)
for _, member in ipairs(due) do
  redis.call('ZREM', KEYS[2], member)
  local order = redis.call('HINCRBY', KEYS[4], 'order', 1)
  redis.call('ZADD', KEYS[1], cjson.decode(member)[2] * 4294967296 + order, member)
end
local out = {0}
local popped = redis.call('ZPOPMIN', KEYS[1], tonumber(ARGV[1]))
for i = 1, #popped, 2 do
  local lease = redis.call('HINCRBY', KEYS[4], 'lease', 1)
  redis.call('HSET', KEYS[3], lease, popped[i])
  out[#out + 1] = tostring(lease)
  out[#out + 1] = popped[i]
end
out[1] = redis.call('ZCARD', KEYS[1])
return out
"""
)
"""KEYS queue, delayed, leases:NODE, meta; ARGV count -> {queue length, lease, item, ...}."""

_REQUEUE = """
local function requeue(prefix, member, bump)
  local item = cjson.decode(member)
  if bump then
    item[9] = item[9] + 1
    member = cjson.encode(item)
  end
  -- ahead of what arrived at its depth: it was due already
  redis.call('ZADD', prefix .. 'queue', item[2] * 4294967296, member)
end
local function drop_node(prefix, node, bump, keep)
  local leases = redis.call('HGETALL', prefix .. 'leases:' .. node)
  local count = 0
  for i = 1, #leases, 2 do
    if not keep[leases[i]] then
      requeue(prefix, leases[i + 1], bump)
      redis.call('HDEL', prefix .. 'leases:' .. node, leases[i])
      count = count + 1
    end
  end
  for _, digest in ipairs(redis.call('SMEMBERS', prefix .. 'staged:' .. node)) do
    redis.call('SREM', prefix .. 'seen', digest)
  end
  redis.call('DEL', prefix .. 'staged:' .. node)
  return count
end
"""

REAP = (
    _REQUEUE
    + """
local prefix = ARGV[1]
local out = {}
for _, node in ipairs(redis.call('SMEMBERS', prefix .. 'nodes')) do
  if redis.call('EXISTS', prefix .. 'node:' .. node) == 0 then
    local count = drop_node(prefix, node, true, {})
    redis.call('DEL', prefix .. 'leases:' .. node)
    redis.call('SREM', prefix .. 'nodes', node)
    out[#out + 1] = node
    out[#out + 1] = count
  end
end
return out
"""
)
"""ARGV prefix -> {node, items requeued, ...} for each node whose heartbeat ran out."""

GIVE_BACK = (
    _REQUEUE
    + """
local keep = {}
for i = 3, #ARGV do keep[ARGV[i]] = true end
return drop_node(ARGV[1], ARGV[2], false, keep)
"""
)
"""ARGV prefix, node, leases to keep -> items requeued: a node leaving gives back what it did
not finish (tries not counted) and unclaims what it claimed without queueing."""

REGISTER = (
    _NOW
    + """
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then
  redis.call('SADD', KEYS[2], ARGV[1])
  return now()
end
return -1
"""
)
"""KEYS node:NODE, nodes; ARGV node, token, ttl ms -> Redis time (ms) joined, or -1 if taken."""

HEARTBEAT = """
if redis.call('GET', KEYS[1]) == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
return 0
"""
"""KEYS node:NODE, nodes; ARGV node, token, ttl ms -> 1, or 0 if the node had been given up."""

LEAVE = """
local prefix, node = ARGV[1], ARGV[2]
if redis.call('GET', prefix .. 'node:' .. node) == ARGV[3] then
  redis.call('DEL', prefix .. 'node:' .. node)
end
redis.call('SREM', prefix .. 'nodes', node)
redis.call('HDEL', prefix .. 'status', node)
local live = 0
for _, other in ipairs(redis.call('SMEMBERS', prefix .. 'nodes')) do
  if redis.call('EXISTS', prefix .. 'node:' .. other) == 1 then live = live + 1 end
end
return live
"""
"""ARGV prefix, node, token -> nodes still alive after this one left."""

OUTSTANDING = """
local prefix = ARGV[1]
local total = redis.call('ZCARD', prefix .. 'queue') + redis.call('ZCARD', prefix .. 'delayed')
for _, node in ipairs(redis.call('SMEMBERS', prefix .. 'nodes')) do
  total = total + redis.call('HLEN', prefix .. 'leases:' .. node)
  total = total + redis.call('SCARD', prefix .. 'staged:' .. node)
end
return {total, redis.call('ZCARD', prefix .. 'queue')}
"""
"""ARGV prefix -> {items queued, waiting, leased or about to be queued; queue length}."""

START_PAGE = """
local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[3])
local pages = tonumber(redis.call('HGET', KEYS[1], 'pages') or '0')
if tonumber(ARGV[1]) >= 0 and pages >= tonumber(ARGV[1]) then return 1 end
if tonumber(ARGV[2]) >= 0 and bytes >= tonumber(ARGV[2]) then return 2 end
redis.call('HINCRBY', KEYS[1], 'pages', 1)
return 0
"""
"""KEYS budget; ARGV max pages, max bytes (-1: none), bytes stored since -> 0, or 1/2 for the limit."""

ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
local next_start = tonumber(redis.call('GET', KEYS[2]) or '0')
if next_start > now then return next_start - now end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local delay = tonumber(ARGV[3])
if delay > 0 then redis.call('SET', KEYS[2], now + delay, 'PX', delay + 1000) end
return 0
"""
"""KEYS slots:HOST, next:HOST; ARGV holder, limit, delay ms, hold ms -> 0 (a slot is held),
-1 (every slot is taken) or the milliseconds to wait for the host's delay."""


async def call(command: Awaitable[T]) -> T:
    """Await a command of the redis package, and be cancelled if the task was meanwhile.

    redis.asyncio (8.1) may swallow a cancellation that comes while a command is under
    way: the command returns, and a worker told to stop would go on forever.
    """
    result = await command
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
    return result


def url_digest(url: str) -> bytes:
    """The 8 bytes the shared seen set keeps for a URL (every node computes the same)."""
    return hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def encode_item(item: QueueItem) -> str:
    """An item as the queue keeps it: a JSON array (Lua reads depth and tries from it).

    >>> decode_item(encode_item(QueueItem("http://h/", 2, 5, chain=("http://h/a",)))).chain
    ('http://h/a',)
    """
    return json.dumps(
        [
            item.url,
            item.depth,
            item.redirects_left,
            int(item.requisite),
            "\n".join(item.chain),  # Lua's cjson would turn an empty array into an object
            item.found_by,
            item.parent,
            item.referrer,
            item.tries,
            negotiation_text(item.negotiation),  # a string: an empty array would become an object
        ],
        separators=(",", ":"),
    )


def decode_item(member: str | bytes) -> QueueItem:
    """The QueueItem of a queue member."""
    fields = json.loads(member)
    url, depth, redirects_left, requisite, chain, found_by, parent, referrer, tries = fields[:9]
    return QueueItem(
        url,
        int(depth),
        int(redirects_left),
        bool(requisite),
        tuple(chain.split("\n")) if chain else (),
        found_by,
        parent,
        referrer,
        int(tries),
        # An item a node of an earlier version queued has no tenth field.
        negotiation_pairs(fields[9]) if len(fields) > 9 else (),
    )


def redis_error() -> tuple[type[BaseException], ...]:
    """The exceptions of the redis package (none when it is not installed)."""
    try:
        from redis.exceptions import RedisError
    except ImportError:
        return ()
    return (RedisError,)


class RedisCrawl:
    """One crawl's keys on one Redis server, and the scripts over them."""

    def __init__(self, client: Any, crawl_id: str) -> None:
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = f"archiver:{crawl_id}:"
        self.scripts = {
            name: client.register_script(text)
            for name, text in {
                "claim": CLAIM,
                "push": PUSH,
                "take": TAKE,
                "reap": REAP,
                "give_back": GIVE_BACK,
                "register": REGISTER,
                "heartbeat": HEARTBEAT,
                "leave": LEAVE,
                "outstanding": OUTSTANDING,
                "start_page": START_PAGE,
                "acquire": ACQUIRE,
            }.items()
        }

    def key(self, name: str) -> str:
        """The full name of key ``name`` of this crawl."""
        return self.prefix + name

    async def run(self, script: str, keys: Sequence[str] = (), args: Sequence[Any] = ()) -> Any:
        """Run one of the scripts (its name) with ``keys`` (short names) and ``args``."""
        return await call(self.scripts[script](keys=[self.key(k) for k in keys], args=list(args)))

    async def close(self) -> None:
        """Close the connection; safe to call twice."""
        await self.client.aclose()


def connect(url: str, crawl_id: str) -> RedisCrawl:
    """A RedisCrawl over a connection to ``url`` (made on first use).

    The ``redis`` package is an optional extra: without it this is one line saying what to install.
    """
    try:
        import redis.asyncio
    except ImportError:
        raise ConfigError(
            "--frontier redis:// needs the redis package: pip install 'archiver[redis]'"
        ) from None
    try:
        client = redis.asyncio.Redis.from_url(url, decode_responses=False, health_check_interval=30)
    except ValueError as exc:
        raise ConfigError(f"bad --frontier {url!r}: {exc}") from None
    return RedisCrawl(client, crawl_id)
