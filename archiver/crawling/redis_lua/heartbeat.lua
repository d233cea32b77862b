-- ARGV prefix, node, token, ttl ms -> 1, or 0 if the node was given up. A node silent past its
-- time but not reaped yet is still a member: nobody took its items, and it goes on.
local prefix, node, token = ARGV[1], ARGV[2], ARGV[3]
if not is_member(prefix, node, token) then return 0 end
redis.call('SET', prefix .. 'node:' .. node, token, 'PX', ARGV[4])
return 1
