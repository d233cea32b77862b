"""The rows of a robots.txt or sitemap and of its redirects, as the crawl wrote them, found
again for a rebuilt manifest (store/rebuild.py).

The crawl fetches them outside its queue (crawling/recorded.py): each hop of their chains is
found by ``robots`` or ``sitemap`` at depth 0, its parent the hop before, and the hop a chain
was given up at (a loop, more redirects than a robots.txt's robots_redirects() or a sitemap's
--max-redirects) failed, its target never asked. Read from the WARC files alone, that hop is a
redirect to a URL with no row: a chain that ends nowhere, which verify reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from archiver.redirects import redirect_failure
from archiver.store.rows import FAILED, REDIRECTED, ManifestRow


def chain_rows(
    first: ManifestRow, found_by: str, hops: int, row_of: Callable[[str], ManifestRow | None]
) -> Iterator[ManifestRow]:
    """The rows of ``first`` (a robots.txt or sitemap found by ``found_by``) and of the hops its
    redirects lead to, as the crawl wrote them following ``hops`` redirects at most;
    ``row_of(url)``: a URL's row as its capture gives it, None if it has none (or is met already).

    >>> from archiver.store.rows import FETCHED
    >>> rows = {u: ManifestRow(u, "link", 1, REDIRECTED, redirect_to=u + "x") for u in ("/r", "/rx")}
    >>> [(row.url, row.parent, row.outcome) for row in chain_rows(rows["/r"], "robots", 1, rows.get)]
    [('/r', None, 'redirected'), ('/rx', '/r', 'failed')]
    """
    chain: list[str] = []
    row: ManifestRow | None = first
    while row is not None:
        row = dataclasses.replace(row, found_by=found_by, depth=0, parent=chain[-1] if chain else None)
        target = row.redirect_to if row.outcome == REDIRECTED else None
        failure = redirect_failure(target, (*chain, row.url), len(chain), hops) if target else None
        if failure is not None:
            row = dataclasses.replace(row, outcome=FAILED, reason=failure)
        yield row
        if target is None or failure is not None:
            return
        chain.append(row.url)
        row = row_of(target)
