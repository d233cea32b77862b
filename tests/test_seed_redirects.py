"""A seed's redirect chain is part of the seed: the scope follows where it lands, and a crawl
that archives nothing says so (its exit code, and verify)."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys

from aiohttp import web
from conftest import manifest_rows

from archiver.mirror.build import build_mirror
from archiver.report import NOTHING_ARCHIVED, UNRECORDED_LINK
from archiver.verify.verifier import verify_snapshot

RESOLVE = (("site.test", "127.0.0.1"), ("www.site.test", "127.0.0.1"))


def named(site, host: str, path: str = "/") -> str:
    return f"http://{host}:{site.server.port}{path}"


async def test_a_seed_redirecting_to_www_is_followed_and_www_joins_the_scope(site, run_crawl):
    async def home(request: web.Request) -> web.Response:
        if request.host.startswith("site.test"):  # the bare name sends everyone to www.
            raise web.HTTPMovedPermanently(named(site, "www.site.test", request.path))
        links = f'<a href="/a">a</a><a href="{named(site, "site.test", "/b")}">bare b</a>'
        return web.Response(text=f"<title>home</title>{links}", content_type="text/html")

    for path in ("/", "/a", "/b"):
        site.handler(path, home)
    await site.start()
    result = await run_crawl(named(site, "site.test"), resolve=RESOLVE)
    rows = manifest_rows(result.snapshot.root)
    assert rows[named(site, "site.test")].outcome == "redirected"
    assert rows[named(site, "www.site.test")].outcome == "fetched"
    assert rows[named(site, "www.site.test", "/a")].outcome == "fetched"  # www. is in scope now
    assert rows[named(site, "site.test", "/b")].outcome == "redirected"  # and so is the seed's host
    assert not result.seeds_failed
    build_mirror(result.snapshot.root)
    assert verify_snapshot(result.snapshot.root).ok
    # verify judges links by the same widened scope: a www. link left unrecorded is a gap.
    with sqlite3.connect(result.snapshot.root / "manifest.sqlite3") as db:
        db.execute("DELETE FROM urls WHERE url = ?", (named(site, "www.site.test", "/a"),))
    report = verify_snapshot(result.snapshot.root, check_mirror=False)
    assert {p.where for p in report.examples[UNRECORDED_LINK]} == {named(site, "www.site.test", "/a")}


async def test_a_seed_redirecting_out_of_its_prefix_moves_the_prefix(site, run_crawl):
    site.redirect("/old/", "/new/")
    site.page("/new/", links=["/new/a", "/elsewhere"])
    site.page("/new/a")
    site.page("/elsewhere")
    await site.start()
    result = await run_crawl(site.url("/old/"), scope="prefix")
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/new/")].outcome == "fetched"
    assert rows[site.url("/new/a")].outcome == "fetched"
    assert (rows[site.url("/elsewhere")].outcome, rows[site.url("/elsewhere")].reason) == (
        "skipped",
        "out of scope",
    )


async def test_a_seed_redirecting_outside_include_is_followed_its_links_are_judged(site, run_crawl):
    site.redirect("/docs", "/documentation/")
    site.page("/documentation/", links=["/documentation/a", "/docs/b"])
    site.page("/docs/b")
    await site.start()
    result = await run_crawl(site.url("/docs"), include=("/docs",))
    rows = manifest_rows(result.snapshot.root)
    assert rows[site.url("/documentation/")].outcome == "fetched"
    assert rows[site.url("/docs/b")].outcome == "fetched"
    # --include applies to links, not to the seed's own chain.
    assert rows[site.url("/documentation/a")].reason == "excluded"
    assert not result.seeds_failed


async def test_a_seed_redirecting_into_exclude_archives_nothing_and_says_so(site, run_crawl):
    site.redirect("/", "/private/")
    site.page("/private/")
    await site.start()
    result = await run_crawl(site.url("/"), exclude=("/private",))
    assert site.hits["/private/"] == 0
    assert result.seeds_failed == [
        (site.url("/"), f"redirected to {site.url('/private/')}: skipped, excluded")
    ]
    report = verify_snapshot(result.snapshot.root)
    assert not report.ok and report.counts[NOTHING_ARCHIVED] == 1


async def test_a_crawl_that_archives_nothing_exits_non_zero_and_verify_says_why(site, tmp_path):
    site.redirect("/", "/gone")
    site.file("/gone", "gone", "text/plain", status=404)
    await site.start()
    snapshot = tmp_path / "snap"
    crawl = [sys.executable, "-m", "archiver", "crawl", site.url("/"), "-o", str(snapshot), "--quiet"]
    done = await asyncio.to_thread(subprocess.run, crawl, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.strip() == (
        f"archiver: error: could not fetch {site.url('/')}: redirected to {site.url('/gone')}: HTTP 404"
    )
    verify = [sys.executable, "-m", "archiver", "verify", str(snapshot)]
    done = await asyncio.to_thread(subprocess.run, verify, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "nothing_archived" in done.stdout


async def test_one_seed_archived_is_enough_for_verify(site, run_crawl):
    site.page("/")
    site.file("/missing", "no", "text/plain", status=404)
    await site.start()
    result = await run_crawl(site.url("/"), site.url("/missing"))
    assert result.seeds_failed == [(site.url("/missing"), "HTTP 404")]
    assert verify_snapshot(result.snapshot.root, check_mirror=False).counts[NOTHING_ARCHIVED] == 0
