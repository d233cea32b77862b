"""One walk of redirect chains: the rule itself, table-driven, and the manifest, the mirror and
verify agreeing on where a long chain ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from snapshot_builder import SnapshotBuilder

from archiver.mirror.build import build_mirror
from archiver.redirects import ENDS, LOOP, MAX_CHAIN_HOPS, TOO_LONG, follow_chain
from archiver.store.manifest import Manifest
from archiver.verify.report import DANGLING_REDIRECT
from archiver.verify.verifier import verify_snapshot


def line(length: int) -> dict[str, str]:
    """u0 -> u1 -> ... -> u<length>."""
    return {f"u{n}": f"u{n + 1}" for n in range(length)}


@pytest.mark.parametrize(
    ("hops", "start", "urls", "ending", "final"),
    [
        ({}, "a", ("a",), ENDS, "a"),
        ({"a": "b"}, "a", ("a", "b"), ENDS, "b"),
        ({"a": "b", "b": "c"}, "b", ("b", "c"), ENDS, "c"),
        ({"a": "a"}, "a", ("a", "a"), LOOP, None),
        ({"a": "b", "b": "c", "c": "b"}, "a", ("a", "b", "c", "b"), LOOP, None),
        (line(MAX_CHAIN_HOPS), "u0", tuple(f"u{n}" for n in range(MAX_CHAIN_HOPS + 1)), ENDS, "u100"),
        (line(MAX_CHAIN_HOPS + 1), "u0", tuple(f"u{n}" for n in range(MAX_CHAIN_HOPS + 1)), TOO_LONG, None),
    ],
)
def test_follow_chain(
    hops: dict[str, str], start: str, urls: tuple[str, ...], ending: str, final: str | None
):
    chain = follow_chain(start, hops.get)
    assert (chain.urls, chain.ending, chain.final) == (urls, ending, final)


def test_a_long_chain_ends_alike_in_the_manifest_the_mirror_and_verify(tmp_path: Path) -> None:
    site = "http://site.test"
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{site}/", f'<a href="{site}/r0">start of a long chain</a>')
    hops = 60  # more than the mirror and the manifest used to follow, fewer than verify did
    for n in range(hops):
        target = f"{site}/r{n + 1}" if n + 1 < hops else f"{site}/end"
        snap.redirect(f"{site}/r{n}", target)
    snap.page(f"{site}/end", "<p>the end</p>")
    root = snap.close()
    with Manifest.open(root / "manifest.sqlite3", readonly=True) as manifest:
        assert manifest.get(f"{site}/r0").final_url == f"{site}/end"
    stats = build_mirror(root)
    assert stats.redirects == hops
    page = (root / "mirror" / "site.test" / "index.html").read_text()
    assert 'href="end.html"' in page
    report = verify_snapshot(root)
    assert report.stats["redirects followed"] == hops
    assert DANGLING_REDIRECT not in report.counts
