"""How many rules of a robots.txt are read for each user agent (robots_limits.py): within the
limits every rule is read as RFC 9309 says, past them the rules are ignored in file order, so
that the rules matched against each URL are bounded whatever the file holds."""

from __future__ import annotations

import pytest

from archiver.crawling.robots import RobotsRules
from archiver.crawling.robots_limits import ROBOTS_MAX_RULES, ROBOTS_MAX_WILDCARD_RULES, cap_rules


def _rules(text: str) -> int:
    """Allow and Disallow lines with a value: the rules a parser reads from ``text``."""
    lines = (line.partition(":") for line in text.splitlines())
    return sum(1 for field, _, value in lines if field.lower() in ("allow", "disallow") and value.strip())


def _wildcards(count: int, tag: str = "") -> str:
    """``count`` rules with wildcards that keep out no URL of these tests (they need a Q)."""
    return "".join(f"Disallow: /*a*b*c*Q{tag}{n}-\n" for n in range(count))


@pytest.mark.parametrize("count", [1_000, 10_000, 25_000])
def test_the_rules_read_for_a_user_agent_are_bounded_whatever_the_file_holds(count):
    """25,000 rules with wildcards fit in the 512 KiB read, and each was searched along every
    URL the crawl judged (tenths of a second a URL, on the crawl's event loop): no more than
    ROBOTS_MAX_WILDCARD_RULES of them are read, the first ones, the rest counted as ignored."""
    text = "User-agent: *\nDisallow: /kept-out\n" + _wildcards(count)
    capped = cap_rules(text)
    assert _rules(capped.text) == 1 + ROBOTS_MAX_WILDCARD_RULES
    assert capped.ignored == count - ROBOTS_MAX_WILDCARD_RULES
    rules = RobotsRules.parse(text, "archiver")
    assert rules.ignored == capped.ignored
    last_kept = ROBOTS_MAX_WILDCARD_RULES - 1
    assert not rules.allows("http://h/kept-out") and not rules.allows(f"http://h/abcQ{last_kept}-")
    assert rules.allows(f"http://h/abcQ{last_kept + 1}-") and rules.allows(f"http://h/abcQ{count - 1}-")


def test_plain_rules_are_read_up_to_their_own_limit():
    """Plain rules are cheap to match, and big sites write thousands: ROBOTS_MAX_RULES of them
    are read; one past that is ignored."""
    plain = "".join(f"Disallow: /p{n}/\n" for n in range(ROBOTS_MAX_RULES - 2))
    text = "User-agent: *\nDisallow: /first\n" + plain + "Disallow: /last-kept\nDisallow: /past\n"
    rules = RobotsRules.parse(text, "archiver")
    assert rules.ignored == 1
    assert not rules.allows("http://h/first") and not rules.allows("http://h/p9997/x")
    assert not rules.allows("http://h/last-kept") and rules.allows("http://h/past")


def test_an_agents_groups_share_its_limits():
    """RFC 9309 merges the groups that name one agent: their rules count together."""
    text = "User-agent: *\n" + _wildcards(400, "a") + "User-agent: *\n" + _wildcards(400, "b")
    assert cap_rules(text).ignored == 800 - ROBOTS_MAX_WILDCARD_RULES


def test_a_group_of_several_agents_keeps_a_rule_while_each_has_room():
    """A group naming two agents, one of which used up its room: its rules are ignored for
    both (a rule is a line of the file, read for every agent of its group or for none); the
    other agent's own group still gets its rules."""
    text = (
        "User-agent: archiver\n"
        + _wildcards(ROBOTS_MAX_WILDCARD_RULES, "a")
        + "User-agent: archiver\nUser-agent: other\nDisallow: /*both\n"
        + "User-agent: other\nDisallow: /*own\n"
    )
    assert cap_rules(text).ignored == 1
    other = RobotsRules.parse(text, "other")
    assert other.allows("http://h/both") and not other.allows("http://h/own")


def test_a_group_whose_rules_are_all_ignored_stays_a_group_of_its_own():
    """An ignored rule leaves a rule line with no value, not nothing: the agent named after it
    starts a group of its own, rather than joining the one before and taking its rules."""
    text = "User-agent: *\n" + _wildcards(ROBOTS_MAX_WILDCARD_RULES) + "Disallow: /*star-only\n"
    text += "User-agent: archiver\nDisallow: /mine\n"
    rules = RobotsRules.parse(text, "archiver")
    assert rules.ignored == 1
    assert rules.allows("http://h/star-only") and not rules.allows("http://h/mine")


@pytest.mark.parametrize(
    "text",
    [
        "User-agent: *\nDisallow: /a*\nAllow: /a/b$\nCrawl-delay: 2\nSitemap: http://h/s.xml\n",
        "# comment\nUser agent: archiver\nDisallow /x\n\nUser-agent: *\nDisallow: /\n",
        "Disallow: /before-any-agent\nUser-agent: *\nDisallow:\nAllow: /\r\n",
    ],
)
def test_a_file_within_the_limits_is_read_as_it_is(text):
    assert cap_rules(text).text == text and cap_rules(text).ignored == 0
