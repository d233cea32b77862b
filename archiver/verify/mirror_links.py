"""Mirror links: every local link in the mirror's HTML, CSS and SVG resolves to a file, and no
link the mirror could serve is left pointing at the web.

Links are found with the same tables the rewriter used (:mod:`archiver.links`).
An absolute link (``http:``, ``https:``) in a file under mirror/ is looked up
as the rewriter looks up every link (mirror.local_paths): if the mirror holds
a file for its URL (or for where its redirects end), the rewriter missed it,
and a reader offline meets the web there. index.html shows pages' original
URLs on purpose: its absolute links are not looked up. ``//host`` links (their
scheme is the page's), ``data:``, ``javascript:`` and fragment-only links are
left alone.
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

import lxml.etree

from archiver.body_attributes import add_later_body_attributes
from archiver.encodings import (
    UNDECLARED_FALLBACK,
    WEB_ERRORS,
    as_utf8,
    declared_charset,
    page_encoding,
    sniff_bom,
    stylesheet_encoding,
    xml_encoding,
)
from archiver.frame_documents import srcdoc_body, srcdocs
from archiver.html_stream import CHUNK, parse_html, read_elements
from archiver.link_values import iter_css_urls
from archiver.links import MAX_SRCDOC_DEPTH, is_fetchable_reference, iter_html_references
from archiver.mirror.linker import Resolver
from archiver.prescan import PRESCAN_BYTES
from archiver.report import BROKEN_MIRROR_LINK, LIVE_MIRROR_LINK, Report
from archiver.svg import iter_svg_references
from archiver.urls import try_normalize

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
CSS_SUFFIXES = (".css",)
SVG_SUFFIXES = (".svg",)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
MAX_DOCUMENT = 64 * 1024 * 1024
"""Stylesheets larger than this are checked only up to this size."""
_XML_HEAD = 1024
"""Bytes of an XML file that hold its byte-order mark and XML declaration."""
STREAM_HTML_FROM = 1024 * 1024
"""HTML files larger than this are parsed as a stream (a big index.html)."""


def local_target(value: str) -> str | None:
    """The file path a link names, percent-decoded; None if it names no local file.

    >>> local_target("../img/a%20b.png?v=2#top"), local_target("https://h/x")
    ('../img/a b.png', None)
    """
    value = value.strip()
    if not is_fetchable_reference(value) or _SCHEME.match(value) or value.startswith("//"):
        return None
    path = value.split("#", 1)[0].split("?", 1)[0]
    return unquote(path) or None


def check_mirror(root: Path, report: Report, archived: Resolver | None = None) -> None:
    """Check the links of snapshot/index.html and of every HTML, CSS and SVG file under mirror/.

    ``archived``: where the mirror holds a URL (mirror.local_paths.LocalPaths over the
    snapshot's manifest), to find absolute links the rewriter should have made local.
    """
    root_real = os.path.normpath(os.path.abspath(root))
    index_html = root / "index.html"
    _is_file.cache_clear()
    for document in _documents(root):
        report.stats["mirror documents"] += 1
        relative = document.relative_to(root).as_posix()
        folder = os.path.normpath(os.path.abspath(document.parent))
        looked_up = archived if document != index_html else None
        try:
            for value in _references(document):
                target = local_target(value)
                if target is None:
                    if looked_up is not None:
                        _check_live(value, looked_up, relative, report)
                    continue
                report.stats["mirror links"] += 1
                why = _broken(folder, target, root_real)
                if why:
                    report.add(BROKEN_MIRROR_LINK, relative, f"{value!r} {why}")
        except (OSError, lxml.etree.LxmlError) as exc:
            report.add(BROKEN_MIRROR_LINK, relative, f"cannot read: {exc}")


def _check_live(value: str, archived: Resolver, relative: str, report: Report) -> None:
    """Report ``value`` if it is an absolute http(s) URL whose target the mirror holds."""
    reference = value.strip()
    if not reference[:8].lower().startswith(("http://", "https://")):
        return
    url = try_normalize(reference)
    held = archived(url) if url is not None else None
    if held is not None:
        report.add(LIVE_MIRROR_LINK, relative, f"{value!r} is left live, though mirror/{held} holds it")


def _documents(root: Path) -> Iterator[Path]:
    if (root / "index.html").is_file():
        yield root / "index.html"
    mirror = root / "mirror"
    for folder, _dirs, files in os.walk(mirror):
        for name in sorted(files):
            path = Path(folder) / name
            # Only regular files: a pipe put in a document's place would block its read for ever.
            if name.lower().endswith(HTML_SUFFIXES + CSS_SUFFIXES + SVG_SUFFIXES) and path.is_file():
                yield path


def _references(document: Path) -> Iterator[str]:
    """Every link value in a mirrored HTML, CSS or SVG file."""
    size = document.stat().st_size
    if document.name.lower().endswith(SVG_SUFFIXES):
        with open(document, "rb") as fh:
            # In its own encoding, as a browser reads it (its byte-order mark or XML declaration,
            # whose label lxml would read its own way): a UTF-8 file as a stream.
            encoding = xml_encoding(fh.read(_XML_HEAD), None)
            fh.seek(0)
            source = fh if encoding == "utf-8" else as_utf8(fh.read(min(size, MAX_DOCUMENT)), encoding)
            yield from (value for value, _requisite, _in_css in iter_svg_references(source, "utf-8"))
        return
    if document.name.lower().endswith(CSS_SUFFIXES):
        with open(document, "rb") as fh:
            # read(n) allocates n bytes up front: ask only for what the file holds.
            data = fh.read(min(size, MAX_DOCUMENT))
        # As a browser reads it from disk: its @charset rule (or byte-order mark), else UTF-8.
        text = data.decode(stylesheet_encoding(data, None), WEB_ERRORS)
        for _start, _end, value in iter_css_urls(text):
            yield value
        return
    # As a browser reads it from disk: an .xhtml file is XML (its XML declaration counts, and the
    # text of its <style>s is markup).
    xml = document.name.lower().endswith(".xhtml")
    if size > STREAM_HTML_FROM:
        yield from _streamed_html_references(document, xml)
    else:
        body = document.read_bytes()
        read_in = xml_encoding if xml else page_encoding
        yield from _tree_references(parse_html(as_utf8(body, read_in(body, None)), "utf-8"), xml=xml)


def _tree_references(tree: lxml.etree._Element | None, depth: int = 0, xml: bool = False) -> Iterator[str]:
    """The link values of a parsed HTML document (``xml``: XHTML), its iframes' srcdoc documents'
    with them (whose links resolve against its own URL, the file's: it has no <base> in the mirror)."""
    if tree is None:
        return
    for _element, _attribute, _start, _end, value, _kind in iter_html_references(tree, xml):
        yield value
    yield from _srcdoc_references(srcdocs(tree.iter("iframe")), depth)


def _srcdoc_references(texts: list[str], depth: int) -> Iterator[str]:
    if depth < MAX_SRCDOC_DEPTH:
        for text in texts:
            yield from _tree_references(parse_html(srcdoc_body(text), "utf-8"), depth + 1)


def _streamed_html_references(document: Path, xml: bool) -> Iterator[str]:
    """Links of a large HTML file (``xml``: XHTML), parsed element by element so its tree never
    builds up.

    libxml2 is given the page in UTF-8, as a small page is: the thinning of crowded tags
    (crowded_tags.py) reads markup as ASCII, and would miss every tag of a page kept in UTF-16
    (each taking libxml2 time squared in its attributes); and left to guess, libxml2 reads a
    page that names no encoding otherwise than a browser does."""
    with open(document, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        encoding = _stream_encoding(mapped)
        # A UTF-8 file's bytes are mapped, not read: the page is never held whole. Another is
        # held once, in UTF-8 (its tree would take ten times that).
        source = mapped if encoding == "utf-8" else as_utf8(mapped[:], encoding)
        for _event, element in read_elements(source, ("end",), "utf-8"):
            if element.tag == "body":  # a later <body> tag's attributes, as a small page's tree has
                add_later_body_attributes(source, "utf-8", element)
            # Its children were dropped at their own end: this visits the element alone.
            for _element, _attribute, _start, _end, value, _kind in iter_html_references(element, xml):
                yield value
            if element.tag == "iframe":
                yield from _srcdoc_references(srcdocs((element,)), 0)


def _stream_encoding(mapped: mmap.mmap) -> str:
    """encodings.page_encoding() of a mapped page that has no header, its bytes checked as UTF-8
    a chunk at a time."""
    head = mapped[:PRESCAN_BYTES]
    named = sniff_bom(head) or declared_charset(head)
    if named is not None:
        return named
    check = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(mapped), CHUNK):
            check.decode(mapped[at : at + CHUNK])
    except UnicodeDecodeError:
        return UNDECLARED_FALLBACK
    return "utf-8"


def _broken(folder: str, target: str, root_real: str) -> str | None:
    """Why a link from a file in ``folder`` to ``target`` resolves to no file, or None."""
    if target.startswith("/"):
        return "is root-relative: offline it points outside the snapshot"
    path = os.path.normpath(os.path.join(folder, target))
    if path != root_real and not path.startswith(root_real + os.sep):
        return "points outside the snapshot"
    if not _is_file(path):
        return "resolves to no file"
    return None


@lru_cache(maxsize=1 << 16)
def _is_file(path: str) -> bool:
    """True if ``path`` is a file, or a folder with an index.html (as a browser opens it)."""
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    return os.path.isfile(path)
