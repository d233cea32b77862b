"""What a node's lost manifest alone held of a URL (it failed, leaving no record) is not given
back by ``archiver merge DIR --repair`` as a URL still to fetch: the repaired snapshot verifies."""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import web
from conftest import manifest_rows
from node_site import TreeSite, assert_verified, finish, node_args, run_archiver, started_together
from repairs import lose_manifest

from archiver.store.rows import FAILED

CUT = "/p5"
"""The page whose every request the server answers by closing the connection."""


class CutSite(TreeSite):
    """A TreeSite whose page CUT fails: the connection is closed before any answer."""

    async def _page(self, request: web.Request) -> web.Response:
        if request.path == CUT:
            self.hits[CUT] += 1
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)  # never sent: the connection is gone
        return await super()._page(request)


async def test_a_failure_only_a_lost_part_held_is_not_given_back_as_queued(
    tmp_path: Path, redis_url: str
) -> None:
    # One node crawls the site; CUT fails, and its row, with no record, is in the node's part
    # alone. That part's manifest lost, merge --repair wrote it again from the WARC files and
    # gave CUT back as queued, a URL no node would fetch (the crawl is finished): verify then
    # failed the snapshot (unfinished_crawl), though the command it named had been run.
    site = CutSite(12)
    await site.start()
    output = tmp_path / "snap"
    args = node_args(site.url(), output, redis_url, "lost-failure", "--no-mirror", "--max-tries", "1")
    try:
        (node,) = (await started_together(site, redis_url, "lost-failure", args, ["n1"])).values()
        code, text = await finish(node)
        assert code == 4, text  # CUT failed
        assert manifest_rows(output)[site.url(CUT)].outcome == FAILED
        part = output / "nodes" / "n1"
        lose_manifest(part)
        record = json.loads((part / "crawl.json").read_text())
        record["status"] = "running"  # as a node killed with kill -9 leaves it
        (part / "crawl.json").write_text(json.dumps(record))

        code, text = await run_archiver("merge", str(output), "--repair")
        assert code == 0, text
        row = manifest_rows(output)[site.url(CUT)]
        assert row.outcome == FAILED and row.reason, row
        assert_verified(output, text)
    finally:
        await site.close()
