-- ARGV prefix, node, token, (digest, item, depth, delay ms, lease it replaces or '')...
-- -> queue length. An item put back (a retry, a busy host) replaces its lease in the same step.
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
