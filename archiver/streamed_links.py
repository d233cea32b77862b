"""The links of an HTML page too large to hold as a tree (findings.STREAMED_BYTES), read as
it streams past the parser: each element is dropped once read, so a page of megabytes costs
the memory of a chunk, not of its tree (about ten times its size). The same parser as
html_stream.parse_html(), so the same elements, in the same order: findings.py resolves what this
reads as it resolves a tree's.

>>> read = read_streamed(b'<base href="/d/"><a href="b">b</a><title>T</title>', "http://h/a", None, "utf-8")
>>> read.base, read.title, [reference[:2] for reference in read.references]
('http://h/d/', 'T', [('b', 'link')])
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.etree

from archiver.body_attributes import add_later_body_attributes
from archiver.frame_documents import FrameDocument, srcdoc_documents
from archiver.html_stream import read_elements
from archiver.link_requests import (
    Request,
    cors_font,
    cors_mode,
    element_request,
    meta_referrer,
    picture_of,
)
from archiver.link_values import css_destination, iter_css_urls
from archiver.links import (
    HTML_LINK_ATTRS,
    PRESENTATION_URL_ATTRS,
    REQUISITE,
    document_base,
    is_document_title,
    is_fetchable_reference,
    references_in,
    resolve_reference,
    style_attribute_references,
    title_text,
)
from archiver.robots_directives import nofollow_metas
from archiver.style_elements import style_text

_STARTS_READ = frozenset((*(tag for tag, _attribute in HTML_LINK_ATTRS), "meta", "base"))
"""The elements whose attributes read_streamed() reads (style attributes aside)."""
_PRESENTATION_NAMES = frozenset(PRESENTATION_URL_ATTRS)

StreamedReference = tuple[str, str, str | None, str, str, str, str]
"""(value, kind, query encoding, referrer policy, destination, CORS mode, document) of a reference:
what it says, and how a browser requests it (link_requests.Hint's, its referrer policy '' where
the page's applies)."""


@dataclass(frozen=True)
class StreamedPage:
    """What reading a page as a stream found, its references not yet resolved."""

    title: str | None
    base: str | None
    """Its <base href>, resolved; None if it has none."""
    nofollow: frozenset[str]
    """The names of its robots metas that say nofollow (robots_directives.nofollow_metas())."""
    page_policy: str
    """The referrer policy its <meta name="referrer"> gives ('' for none)."""
    references: tuple[StreamedReference, ...]
    """In the order a tree gives them: the elements', then the style attributes', then SVG's
    presentation attributes'."""
    iframes: tuple[FrameDocument, ...]
    """Its srcdoc documents (frame_documents.srcdoc_documents())."""


def read_streamed(
    body: bytes, url: str, encoding: str | None, document_encoding: str, xml: bool = False
) -> StreamedPage | None:
    """The title, base, nofollow, referrer policy, references and srcdoc documents of the HTML page
    ``body`` at ``url``, parsed as a stream in ``encoding`` (lxml's name; None: as lxml reads it,
    which is tried when ``encoding`` fails), its links' queries written in ``document_encoding``;
    None if it cannot be parsed. ``xml``: the page is XHTML (style_elements.style_text())."""
    # (value, kind, query encoding, referrer policy, destination, CORS mode, document) of each
    # reference (Hint's)
    references: list[tuple[str, str, str | None, str, str, str, str]] = []
    styled: list[tuple[str, str, str | None, str, str, str, str]] = []
    presented: list[tuple[str, str, str | None, str, str, str, str]] = []
    page_policy = ""
    iframes: list[FrameDocument] = []
    base: str | None = None
    title: str | None = None
    head_title: str | None = None
    nofollow: frozenset[str] = frozenset()
    in_svg = 0
    known: dict[tuple[str | None, ...], Request] = {}
    sources: list[int] = []
    """Where in ``references`` the URLs of the <source>s of the <picture> being read are: their
    CORS mode is its <img>'s, which comes after them."""
    try:
        for event, element in read_elements(body, ("start", "end"), encoding):
            tag = element.tag  # lowercased by the HTML parser
            if event == "start":  # its attributes are all there
                if tag == "body":  # a later <body> tag's attributes, which libxml2 drops
                    add_later_body_attributes(body, encoding, element)
                if tag in _STARTS_READ:
                    # Not a <style>: its text is not all there yet.
                    in_picture = tag in ("img", "source") and picture_of(element) is not None
                    if tag == "img" and in_picture:
                        for at in sources:
                            sourced = references[at]
                            references[at] = (*sourced[:5], cors_mode(element, "src", sourced[4]), "")
                    for ref in references_in((element,)):
                        assert ref[1] is not None  # no <style>'s text: see above
                        if ref[4][:1] == "#":  # a fragment of the page: nothing to fetch
                            continue
                        value: str | None = ref[4]
                        if base is None and ref[5] == REQUISITE:
                            value = _early(ref[4], url, document_encoding)
                        if value is None:
                            continue
                        if tag == "source" and in_picture:
                            sources.append(len(references))
                        hint = element_request(element, ref[1], known)
                        references.append((value, ref[5], document_encoding, *hint))
                    if tag == "base" and base is None:
                        href = element.get("href") or ""
                        base = (
                            document_base(href, url, document_encoding)
                            if is_fetchable_reference(href)
                            else None
                        )
                    elif tag == "meta":
                        nofollow = nofollow | nofollow_metas((element,))
                        page_policy = meta_referrer((element,)) or page_policy
                    elif tag == "iframe":
                        iframes.extend(srcdoc_documents((element,)))
                if tag == "svg":
                    in_svg += 1
                elif tag == "picture":
                    sources.clear()
                if element.get("style") is not None:
                    styled.extend(
                        (value, ref[5], None, "", "image", "", "")
                        for ref in style_attribute_references((element,), ("style",))
                        if (value := _css_value(ref[4], url, base)) is not None
                    )
                # Presentation attributes are CSS in SVG only, read after every style (as in a tree).
                if in_svg and not _PRESENTATION_NAMES.isdisjoint(element.keys()):
                    presented.extend(
                        (value, ref[5], None, "", "image", "", "")
                        for ref in style_attribute_references((element,), PRESENTATION_URL_ATTRS)
                        if (value := _css_value(ref[4], url, base)) is not None
                    )
            elif tag == "svg":
                in_svg -= 1
            elif tag == "style" and (css := style_text(element, xml)):  # and now its text, read once
                for start, _e, written in iter_css_urls(css):
                    if (value := _css_value(written, url, base)) is None:
                        continue
                    destination = css_destination(css, start)
                    references.append((value, REQUISITE, None, "", destination, cors_font(destination), ""))
            elif tag == "title" and is_document_title(element):
                text = title_text(element)
                title = title if title is not None else text
                if head_title is None and _in_head(element):
                    head_title = text
    except (lxml.etree.LxmlError, LookupError, ValueError):
        if encoding is None:
            return None
        return read_streamed(body, url, None, document_encoding, xml)
    return StreamedPage(
        title=head_title if head_title is not None else title,
        base=base,
        nofollow=nofollow,
        page_policy=page_policy,
        references=(*references, *styled, *presented),
        iframes=tuple(iframes),
    )


def _early(value: str, url: str, encoding: str | None) -> str | None:
    """A requisite's reference read before the page's <base href>, if it has one: the URL it names
    against the page's own URL, which Chromium fetched it at (links.before_base()), and which
    resolved again against the base stays itself. None if it names nothing to fetch."""
    return resolve_reference(value, url, encoding=encoding)


def _css_value(value: str, url: str, base: str | None) -> str | None:
    """A URL of CSS (always a requisite) as read_streamed() keeps it: _early() before any <base>."""
    return _early(value, url, None) if base is None else value


def _in_head(element: lxml.etree._Element) -> bool:
    """Whether ``element`` is a child of the <head> child of the root: page_title() looks there first."""
    head = element.getparent()
    return (
        head is not None
        and head.tag == "head"
        and (root := head.getparent()) is not None
        and root.getparent() is None
    )
