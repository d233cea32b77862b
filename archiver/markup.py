"""Start tags of an HTML document with their offsets in the source: what a span rewriter needs.

A tokenizer after the HTML standard's, reduced to what finds start tags in
the right places: comments, doctypes and other ``<!...>``/``<?...>`` markup
are skipped, and so is the content of raw-text elements (``<script>``,
``<style>``, ``<textarea>``...), where a ``<`` starts no tag. It is a few
regular expressions run by the ``re`` engine, many times faster than
html.parser on the same page, and it never fails: what is not a tag is text.

>>> found = scan('<!-- <a href=x> --><a href="/b">b</a><style>p{}</style>')
>>> [(offset, tag) for offset, tag, _raw in found.tags], found.styles
([(19, 'a'), (37, 'style')], [(44, 47)])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Elements whose content is text up to their end tag (HTML's RAWTEXT, RCDATA,
# script data and PLAINTEXT states).
RAW_TEXT_ELEMENTS = frozenset(
    {"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "plaintext"}
)

# Possessive quantifiers: a tag that does not close is given up on at once
# instead of being retried every way (no catastrophic backtracking).
_MARKUP = re.compile(
    r"""
    <!--(?:-?>|.*?(?:--!?>|\Z))                # comment, also <!--> and one left open
  | <[!?][^>]*+(?:>|\Z)                       # doctype, CDATA, processing instruction
  | <(?P<tag>[a-zA-Z][^\t\n\r\f\x20/>\x00]*+)  # start tag: name, then attributes
      (?:[\t\n\r\f\x20/]*+[^\t\n\r\f\x20/>][^\t\n\r\f\x20/=>]*+
         (?:[\t\n\r\f\x20]*+=+[\t\n\r\f\x20]*+(?:"[^"]*+"|'[^']*+'|(?!["'])[^\t\n\r\f\x20>]*+)
            |(?![\t\n\r\f\x20]*+=))               # a value, or none: "=" never starts the next name
      )*+
      [\t\n\r\f\x20/]*+>
    """,
    re.DOTALL | re.VERBOSE,
)
_END_TAGS = {name: re.compile(rf"</{name}[\t\n\r\f\x20/>]", re.IGNORECASE) for name in RAW_TEXT_ELEMENTS}


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
    position = 0
    length = len(text)
    search = _MARKUP.search
    while position < length:
        match = search(text, position)
        if match is None:
            break
        position = match.end()
        name = match.group("tag")
        if name is None:
            continue
        name = name.lower()
        raw = match.group(0)
        found.tags.append((match.start(), name, raw))
        if name in RAW_TEXT_ELEMENTS and not raw.endswith("/>"):
            end = length if name == "plaintext" else _raw_text_end(text, name, position)
            if name == "style":
                found.styles.append((position, end))
            position = end
    return found


def _raw_text_end(text: str, name: str, start: int) -> int:
    end = _END_TAGS[name].search(text, start)
    return end.start() if end else len(text)
