"""What the manifest says of how each URL was found, proven from the links verify reads.

A row found by a link or as a requisite names as its parent a page that links to it (of
the pages whose every link verify read: not rendered, whose scripts request URLs no link
names), one depth deeper, unless it is a requisite of a page loaded as a frame of a rendered
one (store/frames.py: the frame's scripts ran in that render); one found by a redirect, the
URL that redirects to it, at its depth; a seed has depth 0. completeness.LinkCheck notes, as
it reads each page's links, the rows the page proves (``verify_linked``) and the pages read
whole (``verify_parsed``):
temporary tables of verify's own connection (on disk past SQLite's cache), the manifest
untouched. check_discovery() then reports the rows no page proved.
"""

from __future__ import annotations

from dataclasses import dataclass

from archiver.report import WRONG_DISCOVERY, Report
from archiver.store.frames import ran_in_a_render
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow

FOUND_ON_A_PAGE = ("link", "requisite")
"""How a row found on a page says it was found (its parent is that page)."""
SCRATCH = (
    "CREATE TEMP TABLE IF NOT EXISTS verify_parsed (url TEXT PRIMARY KEY) WITHOUT ROWID;"
    "CREATE TEMP TABLE IF NOT EXISTS verify_linked (url TEXT PRIMARY KEY) WITHOUT ROWID;"
)
"""Pages whose every link was read, and rows whose parent was seen linking to them."""


@dataclass(frozen=True)
class Met:
    """What the manifest says of a URL a page links to."""

    url: str
    """As the row holds it (an earlier version kept some URLs unescaped)."""
    found_by: str
    parent: str | None
    depth: int


def met_of(row: ManifestRow | None) -> Met | None:
    """What ``row`` says of how its URL was found (None for no row)."""
    return None if row is None else Met(row.url, row.found_by, row.parent, row.depth)


def check_discovery(manifest: Manifest, report: Report) -> None:
    """Report rows found on a page that page does not link to (of the pages whose every link was
    read), rows found by a redirect their parent does not redirect to or of another depth, and
    seeds of a depth other than 0."""
    db = manifest.connection
    on_a_page = ", ".join(f"'{how}'" for how in FOUND_ON_A_PAGE)
    for url, parent, found_by in db.execute(
        f"SELECT url, parent, found_by FROM urls WHERE found_by IN ({on_a_page}) "
        "AND parent IN (SELECT url FROM verify_parsed) AND url NOT IN (SELECT url FROM verify_linked)"
    ):
        # A frame of a rendered page asked for it in that render, as its scripts do.
        page = manifest.get(parent) if found_by == "requisite" else None
        if page is None or not ran_in_a_render(page, manifest.get):
            report.add(WRONG_DISCOVERY, url, f"its parent {parent} does not link to it")
    for url, parent, depth, redirect_to, parent_depth in db.execute(
        "SELECT u.url, u.parent, u.depth, p.redirect_to, p.depth FROM urls AS u "
        "LEFT JOIN urls AS p ON p.url = u.parent WHERE u.found_by = 'redirect'"
    ):
        if redirect_to != url:
            report.add(WRONG_DISCOVERY, url, f"its parent {parent} does not redirect to it")
        elif depth != parent_depth:
            report.add(
                WRONG_DISCOVERY,
                url,
                f"depth {depth}: {parent}, which redirects to it, is of depth {parent_depth}",
            )
    for url, depth in db.execute("SELECT url, depth FROM urls WHERE found_by = 'seed' AND depth != 0"):
        report.add(WRONG_DISCOVERY, url, f"depth {depth}: a seed is of depth 0")
