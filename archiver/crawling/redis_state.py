"""A crawl's state in Redis: the connection, the names of its keys, and how items are kept there
(the scripts that move them atomically: crawling/redis_scripts.py).

Every key of crawl ``NAME`` starts with ``archiver:NAME:``::

    seen            set of 8-byte blake2b digests of the URLs claimed (about 60 bytes a URL in Redis)
    queue           sorted set of items waiting, by depth then by order of arrival (breadth first)
    delayed         sorted set of items waiting out a failed try, by the time they are due (ms)
    leases:NODE     hash of the items NODE holds, by lease number
    staged:NODE     hash of the items NODE claimed and has not queued yet, by digest
    outside:NODE    hash of the URLs NODE records outside the queue (robots.txt, sitemaps) and has
                    not committed yet, by digest: the job that records them again, and the parts
                    to look in first
    orphans         hash of such URLs whose node was given up, by digest: the parts to look in
    nodes           hash of the nodes' tokens, by name; node:NODE their heartbeat (expires
                    after --node-timeout; a node is a member while its token is in ``nodes``)
    merger          the token of the node that merges the parts once no node is left (expires
                    after --node-timeout unless renewed: then a node waiting takes the merge
                    over), ``merged`` once they are merged
    meta            hash of counters (arrival order, lease numbers)
    budget          hash: pages started and bytes stored, for --max-pages and --max-bytes
    slots:HOST, next:HOST, robots, robots-lock:ORIGIN   politeness shared by every node (redis_politeness.py)
    control, status                 live control (redis_control.py)
    settings        the crawl's settings, as the first node gave them
    cookies         hash of the crawl's cookies, by name, domain and path (redis_cookies.py)
    encodings       hash of the encodings other than UTF-8 of the documents read, by digest
                    (redis_encodings.py)
    landings        set of the pages where the seeds' redirects landed: the scope of every node
    parked:HOST     hash of the items skipped while HOST's robots.txt is out of reach, by digest:
                    queued again once it answers

A node that stops heartbeating is given up by the others: its leased items go
back to the queue (their tries counted), and so do the items it claimed but
never queued; from then on Redis refuses it (it stops, and may be started
again). Times are Redis's own (TIME), so the nodes' clocks need not agree.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from archiver.crawling.frontier import QueueItem
from archiver.crawling.redis_scripts import GIVEN_UP, SCRIPTS
from archiver.errors import ConfigError, NodeGivenUp
from archiver.request_headers import negotiation_pairs, negotiation_text

T = TypeVar("T")


async def call(command: Awaitable[T]) -> T:
    """Await a command of the redis package, and be cancelled if the task was meanwhile.

    redis.asyncio (8.1) may swallow a cancellation that comes while a command is under
    way: the command returns, or fails (its connection cut, Redis refusing it), and a task
    told to stop went on forever: a worker, or a loop that tries again on a failure (the
    heartbeat, the frontier's sync), which its node then waited for as it stopped.
    """
    try:
        result = await command
    except Exception:
        if _cancelling():
            raise asyncio.CancelledError from None
        raise
    if _cancelling():
        raise asyncio.CancelledError
    return result


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def url_digest(url: str) -> bytes:
    """The 8 bytes the shared seen set keeps for a URL (every node computes the same)."""
    return hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def encode_item(item: QueueItem) -> str:
    """An item as the queue keeps it: a JSON array (Lua reads depth and tries from it).

    >>> decode_member(encode_item(QueueItem("http://h/", 2, 5, chain=("http://h/a",))))[0].chain
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
            None,  # where redis_scripts.drop_node notes the node given up that held it
            item.referrer_policy,
            item.site_for_cookies,
            item.cors,
            item.client,
            item.document,
            item.hop_referrer,
        ],
        separators=(",", ":"),
    )


@dataclass(frozen=True)
class GivenBack:
    """Of an item given back by a node the others gave up: that node, the token it ran under
    (a later run under its name has another), and how often its part was looked in already."""

    node: str
    token: str
    looks: int


def decode_member(member: str | bytes) -> tuple[QueueItem, GivenBack | None]:
    """The QueueItem of a queue member, and the node given up that held it, if one did."""
    fields = json.loads(member)
    url, depth, redirects_left, requisite, chain, found_by, parent, referrer, tries = fields[:9]
    item = QueueItem(
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
        str(fields[11] or "") if len(fields) > 11 else "",
        str(fields[12]) if len(fields) > 12 and fields[12] else None,
        str(fields[13] or "") if len(fields) > 13 else "",
        str(fields[14]) if len(fields) > 14 and fields[14] else None,
        str(fields[15] or "") if len(fields) > 15 else "",
        str(fields[16]) if len(fields) > 16 and fields[16] else None,
    )
    held = fields[10] if len(fields) > 10 else None  # put there by redis_scripts.drop_node
    return item, GivenBack(str(held[0]), str(held[1]), int(held[2])) if held else None


def looked_again(member: str | bytes) -> str:
    """A given-back item's member, with one more look in its node's part counted."""
    fields = json.loads(member)
    fields[10][2] += 1
    return json.dumps(fields, separators=(",", ":"))


def redis_error() -> tuple[type[BaseException], ...]:
    """The exceptions of the redis package (none when it is not installed)."""
    try:
        from redis.exceptions import RedisError
    except ImportError:
        return ()
    return (RedisError,)


@dataclass
class Membership:
    """This process's place in a shared crawl: its node's name, the token it registered with,
    and whether the other nodes gave it up (it was silent past --node-timeout)."""

    node: str
    token: str
    timeout: float
    """--node-timeout, in seconds."""
    given_up: bool = False


class RedisCrawl:
    """One crawl's keys on one Redis server, and the scripts over them."""

    def __init__(self, client: Any, crawl_id: str) -> None:
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = f"archiver:{crawl_id}:"
        self.scripts = {name: client.register_script(text) for name, text in SCRIPTS.items()}

    def key(self, name: str) -> str:
        """The full name of key ``name`` of this crawl."""
        return self.prefix + name

    async def run(self, script: str, keys: Sequence[str] = (), args: Sequence[Any] = ()) -> Any:
        """Run one of the scripts (its name) with ``keys`` (short names) and ``args``.

        NodeGivenUp if the script refused a node the others gave up.
        """
        try:
            return await call(self.scripts[script](keys=[self.key(k) for k in keys], args=list(args)))
        except redis_error() as exc:
            if GIVEN_UP in str(exc):
                raise NodeGivenUp(str(exc)) from None
            raise

    async def run_as(self, member: Membership, script: str, args: Sequence[Any] = ()) -> Any:
        """Run a script a node runs for itself (prefix, node and token first); a refusal, the
        node given up, is noted in ``member`` and raised as NodeGivenUp(node)."""
        try:
            return await self.run(script, args=[self.prefix, member.node, member.token, *args])
        except NodeGivenUp:
            member.given_up = True
            raise NodeGivenUp(member.node) from None

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
