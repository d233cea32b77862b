-- ARGV prefix, node, token, host -> whose turn it is to fetch the host's robots.txt:
-- {1, entry, ms it is good for (-1: always)} to use the entry stored; {0} to wait, another node
-- fetching it (a living one: one whose heartbeat ran out is given up here and now); {2, entry
-- before or '', {node, items queued again, ...} given up} to fetch it, this node holding the lock.
-- An entry is 'STATUS GOOD_UNTIL_MS MISSES URL\nBODY'; an old one is used while another node asks again.
local host, t = ARGV[4], now()
local stored = redis.call('HGET', prefix .. 'robots', host)
if stored then
  local head = string.sub(stored, 1, (string.find(stored, '\n', 1, true) or 1) - 1)
  local good_until = tonumber(string.match(head, '^%S* (%d+)'))
  if good_until == nil or good_until > t then
    return {1, stored, good_until and (good_until - t) or -1}
  end
end
local lock = prefix .. 'robots-lock:' .. host
local holder = redis.call('GET', lock)
local reaped = {}
if holder and holder ~= node .. '\n' .. ARGV[3] then
  local at = string.find(holder, '\n', 1, true)
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
redis.call('SET', lock, node .. '\n' .. ARGV[3])
return {2, stored or '', reaped}
