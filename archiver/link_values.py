"""Where a URL sits inside a value: the candidates of a srcset, the target of a meta refresh,
the url()s and @imports of a stylesheet. Pure span finders, shared by the link parser
(links.py, findings.py), the mirror's rewriter and verify, so all three cut values the same way.

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
# runs to the end of the text (as in CSS), a quoted value stops at the next quote of its kind that
# no backslash escapes (another url("...") inside it would have to end it, so no two are read over
# the same text), and nothing is given back once read (possessive: no other way to read it could
# match). White space is CSS's own (a no-break space, or a byte of UTF-8 read one byte a character,
# is part of a URL). Escapes (CSS Syntax 3, "consume an escaped code point") are kept whole in a
# value: a backslash takes the character after it, or up to six hex digits and one white space.
_WHITE = r"[ \t\n\r\f]"
_ESCAPE = r"\\(?:[0-9a-fA-F]{1,6}+(?:\r\n|[ \t\n\r\f])?+|[^\n\r\f0-9a-fA-F])"
_DOUBLE_QUOTED = r'"(?P<{}>(?:[^"\\]++|\\.?+)*+)"'
_SINGLE_QUOTED = r"'(?P<{}>(?:[^'\\]++|\\.?+)*+)'"
_CSS_URL = re.compile(
    rf"""url\({_WHITE}*+(?:{_DOUBLE_QUOTED.format("dq")}|{_SINGLE_QUOTED.format("sq")}"""
    rf"""|(?P<bare>(?:[^()"'\\ \t\n\r\f]++|{_ESCAPE})*+)){_WHITE}*+\)"""
    rf"""|@import{_WHITE}++(?:{_DOUBLE_QUOTED.format("idq")}|{_SINGLE_QUOTED.format("isq")})""",
    re.IGNORECASE | re.DOTALL,
)
# image-set("a.png" 1x, "b.png" 2x): its strings are URLs (its url() ones match _CSS_URL). Its
# arguments may hold parenthesised functions one level deep (type("image/avif"), whose string is
# no URL); possessive, each character read once.
_IMAGE_SET = re.compile(r"(?:-webkit-)?image-set\(((?:[^()]|\([^()]*+\))*+)\)", re.IGNORECASE)
_IMAGE_SET_STRING = re.compile(
    rf"""type\({_WHITE}*+(?:"[^"]*+"|'[^']*+'){_WHITE}*+\)"""
    rf"""|{_DOUBLE_QUOTED.format("dq")}|{_SINGLE_QUOTED.format("sq")}""",
    re.IGNORECASE | re.DOTALL,
)
_ESCAPED_CODE_POINT = re.compile(
    r"\\(?:([0-9a-fA-F]{1,6})(?:\r\n|[ \t\n\r\f])?|(\r\n|[\n\r\f])|(.))", re.DOTALL
)
_WRITTEN_ESCAPES = {"": re.compile(r"""[\\()"'\x00-\x20\x7f]"""), '"': re.compile(r'[\\"\n\r\f]')}
_WRITTEN_ESCAPES["'"] = re.compile(r"[\\'\n\r\f]")
_MARKUP = re.compile("[<>&]")
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
    r"""The (start, end, url) spans of url(), @import and image-set() targets in CSS text, in order:
    start and end span the URL as written, escapes and all; ``url`` is it as CSS reads it.

    >>> css = 'a{b:image-set("x.png" 1x, url(y\\20 z.png) 2x, "z.avif" type("image/avif"))}'
    >>> [url for _start, _end, url in iter_css_urls(css)]
    ['x.png', 'y z.png', 'z.avif']
    """
    for start, end in css_url_spans(text):
        yield start, end, css_unescaped(text[start:end])


def css_url_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of iter_css_urls(), for a caller that reads each URL itself (the
    mirror reads it once the bytes of a stylesheet are decoded)."""
    # Blank comments (same length) so offsets still index the original text.
    cleaned = _CSS_COMMENT.sub(lambda m: " " * len(m.group(0)), text)
    spans = list(_groups(_CSS_URL.finditer(cleaned), ("dq", "sq", "bare", "idq", "isq")))
    if "image-set" in cleaned.lower():
        for image_set in _IMAGE_SET.finditer(cleaned):
            found = _IMAGE_SET_STRING.finditer(cleaned, image_set.start(1), image_set.end(1))
            spans.extend(_groups(found, ("dq", "sq")))
        spans.sort()
    return spans


def _groups(matches: Iterator[re.Match[str]], groups: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    for match in matches:
        for group in groups:
            if match.group(group) is not None:
                if match.group(group).strip():
                    yield match.start(group), match.end(group)
                break


def css_unescaped(value: str) -> str:
    r"""A URL of a stylesheet as CSS reads it: each escape replaced by the character it names
    (CSS Syntax 3, "consume an escaped code point"); an escaped newline, which continues a
    string, by nothing.

    >>> css_unescaped(r"caf\e9 \(1\).png"), css_unescaped("a\\\nb")
    ('café(1).png', 'ab')
    >>> css_unescaped(r"\0 \110000 ") == "\N{REPLACEMENT CHARACTER}" * 2
    True
    """
    if "\\" not in value:
        return value
    return _ESCAPED_CODE_POINT.sub(_code_point, value)


def _code_point(match: re.Match[str]) -> str:
    digits, newline, character = match.groups()
    if digits is None:
        return "" if newline is not None else character
    number = int(digits, 16)
    return "\ufffd" if number == 0 or 0xD800 <= number <= 0xDFFF or number > 0x10FFFF else chr(number)


def written_css_url(url: str, text: str, start: int, markup: bool = False) -> str:
    r"""``url`` escaped to stand in place of the URL iter_css_urls() found at ``start`` of ``text``:
    in a string (the quote before it says which) or bare in a url(), where CSS reads it back as
    ``url``, whole. With ``markup`` (CSS in XML, which may be text or CDATA there), "<", ">" and
    "&" escaped too, as CSS escapes them: they are then markup in neither.

    >>> css = "a{b:url(x.png)} c{d:url('y.png')}"
    >>> written_css_url("a(1) b.png", css, 8), written_css_url("it's.png", css, 25)
    ('a\\(1\\)\\20 b.png', "it\\'s.png")
    """
    quote = text[start - 1] if start and text[start - 1] in "\"'" else ""
    written = _WRITTEN_ESCAPES[quote].sub(_escape, url)
    return _MARKUP.sub(_escape, written) if markup else written


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    # White space, controls and markup by their number (then a space, which ends the number).
    if character <= " " or character in "\x7f<>&":
        return f"\\{ord(character):x} "
    return "\\" + character
