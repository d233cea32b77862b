"""The charset label an HTML page's own <meta> names, found as browsers find it: the HTML
standard's "prescan a byte stream to determine its encoding", over the page's first bytes.

The scan reads markup, not text: a <meta> inside a comment, or inside another tag's
attribute value, names nothing; nor does one whose ``content`` is not that of an
``http-equiv="Content-Type"`` (a description that speaks of charsets); the first <meta> that
names a charset browsers know wins.

>>> prescan(b'<!-- <meta charset="latin1"> --><meta charset="utf-8">')
'utf-8'
>>> prescan(b'<meta name="description" content="charset=koi8-r"><meta http-equiv="Content-Type" '
...         b'content="text/html; charset=shift_jis">')
'shift_jis'
"""

from __future__ import annotations

import re

import webencodings

PRESCAN_BYTES = 1024
"""How far the scan reads (the standard's number)."""
_SPACE = b"\t\n\x0c\r "
_ATTRIBUTE = re.compile(
    rb"""[\t\n\x0c\r /]*(?P<name>[^\t\n\x0c\r />][^\t\n\x0c\r /=>]*)[\t\n\x0c\r ]*"""
    rb"""(?:=[\t\n\x0c\r ]*(?:"(?P<dq>[^"]*)"?|'(?P<sq>[^']*)'?|(?P<bare>[^\t\n\x0c\r >]*)))?"""
)
"""One attribute of a tag, as the standard's "get an attribute" reads it (a quote never closed
runs to the end of the bytes scanned)."""
_TAG_START = re.compile(rb"<(?:!--|meta[\t\n\x0c\r /]|/?[A-Za-z]|[!/?])", re.IGNORECASE)
_CONTENT_CHARSET = re.compile(
    rb"""charset[\t\n\x0c\r ]*=[\t\n\x0c\r ]*"""
    rb"""(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\t\n\x0c\r ;"']+))""",
    re.IGNORECASE,
)
"""The charset a <meta content> names ("extracting a character encoding from a meta element");
a quote never closed names none."""


def prescan(body: bytes) -> str | None:
    """The label of the charset the first <meta> naming one in the first PRESCAN_BYTES of
    ``body`` names (see the module docstring); None if none does."""
    head = body[:PRESCAN_BYTES]
    position = 0
    while (found := _TAG_START.search(head, position)) is not None:
        opening = found.group().lower()
        if opening == b"<!--":
            # "<!-->" closes itself: the "--" that ends it may be the one that opened it.
            end = head.find(b"-->", found.start() + 2)
            if end == -1:
                return None
            position = end + 3
        elif opening.startswith(b"<meta"):
            label, position = _meta(head, found.end() - 1)
            if label is not None and webencodings.lookup(label) is not None:
                return label  # a label browsers do not know names nothing: the scan goes on
        elif opening[-1:].isalpha():  # a start or end tag: its attributes are skipped, read
            position = _after_name(head, found.end())
            while (attribute := _ATTRIBUTE.match(head, position)) is not None:
                position = attribute.end()
            position = _after_tag(head, position)
        else:  # <!..., </ not a tag, <?...: up to the next ">"
            position = _after_tag(head, found.end())
    return None


def _meta(head: bytes, position: int) -> tuple[str | None, int]:
    """The label a <meta> whose attributes start at ``position`` names, and where it ends."""
    seen: set[bytes] = set()
    pragma = False
    charset: bytes | None = None
    content_charset: bytes | None = None
    while (attribute := _ATTRIBUTE.match(head, position)) is not None:
        position = attribute.end()
        name = attribute.group("name").lower()
        if name in seen:
            continue
        seen.add(name)
        value = next((v for v in attribute.group("dq", "sq", "bare") if v is not None), b"")
        if name == b"http-equiv":
            pragma = value.lower() == b"content-type"
        elif name == b"content" and charset is None:
            named = _CONTENT_CHARSET.search(value)
            if named is not None:
                content_charset = next(v for v in named.group("dq", "sq", "bare") if v is not None)
        elif name == b"charset":
            charset = value
    position = _after_tag(head, position)
    label = charset if charset is not None else content_charset if pragma else None
    return (label.decode("latin-1").strip(_SPACE.decode()) if label is not None else None), position


def _after_name(head: bytes, position: int) -> int:
    """Past a tag's name, which ends at a space or ">"."""
    while position < len(head) and head[position] not in b"\t\n\x0c\r >":
        position += 1
    return position


def _after_tag(head: bytes, position: int) -> int:
    """Past the next ">" (the end of the bytes if there is none)."""
    end = head.find(b">", position)
    return len(head) if end == -1 else end + 1
