"""Robots directives in a page: ``<meta name="robots">`` and the X-Robots-Tag header's values
that forbid following a page's links, and the name they (and robots.txt) know us by (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import lxml.etree
import lxml.html


def robots_agent(user_agent: str) -> str:
    """The product token robots.txt groups and robots directives name us by: 'archiver/0.1 (+...)'
    -> 'archiver'."""
    return user_agent.split("/", 1)[0].split()[0] if user_agent.strip() else "*"


def says_nofollow(directives: str) -> bool:
    """True if robots directives (a meta robots content, an X-Robots-Tag value) forbid
    following the page's links: ``nofollow``, or ``none`` (noindex and nofollow), any case.

    >>> says_nofollow("NoIndex, NoFollow"), says_nofollow("none"), says_nofollow("noindex")
    (True, True, False)
    """
    return not _NOFOLLOW.isdisjoint(_DIRECTIVE_SPLIT.split(directives.strip().lower()))


_NOFOLLOW = frozenset({"nofollow", "none"})
_DIRECTIVE_SPLIT = re.compile(r"[\s,]+")


def meta_nofollow(root: lxml.etree._Element) -> bool:
    """True if a ``<meta name="robots">`` of the page says nofollow (or none)."""
    return any(map(says_nofollow_meta, root.iter("meta")))


def says_nofollow_meta(meta: lxml.etree._Element) -> bool:
    """True if ``meta``, a <meta> element, is a robots meta that says nofollow (or none)."""
    return (meta.get("name") or "").strip().lower() == "robots" and says_nofollow(meta.get("content") or "")


_AGENT_PREFIX = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*:\s*(.*)", re.DOTALL)
_DIRECTIVES_WITH_COLON = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)


def x_robots_nofollow(values: Iterable[str], agent: str) -> bool:
    """True if X-Robots-Tag header values forbid following the page's links for ``agent``:
    ``nofollow`` or ``none``, for every robot or for ours by name (``archiver: nofollow``).

    >>> x_robots_nofollow(["noindex, nofollow"], "archiver"), x_robots_nofollow(["bot: none"], "archiver")
    (True, False)
    >>> x_robots_nofollow(["Archiver: NoFollow"], "archiver")
    True
    """
    for value in values:
        match = _AGENT_PREFIX.fullmatch(value)
        if match and match.group(1).lower() not in _DIRECTIVES_WITH_COLON:
            if match.group(1).lower() != agent.lower():
                continue  # meant for another robot
            value = match.group(2)
        if says_nofollow(value):
            return True
    return False
