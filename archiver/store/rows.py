"""What the manifest records: the outcome of a URL, its row (ManifestRow), a mirror file.

Outcomes: ``queued`` (met, not yet done: the frontier of an interrupted
crawl), ``fetched``, ``redirected``, ``failed``, ``skipped``. The database that
keeps the rows is store/manifest.py.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

QUEUED = "queued"
FETCHED = "fetched"
REDIRECTED = "redirected"
FAILED = "failed"
SKIPPED = "skipped"
FOR_CRAWLERS = "(found_by = 'robots' OR (found_by = 'sitemap' AND depth = 0))"
"""SQL condition of a row of robots.txt, a sitemap or one of their redirects (ManifestRow.for_crawlers)."""
IS_REDIRECT = "redirect_to IS NOT NULL AND outcome IN ('redirected', 'failed')"
"""SQL condition of a row that is a hop of a redirect chain: redirected, or a redirect that
failed (a loop, a chain past --max-redirects) whose Location is recorded all the same."""


def reasons(*whys: str | None) -> str | None:
    """A row's reason made of several (None for none), in the order given: why a redirect status
    leads nowhere, then why a page's links were cut, as the crawl and a rebuilt manifest write it.

    >>> reasons("a 301 without a Location", None, "links cut"), reasons(None)
    ('a 301 without a Location; links cut', None)
    """
    return "; ".join(why for why in whys if why) or None


@dataclass(frozen=True)
class ManifestRow:
    """Everything the snapshot knows about one URL."""

    url: str
    """The URL as requested: the link parsed as a browser parses it (urls.normalize_url), the
    WARC-Target-URI of its records."""
    found_by: str
    """seed, link, requisite, redirect, sitemap (a URL a sitemap lists, or a sitemap) or robots
    (a robots.txt, or a URL its redirects led to)."""
    depth: int
    """Links followed from a seed to reach it (a redirect keeps its source's depth); 0 for
    robots.txt and sitemaps, 1 for the URLs a sitemap lists."""
    outcome: str
    """queued, fetched, redirected, failed or skipped."""
    parent: str | None = None
    """The page it was found on, or the URL that redirected to it."""
    reason: str | None = None
    """Why it was skipped (out of scope, excluded, robots, depth, page limit) or the error."""
    tries: int = 0
    status: int | None = None
    content_type: str | None = None
    """MIME type without parameters, from the response's Content-Type."""
    length: int | None = None
    """Payload bytes stored in the WARC (as received, still content-encoded)."""
    payload_digest: str | None = None
    """sha1:BASE32 of the stored payload, as in the record's WARC-Payload-Digest."""
    fetched_at: str | None = None
    """WARC-Date of the capture."""
    title: str | None = None
    redirect_to: str | None = None
    """For a redirect: the normalised Location it pointed at."""
    final_url: str | None = None
    """For a redirect: the last URL of its chain."""
    warc_file: str | None = None
    """File name under warc/ of the response or revisit record."""
    warc_offset: int | None = None
    warc_length: int | None = None
    """Compressed length of the record (its gzip member) in that file."""
    record_type: str | None = None
    """response or revisit."""
    truncated: bool = False
    """True when the body passed --max-file-size and was stored cut short."""
    local_path: str | None = None
    """Path of the mirrored file, relative to mirror/."""
    render_reason: str | None = None
    """Why the page was chosen for rendering in a browser (None: it was not)."""
    render_error: str | None = None
    """Why its rendering failed or was cut short, if it did."""
    dom_warc_file: str | None = None
    """File name under warc/ of the resource record holding the rendered DOM."""
    dom_warc_offset: int | None = None
    dom_warc_length: int | None = None
    redirect_fragment: str | None = None
    """For a redirect whose Location names a fragment: that fragment (without its ``#``), which
    where the chain lands takes in place of the link's (redirects.redirect_fragment)."""
    request: str | None = None
    """For a queued URL: what its queue item carries that the row does not tell (its referrer
    policy, Accept, a redirect's chain...; frontier.request_facts), so a resumed crawl asks for
    it as the crawl that met it would have. None for most (and once it is done)."""
    framed_by: str | None = None
    """For a page found otherwise (a link, a seed...) and later loaded as a frame of a rendered
    page: the first such page, in whose render its scripts ran (store/frames.py); else None."""

    def wrong_types(self) -> list[str]:
        """What of the row is not of its field's type (SQLite keeps whatever a column is given:
        a row edited by hand may hold text for a number), one line each; [] when all is.

        >>> ManifestRow("http://h/", "seed", 0, FETCHED, warc_offset="12a").wrong_types()
        ["warc_offset '12a' is not a whole number"]
        """
        wrong = []
        for field in fields(self):
            value = getattr(self, field.name)
            kind = str(field.type)
            if value is None or kind == "bool":
                continue
            if kind.startswith("int") and (not isinstance(value, int) or isinstance(value, bool)):
                wrong.append(f"{field.name} {value!r} is not a whole number")
            elif kind.startswith("str") and not isinstance(value, str):
                wrong.append(f"{field.name} {value!r} is not text")
        return wrong

    @property
    def render_pending(self) -> bool:
        """True for a page chosen for rendering whose render has not finished (an interrupted crawl)."""
        return bool(self.render_reason) and not self.dom_warc_file and not self.render_error

    @property
    def for_crawlers(self) -> bool:
        """True for robots.txt, sitemaps and their redirects: files a site keeps for crawlers,
        fetched to find URLs, not pages."""
        return self.found_by == "robots" or (self.found_by == "sitemap" and self.depth == 0)


@dataclass(frozen=True)
class MirrorFile:
    """A file the mirror wrote, as written."""

    path: str
    """Relative to mirror/ (a row's local_path)."""
    sha256: str
    """Hex SHA-256 of the bytes written."""
    size: int
    note: str | None = None
    """What the mirror did that a reader should know (the file is cut, or not decoded), or None."""
