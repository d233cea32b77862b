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

from archiver.content import HTML_TYPES, PARSED_TYPES, SVG_TYPE, mime_type
from archiver.report import WRONG_DISCOVERY, Report
from archiver.store.frames import ran_in_a_render
from archiver.store.manifest import Manifest
from archiver.store.rows import QUEUED, ManifestRow

FOUND_ON_A_PAGE = ("link", "requisite")
"""How a row found on a page says it was found (its parent is that page)."""
FOUND_BY = frozenset({"seed", "redirect", "robots", "sitemap", *FOUND_ON_A_PAGE})
"""Every way the crawl finds a URL."""
TITLED_TYPES = HTML_TYPES | {SVG_TYPE}
"""Documents that have a title (a stylesheet, an image have none)."""
FOR_CRAWLERS = ("robots", "sitemap")
"""How the rows of robots.txt and sitemaps say they were found: what lists a sitemap's URLs."""
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
    _check_parents(manifest, report)


def _check_parents(manifest: Manifest, report: Report) -> None:
    """Report what no crawl writes of how a URL was found, whatever verify read: a way it has no
    word for, a row found on a page that names none, or one that does not exist or reads no
    links (an image), a sitemap's URL found on what is no sitemap, and a title on a row that is
    no document."""
    known = ", ".join(f"'{how}'" for how in sorted(FOUND_BY))
    for url, found_by in manifest.connection.execute(
        f"SELECT url, found_by FROM urls WHERE found_by NOT IN ({known})"
    ):
        report.add(WRONG_DISCOVERY, url, f"found by {found_by!r}, a way the crawl has no word for")
    for url, found_by, parent, parent_found_by, parent_type, parent_outcome in manifest.connection.execute(
        "SELECT u.url, u.found_by, u.parent, p.found_by, p.content_type, p.outcome FROM urls AS u "
        "LEFT JOIN urls AS p ON p.url = u.parent WHERE u.found_by IN ('link', 'requisite') "
        "OR (u.found_by = 'sitemap' AND u.parent IS NOT NULL)"
    ):
        if parent is None:
            report.add(WRONG_DISCOVERY, url, f"found as a {found_by} of a page, but names no page")
            continue
        if parent_outcome is None and (row := manifest.get(parent)) is not None:  # an earlier form
            parent_found_by, parent_type, parent_outcome = row.found_by, row.content_type, row.outcome
        if parent_outcome is None:
            report.add(WRONG_DISCOVERY, url, f"its parent {parent} has no row")
        elif found_by == "sitemap" and parent_found_by not in FOR_CRAWLERS:
            report.add(WRONG_DISCOVERY, url, f"found by a sitemap, but its parent {parent} is no sitemap")
        elif (
            found_by != "sitemap" and parent_outcome != QUEUED and mime_type(parent_type) not in PARSED_TYPES
        ):
            what = f"a {mime_type(parent_type)}" if parent_type else f"{parent_outcome} with no document"
            report.add(WRONG_DISCOVERY, url, f"its parent {parent} is {what}, which links to nothing")
    for url, content_type in manifest.connection.execute(
        "SELECT url, content_type FROM urls WHERE title IS NOT NULL"
    ):
        if mime_type(content_type) not in TITLED_TYPES:
            report.add(WRONG_DISCOVERY, url, f"a title, though it is {content_type or 'no document'}")
