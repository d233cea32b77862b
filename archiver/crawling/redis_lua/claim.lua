-- ARGV prefix, node, token, redo job ('' if none), (digest, item or '' for a URL recorded
-- outside the queue)... -> 1 for each one claimed here, 0 if claimed before; for a URL recorded
-- outside the queue by a node given up before it committed its row, the JSON list of the
-- [node, token] whose parts may hold the row (it is this node's to record, unless they do).
local redo = ARGV[4]
local out = {}
for i = 5, #ARGV, 2 do
  local digest, member = ARGV[i], ARGV[i + 1]
  if redis.call('SADD', prefix .. 'seen', digest) == 1 then
    if member ~= '' then
      redis.call('HSET', prefix .. 'staged:' .. node, digest, member)
    elseif redo ~= '' then
      redis.call('HSET', prefix .. 'outside:' .. node, digest, redo .. '\n[]')
    end
    out[#out + 1] = 1
  else
    local looks = false
    if member == '' and redo ~= '' then
      looks = redis.call('HGET', prefix .. 'orphans', digest)
    end
    if looks then
      redis.call('HDEL', prefix .. 'orphans', digest)
      redis.call('HSET', prefix .. 'outside:' .. node, digest, redo .. '\n' .. looks)
      out[#out + 1] = looks
    else
      out[#out + 1] = 0
    end
  end
end
return out
