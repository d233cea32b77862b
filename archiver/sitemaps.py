"""Sitemaps read as they stream in, bounded against hostile ones: pure, no I/O.

A sitemap (sitemaps.org) is XML, a ``<urlset>`` of pages or a
``<sitemapindex>`` of more sitemaps, or plain text with a URL a line; any of
them may be gzipped, which a server says with Content-Encoding, or not at all
(a ``sitemap.xml.gz`` sent as application/gzip): the gzip magic is what
tells. What a hostile sitemap can cost is bounded: decoded bytes, URLs read,
and XML parsed without loading a DTD, expanding entities or touching the
network (a ``<loc>`` holding an entity reference is not read). How many
sitemaps a host may have and how deeply indexes nest is the crawl's to count
(SitemapLimits says how far).

>>> xml = b'<urlset><url><loc>http://h/a</loc></url><url><loc> http://h/b </loc></url></urlset>'
>>> read_sitemap([xml], None)
Sitemap(kind='urlset', urls=('http://h/a', 'http://h/b'), cut=False, problem=None)
>>> read_sitemap([b"http://h/a\\nhttp://h/c\\n"], None).urls
('http://h/a', 'http://h/c')
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from lxml import etree

from archiver.content import Decoding
from archiver.urls import host_of, try_normalize

URLSET = "urlset"
INDEX = "sitemapindex"
TEXT = "text"
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


SITEMAP_DEPTH = 1
"""Depth of the URLs a sitemap lists: a step from the seed, as a link on its home page."""


def sitemap_answered(status: int | None) -> bool:
    """Whether an answer of ``status`` to a sitemap's URL is read for what it lists: any 2xx, as a
    page's is; one rule for the crawl that reads it (recorded.Answer.ok) and for a resume or a
    rebuilt manifest that reads it back from the snapshot.

    >>> [sitemap_answered(status) for status in (200, 203, 206, 304, 404, None)]
    [True, True, True, False, False, False]
    """
    return status is not None and 200 <= status < 300


def seed_origins(seeds: Iterable[str]) -> list[str]:
    """The origins (scheme and host) of the seeds, each once, in order: whose sitemaps are read.

    >>> seed_origins(["http://h/a", "http://h/b", "https://g:8/"])
    ['http://h', 'https://g:8']
    """
    origins = (f"{seed.partition('://')[0]}://{host_of(seed)}" for seed in seeds)
    return list(dict.fromkeys(origins))


def named_sitemaps(values: Iterable[str], robots_url: str) -> list[str]:
    """The URLs of a robots.txt's Sitemap: lines (``values``), in order, each once.

    A relative one (sites write them, though RFC 9309 asks for absolute URLs) is resolved
    against the robots.txt's own URL ``robots_url``; one that is no http or https URL once
    resolved is left out.

    >>> named_sitemaps(["http://h/s.xml", " /t.xml", "ftp://h/u", "/t.xml"], "http://h/robots.txt")
    ['http://h/s.xml', 'http://h/t.xml']
    """
    resolved = (try_normalize(value.strip(), robots_url) for value in values)
    return list(dict.fromkeys(url for url in resolved if url is not None))


@dataclass(frozen=True)
class SitemapLimits:
    """How far the crawl reads the sitemaps of one seed host (sitemaps.org's own limits where
    it has them: 50,000 URLs and 50 MB decoded a sitemap)."""

    max_bytes: int = 50 * 1024 * 1024
    """Bytes received (as sent, --max-file-size if less) and decoded bytes read of one sitemap;
    the rest is neither received nor decoded."""
    max_urls: int = 50_000
    """URLs taken from one sitemap (pages, or the sitemaps of an index)."""
    max_sitemaps: int = 100
    """Sitemaps fetched for one seed host, indexes included."""
    max_nesting: int = 2
    """Deepest level read: 0 is a sitemap robots.txt names (or /sitemap.xml), 1 one its index
    lists, 2 one an index inside an index lists (sitemaps.org allows no such thing; sites do)."""
    max_skipped: int = 100
    """Sitemaps past the limits above recorded as skipped for one seed host; those past these are
    counted in the log alone (an index may list 50,000, and robots.txt name 10,000)."""


@dataclass(frozen=True)
class Sitemap:
    """What one sitemap lists."""

    kind: str
    """urlset, sitemapindex, text, or '' for a document that is no sitemap."""
    urls: tuple[str, ...]
    """Pages (urlset, text) or sitemaps (sitemapindex), normalised, in order, each once; only
    absolute http and https URLs count, as sitemaps.org asks."""
    cut: bool = False
    """The sitemap held more than the limits let us read (bytes or URLs)."""
    problem: str | None = None
    """What could not be read (corrupt gzip, broken XML), the URLs before it kept; or None."""

    @property
    def is_index(self) -> bool:
        """True for a sitemap of sitemaps."""
        return self.kind == INDEX


def read_sitemap(
    chunks: Iterable[bytes], content_encoding: str | None, limits: SitemapLimits | None = None
) -> Sitemap:
    """The URLs a sitemap lists, from its body as stored (``chunks``, still content-encoded,
    with the response's ``content_encoding``), read no further than ``limits`` allow.

    >>> import gzip
    >>> index = b'<sitemapindex><sitemap><loc>http://h/s1.xml.gz</loc></sitemap></sitemapindex>'
    >>> read_sitemap([gzip.compress(index)], None)
    Sitemap(kind='sitemapindex', urls=('http://h/s1.xml.gz',), cut=False, problem=None)
    >>> read_sitemap([b"<html><a href=/x>"], None).kind
    ''
    """
    limits = limits or SitemapLimits()
    decoding = Decoding(chunks, content_encoding, limits.max_bytes)
    first, rest = _peek(decoding, len(_GZIP_MAGIC))
    body: Iterable[bytes] = itertools.chain([first], rest)
    gunzipped = None
    if first.startswith(_GZIP_MAGIC):  # a .gz file sent as it is, or gzipped twice
        body = gunzipped = Decoding(body, "gzip", limits.max_bytes, gzip_members=True)
    reader = _Reader(limits.max_urls)
    reader.read(body)
    cut = decoding.cut or bool(gunzipped and gunzipped.cut) or reader.full
    problem = reader.problem or decoding.problem or (gunzipped.problem if gunzipped else None)
    return Sitemap(reader.kind, tuple(reader.urls), cut, problem)


def _peek(chunks: Iterator[bytes], size: int) -> tuple[bytes, Iterator[bytes]]:
    """The first ``size`` bytes of ``chunks`` at least (fewer if it ends first), and the rest."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= size:
            break
    return head, chunks


class _Reader:
    """One sitemap's URLs from its decoded bytes: XML through lxml's pull parser, else text lines."""

    def __init__(self, max_urls: int) -> None:
        self.max_urls = max_urls
        self.kind = ""
        self.urls: dict[str, None] = {}
        self.full = False
        """max_urls were read and more followed."""
        self.problem: str | None = None

    def read(self, body: Iterable[bytes]) -> None:
        chunks = iter(body)
        head, rest = _peek(chunks, 1)
        head = head.removeprefix(_BOM)
        while head and not head.strip():
            more = next(rest, b"")
            if not more:
                break
            head += more
        head = head.lstrip()
        if head.startswith(b"<"):
            self._read_xml(itertools.chain([head], rest))
            self.kind = self.kind if self.kind in (URLSET, INDEX) else ""
        elif head:
            self._read_text(itertools.chain([head], rest))

    def _add(self, reference: str | None) -> bool:
        """Take one URL; False once the sitemap has given all it may."""
        url = try_normalize(reference.strip()) if reference else None
        if url is None or url in self.urls:
            return True
        if len(self.urls) >= self.max_urls:
            self.full = True
            return False
        self.urls[url] = None
        return True

    def _read_text(self, chunks: Iterable[bytes]) -> None:
        self.kind = TEXT
        pending = b""
        for chunk in chunks:
            text = pending + chunk
            end = text.rfind(b"\n") + 1
            lines, pending = text[:end], text[end:]
            if len(pending) > 64 * 1024:  # no URL is that long: not a text sitemap after all
                pending = b""
            for line in _TEXT_URL.finditer(lines):
                if not self._add(line[1].decode("utf-8", "replace")):
                    return
        for line in _TEXT_URL.finditer(pending):
            self._add(line[1].decode("utf-8", "replace"))

    def _read_xml(self, chunks: Iterable[bytes]) -> None:
        options = {"resolve_entities": False, "no_network": True, "load_dtd": False, "huge_tree": False}
        # lxml hands Python the root and the <loc> elements alone: an element no sitemap names
        # costs libxml2's time, not a turn of Python's each (2 us a byte for 50 MB of <x/>).
        parser = etree.XMLPullParser(
            events=("start", "end"), tag=_SITEMAP_TAGS, remove_comments=True, remove_pis=True, **options
        )
        # A document whose root is no sitemap's is read no further, but the filtered parser does
        # not report that root: an unfiltered one is fed until its first element.
        sniffer: etree.XMLPullParser | None = etree.XMLPullParser(events=("start",), **options)
        root: etree._Element | None = None
        try:
            for piece in _pieces(chunks):
                parser.feed(piece)
                root = self._take(parser.read_events(), root)
                if self.full or self.kind == "-":
                    return
                if sniffer is not None and not _sitemap_root(sniffer, piece):
                    return  # not a sitemap: read no further
                if root is not None:
                    sniffer = None
                _prune(root)
            parser.close()
            self._take(parser.read_events(), root)
        except etree.XMLSyntaxError as exc:
            self._take(parser.read_events(), root)
            self.problem = f"not well-formed XML: {exc}"

    def _take(
        self, events: Iterable[tuple[str, etree._Element]], root: etree._Element | None
    ) -> etree._Element | None:
        """Read the URLs of the <loc> elements parsed; returns the document's root once met."""
        for event, element in events:
            name = etree.QName(element).localname
            if event == "start":
                if root is None and element.getparent() is None:
                    root = element
                    self.kind = name if name in (URLSET, INDEX) else "-"
                continue
            # A <loc> whose text an entity would complete is not read (entities stay unexpanded).
            taken = self.kind in (URLSET, INDEX) and name == "loc" and len(element) == 0
            if taken and not self._add(element.text):
                break
        return root


_TEXT_URL = re.compile(rb"^[ \t\f\v]*(https?:[^\r\n]*)", re.MULTILINE | re.IGNORECASE)
"""A line of a text sitemap that may hold a URL: sitemaps.org asks for absolute http and https
URLs, one a line. The other lines are passed over by the regular expression, in C: each cost
2 us of Python to be found no URL (120 s of CPU for the 50 MB a sitemap may have)."""
_SITEMAP_TAGS = (f"{{*}}{URLSET}", f"{{*}}{INDEX}", "{*}loc")
"""The elements the XML parser reports: the root of a sitemap, and the <loc> elements that hold
its URLs (of <url>, <sitemap>, and of the extensions' elements inside them, as images')."""
_PIECE = 64 * 1024
"""Bytes fed to the XML parser at once: what it builds of them is freed before the next."""


def _pieces(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` in pieces of _PIECE bytes at most."""
    for chunk in chunks:
        for start in range(0, len(chunk), _PIECE):
            yield chunk[start : start + _PIECE]


def _sitemap_root(sniffer: etree.XMLPullParser, piece: bytes) -> bool:
    """Feed ``piece`` to ``sniffer``; False once its first element is there and is no sitemap's
    root (a sniffer that meets broken XML says True: the reading parser reports it)."""
    try:
        sniffer.feed(piece)
    except etree.XMLSyntaxError:
        return True
    first = next(iter(sniffer.read_events()), None)
    return first is None or etree.QName(first[1]).localname in (URLSET, INDEX)


def _prune(root: etree._Element | None) -> None:
    """Free the elements read of the tree under ``root``: all but the last child of each element
    on the path to the one still open. A sitemap of 50 MB of ``<x/>`` would otherwise be held
    whole, an element of lxml's taking some 30 times its bytes, and lxml frees them in C."""
    element = root
    while element is not None and len(element):
        if len(element) > 1:
            del element[:-1]
        element = element[-1]
