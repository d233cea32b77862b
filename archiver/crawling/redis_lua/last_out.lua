-- ARGV prefix, token, ttl ms -> {1} if no node is left and the caller merges the parts (one
-- caller gets it: the merger key holds its token for ttl ms), {2} if they are merged, else {0,
-- node, milliseconds its heartbeat has left, ...} (no node: another merges, alive), once the
-- silent nodes are reaped.
return last_out(ARGV[1], ARGV[2], ARGV[3])
