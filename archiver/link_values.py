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

from archiver.urls import ASCII_WHITESPACE

# The URLs of CSS are found by tokenizing it as CSS Syntax Level 3 does, as far as finding them
# needs: comments, strings (a "/*" or a "url(" inside one is text), names with their escapes (a
# function's name is its unescaped name: \75 rl( is url(, 1url( and #url( are no function), url
# tokens (unquoted, where "/*" is part of the URL, and a bad one consumed to its ")" as CSS does),
# the url() and image-set() functions, the string after @import (the URL after @namespace is a
# name, never fetched). What is of no interest (most of a stylesheet) is skipped inside the regular
# expression, each character read once (possessive: nothing is given back once read), so a hostile
# stylesheet costs time in proportion to its size. (tinycss2 tokenizes as well, but a character a
# step in Python, and its tokens do not say where they end in the text, which the mirror's rewrite
# replaces span by span.)
# White space is CSS's own (a no-break space, or a byte of UTF-8 read one byte a character, is
# part of a URL).
_WHITE = r"[ \t\n\r\f]"
_ESCAPE = r"\\(?:[0-9a-fA-F]{1,6}+(?:\r\n|[ \t\n\r\f])?+|[^\n\r\f0-9a-fA-F]|\Z)"


def _ascii_except(inside: str) -> str:
    r"""The class of the ASCII characters the class ``[inside]`` leaves out, as ranges of codes.

    Every code point past ASCII is a name character (or part of a URL), so the classes that
    leave out name characters hold ASCII only: written so, rather than as a negated class that
    names U+0080 to U+10FFFF, each compiles in microseconds instead of 8 milliseconds (about a
    tenth of a second at every start of the crawl and of each worker process).

    >>> _ascii_except(r"\x00-\x2f\x3a-\x7f")
    '[\\x30-\\x39]'
    """
    left_out = re.compile(f"[{inside}]")
    ranges: list[list[int]] = []
    for code in range(128):
        if left_out.match(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    written = (rf"\x{low:02x}" + (rf"-\x{high:02x}" if high > low else "") for low, high in ranges)
    return "[" + "".join(written) + "]"


_NAME_ASCII = r"a-zA-Z0-9_\-"
_NAME_CHARACTER = "[^" + _ascii_except(_NAME_ASCII)[1:]
"""A letter, digit, ``_``, ``-`` or any character past ASCII (CSS's name code points)."""
_OTHER_ASCII = _ascii_except(_NAME_ASCII + r"\"'/@#\\")
"""What no name, string, comment, at-keyword, hash or escape can start with."""
_OTHER_ASCII_IN_BRACKETS = _ascii_except(_NAME_ASCII + r"\"'/@#\\()\[\]{}")
"""The same, nor a bracket: inside image-set(), where brackets are counted."""
_PLAIN_ASCII_IN_PARENTHESES = _ascii_except(_NAME_ASCII + r"\"'/\\()\[\]{}")
"""Inside parentheses that hold nothing to read (``@`` and ``#`` begin nothing there)."""

_NAME = rf"(?:{_NAME_CHARACTER}|{_ESCAPE})++"
_COMMENT = r"/\*(?:[^*]++|\*(?!/))*+(?:\*/|\Z)"
# A string ends at its quote, at the end of the text, or (a bad string) before a newline.
_STRINGS = "|".join(rf"{quote}(?:[^{quote}\\\n\r\f]++|\\(?:\r\n|[\s\S])?+)*+{quote}?+" for quote in "\"'")
_OPENERS = r"(?i:url|(?:-webkit-)?image-set)\("
_SKIPPED = (
    _COMMENT,
    _STRINGS,
    # A name that opens no function of interest, nor is @import or @namespace (one that holds an
    # escape is read in Python: its name is what the escapes spell).
    rf"(?!{_OPENERS}|@(?i:import|namespace)(?!{_NAME_CHARACTER}|\\))[@#]?+{_NAME_CHARACTER}++"
    rf"(?!\\[^\n\r\f])",
    rf"{_OTHER_ASCII}++",
    r"/(?!\*)",
    rf"[@#](?!{_NAME_CHARACTER}|\\)",
    r"\\(?![^\n\r\f])",  # a backslash that escapes nothing
)
_NEXT_TOKEN = re.compile(
    rf"(?:{'|'.join(_SKIPPED)})*+(?:(?P<opener>{_OPENERS})|(?P<name>[@#]?+{_NAME})(?P<open>\()?+|\Z|.)",
    re.DOTALL,
)
_STRING = {
    quote: re.compile(rf"{quote}(?:[^{quote}\\\n\r\f]++|\\(?:\r\n|[\s\S])?+)*+(?P<closed>{quote})?+")
    for quote in "\"'"
}
"""A string that starts with this quote, whether its quote closes it."""
_WHITE_RUN = re.compile(f"{_WHITE}*+")
_SPACE_AND_COMMENTS = re.compile(rf"(?:{_WHITE}++|{_COMMENT})*+", re.DOTALL)
_URL_TOKEN = re.compile(
    rf"""(?P<url>(?:[^()"'\\ \t\n\r\f\x00-\x08\x0b\x0e-\x1f\x7f]++|{_ESCAPE})*+){_WHITE}*+(?:\)|\Z)"""
)
_NAMESPACE_PREFIX = re.compile(rf"(?!{_OPENERS}){_NAME}(?!\()")
_NAMESPACE_FUNCTION = re.compile(rf"({_NAME})\(")
_BAD_URL_REMNANTS = re.compile(r"(?:[^)\\]++|\\[\s\S]?+)*+\)?+")
# Inside image-set(): its strings are URLs, but not those of a function inside it (type("image/avif")).
# A name that opens no function, and brackets that hold nothing to read, are skipped in the pattern.
_IMAGE_SET_TOKEN = re.compile(
    rf"(?:{_COMMENT}|{_OTHER_ASCII_IN_BRACKETS}++|/(?!\*)|\\(?![^\n\r\f])"
    rf"|[@#]?+{_NAME}(?!\()|[@#](?!{_NAME_CHARACTER}|\\)"
    rf"|\((?:{_PLAIN_ASCII_IN_PARENTHESES}++|/(?!\*)|{_NAME_CHARACTER}++(?![(\\]))*+\))*+"
    rf"(?:(?P<string>[\"'])|(?P<name>[@#]?+{_NAME})(?P<open>\()|(?P<opens>[(\[{{])|(?P<closes>[)\]}}])|\Z|.)",
    re.DOTALL,
)
_CLOSER = {"(": ")", "[": "]", "{": "}"}
_ESCAPED_CODE_POINT = re.compile(
    r"\\(?:([0-9a-fA-F]{1,6})(?:\r\n|[ \t\n\r\f])?|(\r\n|[\n\r\f])|(.|\Z))", re.DOTALL
)
_WRITTEN_ESCAPES = {"": re.compile(r"""[\\()"'\x00-\x20\x7f]"""), '"': re.compile(r'[\\"\n\r\f]')}
_WRITTEN_ESCAPES["'"] = re.compile(r"[\\'\n\r\f]")
_MARKUP = re.compile("[<>&]")
_META_REFRESH_URL = re.compile(
    r"""^[ \t\n\f\r]*[0-9]*\.?[0-9]*[ \t\n\f\r]*[;,]?[ \t\n\f\r]*(?:url[ \t\n\f\r]*=[ \t\n\f\r]*)?"""
    r"""(?P<q>['"]?)(?P<url>.+?)(?P=q)\Z""",
    re.IGNORECASE | re.DOTALL,
)
"""Matched against the content without its trailing whitespace: with a final \\s*$ instead, each
character the lazy URL took tried every space after it (time squared in a run of spaces)."""


def parse_srcset(value: str) -> list[tuple[int, int, str]]:
    """The (start, end, url) spans of the candidate URLs in a srcset value."""
    spans = []
    index = 0
    while index < len(value):
        while index < len(value) and (value[index] in ASCII_WHITESPACE or value[index] == ","):
            index += 1
        start = index
        while index < len(value) and value[index] not in ASCII_WHITESPACE:
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
    match = _META_REFRESH_URL.match(content.rstrip(ASCII_WHITESPACE))
    if not match or not match.group("url") or match.group("url")[0].isdigit() and ";" not in content:
        return None
    return match.start("url"), match.end("url"), match.group("url")


def may_hold_css_urls(css: str) -> bool:
    """False when ``css`` can hold no URL iter_css_urls() would find (a cheap look first: a name
    written with escapes may spell url)."""
    lowered = css.lower()
    return "url(" in lowered or "@import" in lowered or "image-set" in lowered or "\\" in css


_IMPORT_BEFORE = re.compile(r"@import\s*(?:url\(\s*)?[\"']?$", re.IGNORECASE)


def css_destination(text: str, start: int) -> str:
    """The destination of the request for the URL at ``start`` in the CSS ``text``: a style
    sheet for an @import, a font for one in an @font-face rule, else an image.

    >>> css = '@import url("a.css"); b { background: url(b.png) } @font-face { src: url(f.woff2) }'
    >>> [css_destination(css, start) for start, _end, _url in iter_css_urls(css)]
    ['style', 'image', 'font']
    """
    if _IMPORT_BEFORE.search(text[max(0, start - 40) : start]):
        return "style"
    # Within an @font-face rule: its opening after the last closing brace before the URL.
    # (Written in lowercase, as stylesheets write it: a case-blind search costs a copy a URL.)
    face = text.rfind("@font-face", max(0, start - FONT_FACE_REACH), start)
    return "font" if face != -1 and text.rfind("}", face, start) == -1 else "image"


FONT_FACE_REACH = 4000
"""How far before a URL in CSS its @font-face rule may open (its src lists a few URLs)."""


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
    spans: list[tuple[int, int]] = []
    position, length = 0, len(text)
    while position < length:
        token = _NEXT_TOKEN.match(text, position)
        assert token is not None  # the end, or any one character, matches when nothing else does
        position = token.end()
        if token.group("opener") is not None:
            function = token.group("opener")[:-1].lower()
        elif token.group("open") is not None:
            function = css_unescaped(token.group("name")).lower()
        elif token.group("name") is not None and token.group("name")[0] == "@":
            position = _at_rule(text, position, css_unescaped(token.group("name")).lower(), spans)
            continue
        else:
            continue
        if function == "url":
            position = _url(text, position, spans)[0]
        elif function in ("image-set", "-webkit-image-set"):
            position = _image_set(text, position, spans)
    return spans


def _url(text: str, position: int, spans: list[tuple[int, int]]) -> tuple[int, bool]:
    """Where the url() whose "(" ends at ``position`` ends, its URL's span added to ``spans``;
    and whether it is a function that goes on (a url() of a string: the rest is read as CSS)."""
    start = _WHITE_RUN.match(text, position).end()  # type: ignore[union-attr]
    if text[start : start + 1] in ("'", '"'):
        return _string(text, start, spans), True
    token = _URL_TOKEN.match(text, start)
    if token is None:  # a bad url: no link, read to its ")"
        return _BAD_URL_REMNANTS.match(text, start).end(), False  # type: ignore[union-attr]
    _add(text, spans, token.start("url"), token.end("url"))
    return token.end(), False


def _string(text: str, start: int, spans: list[tuple[int, int]] | None) -> int:
    """Where the string at ``start`` ends; its content's span added to ``spans`` unless it is a
    bad string (one a newline ended: no value)."""
    token = _STRING[text[start]].match(text, start)
    assert token is not None
    end = token.end()
    closed = token.group("closed") is not None
    if spans is not None and (closed or end == len(text)):
        content_end = end - 1 if closed else end
        if not closed and (len(text[start:end]) - len(text[start:end].rstrip("\\"))) % 2:
            content_end -= 1  # a backslash that the end of the text cut from what it escaped
        _add(text, spans, start + 1, content_end)
    return end


def _at_rule(text: str, position: int, name: str, spans: list[tuple[int, int]]) -> int:
    """Where to go on after the at-keyword ``name`` that ends at ``position``: past the string of
    an @import (a URL: its url() is read as any other), past the URL of an @namespace (a name,
    never fetched)."""
    if name not in ("@import", "@namespace"):
        return position
    position = _SPACE_AND_COMMENTS.match(text, position).end()  # type: ignore[union-attr]
    if name == "@namespace":  # @namespace [prefix] (url(...) | "...")
        prefix = _NAMESPACE_PREFIX.match(text, position)
        if prefix is not None:
            position = _SPACE_AND_COMMENTS.match(text, prefix.end()).end()  # type: ignore[union-attr]
        if text[position : position + 1] in ("'", '"'):
            return _string(text, position, None)
        function = _NAMESPACE_FUNCTION.match(text, position)
        if function is not None and css_unescaped(function.group(1)).lower() == "url":
            return _url(text, function.end(), [])[0]
        return position
    if text[position : position + 1] in ("'", '"'):
        return _string(text, position, spans)
    return position


def _image_set(text: str, position: int, spans: list[tuple[int, int]]) -> int:
    """Where the image-set() whose "(" ends at ``position`` ends; the spans of its URLs (its own
    strings, and url()s anywhere in it) added to ``spans``. Blocks and functions nest in it, and
    a closing bracket that closes none of them is text (CSS Syntax 3, "consume a function")."""
    closers: list[str] = []
    length = len(text)
    while position < length:
        token = _IMAGE_SET_TOKEN.match(text, position)
        assert token is not None
        position = token.end()
        if token.group("string") is not None:
            position = _string(text, token.start("string"), None if closers else spans)
        elif token.group("open") is not None:
            if css_unescaped(token.group("name")).lower() == "url":
                position, goes_on = _url(text, position, spans)
                closers.extend(")" * goes_on)  # url("...") goes on to its ")"
            else:
                closers.append(")")
        elif token.group("opens") is not None:
            closers.append(_CLOSER[token.group("opens")])
        elif token.group("closes") is not None:
            if closers and closers[-1] == token.group("closes"):
                closers.pop()
            elif not closers and token.group("closes") == ")":
                return position
    return position


def _add(text: str, spans: list[tuple[int, int]], start: int, end: int) -> None:
    """Add the span of a URL unless it is blank (url() and url("") name nothing to fetch)."""
    if css_unescaped(text[start:end]).strip(" \t\n\r\f"):
        spans.append((start, end))


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
        return "" if newline is not None else character or "\ufffd"  # a backslash that ends the text
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
