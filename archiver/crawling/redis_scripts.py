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
"""

from __future__ import annotations

GIVEN_UP = "archiver: crawl node given up"
"""The error a script answers a node that the others gave up."""

_HEAD = (
    """
local GIVEN_UP = '"""
    + GIVEN_UP
    + """'
local DEPTH = 4294967296
local MERGED = 'merged'
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function is_member(prefix, node, token)
  return redis.call('HGET', prefix .. 'nodes', node) == token
end
local function drop_node(prefix, node, given_up)
  -- What NODE holds goes back to the queue: its leases ahead of what arrived at their depth
  -- (they were due already), then what it claimed and had not queued. given_up: the token of
  -- a node the others gave up: its leases' tries are counted, and they carry its name.
  local count = 0
  local jobs = {}
  local leases = redis.call('HGETALL', prefix .. 'leases:' .. node)
  for i = 2, #leases, 2 do
    local member = leases[i]
    local item = cjson.decode(member)
    jobs[item[6] .. ' ' .. item[1]] = true
    if given_up then
      item[9] = item[9] + 1
      item[10] = item[10] or ''
      item[11] = {node, given_up, 0}
      member = cjson.encode(item)
    end
    redis.call('ZADD', prefix .. 'queue', item[2] * DEPTH, member)
    count = count + 1
  end
  redis.call('DEL', prefix .. 'leases:' .. node)
  local staged = redis.call('HGETALL', prefix .. 'staged:' .. node)
  for i = 2, #staged, 2 do
    local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
    redis.call('ZADD', prefix .. 'queue', cjson.decode(staged[i])[2] * DEPTH + order, staged[i])
    count = count + 1
  end
  redis.call('DEL', prefix .. 'staged:' .. node)
  -- URLs it recorded outside the queue whose rows it had not committed: claimable again, and
  -- their job queued (once; not when a lease gives it back already). A node given up may have
  -- stored a row and not said so: whoever claims the URL looks in its part first.
  local outside = redis.call('HGETALL', prefix .. 'outside:' .. node)
  for i = 1, #outside, 2 do
    local at = string.find(outside[i + 1], '\\n', 1, true)
    local job, looks = string.sub(outside[i + 1], 1, at - 1), cjson.decode(string.sub(outside[i + 1], at + 1))
    if given_up then
      looks[#looks + 1] = {node, given_up}
    end
    if #looks > 0 then
      redis.call('HSET', prefix .. 'orphans', outside[i], cjson.encode(looks))
    else
      redis.call('SREM', prefix .. 'seen', outside[i])
    end
    local item = cjson.decode(job)
    local kind = item[6] .. ' ' .. item[1]
    if given_up and not jobs[kind] then
      jobs[kind] = true
      local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
      redis.call('ZADD', prefix .. 'queue', item[2] * DEPTH + order, job)
      count = count + 1
    end
  end
  redis.call('DEL', prefix .. 'outside:' .. node)
  return count
end
local function reap(prefix)
  local out = {}
  local nodes = redis.call('HGETALL', prefix .. 'nodes')
  for i = 1, #nodes, 2 do
    local node = nodes[i]
    if redis.call('EXISTS', prefix .. 'node:' .. node) == 0 then
      out[#out + 1] = node
      out[#out + 1] = drop_node(prefix, node, nodes[i + 1])
      redis.call('HDEL', prefix .. 'nodes', node)
    end
  end
  return out
end
local function last_out(prefix, token, ttl)
  -- Reap the nodes gone silent; {1} if no node is left and the caller is the one to merge
  -- (the merger key holds its token for TTL ms, renewed while it merges: see MERGING), {2} if
  -- the parts are merged, else {0, node, milliseconds its heartbeat has left, ...} of the
  -- nodes left (none: another merges them, and is alive).
  reap(prefix)
  local out = {0}
  for _, node in ipairs(redis.call('HKEYS', prefix .. 'nodes')) do
    out[#out + 1] = node
    out[#out + 1] = redis.call('PTTL', prefix .. 'node:' .. node)
  end
  if #out == 1 then
    if redis.call('SET', prefix .. 'merger', token, 'NX', 'PX', ttl) then
      return {1}
    end
    if redis.call('GET', prefix .. 'merger') == MERGED then
      return {2}
    end
  end
  return out
end
"""
)

_MEMBER = """
local prefix, node = ARGV[1], ARGV[2]
if not is_member(prefix, node, ARGV[3]) then return redis.error_reply(GIVEN_UP) end
"""

CLAIM = (
    _HEAD
    + _MEMBER
    + """
local redo = ARGV[4]
local out = {}
for i = 5, #ARGV, 2 do
  local digest, member = ARGV[i], ARGV[i + 1]
  if redis.call('SADD', prefix .. 'seen', digest) == 1 then
    if member ~= '' then
      redis.call('HSET', prefix .. 'staged:' .. node, digest, member)
    elseif redo ~= '' then
      redis.call('HSET', prefix .. 'outside:' .. node, digest, redo .. '\\n[]')
    end
    out[#out + 1] = 1
  else
    local looks = false
    if member == '' and redo ~= '' then
      looks = redis.call('HGET', prefix .. 'orphans', digest)
    end
    if looks then
      redis.call('HDEL', prefix .. 'orphans', digest)
      redis.call('HSET', prefix .. 'outside:' .. node, digest, redo .. '\\n' .. looks)
      out[#out + 1] = looks
    else
      out[#out + 1] = 0
    end
  end
end
return out
"""
)
"""ARGV prefix, node, token, redo job ('' if none), (digest, item or '' for a URL recorded
outside the queue)... -> 1 for each one claimed here, 0 if claimed before; for a URL recorded
outside the queue by a node given up before it committed its row, the JSON list of the
[node, token] whose parts may hold the row (it is this node's to record, unless they do)."""

PUSH = (
    _HEAD
    + _MEMBER
    + """
local t = now()
for i = 4, #ARGV, 5 do
  redis.call('HDEL', prefix .. 'staged:' .. node, ARGV[i])
  if ARGV[i + 4] ~= '' then
    redis.call('HDEL', prefix .. 'leases:' .. node, ARGV[i + 4])
  end
  local delay = tonumber(ARGV[i + 3])
  if delay > 0 then
    redis.call('ZADD', prefix .. 'delayed', t + delay, ARGV[i + 1])
  else
    local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
    redis.call('ZADD', prefix .. 'queue', tonumber(ARGV[i + 2]) * DEPTH + order, ARGV[i + 1])
  end
end
return redis.call('ZCARD', prefix .. 'queue')
"""
)
"""ARGV prefix, node, token, (digest, item, depth, delay ms, lease it replaces or '')...
-> queue length. An item put back (a retry, a busy host) replaces its lease in the same step."""

TAKE = (
    _HEAD
    + _MEMBER
    + """
local t = now()
local due = redis.call('ZRANGEBYSCORE', prefix .. 'delayed', '-inf', t, 'LIMIT', 0, 100)
for _, member in ipairs(due) do
  redis.call('ZREM', prefix .. 'delayed', member)
  local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
  redis.call('ZADD', prefix .. 'queue', cjson.decode(member)[2] * DEPTH + order, member)
end
local out = {0}
local popped = redis.call('ZPOPMIN', prefix .. 'queue', tonumber(ARGV[4]))
for i = 1, #popped, 2 do
  local lease = redis.call('HINCRBY', prefix .. 'meta', 'lease', 1)
  redis.call('HSET', prefix .. 'leases:' .. node, lease, popped[i])
  out[#out + 1] = tostring(lease)
  out[#out + 1] = popped[i]
end
out[1] = redis.call('ZCARD', prefix .. 'queue')
return out
"""
)
"""ARGV prefix, node, token, count -> {queue length, lease, item, ...}."""

RELEASE = (
    _HEAD
    + _MEMBER
    + """
local leases = tonumber(ARGV[4])
for i = 5, 4 + leases do
  redis.call('HDEL', prefix .. 'leases:' .. node, ARGV[i])
end
for i = 5 + leases, #ARGV do
  redis.call('HDEL', prefix .. 'outside:' .. node, ARGV[i])
end
return 1
"""
)
"""ARGV prefix, node, token, count of leases, leases, digests -> 1: the leases of items whose
outcome is stored, and the URLs recorded outside the queue whose rows are."""

GIVE_BACK = (
    _HEAD
    + """
local prefix, node = ARGV[1], ARGV[2]
if not is_member(prefix, node, ARGV[3]) then return -1 end
return drop_node(prefix, node, false)
"""
)
"""ARGV prefix, node, token -> items queued again (-1 if the node was given up): a node leaving
gives back what it did not finish, its tries not counted, and queues what it claimed."""

REAP = (
    _HEAD
    + """
return reap(ARGV[1])
"""
)
"""ARGV prefix -> {node, items queued again, ...} for each node whose heartbeat ran out."""

REGISTER = (
    _HEAD
    + """
local prefix, node, token = ARGV[1], ARGV[2], ARGV[3]
if not redis.call('SET', prefix .. 'node:' .. node, token, 'NX', 'PX', ARGV[4]) then
  return -1
end
local before = redis.call('HGET', prefix .. 'nodes', node)
if before then
  -- An earlier run under this name, lost and not reaped yet: the others would take its items
  -- for this run's, and wait for them forever.
  drop_node(prefix, node, before)
end
redis.call('HSET', prefix .. 'nodes', node, token)
redis.call('DEL', prefix .. 'merger')
return now()
"""
)
"""ARGV prefix, node, token, ttl ms -> Redis time (ms) joined, or -1 if the name is taken."""

HEARTBEAT = (
    _HEAD
    + """
local prefix, node, token = ARGV[1], ARGV[2], ARGV[3]
if not is_member(prefix, node, token) then return 0 end
redis.call('SET', prefix .. 'node:' .. node, token, 'PX', ARGV[4])
return 1
"""
)
"""ARGV prefix, node, token, ttl ms -> 1, or 0 if the node was given up. A node silent past its
time but not reaped yet is still a member: nobody took its items, and it goes on."""

LEAVE = (
    _HEAD
    + """
local prefix, node = ARGV[1], ARGV[2]
if is_member(prefix, node, ARGV[3]) then
  redis.call('DEL', prefix .. 'node:' .. node)
  redis.call('HDEL', prefix .. 'nodes', node)
end
redis.call('HDEL', prefix .. 'status', node)
return last_out(prefix, ARGV[3], ARGV[4])
"""
)
"""ARGV prefix, node, token, ttl ms -> as LAST_OUT, once the node is out of the crawl."""

LAST_OUT = (
    _HEAD
    + """
return last_out(ARGV[1], ARGV[2], ARGV[3])
"""
)
"""ARGV prefix, token, ttl ms -> {1} if no node is left and the caller merges the parts (one
caller gets it: the merger key holds its token for ttl ms), {2} if they are merged, else {0,
node, milliseconds its heartbeat has left, ...} (no node: another merges, alive), once the
silent nodes are reaped."""

MERGING = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('SET', KEYS[1], 'merged')
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
"""
"""KEYS merger; ARGV token, ttl ms, or '' once the parts are merged (and the mirror built) -> 1,
or 0 if the merge is no longer this node's (silent past ttl, another took it over)."""

OUTSTANDING = """
local prefix = ARGV[1]
local total = redis.call('ZCARD', prefix .. 'queue') + redis.call('ZCARD', prefix .. 'delayed')
for _, node in ipairs(redis.call('HKEYS', prefix .. 'nodes')) do
  total = total + redis.call('HLEN', prefix .. 'leases:' .. node)
  total = total + redis.call('HLEN', prefix .. 'staged:' .. node)
end
return {total, redis.call('ZCARD', prefix .. 'queue')}
"""
"""ARGV prefix -> {items queued, waiting, leased or about to be queued; queue length}."""

UNPARK = (
    _HEAD
    + _MEMBER
    + """
local key = prefix .. 'parked:' .. ARGV[4]
local parked = redis.call('HGETALL', key)
redis.call('DEL', key)
for i = 2, #parked, 2 do
  local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
  redis.call('ZADD', prefix .. 'queue', cjson.decode(parked[i])[2] * DEPTH + order, parked[i])
end
return #parked / 2
"""
)
"""ARGV prefix, node, token, key -> items queued: those every node parked under ``key``."""

ROBOTS_TURN = (
    _HEAD
    + _MEMBER
    + """
local host, t = ARGV[4], now()
local stored = redis.call('HGET', prefix .. 'robots', host)
if stored then
  local head = string.sub(stored, 1, (string.find(stored, '\\n', 1, true) or 1) - 1)
  local good_until = tonumber(string.match(head, '^%S* (%d+)'))
  if good_until == nil or good_until > t then
    return {1, stored, good_until and (good_until - t) or -1}
  end
end
local lock = prefix .. 'robots-lock:' .. host
local holder = redis.call('GET', lock)
local reaped = {}
if holder and holder ~= node .. '\\n' .. ARGV[3] then
  local at = string.find(holder, '\\n', 1, true)
  local other = string.sub(holder, 1, at - 1)
  if is_member(prefix, other, string.sub(holder, at + 1)) then
    if redis.call('EXISTS', prefix .. 'node:' .. other) == 1 then
      if stored then return {1, stored, 0} end
      return {0}
    end
    -- Its heartbeat ran out: it is given up now, and its turn is this node's.
    reaped = reap(prefix)
  end
end
redis.call('SET', lock, node .. '\\n' .. ARGV[3])
return {2, stored or '', reaped}
"""
)
"""ARGV prefix, node, token, host -> whose turn it is to fetch the host's robots.txt:
{1, entry, ms it is good for (-1: always)} to use the entry stored; {0} to wait, another node
fetching it (a living one: one whose heartbeat ran out is given up here and now); {2, entry
before or '', {node, items queued again, ...} given up} to fetch it, this node holding the lock.
An entry is 'STATUS GOOD_UNTIL_MS MISSES\\nBODY'; an old one is used while another node asks again."""

ROBOTS_STORE = (
    _HEAD
    + _MEMBER
    + """
local host = ARGV[4]
if ARGV[5] then
  local good_until = string.format('%d', now() + tonumber(ARGV[6]))
  local entry = ARGV[5] .. ' ' .. good_until .. ' ' .. ARGV[7] .. '\\n' .. ARGV[8]
  redis.call('HSET', prefix .. 'robots', host, entry)
end
local lock = prefix .. 'robots-lock:' .. host
if redis.call('GET', lock) == node .. '\\n' .. ARGV[3] then
  redis.call('DEL', lock)
end
return 1
"""
)
"""ARGV prefix, node, token, host[, status or '', ms it is good for, misses, body] -> 1: the
robots.txt answer stored for every node (without one, the turn is given up), the lock let go."""

START_PAGE = """
local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[3])
local pages = tonumber(redis.call('HGET', KEYS[1], 'pages') or '0')
if tonumber(ARGV[1]) >= 0 and pages >= tonumber(ARGV[1]) then return 1 end
if tonumber(ARGV[2]) >= 0 and bytes >= tonumber(ARGV[2]) then return 2 end
redis.call('HINCRBY', KEYS[1], 'pages', 1)
return 0
"""
"""KEYS budget; ARGV max pages, max bytes (-1: none), bytes to add (0: a node counts them as it
fetches, RedisBudget.add_bytes) -> 0, or 1/2 for the limit."""

ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  -- A slot whose node's heartbeat ran out (killed) is free now, not when it expires.
  for _, holder in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    local at = string.find(holder, '\\n', 1, true)
    if at and redis.call('EXISTS', ARGV[5] .. 'node:' .. string.sub(holder, 1, at - 1)) == 0 then
      redis.call('ZREM', KEYS[1], holder)
    end
  end
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
end
local next_start = tonumber(redis.call('GET', KEYS[2]) or '0')
if next_start > now then return next_start - now end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
local delay = tonumber(ARGV[3])
if delay > 0 then redis.call('SET', KEYS[2], now + delay, 'PX', delay + 1000) end
return 0
"""
"""KEYS slots:HOST, next:HOST; ARGV holder ('NODE\\nID'), limit, delay ms, hold ms, key prefix -> 0
(a slot is held), -1 (every slot is taken) or the milliseconds to wait for the host's delay.
A slot frees itself after hold ms, or once its node's heartbeat has run out."""

SCRIPTS = {
    "claim": CLAIM,
    "push": PUSH,
    "take": TAKE,
    "release": RELEASE,
    "give_back": GIVE_BACK,
    "reap": REAP,
    "register": REGISTER,
    "heartbeat": HEARTBEAT,
    "leave": LEAVE,
    "last_out": LAST_OUT,
    "merging": MERGING,
    "outstanding": OUTSTANDING,
    "start_page": START_PAGE,
    "acquire": ACQUIRE,
    "unpark": UNPARK,
    "robots_turn": ROBOTS_TURN,
    "robots_store": ROBOTS_STORE,
}
"""Every script, by the name RedisCrawl.run() knows it by."""
