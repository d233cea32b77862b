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


def nofollow_metas(metas: Iterable[lxml.etree._Element]) -> frozenset[str]:
    """The names (lower case) of the <meta> elements ``metas`` that say nofollow (or none): a page
    says it to every robot with ``<meta name="robots">``, to one robot by its name (``googlebot``,
    ``archiver``), as Google reads robots metas; meta_nofollow() reads them for a robot.

    >>> sorted(nofollow_metas(lxml.html.fromstring(
    ...     '<meta name=Robots content=none><meta name=bot content=nofollow><meta name=x content=noindex>'
    ... ).iter("meta")))
    ['bot', 'robots']
    """
    return frozenset(name for name in map(nofollow_meta, metas) if name is not None)


def nofollow_meta(meta: lxml.etree._Element) -> str | None:
    """The name (lower case) of ``meta``, a <meta> element, if it says nofollow (or none)."""
    return (meta.get("name") or "").strip().lower() if says_nofollow(meta.get("content") or "") else None


def meta_nofollow(metas: Iterable[str], agent: str) -> bool:
    """True if the robots metas of a page that say nofollow (their names, nofollow_metas()) say it
    to every robot or to ``agent`` by name.

    >>> [meta_nofollow(names, "Archiver") for names in ({"robots"}, {"archiver"}, {"bot"}, set())]
    [True, True, False, False]
    """
    names = frozenset(metas)
    return "robots" in names or agent.lower() in names


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
