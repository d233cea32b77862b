"""Where a URL sits inside a value: the candidates of a srcset, the target of a meta refresh,
the url()s and @imports of a stylesheet. Pure span finders, shared by the link parser
(links.py), the mirror's rewriter and verify, so all three cut values the same way.

>>> parse_srcset("a.png 1x, b.png 2x")
[(0, 5, 'a.png'), (10, 15, 'b.png')]
>>> parse_meta_refresh("0; url=/next")
(7, 12, '/next')
>>> list(iter_css_urls("p{background:url('/i.png')} @import 'x.css';"))
[(18, 24, '/i.png'), (37, 42, 'x.css')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# No pattern here reads past what a match consumes more than once, so a hostile stylesheet costs
# time in proportion to its size: a bare URL stops at "(" (which CSS does not allow in one: a
# "url(url(url(..." of a megabyte was read to its end from each "url("), a comment left open
# runs to the end of the text (as in CSS), a quoted value stops at the next quote of its kind, and
# nothing is given back once read (possessive: no other way to read it could match).
_CSS_URL = re.compile(
    r"""url\(\s*+(?:"(?P<dq>[^"]*+)"|'(?P<sq>[^']*+)'|(?P<bare>[^()"'\s]*+))\s*+\)"""
    r"""|@import\s++(?:"(?P<idq>[^"]*+)"|'(?P<isq>[^']*+)')""",
    re.IGNORECASE,
)
# image-set("a.png" 1x, "b.png" 2x): its strings are URLs (its url() ones match _CSS_URL). Its
# arguments may hold parenthesised functions one level deep (type("image/avif"), whose string is
# no URL); possessive, each character read once.
_IMAGE_SET = re.compile(r"(?:-webkit-)?image-set\(((?:[^()]|\([^()]*+\))*+)\)", re.IGNORECASE)
_IMAGE_SET_STRING = re.compile(
    r"""type\(\s*+(?:"[^"]*+"|'[^']*+')\s*+\)|"(?P<dq>[^"]*+)"|'(?P<sq>[^']*+)'""", re.IGNORECASE
)
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_META_REFRESH_URL = re.compile(
    r"""^\s*\d*\.?\d*\s*[;,]?\s*(?:url\s*=\s*)?(?P<q>['"]?)(?P<url>.+?)(?P=q)\Z""",
    re.IGNORECASE | re.DOTALL,
)
"""Matched against the content without its trailing whitespace: with a final \\s*$ instead, each
character the lazy URL took tried every space after it (time squared in a run of spaces)."""


def parse_srcset(value: str) -> list[tuple[int, int, str]]:
    """The (start, end, url) spans of the candidate URLs in a srcset value."""
    spans = []
    index = 0
    while index < len(value):
        while index < len(value) and (value[index].isspace() or value[index] == ","):
            index += 1
        start = index
        while index < len(value) and not value[index].isspace():
            index += 1
        end = index
        # A URL may end with commas that separate candidates when no descriptor follows.
        ended_by_comma = end > start and value[end - 1] == ","
        while end > start and value[end - 1] == ",":
            end -= 1
        if end > start:
            spans.append((start, end, value[start:end]))
        if not ended_by_comma:  # skip the descriptor up to the next comma
            while index < len(value) and value[index] != ",":
                index += 1
    return spans


def parse_meta_refresh(content: str) -> tuple[int, int, str] | None:
    """The (start, end, url) span of the URL in a meta refresh's content, if any."""
    match = _META_REFRESH_URL.match(content.rstrip())
    if not match or not match.group("url") or match.group("url")[0].isdigit() and ";" not in content:
        return None
    return match.start("url"), match.end("url"), match.group("url")


def may_hold_css_urls(css: str) -> bool:
    """False when ``css`` can hold no URL iter_css_urls() would find (a cheap look first)."""
    lowered = css.lower()
    return "url(" in lowered or "@import" in lowered or "image-set" in lowered


def iter_css_urls(text: str) -> Iterator[tuple[int, int, str]]:
    """The (start, end, url) spans of url(), @import and image-set() targets in CSS text, in order.

    >>> css = 'a{b:image-set("x.png" 1x, url(y.png) 2x, "z.avif" type("image/avif"))}'
    >>> [url for _start, _end, url in iter_css_urls(css)]
    ['x.png', 'y.png', 'z.avif']
    """
    # Blank comments (same length) so offsets still index the original text.
    cleaned = _CSS_COMMENT.sub(lambda m: " " * len(m.group(0)), text)
    spans = list(_groups(_CSS_URL.finditer(cleaned), ("dq", "sq", "bare", "idq", "isq")))
    if "image-set" in cleaned.lower():
        for image_set in _IMAGE_SET.finditer(cleaned):
            found = _IMAGE_SET_STRING.finditer(cleaned, image_set.start(1), image_set.end(1))
            spans.extend(_groups(found, ("dq", "sq")))
        spans.sort()
    yield from spans


def _groups(matches: Iterator[re.Match[str]], groups: tuple[str, ...]) -> Iterator[tuple[int, int, str]]:
    for match in matches:
        for group in groups:
            if match.group(group) is not None:
                value = match.group(group)
                if value.strip():
                    yield match.start(group), match.end(group), value
                break
