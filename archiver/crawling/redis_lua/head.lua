-- Helpers every script but the smallest begins with (GIVEN_UP is defined before them).
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
    local at = string.find(outside[i + 1], '\n', 1, true)
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
