"""Scope rules: which URLs a crawl fetches, as pure functions of the URL.

>>> scope = Scope.from_seeds(["http://example.com/docs/"], kind="prefix")
>>> scope.skip_reason("http://example.com/docs/a", depth=1)
>>> scope.skip_reason("http://example.com/blog/", depth=1)
'out of scope'
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from archiver.domains import has_bad_punycode, registered_domain
from archiver.urls import host_of, readable_url, try_normalize

OUT_OF_SCOPE = "out of scope"
EXCLUDED = "excluded"
TOO_DEEP = "depth"
PAGE_LIMIT = "page limit"
BYTE_LIMIT = "byte limit"
ROBOTS = "robots"
ROBOTS_UNREACHABLE = "robots.txt unreachable"
"""A URL of a host whose robots.txt could not be read (a 5xx or 429 to the last try, no answer,
a body cut short): RFC 9309 asks a crawler to fetch nothing there. A resumed crawl asks again."""
NOFOLLOW = "nofollow"
"""A link of a page whose robots meta or X-Robots-Tag says nofollow."""
MAX_LINKS_PER_PAGE = 50_000
"""Links of a page the crawl follows unless told (--max-links-per-page). Heritrix's cap, 6,000,
is for crawls of the whole web; a site kept whole has pages past it (a folder's listing, an
index of every post, a sitemap written in HTML), and those are what its users keep it for. 50,000
(a sitemap's own limit) keeps them and still bounds a page generated to hold a million."""
LINK_LIMIT = "link limit"
"""What starts the reason on a page's row whose links past --max-links-per-page were not followed
(links_kept()): they get no rows of their own, and verify accepts them unrecorded."""
TOO_LONG = "URL too long"
BAD_PUNYCODE = "invalid punycode host"
"""A URL whose host has an ``xn--`` label that is no valid IDNA (domains.has_bad_punycode): the URL
standard fails it, and no such name resolves."""
_Kind = TypeVar("_Kind")
MAX_URL_LENGTH = 65_536
"""Longest URL fetched, in characters of the normalised URL (all ASCII): servers refuse far
shorter ones (8 KiB is common); the WARC records of a URL past a megabyte hold header lines longer
than WARC readers read back (warc.members.MAX_LINE); and a trap of ever longer URLs ends here."""
PATH_REPEATS = "path repeats"
"""A URL whose path says one segment, or one run of a few segments, more than MAX_PATH_REPEATS
times in a row (``/a/a/a/a/``, ``/a/b/a/b/a/b/a/b/``): a relative link (``a/``) on a page that
every path answers makes such paths without end, each a page of its own, until MAX_URL_LENGTH."""
MAX_PATH_REPEATS = 3
"""Most times in a row a path may say the same segments. Heritrix rejects such paths by default
too; a site's own paths seldom say a name twice in a row, and never four times."""
LONGEST_REPEATED_RUN = 8
"""Longest run of segments looked for repeats: the time each URL takes stays linear in its length,
and a run longer than this repeated four times is a path no trap needs to make."""


def matches(patterns: Sequence[re.Pattern[str]], url: str) -> bool:
    """True if one of ``patterns`` is found in ``url`` or in the URL as a person writes it
    (readable_url(): a host in Unicode, a path's UTF-8 decoded), so ``--exclude /café/`` and
    ``--include bücher.example`` mean what they say.

    >>> matches([re.compile("/café/")], "http://h/caf%C3%A9/x"), matches([re.compile("/x$")], "http://h/y")
    (True, False)
    """
    if not patterns:
        return False
    if any(pattern.search(url) for pattern in patterns):
        return True
    readable = readable_url(url)
    return readable != url and any(pattern.search(readable) for pattern in patterns)


def repeats_in_path(url: str) -> bool:
    """True if the path of ``url`` (normalised) says one segment, or one run of up to
    LONGEST_REPEATED_RUN segments, more than MAX_PATH_REPEATS times in a row (PATH_REPEATS).

    >>> [repeats_in_path(f"http://h{path}") for path in ("/a/a/a/", "/a/a/a/a/", "/x/a/b/a/b/a/b/a/b/y")]
    [False, True, True]
    >>> repeats_in_path("http://h/a/b/a/b/a/b/c?q=/a/a/a/a/a")  # three times, and the query is no path
    False
    """
    segments = url.partition("#")[0].partition("?")[0].partition("://")[2].split("/")[1:]
    for run in range(1, min(LONGEST_REPEATED_RUN, len(segments) // (MAX_PATH_REPEATS + 1)) + 1):
        # ``same``: how many segments in a row equal the one ``run`` segments before them.
        same = 0
        for index in range(run, len(segments)):
            same = same + 1 if segments[index] == segments[index - run] else 0
            if same >= run * MAX_PATH_REPEATS:
                return True
    return False


def links_kept(links: dict[str, _Kind], max_links: int) -> tuple[dict[str, _Kind], str | None]:
    """The first ``max_links`` of a page's ``links`` ({url: kind}, in the page's order), and the
    reason its row records when more followed (LINK_LIMIT, and how many were cut), else None.
    Crawlers cap what they take of a page (Heritrix: 6,000 outlinks): a page of 100,000 links
    would cost 100,000 rows and fetches, whatever it is worth.

    >>> links_kept({"http://h/a": "link", "http://h/b": "link"}, 1)
    ({'http://h/a': 'link'}, 'link limit: the first 1 of its 2 links followed')
    """
    if len(links) <= max_links:
        return links, None
    kept = dict(itertools.islice(links.items(), max_links))
    return kept, f"{LINK_LIMIT}: the first {max_links} of its {len(links)} links followed"


def links_followed(reason: str | None) -> int | None:
    """How many of a page's first links the crawl followed, as the ``reason`` links_kept() gave
    its row says; None when it followed them all (any other reason).

    >>> links_followed("link limit: the first 6000 of its 6012 links followed"), links_followed("robots")
    (6000, None)
    """
    if not reason or not reason.startswith(f"{LINK_LIMIT}: the first "):
        return None
    count = reason.removeprefix(f"{LINK_LIMIT}: the first ").partition(" ")[0]
    return int(count) if count.isdigit() else None


def folder_of(url: str) -> str:
    """The folder of ``url`` (normalised), what --scope prefix keeps to: the URL up to the last
    ``/`` of its path. Its query is no part of the path, though it may hold a ``/`` too.

    >>> folder_of("http://h/docs/page?next=/a/b"), folder_of("http://h/docs?")
    ('http://h/docs/', 'http://h/')
    """
    up_to_path = url.partition("#")[0].partition("?")[0]
    return up_to_path[: up_to_path.rfind("/") + 1]


@dataclass(frozen=True)
class Scope:
    """The crawl's boundary: seeds' hosts, domains or prefixes, regexes, depth."""

    kind: str
    hosts: frozenset[str]
    domains: frozenset[str]
    prefixes: tuple[str, ...]
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    max_depth: int | None = None

    @classmethod
    def from_seeds(
        cls,
        seeds: Iterable[str],
        kind: str = "host",
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_depth: int | None = None,
    ) -> Scope:
        """Build the scope of a crawl from its normalised seed URLs."""
        seeds = list(seeds)
        hosts = frozenset(host_of(s) for s in seeds)
        return cls(
            kind=kind,
            hosts=hosts,
            domains=frozenset(registered_domain(h) for h in hosts),
            prefixes=tuple(folder_of(s) for s in seeds),
            include=tuple(re.compile(p) for p in include),
            exclude=tuple(re.compile(p) for p in exclude),
            max_depth=max_depth,
        )

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Scope:
        """The scope of a crawl from its settings as crawl.json keeps them (CrawlConfig.to_json()).

        The crawl builds its scope here from the settings it saves, and verify
        from the settings it reads back, so both judge a link alike. Seeds that
        do not parse are left out.

        >>> Scope.from_settings({"seeds": ["http://Example.com/a"], "scope": "prefix"}).prefixes
        ('http://example.com/',)
        """
        seeds = [try_normalize(str(seed)) for seed in settings.get("seeds") or ()]
        return cls.from_seeds(
            [seed for seed in seeds if seed is not None],
            kind=settings.get("scope") or "host",
            include=settings.get("include") or (),
            exclude=settings.get("exclude") or (),
            max_depth=settings.get("max_depth"),
        )

    def with_seeds(self, urls: Iterable[str]) -> Scope:
        """This scope with ``urls`` (normalised) as seeds too: their hosts, domains and prefixes.

        A seed's redirect chain is part of the seed: where it lands (``www.``, https,
        another path) joins the scope, as if it had been given.

        >>> scope = Scope.from_seeds(["http://h/"]).with_seeds(["https://www.h/en/"])
        >>> sorted(scope.hosts), scope.prefixes
        (['h', 'www.h'], ('http://h/', 'https://www.h/en/'))
        """
        urls = list(urls)
        hosts = self.hosts | frozenset(host_of(url) for url in urls)
        prefixes = tuple(dict.fromkeys((*self.prefixes, *(folder_of(url) for url in urls))))
        if hosts == self.hosts and prefixes == self.prefixes:
            return self
        return dataclasses.replace(
            self,
            hosts=hosts,
            domains=frozenset(registered_domain(host) for host in hosts),
            prefixes=prefixes,
        )

    def in_bounds(self, url: str) -> bool:
        """True if ``url`` is inside the scope kind (host, domain, prefix or any)."""
        if self.kind == "any":
            return True
        if self.kind == "host":
            return host_of(url) in self.hosts
        if self.kind == "domain":
            return registered_domain(host_of(url)) in self.domains
        return url.startswith(self.prefixes)

    def skip_reason(self, url: str, depth: int, requisite: bool = False) -> str | None:
        """Why ``url`` found at ``depth`` is not fetched, or None if it is.

        Page requisites (images, CSS, scripts of an archived page) are fetched
        from any host and past --max-depth, so pages look right offline;
        --exclude, MAX_URL_LENGTH and MAX_PATH_REPEATS still apply to them (a stylesheet
        that imports ``css/a.css`` makes paths without end as a page's link does).
        """
        if len(url) > MAX_URL_LENGTH:
            return TOO_LONG
        if repeats_in_path(url):
            return PATH_REPEATS
        if has_bad_punycode(url):
            return BAD_PUNYCODE
        if matches(self.exclude, url):
            return EXCLUDED
        if requisite:
            return None
        if not self.in_bounds(url):
            return OUT_OF_SCOPE
        if self.include and not matches(self.include, url):
            return EXCLUDED
        if self.max_depth is not None and depth > self.max_depth:
            return TOO_DEEP
        return None
