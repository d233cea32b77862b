-- KEYS budget; ARGV max pages, max bytes (-1: none), bytes to add (0: a node counts them as it
-- fetches, RedisBudget.add_bytes) -> 0, or 1/2 for the limit.
local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[3])
local pages = tonumber(redis.call('HGET', KEYS[1], 'pages') or '0')
if tonumber(ARGV[1]) >= 0 and pages >= tonumber(ARGV[1]) then return 1 end
if tonumber(ARGV[2]) >= 0 and bytes >= tonumber(ARGV[2]) then return 2 end
redis.call('HINCRBY', KEYS[1], 'pages', 1)
return 0
