"""A re-archive (crawl --previous OLD) that lost its manifest gets it back from its WARC files,
its revisits of OLD's records included: crawl --resume --repair."""

from __future__ import annotations

import pytest
from rearchive_site import rearchived, revisits
from repairs import found, lose_and_repair

from archiver.warc.records import NOT_MODIFIED_PROFILE, REVISIT_PROFILE


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
    kinds = revisits(new)
    assert {profile for profile, _url, _date in kinds.values()} == {NOT_MODIFIED_PROFILE, REVISIT_PROFILE}

    repaired = await lose_and_repair(new, site)
    assert found(repaired.after) == found(repaired.before)
    assert revisits(new) == kinds
