"""Completeness: every link of an archived page is recorded (archived, or skipped with its
reason: the crawl records each URL it met); the crawl's endings (redirects, cut bodies, a
seed that led nowhere) are checked by :mod:`archiver.verify.crawl_endings`. The links read
for it prove what the manifest says of how each URL was found, at no other read: a row
found by a link names as its parent a page that links to it, one depth deeper; one found by
a redirect, the URL that redirects to it, at its depth; a seed has depth 0; a page's title
is its document's (its rendered DOM's, where a script set one).

Links are found again the way the crawl found them: each archived HTML, CSS
or SVG document, as the integrity check reads its WARC record (LinkCheck.page, so
no record is read twice), has its Content-Encoding undone and its links
extracted by :mod:`archiver.findings` and judged by the crawl's own scope,
rebuilt from crawl.json. Revisits and pages too large to hand over are read
back afterwards (:mod:`archiver.verify.page_bodies`). A page rendered in a browser is read a second time, from
its rendered DOM (a resource record), whose links the crawl followed too.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from archiver.content import CSS_TYPE, decode_payload, is_parsed, mime_type
from archiver.encodings import stylesheet_names_its_encoding
from archiver.errors import UnknownEncoding
from archiver.findings import extract
from archiver.links import REQUISITE, charset_from_content_type
from archiver.media_types import UNKNOWN_TYPES, as_taken, content_type_field
from archiver.redirects import leads_away_row
from archiver.report import UNKNOWN_ENCODING, UNRECORDED_LINK, WRONG_DISCOVERY, Report
from archiver.scope import Scope, links_followed
from archiver.store.earlier import EarlierRecords
from archiver.store.manifest import Manifest
from archiver.store.referrers import (
    BodyOf,
    DomOf,
    Reading,
    encoding_for,
    referred_by,
    referrer_key,
    referrer_reading,
)
from archiver.store.rows import FETCHED, ManifestRow
from archiver.store.seeds import seed_landings
from archiver.verify.crawl_endings import check_endings
from archiver.verify.discovery import FOUND_ON_A_PAGE, SCRATCH, Met, check_discovery, met_of
from archiver.verify.page_bodies import read_dom, read_page
from archiver.warc.dom import DOM_CONTENT_TYPE
from archiver.warc.integrity import Records
from archiver.warc.reader import WarcReader
from archiver.warc.record_index import RecordEntry

RECORDED_CACHE = 1 << 16
"""URLs whose manifest lookup is remembered (links repeat from page to page)."""


def crawl_scope(settings: dict[str, Any] | None, manifest: Manifest) -> Scope:
    """The crawl's scope from its crawl.json settings (or, lacking them, its seeds' hosts), with
    where the seeds' redirects landed."""
    if settings:
        scope = Scope.from_settings(settings)
    else:
        scope = Scope.from_seeds(row.url for row in manifest.rows() if row.found_by == "seed")
    return scope.with_seeds(seed_landings(manifest))  # as the crawl widened it


def check_completeness(
    manifest: Manifest, records: Records, warc_dir: Path, scope: Scope, report: Report
) -> None:
    """LinkCheck for a scan that handed no page over: every page is read back."""
    LinkCheck(manifest, scope, report).finish(records, warc_dir, set())


class LinkCheck:
    """Completeness: hand page() to the integrity scan (WarcScan's page hook), then call finish()."""

    def __init__(self, manifest: Manifest, scope: Scope, report: Report) -> None:
        self.manifest = manifest
        self.scope = scope
        self.report = report
        self.met = lru_cache(maxsize=RECORDED_CACHE)(lambda url: met_of(manifest.get(url)))
        self._scratch = False
        self.handed_over = False
        """True once a scan handed pages to page(): finish() then reads back only the others."""
        self.earlier: EarlierRecords | None = None
        """A re-archive's previous snapshot, where its revisits' originals may be (each read
        only once the integrity scan found it intact)."""
        self.referred: set[tuple[str, int]] = set()
        """Stylesheets found by a document: read back by finish(), with that document's encoding."""

    @staticmethod
    def wants(status: int | None, mime: str) -> bool:
        """True for the records whose pages the crawl may have parsed: HTML, CSS or SVG of a status
        a browser shows a page of (a redirect status's row says whether it came without a
        Location: _is_parsed), or of no type (the crawl sniffed the body: the manifest says what
        it took it as)."""
        return is_parsed(status, mime) or (is_parsed(status, "text/html") and mime in UNKNOWN_TYPES)

    def page(self, entry: RecordEntry, stored: bytes, http: Any) -> None:
        """Check the links of the page whose intact response record the scan just read."""
        self.handed_over = True
        row = self.manifest.capture_at(entry.file, entry.offset)
        if row is None or row.outcome != FETCHED or not _is_parsed(row):
            return
        if row.content_type == CSS_TYPE and row.parent is not None:
            self.referred.add((entry.file, entry.offset))
            return
        # The crawl's decoder, with the crawl's limit: the same links as the crawl took.
        body = decode_payload(stored, http.get_header("Content-Encoding"))
        title = self.links(row, body, content_type_field(http.headers), refresh=http.get_header("Refresh"))
        self.read_whole(row, title)

    def links(
        self,
        row: ManifestRow,
        body: bytes,
        content_type: str | None,
        page_charset: str | None = None,
        referred: str | None = None,
        refresh: str | None = None,
    ) -> str | None:
        """_check_links() of one document of ``row``, noting the rows it proves found on it
        (their depth checked); returns the document's title. ``refresh``: its answer's Refresh
        header (findings.with_refresh())."""
        if not self._scratch:
            self.manifest.connection.executescript(SCRATCH)
            self._scratch = True
        title, linked = _check_links(
            row, body, content_type, self.met, self.scope, self.report, page_charset, referred, refresh
        )
        db = self.manifest.connection
        for met in linked:
            if db.execute("INSERT OR IGNORE INTO verify_linked VALUES (?)", (met.url,)).rowcount and (
                met.depth != row.depth + 1
            ):
                self.report.add(
                    WRONG_DISCOVERY,
                    met.url,
                    f"depth {met.depth}: found on {row.url}, of depth {row.depth}, it is {row.depth + 1}",
                )
        return title

    def read_whole(self, row: ManifestRow, title: str | None, dom: bool = False) -> None:
        """Check the title of ``row``'s page: its document's, or its rendered DOM's where that has
        one (``dom``: the DOM's was just read; a script may set it). A page the crawl did not
        render is noted as read whole: what was found on it is what its links name (a rendered
        page's scripts request URLs no link names)."""
        if row.dom_warc_file is not None and not dom:
            return  # its DOM is read in finish(), its title with it
        if not row.render_reason and row.dom_warc_file is None:
            self.manifest.connection.execute("INSERT OR IGNORE INTO verify_parsed VALUES (?)", (row.url,))
        if title is None and dom:
            return  # the served page's title stays: it was read before, not kept
        if row.title != title:
            self.report.add(WRONG_DISCOVERY, row.url, f"title {row.title!r} is not the page's {title!r}")

    def finish(self, records: Records, warc_dir: Path, deferred: set[tuple[str, int]]) -> None:
        """Report queued URLs, redirect chains that end nowhere, bodies cut short, a crawl that
        archived nothing, and the links of the pages the scan did not hand over (revisits,
        ``deferred`` ones, rendered DOMs)."""
        manifest, report = self.manifest, self.report
        check_endings(manifest, records, report)
        # Pages in WARC order, so each file is read forward once.
        with (
            WarcReader(warc_dir) as pages,
            WarcReader(warc_dir) as revisited,
            WarcReader(warc_dir) as doms,
            WarcReader(warc_dir) as referrers,
        ):

            def body_of(referrer: ManifestRow) -> tuple[bytes, str | None] | None:
                entry = records.get((referrer.warc_file or "", referrer.warc_offset or 0))
                if entry is None:
                    return None
                body, content_type = read_page(entry, records, referrers, referrers, self.earlier)
                return None if body is None else (body, content_type)

            def dom_of(page: ManifestRow) -> bytes | None:
                return read_dom(page, records, referrers)[0]

            encodings: dict[str, Reading | UnknownEncoding] = {}
            for row in manifest.captures():
                if row.for_crawlers:
                    report.stats["robots.txt and sitemaps kept"] += 1
                if row.outcome != FETCHED or not _is_parsed(row):
                    continue
                key = (row.warc_file or "", row.warc_offset or 0)
                found = records.get(key)
                handed = found is not None and found.record_type == "response" and key not in deferred
                if found is not None and not (handed and self.handed_over and key not in self.referred):
                    body, content_type = read_page(found, records, pages, revisited, self.earlier)
                    if body is not None:
                        # A stylesheet that names no encoding is read in its referrer's.
                        referred = None
                        if row.content_type == CSS_TYPE:  # each referrer read once
                            key_of = referrer_key(row)
                            document, linked = referred_by(row, manifest.get)
                            if key_of not in encodings:
                                encodings[key_of] = _referrer_reading(document, manifest, body_of, dom_of)
                            known = encodings[key_of]
                            if not isinstance(known, UnknownEncoding):
                                referred = encoding_for(linked, known)
                            elif not stylesheet_names_its_encoding(
                                body, charset_from_content_type(content_type)
                            ):
                                report.add(UNKNOWN_ENCODING, row.url, str(known))
                                continue
                        title = self.links(row, body, content_type, None, referred)
                        self.read_whole(row, title)
                if row.dom_warc_file is not None:
                    # What the crawl followed from the page's render: the links of its DOM.
                    dom, charset = read_dom(row, records, doms)
                    if dom is not None:
                        report.stats["rendered pages parsed"] += 1
                        self.read_whole(row, self.links(row, dom, DOM_CONTENT_TYPE, charset), dom=True)
        if self._scratch:
            check_discovery(manifest, report)


def _referrer_reading(
    document: ManifestRow | None, manifest: Manifest, body_of: BodyOf, dom_of: DomOf
) -> Reading | UnknownEncoding:
    """referrer_reading() of the document that refers to a stylesheet, or why it cannot be known
    (kept, so the referrer's record is read once)."""
    try:
        return referrer_reading(document, manifest.get, body_of, dom_of=dom_of)
    except UnknownEncoding as exc:
        return exc


def _is_parsed(row: ManifestRow) -> bool:
    """True for pages the crawl took links from: HTML, CSS or SVG a browser shows
    (content.is_parsed()), with a capture. robots.txt and sitemaps are no pages, even one a server
    answered with an HTML page (a soft 404)."""
    return (
        is_parsed(row.status, row.content_type, leads_away_row(row.status, row.reason))
        and row.warc_file is not None
        and not row.for_crawlers
    )


def _check_links(
    row: ManifestRow,
    body: bytes,
    content_type: str | None,
    met: Callable[[str], Met | None],
    scope: Scope,
    report: Report,
    page_charset: str | None = None,
    referrer_encoding: str | None = None,
    refresh: str | None = None,
) -> tuple[str | None, list[Met]]:
    """Report the links of a document of ``row`` the manifest does not hold (but those after the
    first its row says the crawl followed, at --max-links-per-page: links_followed()); returns the
    document's title, and the rows of its links that name ``row`` as the page they were found on."""
    report.stats["pages parsed"] += 1
    content_type = as_taken(content_type, row.content_type)  # its body sniffed, where it named no type
    page = extract(
        body, row.url, mime_type(content_type), content_type, page_charset, referrer_encoding, refresh
    )
    linked = []
    # A page whose links past --max-links-per-page the crawl did not follow says so in its row:
    # those after the first it followed (in the page's order, each once) need no row.
    followed, order, cut = links_followed(row.reason), dict[str, int](), 0
    for link in page.links:
        position = order.setdefault(link.url, len(order))
        requisite = link.kind == REQUISITE
        kind = "requisite" if requisite else "link"
        # A link the scope rules out is met all the same: the crawl records it as skipped.
        skipped = scope.skip_reason(link.url, row.depth + 1, requisite)
        report.stats["skipped links" if skipped else "in-scope links"] += 1
        found = met(link.url)
        if found is not None:
            if found.parent == row.url and found.found_by in FOUND_ON_A_PAGE:
                linked.append(found)
            continue
        if followed is not None and position >= followed:
            cut += 1
        elif skipped:
            report.add(UNRECORDED_LINK, link.url, f"{kind} on {row.url} ({skipped}), not in the manifest")
        else:
            report.add(UNRECORDED_LINK, link.url, f"{kind} on {row.url}, not in the manifest")
    report.stats["links past a page's link limit"] += cut
    return page.title, linked
