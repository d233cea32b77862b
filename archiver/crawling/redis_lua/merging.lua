-- KEYS merger; ARGV token, ttl ms, or '' once the parts are merged (and the mirror built) -> 1,
-- or 0 if the merge is no longer this node's (silent past ttl, another took it over).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('SET', KEYS[1], 'merged')
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
