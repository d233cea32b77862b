"""Which pages of a snapshot ran in a browser: rendered ones, and the frames they loaded.

A page the crawl did not render is read whole from its HTML: what was found on it is what its
links name. A page loaded as a frame of a rendered page (an ``<iframe src>``, found as its
requisite, or found otherwise first and noted as framed by it: ManifestRow.framed_by) ran in
that render all the same: its scripts and event handlers asked for URLs no link of its HTML
names, which the crawl records as found on it (the document whose request it was, whose
encoding a stylesheet it adds is read in, as Chromium reads it). The crawl
(crawling/render_pages.py) and verify (verify/discovery.py) judge a page so alike.

>>> page = ManifestRow("http://h/", "seed", 0, FETCHED, content_type="text/html", render_reason="always")
>>> frame = ManifestRow("http://h/f", "requisite", 1, FETCHED, parent=page.url, content_type="text/html")
>>> linked = ManifestRow("http://h/l", "link", 1, FETCHED, parent=page.url, content_type="text/html")
>>> framed = ManifestRow("http://h/m", "link", 1, FETCHED, parent="http://h/o", content_type="text/html",
...                      framed_by=page.url)
>>> rows = {row.url: row for row in (page, frame, linked, framed)}
>>> [ran_in_a_render(row, rows.get) for row in (page, frame, linked, framed)]
[True, True, False, True]
"""

from __future__ import annotations

from collections.abc import Callable

from archiver.content import HTML_TYPES
from archiver.store.referrers import MAX_HOPS
from archiver.store.rows import FETCHED, ManifestRow

MAX_FRAME_DEPTH = 8
"""Frames within frames followed up to a rendered page (Chromium nests frames deeper, pages
seldom do)."""


def rendered(row: ManifestRow) -> bool:
    """Whether the crawl rendered the page of ``row`` (chose it for a browser, or kept its DOM)."""
    return bool(row.render_reason) or row.dom_warc_file is not None


def ran_in_a_render(
    row: ManifestRow, row_of: Callable[[str], ManifestRow | None], frames: int = MAX_FRAME_DEPTH
) -> bool:
    """Whether the page of ``row`` ran in a browser: rendered, or loaded as a frame (found as a
    requisite, maybe through redirects) of a page that ran in one, up to ``frames`` frames deep."""
    if row.outcome != FETCHED or row.content_type not in HTML_TYPES:
        return False
    if rendered(row):
        return True
    framing = _framing_page(row, row_of)
    return framing is not None and frames > 0 and ran_in_a_render(framing, row_of, frames - 1)


def _framing_page(row: ManifestRow, row_of: Callable[[str], ManifestRow | None]) -> ManifestRow | None:
    """The row of the page that loaded the page of ``row`` as a frame: the page that found it as
    its requisite (its frame's URL, or the first of the redirects that led to it), else the
    rendered page it was first loaded as a frame of, found otherwise (ManifestRow.framed_by:
    a link of another page first); None for a page never loaded as a frame."""
    framed_by = row.framed_by
    for _hop in range(MAX_HOPS):
        parent = row_of(row.parent) if row.parent else None
        if parent is None or row.found_by != "redirect":
            if row.found_by == "requisite" and parent is not None:
                return parent
            break
        row = parent
    return row_of(framed_by) if framed_by else None
