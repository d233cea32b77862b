-- ARGV prefix -> {items queued, waiting, leased or about to be queued; queue length}.
local prefix = ARGV[1]
local total = redis.call('ZCARD', prefix .. 'queue') + redis.call('ZCARD', prefix .. 'delayed')
for _, node in ipairs(redis.call('HKEYS', prefix .. 'nodes')) do
  total = total + redis.call('HLEN', prefix .. 'leases:' .. node)
  total = total + redis.call('HLEN', prefix .. 'staged:' .. node)
end
return {total, redis.call('ZCARD', prefix .. 'queue')}
