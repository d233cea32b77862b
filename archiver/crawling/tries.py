"""What a try came to and when the next is due: which answers fail a fetch (a body the
peer cut short, a refusal), the backoff, and the server's Retry-After.

>>> retry_delay(3, base=0.5, retry_after=None, cap=1.0) <= 1.0
True
>>> parse_retry_after("120"), parse_retry_after("soon")
(120.0, None)
"""

from __future__ import annotations

import email.utils
import random
from datetime import UTC, datetime

from archiver.numerals import whole_number
from archiver.warc.capture import Capture

REFUSED = {401: "authentication required", 403: "access forbidden", 407: "proxy authentication required"}
"""Answers that keep the resource from us: recorded with their status, as failures."""
CUT_BY_PEER = {
    "disconnect": "when the connection ended",
    "time": "at the timeout",
    "unspecified": "where the answer broke HTTP's framing (a bad chunk, trailers without end)",
}
"""WARC-Truncated values that mean the peer cut the body short (not our --max-file-size), and
how its reason says it."""
BROKEN_FOR_GOOD = frozenset({"unspecified"})
"""WARC-Truncated values of a body cut where its framing broke (a chunk size that is no number,
trailers without end): asked again, the server sends the same bytes, as it does a broken head,
so the fetch fails at once; a connection lost or a timeout may not come again."""


def retry_delay(tries: int, base: float, retry_after: float | None, cap: float) -> float:
    """Seconds before the next try: Retry-After if the server gave one, else backoff with jitter."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), cap)
    return min(base * 2.0 ** (tries - 1) * random.uniform(0.5, 1.5), cap)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    seconds = whole_number(value)
    if seconds is not None:
        return float(seconds)  # at most MAX_DIGITS digits: float() takes it
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an hour of 20 digits
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def cut_reason(capture: Capture, timeout: float) -> str | None:
    """Why the peer cut ``capture``'s body short, for its manifest row; None if it did not."""
    if capture.truncated not in CUT_BY_PEER:
        return None
    declared = whole_number(capture.header("content-length"))
    of = f" of {declared}" if declared is not None else ""
    when = f"at the {timeout:g} s timeout" if capture.truncated == "time" else CUT_BY_PEER[capture.truncated]
    return f"body cut short after {capture.body_length}{of} bytes {when}"


def counted(error: str, tries: int) -> str:
    """``error`` with the tries it took, when there was more than one."""
    return f"{error} after {tries} tries" if tries > 1 else error
