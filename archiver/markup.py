"""Start tags of an HTML document with their offsets in the source: what a span rewriter needs
(the mirror's), and what finds the tags crowded with attributes that a page's parse thins
(crowded_tags.py).

A tokenizer after the HTML standard's, reduced to what finds start tags in
the right places: comments, doctypes and other ``<!...>``/``<?...>`` markup
are skipped, and so is the content of raw-text elements (``<script>``,
``<style>``, ``<textarea>``...), where a ``<`` starts no tag. It is a few
regular expressions run by the ``re`` engine, many times faster than
html.parser on the same page, and it never fails: what is not a tag is text,
and a start tag never closed takes the rest of the document, as in HTML.

>>> found = scan('<!-- <a href=x> --><a href="/b">b</a><style>p{}</style>')
>>> [(offset, tag) for offset, tag, _raw in found.tags], found.styles
([(19, 'a'), (37, 'style')], [(44, 47)])
"""

from __future__ import annotations

import functools
import html
import html.entities
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from archiver.links import CSS_ATTRS

# Elements whose content is text up to their end tag (HTML's RAWTEXT, RCDATA,
# script data and PLAINTEXT states).
RAW_TEXT_ELEMENTS = frozenset(
    {"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "plaintext"}
)

# The attribute grammar, written once for both the start-tag scan and attributes().
# Possessive quantifiers: a tag that does not close is given up on at once instead
# of being retried every way (no catastrophic backtracking).
_SPACE = r"[\t\n\r\f\x20]"
_SEPARATORS = r"[\t\n\r\f\x20/]*+"
_TAG_NAME = r"[a-zA-Z][^\t\n\r\f\x20/>\x00]*+"
_TAG_OPEN = rf"<({_TAG_NAME})"
_NAME = r"[^\t\n\r\f\x20/>][^\t\n\r\f\x20/=>]*+"
# A value, or none: "=" never starts the next name.
_VALUE = rf"""(?:{_SPACE}*+=+{_SPACE}*+("[^"]*+"|'[^']*+'|(?!["'])[^\t\n\r\f\x20>]*+)|(?!{_SPACE}*+=))"""

_COMMENT = r"<!--(?:-?>|.*?(?:--!?>|\Z))"  # also <!--> and one left open
_CDATA = r"<!\[CDATA\[.*?(?:\]\]>|\Z)"  # XML's: text, whatever it holds
XML_RAW_TEXT_ELEMENTS = frozenset({"script", "style"})
"""In XML (SVG) the other elements' text is markup: only these hold text to skip (or read as CSS)."""
_DECLARATION = r"<[!?][^>]*+(?:>|\Z)"  # doctype, CDATA, processing instruction
_START_TAG = rf"<(?P<name>{_TAG_NAME})(?:{_SEPARATORS}{_NAME}{_VALUE})*+{_SEPARATORS}>"
_NAME_ENDS = r"(?![^\t\n\r\f\x20/>\x00])"
_NAME_ENDS_IN_TAG = r"(?![^\t\n\r\f\x20/=>])"
"""An attribute's name ends there."""
_START_OF_TAG = re.compile(_TAG_OPEN)
_ATTRIBUTE = re.compile(rf"{_SEPARATORS}({_NAME}){_VALUE}")
_END_TAGS = {name: re.compile(rf"</{name}[\t\n\r\f\x20/>]", re.IGNORECASE) for name in RAW_TEXT_ELEMENTS}
_XML_END_TAGS = {
    name: re.compile(rf"</(?:[^\t\n\r\f\x20/>:]++:)?{name}[\t\n\r\f\x20/>]", re.IGNORECASE)
    for name in XML_RAW_TEXT_ELEMENTS
}


def one_of(words: Iterable[str]) -> str:
    """A pattern that matches one of ``words`` (escaped), branching a character at a time: re tries
    the branches of an alternation one after the other, so ``a|area|audio|base|...`` costs a
    failed try per word at every tag, and ``a(?:rea|udio)?|base|...`` one per first letter.

    >>> one_of(["a", "area", "audio", "base"])
    '(?:a(?:rea|udio)?|base)'
    """
    by_first: dict[str, list[str]] = {}
    for word in sorted(set(words)):
        by_first.setdefault(word[:1], []).append(word[1:])
    ends_here = by_first.pop("", None) is not None
    branches = [
        re.escape(first) + (one_of(rests) if rests != [""] else "") for first, rests in by_first.items()
    ]
    if not branches:
        return ""
    pattern = branches[0] if len(branches) == 1 and not ends_here else f"(?:{'|'.join(branches)})"
    return pattern + "?" if ends_here else pattern


@functools.lru_cache(maxsize=8)
def _scanner(wanted: frozenset[str] | None, xml: bool = False, unread: str | None = None) -> re.Pattern[str]:
    """From a position: what precedes the next start tag to yield (text, comments, declarations,
    CDATA sections in ``xml``, with ``wanted`` the start tags of no interest, and the tags the
    pattern ``unread`` matches, all skipped inside the regular expression), then that tag (group
    "tag", its name group "name"), or else (a tag never closed, or the end) nothing more."""
    skipped = [r"[^<]++", r"<(?![a-zA-Z!?])", _COMMENT, *([_CDATA] if xml else []), _DECLARATION]
    if unread is not None:
        skipped.append(unread)
    if wanted is not None:
        # A start tag not wanted: another name (raw-text elements are always yielded, their text
        # is skipped by iter_tags), and no attribute whose CSS may hold a URL (style, fill...).
        names = one_of(wanted | RAW_TEXT_ELEMENTS)
        # Most attributes (class, id, href) begin with none of the CSS attributes' letters.
        firsts = "".join(sorted({name[0] for name in CSS_ATTRS} | {name[0].upper() for name in CSS_ATTRS}))
        no_style = rf"(?!(?=[{firsts}])(?i:{one_of(CSS_ATTRS)}){_NAME_ENDS_IN_TAG})"
        skipped.append(
            rf"<(?!(?i:{names}){_NAME_ENDS}){_TAG_NAME}"
            rf"(?:{_SEPARATORS}{no_style}{_NAME}{_VALUE})*+{_SEPARATORS}>"
        )
    return re.compile(rf"(?:{'|'.join(skipped)})*+(?:(?P<tag>{_START_TAG})|<|\Z)", re.DOTALL)


@dataclass
class Markup:
    """What scan() found."""

    tags: list[tuple[int, str, str]] = field(default_factory=list)
    """(offset, lowercased tag name, raw tag text) of every start tag, in document order."""
    styles: list[tuple[int, int]] = field(default_factory=list)
    """(start, end) of the text of every <style> element."""


def scan(text: str) -> Markup:
    """The start tags and <style> texts of an HTML document."""
    found = Markup()
    found.tags.extend(iter_tags(text, found.styles))
    return found


def iter_tags(
    text: str,
    styles: list[tuple[int, int]],
    wanted: frozenset[str] | None = None,
    xml: bool = False,
    unread: str | None = None,
) -> Iterator[tuple[int, str, str]]:
    """scan()'s tags one at a time, each <style>'s text span appended to ``styles`` as its tag is
    yielded: a page of megabytes holds tens of thousands of tags, a few hundred bytes each.

    With ``wanted`` (lowercased tag names), only the tags a link rewriter reads: those names, the
    tags with an attribute named style, and the raw-text elements'. The others (most of a page)
    are skipped by the regular expression, without a step of Python each.

    With ``xml`` (an SVG document), a CDATA section is text, only <script> and <style> hold text
    to skip, and a tag's name is yielded without its prefix (``svg:style`` is a <style>).

    ``unread``: a pattern of whole start tags of a name not in RAW_TEXT_ELEMENTS that the caller
    has no use for either (see unread_tags()), skipped the same way.
    """
    position = 0
    length = len(text)
    match_next = _scanner(wanted, xml, unread).match
    raw_text_elements = XML_RAW_TEXT_ELEMENTS if xml else RAW_TEXT_ELEMENTS
    while position < length:
        match = match_next(text, position)
        assert match is not None  # the end matches when nothing else does
        position = match.end()
        name = match.group("name")
        if name is None:
            # The end, or a start tag never closed. Only the end of the text stops a tag (an
            # attribute value's open quote runs there too); as in HTML, the rest is that tag, and
            # no tag is looked for inside it (once per "<", that would take time squared).
            break
        name = name.lower().rpartition(":")[2] if xml else name.lower()
        raw = match.group("tag")
        yield match.start("tag"), name, raw
        if name in raw_text_elements and not raw.endswith("/>"):
            end_tags = _XML_END_TAGS if xml else _END_TAGS
            end = length if name == "plaintext" else _raw_text_end(text, end_tags[name], position)
            if name == "style":
                styles.append((position, end))
            position = end


def unread_tags(name: str, read: Iterable[str], kept: tuple[str, str]) -> str:
    """A pattern for iter_tags()'s ``unread``: a start tag named ``name`` with none of the
    attributes ``read`` but the one named ``kept[0]``, whose value (each of them, if it is
    repeated) begins with the text ``kept[1]`` (no character reference, no space before it).

    >>> unread = re.compile(unread_tags("a", ["href", "style"], ("href", "#")))
    >>> [bool(unread.fullmatch(tag)) for tag in ('<a href="#x" class=y>', "<A HREF=#x>", '<a href="/x">',
    ...     '<a href="#x" style="">', '<a href>', "<a hreflang=en>", "<abbr title=x>")]
    [True, True, False, False, False, True, False]
    """
    kept_name, begins = kept
    others = one_of({word.lower() for word in read} | {kept_name.lower()})
    value = re.escape(begins)
    quoted = rf"""(?:"{value}[^"]*+"|'{value}[^']*+'|{value}[^\t\n\r\f\x20>]*+)"""
    kept_value = rf"(?i:{re.escape(kept_name)}){_SPACE}*+={_SPACE}*+{quoted}"
    other = rf"(?!(?i:{others}){_NAME_ENDS_IN_TAG}){_NAME}{_VALUE}"
    return rf"<(?i:{re.escape(name)}){_NAME_ENDS}(?:{_SEPARATORS}(?:{kept_value}|{other}))*+{_SEPARATORS}>"


def one_read_attribute(name: str, read: Iterable[str], kept: str) -> re.Pattern[str]:
    """Whole start tags named ``name`` whose only attribute of ``read`` is one named ``kept``,
    with a value, whose span (its quotes with it, as attributes() gives it) is the group "value".

    >>> pattern = one_read_attribute("a", ["href", "ping"], "href")
    >>> [pattern.fullmatch(tag)["value"] if pattern.fullmatch(tag) else None for tag in (
    ...     '<a class=x HREF="/b#c" title=t>', "<a href=/b>", "<a href=>", '<a href="/b" href=/c>',
    ...     '<a href="/b" ping=/p>', "<a hreflang=en>", '<abbr href="/b">')]
    ['"/b#c"', '/b', None, None, None, None, None]
    """
    others = one_of({word.lower() for word in read} | {kept.lower()})
    other = rf"(?!(?i:{others}){_NAME_ENDS_IN_TAG}){_NAME}{_VALUE}"
    value = r"""(?P<value>"[^"]*+"|'[^']*+'|(?!["'])[^\t\n\r\f\x20>]++)"""
    kept_value = rf"(?i:{re.escape(kept)}){_SPACE}*+=+{_SPACE}*+{value}"
    return re.compile(
        rf"<(?i:{re.escape(name)}){_NAME_ENDS}(?:{_SEPARATORS}{other})*+"
        rf"{_SEPARATORS}{kept_value}(?:{_SEPARATORS}{other})*+{_SEPARATORS}>"
    )


def _raw_text_end(text: str, end_tag: re.Pattern[str], start: int) -> int:
    end = end_tag.search(text, start)
    return end.start() if end else len(text)


def attributes(raw: str) -> list[tuple[str, int, int, int, int]]:
    """(lowercased name, name start, name end, value start, value end) of a start tag's attributes.

    ``raw`` is a tag as scan() found it. The value span includes its quotes; it is
    empty (start == end) when there is no value.

    >>> attributes('<a HREF="/b" hidden>')
    [('href', 3, 7, 8, 12), ('hidden', 13, 19, 19, 19)]
    """
    found = []
    start = _START_OF_TAG.match(raw)
    position = start.end() if start else len(raw)
    while (match := _ATTRIBUTE.match(raw, position)) is not None:
        name_start, name_end = match.span(1)
        value_start, value_end = match.span(2) if match.group(2) is not None else (name_end,) * 2
        found.append((match.group(1).lower(), name_start, name_end, value_start, value_end))
        position = match.end()
    return found


_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]*;?)")


def unescape_attribute(value: str) -> str:
    """An attribute value with its character references decoded as the HTML tokenizer decodes
    them in an attribute.

    A named reference without its ``;`` (``&copy``, one of the legacy names)
    stays as written when a letter, a digit or ``=`` follows it: so a query's
    ``&copy=2`` or ``&section=2`` keeps its parameter, where html.unescape()
    makes it ``©=2`` and ``§ion=2``. Outside attributes (text) the rule differs;
    this is for attribute values only.

    A NUL written as it is the tokenizer reads as U+FFFD (as it reads ``&#0;``), as libxml2 does
    for the crawl: the mirror then looks up the URL the crawl fetched.

    >>> unescape_attribute("/list?page=1&section=2&copy=3&amp;x=&lt;&copy &#169;")
    '/list?page=1&section=2&copy=3&x=<© ©'
    >>> unescape_attribute("n" + chr(0) + "ul&#0;.png")
    'n�ul�.png'
    """
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    if "&" not in value:
        return value
    return _CHARACTER_REFERENCE.sub(lambda match: _reference(match, value), value)


def _reference(match: re.Match[str], value: str) -> str:
    reference = match.group(0)
    if reference[1] == "#" or reference.endswith(";"):
        return html.unescape(reference)
    # A name with no ';': the pattern took every letter and digit after the '&', so a legacy
    # name that is only a prefix of it is followed by one (left alone), and a whole one is
    # left alone when '=' follows.
    character = html.entities.html5.get(reference[1:])
    if character is None or value[match.end() : match.end() + 1] == "=":
        return reference
    return character
