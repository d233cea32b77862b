-- ARGV prefix, node, token, count -> {queue length, cookies version, lease, item, ...}.
local t = now()
local due = redis.call('ZRANGEBYSCORE', prefix .. 'delayed', '-inf', t, 'LIMIT', 0, 100)
for _, member in ipairs(due) do
  redis.call('ZREM', prefix .. 'delayed', member)
  local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
  redis.call('ZADD', prefix .. 'queue', cjson.decode(member)[2] * DEPTH + order, member)
end
local out = {0, tonumber(redis.call('GET', prefix .. 'cookies:version') or '0')}
local popped = redis.call('ZPOPMIN', prefix .. 'queue', tonumber(ARGV[4]))
for i = 1, #popped, 2 do
  local lease = redis.call('HINCRBY', prefix .. 'meta', 'lease', 1)
  redis.call('HSET', prefix .. 'leases:' .. node, lease, popped[i])
  out[#out + 1] = tostring(lease)
  out[#out + 1] = popped[i]
end
out[1] = redis.call('ZCARD', prefix .. 'queue')
return out
