"""The attributes of a page's <body> start tags that libxml2's parser drops: HTML's parser
(Chromium's) adds those of a second <body> tag, or of one met after the body began (text
before it implied one), to the body, where it lacks them, and a ``background`` so added is an
image Chromium fetches. lxml gives the body the first tag's attributes alone, or none. Pure:
bytes in, attributes out.

>>> import lxml.html
>>> page = b"<body class=a><p>x<body background=bg.png class=b>"
>>> root = lxml.html.document_fromstring(page)
>>> add_later_body_attributes(page, None, root.find("body"))
>>> sorted(root.find("body").attrib.items())
[('background', 'bg.png'), ('class', 'a')]
"""

from __future__ import annotations

import itertools
import mmap
import re
from collections.abc import Iterator

import lxml.etree
import lxml.html

from archiver.crowded_tags import thin_crowded_tags

BODY_TAG = re.compile(rb"<body(?=[\s/>])", re.IGNORECASE)
"""Where a <body> start tag begins."""
UNREAD = re.compile(
    rb"<!--.*?(?:-->|\Z)|<(script|style|textarea|title|xmp|iframe|noembed|noframes|noscript|template)"
    rb"(?=[\s/>]).*?(?:</\1\s*>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
"""What holds no tag the body takes attributes from: a comment, the text of an element read as
text (a script's, a title's...), a template's content (whose <body> tags HTML ignores)."""
MAX_BODY_TAGS = 64
"""<body> tags read at most: a page of a hundred thousand costs no more than these (a browser
reads them all; pages hold one or two)."""
START_TAG = re.compile(rb"""<[^\s/>]+(?:[^>"']|"[^"]*"|'[^']*')*>?""")
"""A start tag, its attributes' quoted values holding any ``>``."""


def add_later_body_attributes(
    source: bytes | mmap.mmap, encoding: str | None, body: lxml.etree._Element
) -> None:
    """Give ``body`` (the body element parsed from ``source``, read in ``encoding``: lxml's name,
    None as lxml reads it) the attributes of the <body> start tags of ``source`` it lacks, the
    first tag's first, as HTML's parser does. ``source`` may be a file mapped in memory: a large
    page is searched without being read whole.

    Most pages hold one <body> tag, which lxml read (the body has its attributes) or which has
    none: a search of the bytes tells that, and what holds no tag (UNREAD) is read only when
    there is more to know. On the benchmark site's pages (30 KB) this took 148 us a page before,
    74 after, where the whole parse takes about 550."""
    first_two = list(itertools.islice(BODY_TAG.finditer(source), 2))
    if not first_two:
        return
    if len(first_two) == 1:
        if len(body.attrib):
            return  # lxml gave the body this tag's attributes
        only = START_TAG.match(source, first_two[0].start())
        if only is None or only.group().lower() == b"<body>":
            return  # no attributes to give
    for tag in _body_tags(source):
        for name, value in _attributes(tag, encoding):
            if body.get(name) is None:
                body.set(name, value)


def _body_tags(source: bytes | mmap.mmap) -> Iterator[bytes]:
    """The <body> start tags of ``source`` outside what holds none (UNREAD)."""
    unread = UNREAD.finditer(source)
    span = next(unread, None)
    for count, found in enumerate(BODY_TAG.finditer(source)):
        if count == MAX_BODY_TAGS:
            return
        while span is not None and span.end() <= found.start():
            span = next(unread, None)
        if span is not None and span.start() <= found.start():
            continue
        tag = START_TAG.match(source, found.start())
        if tag is not None and tag.group().lower() != b"<body>":  # one with attributes
            yield tag.group()


def _attributes(tag: bytes, encoding: str | None) -> list[tuple[str, str]]:
    """The attributes of the <body> start tag ``tag``, as lxml reads them in ``encoding``."""
    parser = lxml.html.HTMLParser(encoding=encoding)
    try:
        root = lxml.html.document_fromstring(bytes(thin_crowded_tags(tag)), parser=parser)
    except (lxml.etree.ParserError, LookupError, ValueError):
        return []
    body = root.find("body")
    return [] if body is None else [(str(name), str(value)) for name, value in body.attrib.items()]
