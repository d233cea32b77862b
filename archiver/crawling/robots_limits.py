"""How many rules of a robots.txt the crawl keeps for each user agent, so that judging a URL
costs a small bounded time whatever the file holds (pure).

Within the 512 KiB read of a robots.txt fit some 30,000 rules. A plain rule (``Disallow:
/private``) is cheap to match: protego tests every plain prefix in one call. A rule with
wildcards (``Disallow: /*a*b*c``) is searched along the whole URL, one by one: 25,000 of them
cost tens of milliseconds a URL, more than a second for a URL of 64 KiB, and the crawl judges
each URL on its event loop. So the rules of one user agent are read up to ROBOTS_MAX_RULES, of
which ROBOTS_MAX_WILDCARD_RULES with a ``*``; those past either are ignored (the file read as if
they were not there, as the bytes past 512 KiB are), and counted. Files written by people stay
far below both: their rules are all applied, as RFC 9309 says.

>>> text = "User-agent: *\\n" + "".join(f"Disallow: /*x{n}\\n" for n in range(501))
>>> capped = cap_rules(text)
>>> capped.ignored, capped.text.count("*x")
(1, 500)
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROBOTS_MAX_RULES = 10_000
"""Allow and Disallow rules read for one user agent (its groups together, as RFC 9309 merges them)."""
ROBOTS_MAX_WILDCARD_RULES = 500
"""Of those, rules with a ``*`` (each searched along the URL)."""

USER_AGENT = frozenset({"user-agent", "useragent", "user agent"})
_RULES = frozenset({"allow", "disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"})
"""Allow and Disallow, with the misspellings protego reads as Disallow."""
_SITE_WIDE = frozenset({"sitemap", "sitemaps", "site-map", "host"})
"""Lines that belong to no group: they neither end one nor start one."""
_IGNORED_RULE = "Disallow:"
"""What stands for a rule ignored: a rule line still (the grouping of the lines around it is
kept), with no value (no rule: RFC 9309 reads an empty Disallow as none)."""


@dataclass(frozen=True)
class CappedRules:
    """A robots.txt's text with the rules past the limits taken out."""

    text: str
    ignored: int
    """Rules taken out: past ROBOTS_MAX_RULES or ROBOTS_MAX_WILDCARD_RULES for their user agent."""


def cap_rules(text: str) -> CappedRules:
    """``text`` (a robots.txt) with each user agent's rules past ROBOTS_MAX_RULES, or past
    ROBOTS_MAX_WILDCARD_RULES for those with a ``*``, taken out (in the order of the file: the
    first ones are kept). A group that names several agents keeps a rule only while each of
    them has room; a file within the limits comes back as it is. Its cost is one pass over the
    lines, whatever the groups.

    >>> cap_rules("User-agent: a\\nUser-agent: b\\nDisallow: /x\\n")
    CappedRules(text='User-agent: a\\nUser-agent: b\\nDisallow: /x\\n', ignored=0)
    """
    kept: dict[str, _Kept] = {}
    group = _Group()
    lines = text.splitlines(keepends=True)
    ignored = 0
    for number, line in enumerate(lines):
        name, value = directive(line)
        if name in USER_AGENT:
            if group.has_rules:
                group.close()
                group = _Group()
            for agent in {value.lower(), value.lower().replace("*", "")} - {""}:
                group.agents[agent] = kept.setdefault(agent, _Kept())
        elif name is not None and name not in _SITE_WIDE:
            group.has_rules = True
            if name in _RULES and value and not group.keep("*" in value):
                lines[number] = _IGNORED_RULE + ("\n" if line.endswith(("\n", "\r")) else "")
                ignored += 1
    return CappedRules("".join(lines) if ignored else text, ignored)


@dataclass
class _Kept:
    """The rules kept so far for one user agent."""

    rules: int = 0
    wildcard_rules: int = 0


@dataclass
class _Group:
    """A group of a robots.txt being read: its user agents, and the rules it keeps for them
    (added to theirs when it closes, so that a rule costs the same whatever the agents)."""

    agents: dict[str, _Kept] = field(default_factory=dict)
    has_rules: bool = False
    """A line other than User-agent was read: the next User-agent starts another group."""
    room: _Kept | None = None
    """Rules the group may still keep, counted when its first rule comes."""
    used: _Kept = field(default_factory=_Kept)

    def keep(self, wildcard: bool) -> bool:
        """True if one more rule (with a ``*``: ``wildcard``) fits for every agent of the group."""
        if self.room is None:
            self.room = _Kept(
                min(
                    (ROBOTS_MAX_RULES - agent.rules for agent in self.agents.values()),
                    default=ROBOTS_MAX_RULES,
                ),
                min(
                    (ROBOTS_MAX_WILDCARD_RULES - agent.wildcard_rules for agent in self.agents.values()),
                    default=ROBOTS_MAX_WILDCARD_RULES,
                ),
            )
        fits = self.used.rules < self.room.rules and (
            not wildcard or self.used.wildcard_rules < self.room.wildcard_rules
        )
        if fits:
            self.used.rules += 1
            self.used.wildcard_rules += wildcard
        return fits

    def close(self) -> None:
        """Count the group's rules kept against each of its agents."""
        for agent in self.agents.values():
            agent.rules += self.used.rules
            agent.wildcard_rules += self.used.wildcard_rules


def directive(line: str) -> tuple[str | None, str]:
    """A robots.txt line's field (lower case; None for a line that is none) and value, as
    protego reads them: ``field: value``, or ``field value`` without a colon.

    >>> directive(" Disallow : /a # why"), directive("User agent foo"), directive("# note")
    (('disallow', '/a'), ('user agent', 'foo'), (None, ''))
    """
    line = line.partition("#")[0].strip()
    if not line:
        return None, ""
    field, colon, value = line.partition(":")
    field = " ".join(field.split()).lower()
    if colon and (field in USER_AGENT or field in _RULES or field in _SITE_WIDE or value[:1].isspace()):
        return field, value.strip()
    words = line.split()
    for count in (2, 1):
        named = " ".join(words[:count]).lower()
        if named in USER_AGENT or named in _RULES or named in _SITE_WIDE:
            return named, " ".join(words[count:])
    return (field, value.strip()) if colon else (None, "")
