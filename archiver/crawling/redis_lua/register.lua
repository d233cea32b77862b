-- ARGV prefix, node, token, ttl ms -> Redis time (ms) joined, or -1 if the name is taken.
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
