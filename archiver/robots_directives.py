"""Robots directives in a page: ``<meta name="robots">`` and the X-Robots-Tag header's values
that forbid following a page's links (pure)."""

from __future__ import annotations

import re

import lxml.etree
import lxml.html


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
