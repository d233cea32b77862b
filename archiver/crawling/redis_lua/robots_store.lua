-- ARGV prefix, node, token, host[, status or '', ms it is good for, misses, body, URL it came
-- from] -> 1: the robots.txt answer stored for every node (without one, the turn is given up),
-- the lock let go.
local host = ARGV[4]
if ARGV[5] then
  local good_until = string.format('%d', now() + tonumber(ARGV[6]))
  local entry = ARGV[5] .. ' ' .. good_until .. ' ' .. ARGV[7] .. ' ' .. ARGV[9] .. '\n' .. ARGV[8]
  redis.call('HSET', prefix .. 'robots', host, entry)
end
local lock = prefix .. 'robots-lock:' .. host
if redis.call('GET', lock) == node .. '\n' .. ARGV[3] then
  redis.call('DEL', lock)
end
return 1
