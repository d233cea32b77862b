-- ARGV prefix, node, token -> items queued again (-1 if the node was given up): a node leaving
-- gives back what it did not finish, its tries not counted, and queues what it claimed.
local prefix, node = ARGV[1], ARGV[2]
if not is_member(prefix, node, ARGV[3]) then return -1 end
return drop_node(prefix, node, false)
