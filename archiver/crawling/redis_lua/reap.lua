-- ARGV prefix -> {node, items queued again, ...} for each node whose heartbeat ran out.
return reap(ARGV[1])
