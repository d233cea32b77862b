"""The rows of a robots.txt or sitemap and of its redirects, as the crawl wrote them, found
again for a rebuilt manifest (store/rebuild.py), and what the stored robots.txt and sitemaps
name: the sitemaps the crawl read, wherever they are, and the URLs they list (read back too by
a resumed crawl, which fetches no sitemap the snapshot holds: kept_sitemap()).

The crawl fetches them outside its queue (crawling/recorded.py): each hop of their chains is
found by ``robots`` or ``sitemap`` at depth 0, its parent the hop before, and the hop a chain
was given up at (a loop, more redirects than a robots.txt's robots_redirects() or a sitemap's
--max-redirects) failed, its target never asked. Read from the WARC files alone, that hop is a
redirect to a URL with no row: a chain that ends nowhere, which verify reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from protego import Protego

from archiver.content import decode_stream
from archiver.redirects import redirect_failure
from archiver.robots_answer import ROBOTS_MAX_BYTES, robots_body
from archiver.sitemaps import Sitemap, SitemapLimits, named_sitemaps, read_sitemap, sitemap_answered
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.rows import FAILED, FETCHED, REDIRECTED, ManifestRow
from archiver.store.stored import payload_record
from archiver.warc.reader import WarcReader, read_to_end


def chain_rows(
    first: ManifestRow,
    found_by: str,
    hops: int,
    row_of: Callable[[str], ManifestRow | None],
    parent: str | None = None,
) -> Iterator[ManifestRow]:
    """The rows of ``first`` (a robots.txt or sitemap found by ``found_by``, named by ``parent``)
    and of the hops its redirects lead to, as the crawl wrote them following ``hops`` redirects
    at most; ``row_of(url)``: a URL's row as its capture gives it, None if it has none (or is
    met already).

    >>> from archiver.store.rows import FETCHED
    >>> rows = {u: ManifestRow(u, "link", 1, REDIRECTED, redirect_to=u + "x") for u in ("/r", "/rx")}
    >>> [(row.url, row.parent, row.outcome) for row in chain_rows(rows["/r"], "robots", 1, rows.get)]
    [('/r', None, 'redirected'), ('/rx', '/r', 'failed')]
    """
    chain: list[str] = []
    row: ManifestRow | None = first
    while row is not None:
        row = dataclasses.replace(row, found_by=found_by, depth=0, parent=chain[-1] if chain else parent)
        target = row.redirect_to if row.outcome == REDIRECTED else None
        failure = redirect_failure(target, (*chain, row.url), len(chain), hops) if target else None
        if failure is not None:
            row = dataclasses.replace(row, outcome=FAILED, reason=failure)
        yield row
        if target is None or failure is not None:
            return
        chain.append(row.url)
        row = row_of(target)


def stored_sitemap(
    manifest: Manifest,
    reader: WarcReader,
    row: ManifestRow,
    previous: Previous | None = None,
    limits: SitemapLimits | None = None,
) -> Sitemap | None:
    """What the sitemap captured in ``row`` lists, read from its record as the crawl read it
    (read_sitemap(), within its ``limits``); None if the record cannot be read."""
    try:
        record, headers = payload_record(manifest, reader, row, previous)
        coding = headers.get_header("Content-Encoding") if headers is not None else None
        sitemap = read_sitemap(iter(lambda: record.raw_stream.read(64 * 1024), b""), coding, limits)
        read_to_end(record)
    except Exception:  # noqa: BLE001 - damaged: verify says so; nothing is found through it
        return None
    return sitemap


def stored_robots_sitemaps(
    manifest: Manifest,
    reader: WarcReader,
    row: ManifestRow,
    robots_url: str,
    previous: Previous | None = None,
) -> list[str]:
    """The sitemaps the robots.txt captured in ``row`` names (its Sitemap: lines), resolved against
    ``robots_url`` as the crawl resolved them, from as much of it as the crawl read (robots_body():
    a line cut at the limit is not read); none if its record cannot be read."""
    body = stored_robots_body(manifest, reader, row, previous)
    if body is None:
        return []
    return named_sitemaps(Protego.parse(body.decode("utf-8-sig", errors="replace")).sitemaps, robots_url)


def stored_robots_body(
    manifest: Manifest, reader: WarcReader, row: ManifestRow, previous: Previous | None = None
) -> bytes | None:
    """What the crawl read the rules of the robots.txt captured in ``row`` from (robots_body(): of
    one cut at the size limit, its whole lines alone); None if its record cannot be read."""
    try:
        record, headers = payload_record(manifest, reader, row, previous)
        coding = headers.get_header("Content-Encoding") if headers is not None else None
        decoded = decode_stream(record.raw_stream, coding, ROBOTS_MAX_BYTES)
        body = robots_body(decoded.body, decoded.cut or row.truncated)
        read_to_end(record)
    except Exception:  # noqa: BLE001 - damaged: verify says so
        return None
    return body


@dataclasses.dataclass(frozen=True)
class KeptSitemap:
    """The answer to a sitemap's URL that the snapshot holds, as the crawl read it."""

    url: str
    """Where its redirects ended: the parent of the URLs it lists."""
    sitemap: Sitemap | None
    """What it lists; None if the answer held no sitemap to read (not a 2xx)."""


def kept_sitemap(
    manifest: Manifest,
    reader: WarcReader,
    previous: Previous | None,
    url: str,
    max_redirects: int,
    limits: SitemapLimits | None = None,
) -> KeptSitemap | None:
    """The answer to the sitemap ``url`` that the snapshot holds, through the redirects the crawl
    followed (``max_redirects`` at most), read within ``limits``; None if it holds none whole (never
    asked, skipped, failed, its chain given up, its record unreadable): the crawl asks it then."""
    first = manifest.get(url)
    if first is None:
        return None
    *_, end = chain_rows(first, "sitemap", max_redirects, manifest.get)
    if end.outcome != FETCHED or end.status is None:
        return None
    if not sitemap_answered(end.status):
        return KeptSitemap(end.url, None)
    sitemap = stored_sitemap(manifest, reader, end, previous, limits)
    return None if sitemap is None else KeptSitemap(end.url, sitemap)
