-- ARGV prefix, node, token, key -> items queued: those every node parked under ``key``.
local key = prefix .. 'parked:' .. ARGV[4]
local parked = redis.call('HGETALL', key)
redis.call('DEL', key)
for i = 2, #parked, 2 do
  local order = redis.call('HINCRBY', prefix .. 'meta', 'order', 1)
  redis.call('ZADD', prefix .. 'queue', cjson.decode(parked[i])[2] * DEPTH + order, parked[i])
end
return #parked / 2
