-- ARGV prefix, node, token, count of leases, leases, digests -> 1: the leases of items whose
-- outcome is stored, and the URLs recorded outside the queue whose rows are.
local leases = tonumber(ARGV[4])
for i = 5, 4 + leases do
  redis.call('HDEL', prefix .. 'leases:' .. node, ARGV[i])
end
for i = 5 + leases, #ARGV do
  redis.call('HDEL', prefix .. 'outside:' .. node, ARGV[i])
end
return 1
