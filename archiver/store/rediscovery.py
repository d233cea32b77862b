"""How each URL of a manifest written again from the WARC files was found, found again from the seeds.

No record holds how a URL was found: it is found again the way the crawl found it, from the
seeds of crawl.json, level by level, through each chain of redirects and the links of each page
(read as verify reads them, its rendered DOM's too), each link judged by the crawl's scope. A
link to a URL with no record gets the row the crawl gives a URL it meets: skipped with its
reason (``nofollow`` where the page's robots directives forbid following its links, unless a
page that lets them be followed meets it too), or queued, so the resume that follows fetches
it. What a page's scripts asked for in a
browser, which no link names, is found on the page that ran in the render and sent it as its
Referer (the request record follows its response). The URLs met, and those waiting to be met,
wait in SQLite: memory does not grow with the site (store/rebuild.py writes the rest).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Iterator

from archiver.content import CSS_TYPE, is_parsed, mime_type
from archiver.errors import UnknownEncoding
from archiver.findings import extract
from archiver.links import REQUISITE, Link
from archiver.media_types import as_taken
from archiver.redirects import leads_away_row, redirect_failure, robots_redirects
from archiver.robots_answer import RULES, robots_answer
from archiver.robots_directives import meta_nofollow, x_robots_nofollow
from archiver.scope import MAX_LINKS_PER_PAGE, NOFOLLOW, Scope, links_kept
from archiver.sitemaps import SITEMAP_DEPTH, SitemapLimits, seed_origins, sitemap_answered
from archiver.store.crawler_chains import chain_rows, stored_robots_sitemaps, stored_sitemap
from archiver.store.frames import ran_in_a_render
from archiver.store.manifest import Manifest
from archiver.store.previous import Previous
from archiver.store.referrers import (
    NO_READING,
    Reading,
    encoding_for,
    referred_by,
    referrer_key,
    referrer_reading,
    stored_body,
    stored_page,
)
from archiver.store.rows import FAILED, FETCHED, QUEUED, REDIRECTED, SKIPPED, ManifestRow, reasons
from archiver.store.seeds import seed_landings
from archiver.store.stored import sent_referer
from archiver.warc.dom import CHARSET_FIELD, DOM_CONTENT_TYPE
from archiver.warc.reader import WarcReader

DOM_READ_LIMIT = 64 * 1024 * 1024
"""Bytes of a rendered DOM read for its links."""
SEEN = "rebuild_met"
"""The temporary table of the URLs met while how each was found is found again."""
WAITING = "rebuild_waiting"
"""The temporary table of the URLs met and not yet given their rows, level by level."""
MET_BATCH = 1000
"""URLs read at once from the table of those waiting: what the walk holds in memory at most."""
REFERRERS_KEPT = 1024
"""Readings of stylesheets' referrers kept at once (each a page's encoding and its frames')."""
CHAIN_SEPARATOR = "\n"
"""Between the URLs of a redirect's chain in the table of those waiting (no URL holds one)."""


@dataclasses.dataclass(frozen=True)
class Met:
    """A URL met on the way from the seeds, as the crawl meets it (discovery.consider)."""

    url: str
    depth: int
    found_by: str
    parent: str | None
    requisite: bool = False
    chain: tuple[str, ...] = ()
    """For a redirect's target: the URLs of its chain before it."""
    nofollow: bool = False
    """A link of a page whose robots directives forbid following its links: skipped, as the
    crawl skips it (its requisites are fetched still)."""


def found_on(page: ManifestRow, links: Iterable[Link], nofollow: bool = False) -> Iterator[Met]:
    """The URLs ``links`` of ``page`` name, met one level deeper, as links or requisites; the
    links not to follow with ``nofollow``."""
    for link in links:
        requisite = link.kind == REQUISITE
        found_by = "requisite" if requisite else "link"
        yield Met(
            link.url, page.depth + 1, found_by, page.url, requisite, nofollow=nofollow and not requisite
        )


class Rediscovery:
    """How each URL was found, found again from the seeds, level by level."""

    def __init__(
        self,
        manifest: Manifest,
        reader: WarcReader,
        scope: Scope,
        max_redirects: int,
        previous: Previous | None = None,
        read_sitemaps: bool = True,
        max_links: int = MAX_LINKS_PER_PAGE,
        robots_agent: str | None = None,
    ) -> None:
        self.robots_agent = robots_agent
        """Our name in robots directives (robots_directives.robots_agent()), which the crawl obeyed;
        None if it ignored them (--ignore-robots)."""
        self.max_links = max_links
        """The crawl's --max-links-per-page: the links of a page past it are not met."""
        self.max_redirects = max_redirects
        self.read_sitemaps = read_sitemaps
        """The crawl read the seeds' hosts' sitemaps (no --no-sitemaps)."""
        self.previous = previous
        """Where the bodies of a re-archive's revisits are (store/stored.py)."""
        self.manifest = manifest
        self.reader = reader
        self.scope = scope
        self._noted = 0
        self._readings: dict[str, Reading] = {}
        """What the referrers of stylesheets were read in (referrer_reading()), by referrer_key()."""
        """URLs noted in the table of those waiting so far: each one's place in its level."""
        # The URLs met so far, and those waiting to be met, on disk past SQLite's cache: memory
        # does not grow with the site.
        manifest.connection.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {SEEN} (url TEXT PRIMARY KEY) WITHOUT ROWID"
        )
        manifest.connection.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {WAITING} (depth INTEGER NOT NULL, place INTEGER NOT NULL, "
            "url TEXT NOT NULL, found_by TEXT NOT NULL, parent TEXT, requisite INTEGER NOT NULL, "
            "chain TEXT NOT NULL, nofollow INTEGER NOT NULL, PRIMARY KEY (depth, place)) WITHOUT ROWID"
        )

    def first_meeting(self, url: str) -> bool:
        """True the first time ``url`` is met (noted as met)."""
        added = self.manifest.connection.execute(f"INSERT OR IGNORE INTO {SEEN} VALUES (?)", (url,))
        return added.rowcount == 1

    def _unmet_row(self, url: str) -> ManifestRow | None:
        row = self.manifest.get(url)
        return row if row is not None and self.first_meeting(url) else None

    def met_before(self, url: str) -> bool:
        """Whether ``url`` was met already (first_meeting() noted it)."""
        found = self.manifest.connection.execute(f"SELECT 1 FROM {SEEN} WHERE url = ?", (url,))
        return found.fetchone() is not None

    def run(self, seeds: list[str]) -> None:
        """Meet the seeds (robots.txt and sitemaps first: the crawl asks them before any page),
        then everything they lead to; then the captures nothing led to."""
        robots: dict[str, ManifestRow] = {}
        """By its URL, the last hop of each robots.txt (the one that holds its rules)."""
        rows = list(self.manifest.rows(where="url LIKE '%/robots.txt'"))  # one a host met
        # A robots.txt another's redirect led to is met as a hop of that chain, as the crawl met it,
        # whichever comes first in the manifest: met alone first, it cut that chain short.
        targets = {row.redirect_to for row in rows if row.outcome == REDIRECTED}
        for row in sorted(rows, key=lambda row: row.url in targets):
            at_root = "/" not in row.url.partition("://")[2].partition("/")[2]
            if at_root and self.first_meeting(row.url):
                for hop in chain_rows(row, "robots", robots_redirects(self.max_redirects), self._unmet_row):
                    self._found(hop)
                    robots[row.url] = hop
        if self.read_sitemaps:
            for origin in seed_origins(seeds):
                self._meet_sitemaps(origin, robots.get(origin + "/robots.txt"))
        for seed in seeds:
            self.wait(Met(seed, 0, "seed", None))
        self._walk()
        while self._asked_in_renders():
            self._walk()

    def _meet_sitemaps(self, origin: str, robots: ManifestRow | None) -> None:
        """Meet the sitemaps the crawl read for ``origin`` (those its robots.txt, whose last hop is
        ``robots``, names, its /sitemap.xml, and those their indexes list, breadth first, as far
        as SitemapLimits allows), their redirects, and the URLs they list, as the crawl met them
        (crawling/sitemap_stage.py): only those captured, the others being no sitemap it read."""
        robots_url = origin + "/robots.txt"
        named = []
        # The rules of any 2xx answer are read, as the crawl reads them (robots_answer()).
        if robots is not None and robots.outcome == FETCHED and robots_answer(robots.status) == RULES:
            # Resolved against where the answer came from (RFC 3986 5.1.3), as the crawl resolves them.
            named = stored_robots_sitemaps(self.manifest, self.reader, robots, robots.url, self.previous)
        todo: deque[tuple[str, str | None, int]] = deque((url, robots_url, 0) for url in named)
        if origin + "/sitemap.xml" not in named:
            todo.append((origin + "/sitemap.xml", None, 0))
        planned = {url for url, _, _ in todo}
        limits, read = SitemapLimits(), 0
        while todo and read < limits.max_sitemaps:
            url, parent, level = todo.popleft()
            read += 1
            first = self._unmet_row(url)
            if first is None:
                continue
            row = first
            for row in chain_rows(first, "sitemap", self.max_redirects, self._unmet_row, parent):
                self._found(row)
            if row.outcome != FETCHED or not sitemap_answered(row.status):
                continue
            sitemap = stored_sitemap(self.manifest, self.reader, row, self.previous)
            if sitemap is None:
                continue
            if not sitemap.is_index:
                for listed in sitemap.urls:
                    self.wait(Met(listed, SITEMAP_DEPTH, "sitemap", row.url))
            elif level < limits.max_nesting:
                children = [child for child in sitemap.urls if child not in planned]
                planned.update(children[: limits.max_sitemaps])
                todo.extend((child, url, level + 1) for child in children[: limits.max_sitemaps])

    def _walk(self) -> None:
        """Meet what waits, level by level, and all it leads to."""
        depth = 0
        for met in self.waiting():
            if met.depth != depth:
                self._level_met(depth)
                depth = met.depth
            self.meet(met)
        self._level_met(depth)

    def _asked_in_renders(self) -> bool:
        """Note, to be met, the captures no link led to that a page which ran in a browser asked
        for (store/frames.py: rendered, or a frame of such a page): its scripts' requests, which
        the crawl found on it, its frame's own (what a stylesheet is read in). Their request
        records name that page as Referer. Returns whether any was noted."""
        db = self.manifest.connection
        if db.execute("SELECT 1 FROM urls WHERE dom_warc_file IS NOT NULL").fetchone() is None:
            return False  # nothing ran in a browser
        unmet = db.execute(
            f"SELECT url FROM urls WHERE warc_file IS NOT NULL AND url NOT IN (SELECT url FROM {SEEN})"
        ).fetchall()
        noted = False
        for (url,) in unmet:
            row = self.manifest.get(url)
            referer = sent_referer(row, self.reader) if row is not None else None
            page = self.manifest.get(referer) if referer is not None and referer != url else None
            if page is None or not self.met_before(page.url) or not ran_in_a_render(page, self.manifest.get):
                continue
            self.wait(Met(url, page.depth + 1, "requisite", page.url, requisite=True))
            noted = True
        return noted

    def _level_met(self, depth: int) -> None:
        """Commit the rows of the level ``depth``; where the seeds' redirects landed, met on the
        first, is in scope as they are."""
        self.manifest.commit()
        if depth == 0:
            self.scope = self.scope.with_seeds(seed_landings(self.manifest))

    def wait(self, met: Met) -> None:
        """Note ``met`` to be met after what was noted before it at its depth: a redirect's next
        URL on the level of its source, a page's links on the next."""
        self._noted += 1
        self.manifest.connection.execute(
            f"INSERT INTO {WAITING} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                met.depth,
                self._noted,
                met.url,
                met.found_by,
                met.parent,
                int(met.requisite),
                CHAIN_SEPARATOR.join(met.chain),
                int(met.nofollow),
            ),
        )

    def waiting(self) -> Iterator[Met]:
        """The URLs noted by wait(), level by level, each level in the order they were noted
        (also those noted while it is read), MET_BATCH at a time: the walk holds no more. Each
        batch is of one level, the lowest waiting: a redirect met at the end of a level puts its
        next URL on that level still."""
        while True:
            found = self.manifest.connection.execute(
                f"SELECT depth, place, url, found_by, parent, requisite, chain, nofollow FROM {WAITING} "
                f"WHERE depth = (SELECT min(depth) FROM {WAITING}) ORDER BY place LIMIT ?",
                (MET_BATCH,),
            ).fetchall()
            if not found:
                return
            last_depth, last_place = found[-1][0], found[-1][1]
            self.manifest.connection.execute(
                f"DELETE FROM {WAITING} WHERE depth = ? AND place <= ?", (last_depth, last_place)
            )
            batch = [
                Met(
                    url,
                    depth,
                    found_by,
                    parent,
                    bool(requisite),
                    tuple(chain.split(CHAIN_SEPARATOR)) if chain else (),
                    bool(nofollow),
                )
                for depth, _place, url, found_by, parent, requisite, chain, nofollow in found
            ]
            del found
            yield from batch

    def meet(self, met: Met) -> None:
        """Give ``met`` its row, and note what it leads to (wait()): its redirect's next URL, its
        page's links."""
        if not self.first_meeting(met.url):
            return
        row = self.manifest.get(met.url)
        if row is None or (row.outcome == SKIPPED and row.reason == NOFOLLOW):
            self._meet_unrecorded(met, row)
            return
        row = dataclasses.replace(row, found_by=met.found_by, parent=met.parent, depth=met.depth)
        chain = met.chain if met.found_by == "redirect" else ()
        failure = None
        if row.outcome == REDIRECTED and row.redirect_to:  # failed as the crawl fails it
            failure = redirect_failure(row.redirect_to, (*chain, met.url), len(chain), self.max_redirects)
        if failure is not None:
            row = dataclasses.replace(row, outcome=FAILED, reason=failure)
        elif row.outcome == REDIRECTED and row.redirect_to:
            hop = Met(row.redirect_to, met.depth, "redirect", met.url, met.requisite, (*chain, met.url))
            self.wait(hop)
        elif row.outcome == FETCHED and is_parsed(
            row.status, mime_type(row.content_type) or "text/html", leads_away_row(row.status, row.reason)
        ):
            title, cut = self._links(row)
            title = title if title is not None else row.title
            row = dataclasses.replace(row, title=title, reason=reasons(row.reason, cut))
        self._found(row)

    def _meet_unrecorded(self, met: Met, skipped: ManifestRow | None) -> None:
        """Give ``met``, a URL with no record, the row the crawl gives a URL it meets: skipped
        with its reason, or queued. One skipped for nofollow (``skipped``, if it was met so
        before) is not met for good: where a page that lets its links be followed meets it
        too, the crawl queues it, and so is it then."""
        in_chain = met.found_by == "seed" or (met.found_by == "redirect" and met.depth == 0)
        if met.found_by == "seed":
            reason = None
        elif met.nofollow:
            reason = NOFOLLOW
        else:
            reason = self.scope.skip_reason(met.url, met.depth, met.requisite or in_chain)
        if reason == NOFOLLOW:
            self.manifest.connection.execute(f"DELETE FROM {SEEN} WHERE url = ?", (met.url,))
            if skipped is not None:
                return  # the crawl keeps where it was skipped first
        outcome = SKIPPED if reason else QUEUED
        self.manifest.upsert(ManifestRow(met.url, met.found_by, met.depth, outcome, met.parent, reason))

    def _found(self, row: ManifestRow) -> None:
        """Write how ``row``'s capture was found, its title, and a redirect's failure (upsert()
        keeps the first)."""
        self.manifest.connection.execute(
            "UPDATE urls SET found_by = ?, parent = ?, depth = ?, title = ?, outcome = ?, reason = ? "
            "WHERE url = ?",
            (row.found_by, row.parent, row.depth, row.title, row.outcome, row.reason, row.url),
        )

    def _links(self, row: ManifestRow) -> tuple[str | None, str | None]:
        """Note the links of ``row``'s page (and of its rendered DOM) to be met on the next level,
        each read as the crawl and verify read it (a stylesheet naming no encoding in its
        referrer's, a DOM's queries in its page's encoding), each as far as the crawl's
        --max-links-per-page; returns the page's title, and the reason its row gives for the
        links past that limit (links_kept()), or None."""
        read = stored_page(self.manifest, self.reader, row, self.previous)
        title = cut = None
        agent = self.robots_agent
        # The crawl follows no link of a page whose X-Robots-Tag, or robots meta, says nofollow;
        # its rendered DOM's neither, where the page's own meta says so.
        nofollow = agent is not None and read is not None and x_robots_nofollow(read[3], agent)
        if read is not None:
            body, content_type, refresh, _robots = read
            content_type = as_taken(content_type, row.content_type)
            referred = self._referrer_encoding(row) if row.content_type == CSS_TYPE else None
            page = extract(body, row.url, mime_type(content_type), content_type, None, referred, refresh)
            title = page.title
            nofollow = nofollow or (agent is not None and meta_nofollow(page.nofollow, agent))
            cut = self._meet_links(row, page.links, nofollow)
        if row.dom_warc_file is not None and row.dom_warc_offset is not None:
            try:
                dom = self.reader.read(row.dom_warc_file, row.dom_warc_offset, DOM_READ_LIMIT)
            except Exception:  # noqa: BLE001 - damaged: its page is rendered again by the resume
                return title, cut
            charset = dom.rec_headers.get_header(CHARSET_FIELD)
            page = extract(dom.payload, row.url, "text/html", DOM_CONTENT_TYPE, charset)
            title = page.title or title
            nofollow = nofollow or (agent is not None and meta_nofollow(page.nofollow, agent))
            # The crawl cut the DOM's links as it cut the page's, and its row then says so.
            cut = self._meet_links(row, page.links, nofollow) or cut
        return title, cut

    def _meet_links(self, row: ManifestRow, links: tuple[Link, ...], nofollow: bool) -> str | None:
        """Note the first --max-links-per-page of ``links``, found on ``row``'s page, to be met on
        the next level (those not to follow with ``nofollow``); returns the reason its row gives
        for the others (links_kept()), or None."""
        kept, cut = links_kept(dict.fromkeys(link.url for link in links), self.max_links)
        for met in found_on(row, (link for link in links if link.url in kept), nofollow):
            self.wait(met)
        return cut

    def _referrer_encoding(self, stylesheet: ManifestRow) -> str | None:
        """What the stylesheet of ``stylesheet`` is read in if it names no encoding: its referrer's
        (store/referrers.py), each referrer read once while REFERRERS_KEPT are kept; None if
        that cannot be known (its record is damaged: verify says so)."""
        key = referrer_key(stylesheet)
        document, linked = referred_by(stylesheet, self.manifest.get)
        reading = self._readings.get(key)
        if reading is None:
            if len(self._readings) >= REFERRERS_KEPT:
                self._readings.clear()
            try:
                reading = referrer_reading(document, self.manifest.get, self._body_of, dom_of=self._dom_of)
            except UnknownEncoding:
                reading = NO_READING
            self._readings[key] = reading
        return encoding_for(linked, reading)

    def _body_of(self, row: ManifestRow) -> tuple[bytes, str | None] | None:
        """A BodyOf (store/referrers.py) over the snapshot."""
        return stored_body(self.manifest, self.reader, row, self.previous)

    def _dom_of(self, page: ManifestRow) -> bytes | None:
        """A DomOf (store/referrers.py) over the snapshot."""
        if page.dom_warc_file is None or page.dom_warc_offset is None:
            return None
        return self.reader.read(page.dom_warc_file, page.dom_warc_offset, DOM_READ_LIMIT).payload
