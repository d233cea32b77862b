"""Whole numbers as protocols write them: ASCII digits only.

``str.isdigit()`` also says yes to digits ``int()`` refuses (``'²'``) and to
digits of other scripts (``'٣'``); a header, a status or a file name from a
server or a damaged file may hold either.

A number of thousands of digits is no count a protocol means, and ``int()`` refuses one
past 4300 digits (ValueError): past MAX_DIGITS digits it is no whole number here either.

>>> whole_number(" 120 "), whole_number("²"), whole_number("٣"), whole_number("-1"), whole_number(None)
(120, None, None, None, None)
>>> whole_number("9" * 5000), whole_number("0" * 5000 + "7")
(None, 7)
"""

from __future__ import annotations

MAX_DIGITS = 100
"""Most significant digits of a whole number (int() itself refuses more than 4300)."""


def whole_number(text: str | None) -> int | None:
    """``text`` (spaces and tabs around it allowed) as a whole number of ASCII digits, else None."""
    if text is None:
        return None
    text = text.strip(" \t")
    if not text or not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= MAX_DIGITS else None
