-- KEYS slots:HOST, next:HOST; ARGV holder ('NODE\nID'), limit, delay ms, hold ms, key prefix -> 0
-- (a slot is held), -1 (every slot is taken) or the milliseconds to wait for the host's delay.
-- A slot frees itself after hold ms, or once its node's heartbeat has run out.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  -- A slot whose node's heartbeat ran out (killed) is free now, not when it expires.
  for _, holder in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    local at = string.find(holder, '\n', 1, true)
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
