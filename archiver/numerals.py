"""Whole numbers as protocols write them: ASCII digits only.

``str.isdigit()`` also says yes to digits ``int()`` refuses (``'²'``) and to
digits of other scripts (``'٣'``); a header, a status or a file name from a
server or a damaged file may hold either.

>>> whole_number(" 120 "), whole_number("²"), whole_number("٣"), whole_number("-1"), whole_number(None)
(120, None, None, None, None)
"""

from __future__ import annotations


def whole_number(text: str | None) -> int | None:
    """``text`` (spaces and tabs around it allowed) as a whole number of ASCII digits, else None."""
    if text is None:
        return None
    text = text.strip(" \t")
    if not text or not text.isascii() or not text.isdigit():
        return None
    return int(text)
