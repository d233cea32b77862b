"""The status the merge gives a shared crawl in its crawl.json, through a real Redis and real
node processes: finished when Redis says every URL is done, whichever nodes were lost on the way."""

from __future__ import annotations

import json
import os
import signal

from node_site import archiver, finish, run_archiver
from test_node_losses import check_snapshot, first_node_held, node_key, until


async def test_a_crawl_that_lost_a_node_is_finished_when_redis_says_it_is(tmp_path, redis_url):
    """A node killed during the crawl left its part "running"; the merge recovered that part and
    noted it interrupted, which made the whole crawl's crawl.json say interrupted though Redis
    said every URL was done (and refused a node joining it: "crawl ... is finished"). The crawl
    is now finished, in the last node's merge and in a merge run again by hand."""
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    async with first_node_held(tmp_path, redis_url, "lost-one") as crawl:
        idle = archiver(*crawl.args, "--node", "n2")
        await until(lambda: node_key(client, "lost-one", "n2"))
        await client.aclose()
        os.kill(idle.pid, signal.SIGKILL)
        await finish(idle)
        crawl.answer.set()
        code, text = await finish(crawl.working)
        assert code == 0, text
        await check_snapshot(crawl.output, crawl.site, text)
        part = json.loads((crawl.output / "nodes" / "n2" / "crawl.json").read_text())
        assert part["status"] == "interrupted"  # the killed node's own part says so
        assert json.loads((crawl.output / "crawl.json").read_text())["status"] == "finished"
        code, text = await run_archiver("merge", str(crawl.output))
        assert code == 0, text
        assert json.loads((crawl.output / "crawl.json").read_text())["status"] == "finished"
