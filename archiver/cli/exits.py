"""The exit codes of the archiver command: the table ``archiver --help`` and the README show.

Codes from 128 on follow the shell's rule: 128 plus the number of the signal
that stopped the command. A stopped or interrupted crawl is resumable.
"""

EXIT_OK = 0
"""Done: the crawl finished, the mirror was built, verify found the snapshot complete."""
EXIT_PROBLEMS = 1
"""verify found problems; a mirror build, or a crawl's last pass over its mirror, left captures
without a file or kept files their damaged records cannot vouch for; a crawl archived nothing
(every seed failed); a merge (``archiver merge``, the one ``archiver mirror`` runs first, or a shared
crawl's last node's) left a node's part out, so verify fails on the snapshot."""
EXIT_USAGE = 2
"""Bad options or input, a folder that is no snapshot, or one another process is writing."""
EXIT_STOPPED = 3
"""Stopped by a write error (a full disk), or a crawl node by the loss of its crawl's Redis: what
was written is whole; resume when there is room (start the node again)."""
EXIT_WITH_ERRORS = 4
"""The crawl finished, but some URLs answered 4xx/5xx or could not be fetched (the report lists them)."""
EXIT_TIME_LIMIT = 15
"""The crawl stopped at its --max-time: resumable."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT), or ``archiver control TARGET stop``."""
EXIT_BROKEN_PIPE = 141
"""The reader of the output went away (archiver verify ... | head): SIGPIPE."""
EXIT_TERMINATED = 143
"""SIGTERM."""

TABLE = f"""exit codes:
  {EXIT_OK}    done (verify: the snapshot is complete and intact)
  {EXIT_PROBLEMS}    verify found problems, a mirror build (or a crawl's last mirror pass) left
       files out or kept files whose records are damaged (see its summary), a crawl
       archived nothing (every seed failed), or a merge left a crawl node's part out
  {EXIT_USAGE}    bad options or input, not a snapshot, or a snapshot another process is writing;
       a crawl whose browser exits as it starts (stopped at its first render; resumable)
  {EXIT_STOPPED}    stopped by a write error (a full disk), or a crawl node by the loss of its
       Redis or given up by the others; resumable once there is room (a node: started again)
  {EXIT_WITH_ERRORS}    a crawl finished, but some URLs answered 4xx/5xx or failed (see its report)
  {EXIT_TIME_LIMIT}   a crawl stopped at its --max-time; resumable
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (SIGINT) or archiver control ... stop; resumable
  {EXIT_BROKEN_PIPE}  the output's reader went away (... | head)
  {EXIT_TERMINATED}  stopped by SIGTERM; resumable"""
