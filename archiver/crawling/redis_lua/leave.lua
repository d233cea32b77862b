-- ARGV prefix, node, token, ttl ms -> as LAST_OUT, once the node is out of the crawl.
local prefix, node = ARGV[1], ARGV[2]
if is_member(prefix, node, ARGV[3]) then
  redis.call('DEL', prefix .. 'node:' .. node)
  redis.call('HDEL', prefix .. 'nodes', node)
end
redis.call('HDEL', prefix .. 'status', node)
return last_out(prefix, ARGV[3], ARGV[4])
