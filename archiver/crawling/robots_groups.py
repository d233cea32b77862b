"""Which groups of a robots.txt are ours: those whose User-agent is our product token, or,
when none is, those for every robot (``*``) (pure).

RFC 9309 (2.2.1) matches the product token as a whole, any case; Google's robots.txt parser,
its reference, cuts a User-agent line's value at its first character outside ``[A-Za-z_-]``
(``archiver/1.0`` names ``archiver``) and compares what is left, whole. protego instead looks
for the group's name inside ours: ``User-agent: arch`` (or ``a``) would be taken as ours, and
``User-agent: archiver/1.0`` would not. So each User-agent line is written again before protego
reads it: ours as our token, ``*`` as ``*``, any other as a name no token can hold.

>>> print(own_groups("User-agent: arch\\nDisallow: /\\nUser-agent: Archiver/1.0\\nDisallow: /x", "archiver"))
User-agent: arch (another robot)
Disallow: /
User-agent: archiver
Disallow: /x
"""

from __future__ import annotations

import re

from archiver.crawling.robots_limits import USER_AGENT, directive

_TOKEN = re.compile(r"[A-Za-z_-]*")
"""What of a User-agent line's value names the robot, as Google's parser cuts it."""
_EVERY_ROBOT = re.compile(r"\*(?:\s|$)")
"""A User-agent for every robot: ``*``, alone or before a space (Google reads ``* foo`` so too)."""


def own_groups(text: str, agent: str) -> str:
    """``text`` (a robots.txt) with each User-agent line written again, so that protego, asked for
    ``agent``, applies exactly the groups RFC 9309 and Google apply: those named ``agent`` (any
    case), or those for every robot when no group is named ``agent``. The other groups are kept,
    each under a name of its own that holds a space (a product token never does: protego finds
    none of them in ours), so that the rules of robots_limits.py are still counted for each.

    >>> print(own_groups("User-agent: *\\nDisallow: /a\\nUser-agent: other\\nDisallow: /b", "archiver"))
    User-agent: *
    Disallow: /a
    User-agent: other (another robot)
    Disallow: /b
    >>> print(own_groups("User-agent: * \\nDisallow: /a\\nuser-agent: ARCHIVER\\nDisallow: /b", "archiver"))
    User-agent: - (another robot)
    Disallow: /a
    User-agent: archiver
    Disallow: /b
    """
    lines = text.splitlines(keepends=True)
    names = {
        number: _named(value)
        for number, (field, value) in enumerate(map(directive, lines))
        if field in USER_AGENT
    }
    ours = agent.lower()
    has_own_group = ours in names.values()
    for number, name in names.items():
        if name == ours or (name == "*" and not has_own_group):
            written = name
        else:
            written = f"{name.strip('*') or '-'} (another robot)"
        line = lines[number]
        lines[number] = f"User-agent: {written}" + line[len(line.rstrip("\r\n")) :]
    return "".join(lines)


def _named(value: str) -> str:
    """The robot a User-agent line's ``value`` names, in lower case: ``*`` for every robot.

    >>> [_named(value) for value in ("*", "* x", "Archiver/1.0", "a b", "*bot", "bot*", "")]
    ['*', '*', 'archiver', 'a', '', 'bot', '']
    """
    if _EVERY_ROBOT.match(value):
        return "*"
    match = _TOKEN.match(value)
    return match.group().lower() if match else ""
