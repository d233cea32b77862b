"""The frontier owns crawl state: the queue of URLs to fetch and the set of URLs seen.

``Frontier`` is the seam: the crawler needs only its methods, so a frontier
kept elsewhere (Redis, for a crawl spread over processes or machines) fits
without touching the crawler. Its docstring says which calls are coroutines
and why. The frontiers of one process are in local_frontier.py.

``QueueItem`` is what a frontier holds for a URL; request_facts() is the part of
it a queued manifest row keeps, so that ``--resume`` asks for the URL as the
crawl that met it would have. ``SeenUrls`` is the seen set of one process: 8-byte
URL hashes (about 90 bytes per URL against about 165 for a set of strings).
"""

from __future__ import annotations

import array
import bisect
import dataclasses
import heapq
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from archiver.cors_requests import credentialed, origin_of
from archiver.crawling.fetch_request import FetchRequest
from archiver.request_headers import (
    ACCEPT_BY_DESTINATION,
    Negotiation,
    destination_negotiation,
    negotiation_pairs,
    negotiation_text,
)


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One URL waiting to be fetched: the seed's ``(url, redirects_left)`` and more."""

    url: str
    depth: int
    redirects_left: int
    requisite: bool = False
    """Fetched to render a page (image, CSS...): host scope and --max-depth do not apply."""
    chain: tuple[str, ...] = ()
    """URLs that redirected here in this chain, to tell a loop from chains that meet."""
    found_by: str = "link"
    """seed, link, requisite or redirect: for its manifest row; or a job (SITEMAPS_JOB, ROBOTS_JOB)."""
    parent: str | None = None
    """The page it was found on, or the URL that redirected to it."""
    referrer: str | None = None
    """The page whose link led here (for a redirect, the one that led to its chain's first
    URL), which a Referer names; None for a seed."""
    tries: int = 0
    """Tries made already: a URL put back to wait out a failed try has some."""
    negotiation: Negotiation = ()
    """Headers a rendered page's browser asked for it with (Accept...), which its request carries."""
    referrer_policy: str = ""
    """The referrer policy its Referer is sent under (referrer_policy.py; '' for the default):
    the page's, or its link's own."""
    site_for_cookies: str | None = None
    """For what a page loads (a requisite): the top-level page it is loaded for, whose site
    SameSite judges its request by (Chromium's site for cookies), also for what a stylesheet or
    a frame of that page loads; ``null`` for what a document of no origin loads or links to (no
    site: every such request is cross-site); None for another link followed (judged by its
    referrer)."""
    cors: str = ""
    """The credentials mode of a CORS-mode request (link_requests.cors_mode(): same-origin, include,
    omit), which sends an Origin and cookies by Fetch's rules; '' for a no-cors request (an
    image, a stylesheet) or a link followed, which sends cookies wherever SameSite lets them."""
    client: str | None = None
    """For what a page loads: the origin of the document it is loaded for (a frame's, not its
    top-level page's), Fetch's request origin, which a CORS-mode request sends as its Origin;
    ``null`` once a CORS-mode request was redirected from another origin than its own to a
    third (Fetch's tainted origin). Of a stylesheet, also its fonts' and images' client."""
    document: str = ""
    """What its URL does not tell of the document it loads: link_requests.SANDBOXED for a frame its
    iframe's sandbox leaves no origin, whose requests send Origin: null, as do its own frames',
    and for a stylesheet such a document loads (its requests are its document's); with
    link_requests.SRCDOC for a stylesheet an iframe's srcdoc document loads, read in UTF-8
    (its document's encoding); '' for any other."""
    hop_referrer: str | None = None
    """For a hop after a redirect, what its Referer is made from: the Referer the hop before was
    sent, which each hop's policy reduces again, or ``no-referrer`` once a hop was sent none
    (referrer_policy.hop_referrer()); None for a chain's first URL (made from ``referrer``)."""

    @property
    def top_level(self) -> str:
        """The top-level page what it loads is loaded for (whose site SameSite judges that by): of
        a page followed as a link, the page itself, whatever document led to it."""
        return (self.site_for_cookies or self.url) if self.requisite else self.url

    def request(self) -> FetchRequest:
        """The request a browser would send for it."""
        return FetchRequest(
            self.url,
            referrer=self.referrer,
            negotiation=self.negotiation,
            referrer_policy=self.referrer_policy,
            requisite=self.requisite,
            site_for_cookies=self.site_for_cookies,
            credentials=credentialed(self.cors, self.client, self.url),
            hop_referrer=self.hop_referrer,
        )


def guessed_item(url: str, depth: int, found_by: str, parent: str | None, max_redirects: int) -> QueueItem:
    """The queue item of a URL met outside a page (a seed), as far as its manifest row tells:
    what request_facts() leaves out of a queued row."""
    return QueueItem(
        url,
        depth,
        max_redirects,
        requisite=found_by == "requisite",
        found_by=found_by,
        parent=parent,
        referrer=parent if found_by in ("link", "requisite") else None,
        # What a page loads, it loads for itself (a stylesheet's own requisites say otherwise).
        site_for_cookies=parent if found_by == "requisite" else None,
        client=origin_of(parent) if found_by == "requisite" and parent else None,
    )


def request_facts(item: QueueItem, max_redirects: int, due: float | None = None) -> str | None:
    """What ``item`` carries beyond guessed_item() of its row, as the compact JSON a queued
    manifest row keeps (None: nothing, as for most links), so a resumed crawl asks for it
    as the crawl that met it would have: its referrer and policy, its Accept... ``due``: when
    (time.time()) a URL waiting out a failed try is to be tried again (retry_due() reads it).

    >>> item = QueueItem("http://h/b", 1, 3, found_by="link", parent="http://h/", referrer="http://h/")
    >>> request_facts(item, 3) is None
    True
    >>> facts = request_facts(dataclasses.replace(item, referrer_policy="no-referrer", tries=2), 3)
    >>> facts, requeued(item.url, 1, "link", "http://h/", 3, facts).referrer_policy
    ('{"tries":2,"policy":"no-referrer"}', 'no-referrer')
    >>> hop = dataclasses.replace(item, found_by="redirect", chain=("http://h/a",), hop_referrer="http://h/")
    >>> requeued(hop.url, 1, "redirect", "http://h/a", 3, request_facts(hop, 3)).hop_referrer
    'http://h/'
    """
    guess = guessed_item(item.url, item.depth, item.found_by, item.parent, max_redirects)
    facts: dict[str, object] = {}
    if item.redirects_left != max_redirects:
        facts["hops"] = max_redirects - item.redirects_left  # a later --max-redirects still counts
    if item.requisite != guess.requisite:
        facts["requisite"] = item.requisite
    if item.chain:
        facts["chain"] = list(item.chain)
    if item.referrer != guess.referrer:
        facts["referrer"] = item.referrer
    if item.tries:
        facts["tries"] = item.tries
    if item.negotiation:
        facts["accept"] = _DESTINATIONS.get(item.negotiation) or negotiation_text(item.negotiation)
    if item.referrer_policy:
        facts["policy"] = item.referrer_policy
    if item.site_for_cookies != guess.site_for_cookies:
        facts["site"] = item.site_for_cookies
    if item.cors:
        facts["cors"] = item.cors
    if item.client != guess.client:
        facts["client"] = item.client
    if item.document:
        facts["doc"] = item.document
    if item.hop_referrer is not None:
        facts["sent"] = item.hop_referrer
    if due is not None:
        facts["due"] = round(due, 1)
    return json.dumps(facts, separators=(",", ":")) if facts else None


def requeued(
    url: str, depth: int, found_by: str, parent: str | None, max_redirects: int, facts: str | None
) -> QueueItem:
    """The queue item of a queued manifest row: guessed_item() with the row's request_facts()."""
    item = guessed_item(url, depth, found_by, parent, max_redirects)
    if not facts:
        return item  # a link, or a row of a manifest written before these facts were kept
    kept = json.loads(facts)
    accept = str(kept.get("accept", ""))
    return dataclasses.replace(
        item,
        redirects_left=max_redirects - int(kept.get("hops", 0)),
        requisite=bool(kept.get("requisite", item.requisite)),
        chain=tuple(kept.get("chain", ())),
        referrer=kept.get("referrer", item.referrer),
        tries=int(kept.get("tries", 0)),
        negotiation=destination_negotiation(accept)
        if accept in ACCEPT_BY_DESTINATION
        else negotiation_pairs(accept),
        referrer_policy=str(kept.get("policy", "")),
        site_for_cookies=kept.get("site", item.site_for_cookies),
        cors=str(kept.get("cors", "")),
        client=kept.get("client", item.client),
        document=str(kept.get("doc", "")),
        hop_referrer=kept.get("sent"),
    )


def retry_due(facts: str | None) -> float:
    """When (time.time()) the URL of a queued row's request_facts() is to be tried again; 0 for
    a URL not waiting out a failed try."""
    return float(json.loads(facts).get("due", 0)) if facts else 0.0


_DESTINATIONS = {destination_negotiation(name): name for name in ACCEPT_BY_DESTINATION}
"""The destination whose Accept a negotiation is, kept in its stead: most requisites carry one."""


SITEMAPS_JOB = "sitemaps"
"""``found_by`` of an item that is no URL to fetch but the reading of the sitemaps of the origin
``url`` (``scheme://host``): a crawl shared by nodes queues it, so that when the node reading
them is lost, another reads them (crawling/sitemap_stage.py)."""
PARKED_MAX = 10_000
"""Items a process's frontier keeps parked in all (Frontier.park), whatever the keys: counted
for each key alone, every host whose robots.txt is out of reach (a crawl with --scope any meets
many hosts that are down) kept as many. Those past it stay skipped, and a resumed crawl takes
them up."""
ROBOTS_JOB = "robots.txt"
"""``found_by`` of an item that is the fetching of the robots.txt of the origin ``url``, to record
it: a crawl shared by nodes queues it when the node that fetched it is lost before its rows were
stored (the others go on with the rules that node shared)."""


class Frontier(Protocol):
    """What the crawler needs from crawl state.

    A backend shared by several crawl processes (Redis: a list for the queue, a
    set for the URLs seen, leases on the items in flight, a count of tries per
    URL) must be able to answer each call, so every call that has to ask the
    shared state is a coroutine; the calls made per link on the hot path are
    either local or batched, so a page costs one round trip, not one per link:

    - ``seen`` is synchronous and local: the crawler asks it for every link of
      every page (most are seen already), before the scope check. A shared
      backend answers from what this process has claimed or been refused; it
      may say False for a URL another process claimed (``claim`` then refuses
      it), never True for a URL nobody claimed.
    - ``claim`` is the authority, a coroutine taking every new link of a page
      at once: one round trip per page (a Redis pipeline of SADD), and the
      answer says which URLs this process got. The crawler claims before it
      writes the URLs' ``queued`` rows, so only the process that queues a URL
      records it. It claims with the items it will put: a shared backend
      keeps them until they are put, and queues them itself if this process
      is lost first, so no URL is claimed by nobody's work.
    - ``put``, ``get``, ``task_done``, ``join`` and ``close`` are coroutines:
      they move items through the shared queue. ``get`` hands an item out
      under a lease, ``task_done(item)`` releases it; a lease that runs out
      (its process died) puts the item back, counting the try, so a URL that
      kills its fetcher is given up rather than tried forever. A shared
      backend may gather puts into batches, as SqliteFrontier does on disk.
      ``put(item, delay)`` keeps an item waiting out a failed try in the
      frontier, not in the process that tried it, so it outlives that process.
      An item got and not handled (the crawl stops) is put back, then marked
      done: only ``task_done`` without a put says the item's outcome is stored.
    - ``pending`` is synchronous: the crawler reads it when a host is busy and
      the progress line twice a second; a shared backend answers with the
      queue length its last push or pop returned.

    Items cross processes as plain values: QueueItem holds only strings,
    numbers and a tuple of strings (see _to_row for the form SQLite keeps).
    Local backends complete every coroutine without waiting, so the event loop
    pays a coroutine call per page and per item, not a context switch.
    """

    lost: tuple[type[BaseException], ...]
    """What a call raises when the shared state is out of reach (Redis gone): the crawl stops
    on it; it is no fault of the page being handled."""

    def seen(self, url: str) -> bool:
        """True if ``url`` was claimed before (as far as this process knows)."""

    def unseen(self, urls: Iterable[str]) -> list[str]:
        """The ``urls`` not claimed before (as far as this process knows), in their order:
        seen() for all of a page's links at once, most of which were met before."""

    async def claim(
        self, urls: Sequence[str], items: Sequence[QueueItem] | None = None, redo: QueueItem | None = None
    ) -> list[bool]:
        """Mark ``urls`` seen; True for each one claimed here first, False if it was already.

        ``items``: what each URL is to be queued as, put() next by this process. None: the
        URLs are fetched and recorded outside the queue (robots.txt, sitemaps, what an
        earlier run of a resumed crawl did), so a shared backend does not wait for them;
        ``redo`` is then the job (ROBOTS_JOB, SITEMAPS_JOB) that records them again if this
        process is lost before recorded() is said of them: a shared backend holds them till then.
        """

    def recorded(self, urls: Sequence[str]) -> None:
        """The rows of ``urls``, claimed with a ``redo`` job, are handed to the writer: a shared
        backend lets go of them once the writer has committed them."""

    async def park(self, key: str, item: QueueItem) -> None:
        """Keep ``item`` aside under ``key`` (an origin whose robots.txt is out of reach: its row says
        skipped), to be queued by unpark(key); parked items do not keep the crawl from ending."""

    async def unpark(self, key: str) -> int:
        """Queue the items parked under ``key`` (by any process of the crawl); how many."""

    async def widen(self, landings: Sequence[str]) -> list[str]:
        """Note ``landings`` (pages where a seed's redirects landed, which join the crawl's scope as
        seeds) and return every landing noted so far, by any process of the crawl: a process
        that takes a page its scope does not hold asks, before it judges the page's links."""

    async def put(self, item: QueueItem, delay: float = 0.0) -> None:
        """Queue an item (its URL already claimed), to be got no sooner than ``delay`` seconds
        from now (a failed try waiting to be tried again)."""

    async def get(self) -> QueueItem:
        """The next item; waits while the queue is empty. Cancelled, nothing is taken."""

    async def task_done(self, item: QueueItem) -> None:
        """Mark ``item``, got before, as handled (a shared backend releases its lease)."""

    async def join(self) -> None:
        """Wait until every queued item is handled."""

    def pending(self) -> int:
        """Items queued and not yet got (not those waiting out a delay)."""

    async def close(self) -> None:
        """Release what the frontier holds; safe to call twice."""


def url_key(url: str) -> int:
    """An 8-byte hash of a URL: a set of these costs about half a set of strings.

    Python's own string hash (SipHash, 64 bits, with a key of this process):
    a twentieth of blake2b's cost, and a seen set is rebuilt by each process
    that uses one, so its keys never leave it.
    """
    return hash(url)


class SeenUrls:
    """A set of URLs kept as 8-byte hashes (a collision, about 1 in 10^8 at 10^6 URLs,
    would skip one URL), in about 15 bytes a URL.

    A set of Python ints costs some 60 bytes an entry: 72 MB for the 1.2 million
    URLs of a million-page site. So the hashes met lately are a set, and the rest
    one sorted array of 8-byte integers, searched by bisection; the set is merged
    into the array when it holds an eighth as many (at least MERGE_AT): amortized,
    a hash is copied some nine times in all, and a merge is never more than a
    fraction of a second, even at millions of URLs.

    >>> seen = SeenUrls()
    >>> [seen.claim(url) for url in ("http://h/a", "http://h/b", "http://h/a")], "http://h/b" in seen
    ([True, True, False], True)
    """

    MERGE_AT = 32_768

    def __init__(self) -> None:
        self._recent: set[int] = set()
        self._merged = array.array("q")

    def __len__(self) -> int:
        return len(self._recent) + len(self._merged)

    def claim(self, url: str) -> bool:
        """Add ``url``; True if it was not in the set."""
        key = url_key(url)
        if key in self._recent or self._in_merged(key):
            return False
        self._recent.add(key)
        if len(self._recent) >= max(self.MERGE_AT, len(self._merged) // 8):
            self._merge()
        return True

    def __contains__(self, url: str) -> bool:
        key = url_key(url)
        return key in self._recent or self._in_merged(key)

    def missing(self, urls: Iterable[str]) -> list[str]:
        """The ``urls`` not in the set, in their order (``url not in`` it, for many at once)."""
        recent, merged, size = self._recent, self._merged, len(self._merged)
        found = []
        for url in urls:
            key = hash(url)  # url_key(url), without a call for each of a page's links
            if key in recent:
                continue
            at = bisect.bisect_left(merged, key)
            if at == size or merged[at] != key:
                found.append(url)
        return found

    def _in_merged(self, key: int) -> bool:
        merged = self._merged
        at = bisect.bisect_left(merged, key)
        return at < len(merged) and merged[at] == key

    def _merge(self) -> None:
        self._merged = array.array("q", heapq.merge(self._merged, sorted(self._recent)))
        self._recent = set()
