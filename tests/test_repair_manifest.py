"""A snapshot whose manifest is lost or damaged gets it back from its WARC files: crawl --resume --repair."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import manifest_rows
from repairs import facts, lose_and_repair, lose_manifest, mirror_bytes, run_archiver
from test_browser import CHROMIUM
from test_repair_index import crawled

from archiver.scope import ROBOTS

__all__ = ["crawled"]  # the fixture, used by name


def overwrite_its_middle(root: Path) -> None:
    manifest = root / "manifest.sqlite3"
    data = bytearray(manifest.read_bytes())
    data[4096 : 4096 * 2] = b"\xa5" * 4096  # its second page: the urls table's
    manifest.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [lose_manifest, overwrite_its_middle], ids=["lost", "damaged"])
async def test_a_manifest_lost_or_damaged_is_written_again_from_the_warc_files(
    crawled: Path, site, damage: Callable[[Path], None]
) -> None:
    """verify and mirror name the command that mends it; crawl --resume --repair sets a damaged
    manifest aside, writes every capture's row again (redirects, the revisit, the 404, robots.txt),
    meets the links of the archived pages again (the one out of scope skipped, the one robots.txt
    keeps out skipped for it, the one that failed fetched again), fetches nothing already
    archived, and verify passes on a mirror the same as the crawl's but for the page fetched now."""
    root = crawled
    before = manifest_rows(root, for_crawlers=True)
    mirror = mirror_bytes(root)
    hits = dict(site.hits)
    damage(root)
    damaged = (root / "manifest.sqlite3").read_bytes() if (root / "manifest.sqlite3").exists() else None

    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1 and "missing_manifest" in verified.stdout
    assert (
        f"write it again from the WARC files with: archiver crawl --resume {root} --repair" in verified.stdout
    )
    refused = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root))
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert "--repair" in refused.stderr

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 4, repaired.stderr  # as the crawl: /missing answered 404
    captures = sum(1 for row in before.values() if row.warc_file)
    assert f"written again from the WARC files, {captures} captures" in repaired.stderr
    assert dict(site.hits) == {**hits, "/later": hits["/later"] + 1}
    if damaged is not None:
        (kept,) = root.glob("manifest.sqlite3.damaged-*[!lm]")
        assert kept.read_bytes() == damaged

    after = manifest_rows(root, for_crawlers=True)
    failed, fetched = before.pop(site.url("/later")), after.pop(site.url("/later"))
    assert (failed.outcome, fetched.outcome, fetched.status) == ("failed", "fetched", 200)
    assert facts(after) == facts(before)
    assert after[site.url("/private/x")].reason == before[site.url("/private/x")].reason == ROBOTS
    assert after[site.url("/")].found_by == "seed" and after[site.url("/robots.txt")].found_by == "robots"
    assert (after[site.url("/new")].found_by, after[site.url("/new")].parent) == (
        "redirect",
        site.url("/older"),
    )
    # The page fetched now has its file, and the home page's link to it leads there.
    home = f"mirror/{after[site.url('/')].local_path}"
    linked = mirror[home].replace(
        f'href="{site.url("/later")}"'.encode(),
        f'href="{Path(str(fetched.local_path)).name}"'.encode(),
    )
    assert linked != mirror[home]
    assert mirror_bytes(root) == {
        **mirror,
        home: linked,
        f"mirror/{fetched.local_path}": b"<title>later</title>",
    }
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


def kept_bytes(root: Path) -> dict[Path, bytes]:
    """Every file of the snapshot, by path, but SQLite's shared-memory index of the manifest's
    log (-shm), which any reader of the manifest writes."""
    return {
        path: path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and path.suffix != ".sqlite3-shm"
    }


COMMANDS_OPENING_A_MANIFEST = {
    "mirror": lambda root, elsewhere, _site: ["mirror", str(root)],
    "export": lambda root, elsewhere, _site: ["export", str(root), "--wacz", str(elsewhere / "snap.wacz")],
    "diff from it": lambda root, elsewhere, _site: ["diff", str(root), str(elsewhere / "other")],
    "diff to it": lambda root, elsewhere, _site: ["diff", str(elsewhere / "other"), str(root)],
    "crawl --previous": lambda root, elsewhere, site: [
        "crawl",
        site.url("/"),
        "-o",
        str(elsewhere / "new"),
        "--previous",
        str(root),
    ],
}
"""Each command that reads a snapshot's manifest, given that snapshot (``root``), a folder of its
own (``elsewhere``: another snapshot, whole, to compare with) and the site."""


@pytest.mark.parametrize("damage", [lose_manifest, overwrite_its_middle], ids=["lost", "damaged"])
@pytest.mark.parametrize("command", COMMANDS_OPENING_A_MANIFEST)
async def test_a_command_given_a_snapshot_whose_manifest_is_lost_or_damaged_names_the_repair(
    crawled: Path, tmp_path: Path, site, command: str, damage: Callable[[Path], None]
) -> None:
    """Every command that reads the manifest refuses it in one line that says how to get it back,
    and changes nothing."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copytree(crawled, elsewhere / "other")
    damage(crawled)
    before = kept_bytes(crawled)
    hits = dict(site.hits)
    argv = COMMANDS_OPENING_A_MANIFEST[command](crawled, elsewhere, site)

    refused = await asyncio.to_thread(run_archiver, *argv)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("archiver: error: "), refused.stderr
    assert refused.stderr.endswith(
        f"write it again from its WARC files with: archiver crawl --resume {crawled} --repair\n"
    )
    lost, damaged = (
        f"{crawled} has lost its manifest (manifest.sqlite3); ",
        f"{crawled}: the manifest is damaged: ",
    )
    assert (lost if damage is lose_manifest else damaged) in refused.stderr
    assert kept_bytes(crawled) == before
    assert sorted(path.name for path in elsewhere.iterdir()) == ["other"] and dict(site.hits) == hits


async def test_the_rendered_doms_of_a_lost_manifest_are_given_back_to_their_pages(site, run_crawl) -> None:
    """A crawl that rendered its pages in a browser: each page's rendered DOM is found again in the
    WARC files, the link only its script wrote is met again from it, no page is rendered or
    fetched again, and verify passes on the same mirror."""
    script = "document.body.insertAdjacentHTML('beforeend', '<a href=\"/built\">built</a>')"
    site.page("/", links=["/a"], body=f"<script>{script}</script>")
    site.page("/a").page("/built")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    rows = manifest_rows(root)
    assert rows[site.url("/")].dom_warc_file and rows[site.url("/built")].outcome == "fetched"

    repaired = await lose_and_repair(root, site)
    before, after = repaired.before, repaired.after
    rendered = ("dom_warc_file", "dom_warc_offset", "dom_warc_length")
    assert {url: [getattr(row, name) for name in rendered] for url, row in after.items()} == {
        url: [getattr(row, name) for name in rendered] for url, row in before.items()
    }
    assert (after[site.url("/built")].found_by, after[site.url("/built")].parent) == ("link", site.url("/"))


async def test_a_redirect_loop_of_a_lost_manifest_fails_as_the_crawl_failed_it(site, run_crawl) -> None:
    """The hop that closes a loop, and one past --max-redirects, are failures the crawl recorded
    with their reason: found again so, their chains end, and verify passes."""
    site.page("/", links=["/loop1", "/far1"])
    site.redirect("/loop1", "/loop2").redirect("/loop2", "/loop1")
    site.redirect("/far1", "/far2").redirect("/far2", "/far3").redirect("/far3", "/far4").page("/far4")
    await site.start()
    root = (await run_crawl(site.url("/"), max_redirects=2)).snapshot.root
    rows = manifest_rows(root)
    assert (rows[site.url("/loop2")].outcome, rows[site.url("/far3")].outcome) == ("failed", "failed")

    await lose_and_repair(root, site, exit_code=4, same_mirror=False)  # as the crawl: the failed redirects


async def test_a_3xx_the_crawl_does_not_follow_is_given_back_as_the_page_it_was(site, run_crawl) -> None:
    """A 300, 305 or 399 with a Location is a page to the crawl (only 301, 302, 303, 307 and 308
    are followed): its rebuilt row is that page, its type sniffed as the crawl sniffed it, not a
    redirect to the Location."""
    site.page("/", links=["/choices", "/proxy", "/odd"])
    untyped = b"<!doctype html><title>pick one</title><a href='/a'>a</a>"
    site.file("/choices", untyped, "", status=300, headers={"Location": "/a"})
    site.file("/proxy", "<p>use a proxy</p>", status=305, headers={"Location": "/a"})
    site.file("/odd", "<p>odd</p>", status=399, headers={"Location": "/a"})
    site.page("/a")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    rows = manifest_rows(root)
    assert {rows[site.url(path)].outcome for path in ("/choices", "/proxy", "/odd")} == {"fetched"}
    assert rows[site.url("/choices")].content_type == "text/html"  # sniffed: a page a browser shows

    await lose_and_repair(root, site, same_mirror=False)


def empty_manifest(root: Path) -> None:
    """The manifest left empty, as a full disk leaves a file SQLite had just made."""
    lose_manifest(root)
    (root / "manifest.sqlite3").write_bytes(b"")


async def test_an_empty_manifest_set_aside_is_said_so(site, run_crawl) -> None:
    """A manifest file left empty holds no crawl: the repair set it aside and wrote it again, and
    said "None (set aside as ...)". It now says the manifest held nothing, where it is kept, and
    that it was written again; the rows are the crawl's and verify passes."""
    site.page("/", links=["/a"]).page("/a")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    repaired = await lose_and_repair(root, site, empty_manifest)
    kept = next(root.glob("manifest.sqlite3.damaged-*Z")).name
    assert f"the manifest held nothing (set aside as {kept}): written again from the WARC files" in (
        repaired.stderr
    ), repaired.stderr
    assert "None" not in repaired.stderr, repaired.stderr


async def test_links_a_page_says_not_to_follow_stay_skipped_after_a_repair(site, run_crawl) -> None:
    """A manifest written again from the WARC files gave the links of a page whose robots meta or
    X-Robots-Tag (or a robots meta named for our robot) says nofollow the row of any link met:
    queued, and the resume that follows fetched them. They are skipped for nofollow again now, as
    the crawl skipped them; one that a page letting its links be followed names too is followed,
    as in the crawl."""
    site.page("/", links=["/meta", "/header", "/follows", "/named"])
    site.file("/named", '<meta name="archiver" content="nofollow"><a href="/t-named">t</a>')
    site.file(
        "/meta", '<meta name="robots" content="nofollow"><a href="/t-meta">t</a><a href="/shared">s</a>'
    )
    site.file("/header", '<a href="/t-header">t</a>', headers={"X-Robots-Tag": "noindex, nofollow"})
    site.page("/follows", links=["/shared"])
    for path in ("/t-meta", "/t-header", "/t-named", "/shared"):
        site.page(path)
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False, concurrency=1)).snapshot.root
    rows = manifest_rows(root)
    skipped = ("/t-meta", "/t-header", "/t-named")
    assert {rows[site.url(path)].reason for path in skipped} == {"nofollow"}
    assert rows[site.url("/shared")].outcome == "fetched"

    repaired = await lose_and_repair(root, site)
    assert {repaired.after[site.url(path)].reason for path in skipped} == {"nofollow"}
    assert site.hits["/t-meta"] == site.hits["/t-header"] == site.hits["/t-named"] == 0


async def test_a_link_skipped_for_nofollow_and_queued_elsewhere_is_queued_after_a_repair(
    site, run_crawl
) -> None:
    """A URL never fetched that a nofollow page names first and a page that lets its links be
    followed names next was queued by the crawl (found on the second page): a repair gives it
    that row again, not the nofollow of the first meeting."""
    site.page("/", links=["/meta", "/follows"])
    site.file("/meta", '<meta name="robots" content="nofollow"><a href="/shared">s</a>')
    site.page("/follows", links=["/shared"])
    site.page("/shared")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False, concurrency=1, max_pages=3)).snapshot.root
    shared = manifest_rows(root)[site.url("/shared")]
    assert (shared.parent, shared.reason) == (site.url("/follows"), "page limit")

    lose_manifest(root)
    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    shared = manifest_rows(root)[site.url("/shared")]
    assert (shared.parent, shared.reason) == (site.url("/follows"), "page limit")
    assert site.hits["/shared"] == 0
