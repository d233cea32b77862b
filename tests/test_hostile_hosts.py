"""Hosts no request can reach by name: one that does not exist, one no request can name."""

from __future__ import annotations

from conftest import manifest_rows

from archiver.verify.verifier import verify_snapshot

NO_SUCH_HOST = "http://no-such-host.invalid/page"
"""RFC 6761 has resolvers answer that no name under .invalid exists (NXDOMAIN)."""
UNNAMEABLE_HOST = f"http://{'b' * 64}.example/page"
"""A label past the 63 letters DNS allows: IDNA encodes it to no name a request can carry."""


async def test_pages_of_a_host_no_request_can_reach_by_name_fail_with_that_reason(site, run_crawl):
    """The robots.txt of a host that does not exist failed as any unanswered robots.txt does, so
    its pages were recorded as skipped, "robots.txt unreachable", as if --ignore-robots would
    fetch them, with a warning for each such host and its robots.txt asked again every minute.
    There is no server to have rules: each page fails at once, its tries unspent, with the
    reason its robots.txt failed, and the crawl warns of no robots.txt out of reach."""
    site.page("/", links=[NO_SUCH_HOST, UNNAMEABLE_HOST, "/here"])
    site.page("/here")
    await site.start()
    root = (await run_crawl(site.url("/"), scope="any", max_depth=1, max_tries=3)).snapshot.root
    rows = manifest_rows(root, for_crawlers=True)
    assert rows[site.url("/here")].outcome == "fetched"
    for page, why in ((NO_SUCH_HOST, "no-such-host.invalid"), (UNNAMEABLE_HOST, "label empty or too long")):
        robots = rows[page.replace("/page", "/robots.txt")]
        row = rows[page]
        assert (robots.outcome, robots.tries, row.outcome, row.tries) == ("failed", 1, "failed", 1), (
            robots,
            row,
        )
        assert row.reason and why in row.reason and "\n" not in row.reason, row
    log = (root / "logs" / "crawl.log").read_text()
    assert "out of reach" not in log, log
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))[:2000]
