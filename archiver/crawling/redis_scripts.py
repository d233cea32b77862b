"""The Lua scripts that move a shared crawl's items between its keys in Redis, each one atomic.

Keys are those of crawling/redis_state.py; most scripts take the crawl's key
prefix, and a node's name and token, as their first arguments. A script a node
runs for itself first checks that the node is still a member under its token:
once the others have given it up (it was silent past --node-timeout), every
such script refuses it with GIVEN_UP, so what it does after that (claim, queue,
take, release) never lands in state nobody will look after.

What a node holds is never only in that node: an item it took is in
``leases:NODE``, an item it claimed and will queue in ``staged:NODE``, and both
go back to the queue when the node is given up, or gives them back as it
leaves (drop_node). An item given back by a node given up carries that node's
name and token (its 11th field): the node may have stored its outcome and not
yet said so, and whoever takes it looks in that node's part first
(crawling/node_parts.py).

A URL a node records outside the queue (a robots.txt, a sitemap, a hop of their
redirects) is held in ``outside:NODE`` until its row is committed, with the queue
item that records it again (a job: read the sitemaps, fetch the robots.txt of
its origin). A node given up leaves it to ``orphans`` (with the nodes whose
part may hold its row) and its job to the queue; the node that claims it next
records it, unless one of those parts holds it already.

The scripts are Lua files in redis_lua/, each under a comment that says what it takes
and gives. Most begin with the helpers of head.lua; those in CHECKED begin with the
membership check too, which sets ``prefix`` and ``node`` from ARGV[1] and ARGV[2].
"""

from __future__ import annotations

import json
from importlib import resources

GIVEN_UP = "archiver: crawl node given up"
"""The error a script answers a node that the others gave up."""

LUA = resources.files(__package__) / "redis_lua"

_MEMBER = """
local prefix, node = ARGV[1], ARGV[2]
if not is_member(prefix, node, ARGV[3]) then return redis.error_reply(GIVEN_UP) end
"""

CHECKED = ("claim", "push", "take", "release", "unpark", "robots_turn", "robots_store")
"""Scripts a node runs for itself, refused (GIVEN_UP) once the others gave it up."""
HELPED = ("give_back", "reap", "register", "heartbeat", "leave", "last_out")
"""Scripts that use head.lua's helpers but check no membership (or check it their own way)."""
PLAIN = ("merging", "outstanding", "start_page", "acquire")
"""Scripts that stand alone."""


def _lua(name: str) -> str:
    return (LUA / f"{name}.lua").read_text(encoding="utf-8")


def _script(name: str) -> str:
    if name in PLAIN:
        return _lua(name)
    head = f"local GIVEN_UP = {json.dumps(GIVEN_UP)}\n" + _lua("head")
    return head + (_MEMBER if name in CHECKED else "") + _lua(name)


SCRIPTS = {name: _script(name) for name in (*CHECKED, *HELPED, *PLAIN)}
"""Every script, by the name RedisCrawl.run() knows it by."""
