"""A re-archive (crawl --previous OLD) that lost its manifest gets it back from its WARC files,
its revisits of OLD's records included: crawl --resume --repair."""

from __future__ import annotations

import asyncio

import pytest
from conftest import manifest_rows
from rearchive_site import rearchived, revisits
from test_repair_index import mirror_bytes, run_archiver
from test_repair_manifest import facts, lose

from archiver.warc.records import NOT_MODIFIED_PROFILE, REVISIT_PROFILE

FOUND = ("found_by", "parent", "depth")


@pytest.mark.parametrize("chain", [False, True], ids=["of OLD", "of a re-archive of OLD"])
async def test_a_rearchive_that_lost_its_manifest_gets_its_revisits_back(
    site, run_crawl, tmp_path, chain: bool
) -> None:
    """Each revisit's row comes back as the crawl wrote it: a 304's with the status, type and
    length of the response it confirmed in an earlier snapshot, an identical payload's with that
    payload's length; the links of the pages whose bodies only an earlier snapshot holds are met
    again; nothing is fetched, the mirror is the same, and verify passes."""
    _pages, snapshots = await rearchived(site, run_crawl, tmp_path, chain=chain)
    new = snapshots[-1]
    before = manifest_rows(new, for_crawlers=True)
    kinds = revisits(new)
    assert {profile for profile, _url, _date in kinds.values()} == {NOT_MODIFIED_PROFILE, REVISIT_PROFILE}
    mirror, hits = mirror_bytes(new), dict(site.hits)
    lose(new)

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(new), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    assert dict(site.hits) == hits
    after = manifest_rows(new, for_crawlers=True)
    assert facts(after) == facts(before)
    assert {url: [getattr(row, name) for name in FOUND] for url, row in after.items()} == {
        url: [getattr(row, name) for name in FOUND] for url, row in before.items()
    }
    assert revisits(new) == kinds
    assert mirror_bytes(new) == mirror
    verified = await asyncio.to_thread(run_archiver, "verify", str(new))
    assert verified.returncode == 0, verified.stdout
