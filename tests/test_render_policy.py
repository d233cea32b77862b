"""Which pages --browser renders: the static signs of a page built by scripts, and a host's experience."""

from __future__ import annotations

import pytest

from archiver.crawling.render_policy import (
    SCRIPTED,
    SIGNALLED,
    Inspection,
    RenderPolicy,
    gained,
    inspect,
)
from archiver.findings import parse_page

TEXT = "<p>" + "Plenty of words written in the page itself. " * 5 + "</p>"
SCRIPT = "<script src='/app.js'></script>"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (f"<body>{TEXT}</body>", Inspection(False, None)),
        (f"<body>{TEXT}<script type='application/ld+json'>{{}}</script></body>", Inspection(False, None)),
        (f"<body>{TEXT}{SCRIPT}</body>", Inspection(True, None)),
        (
            f"<body><div id='root'></div>{TEXT}{SCRIPT}</body>",
            Inspection(True, 'empty app root <div id="root">'),
        ),
        (
            f"<body><div id='app'> </div>{TEXT}{SCRIPT}</body>",
            Inspection(True, 'empty app root <div id="app">'),
        ),
        (f"<body><app-root></app-root>{TEXT}{SCRIPT}</body>", Inspection(True, "empty app root <app-root>")),
        (f"<body><div id='root'><p>server-rendered</p></div>{TEXT}{SCRIPT}</body>", Inspection(True, None)),
        (
            f"<body><noscript>Please enable JavaScript.</noscript>{TEXT}{SCRIPT}</body>",
            Inspection(True, "<noscript> asks for JavaScript"),
        ),
        (f"<body><noscript><img src=pixel.gif></noscript>{TEXT}{SCRIPT}</body>", Inspection(True, None)),
        (f"<body><h1>Hi</h1>{SCRIPT}</body>", Inspection(True, "near-empty body with scripts")),
        (
            f"<body><script>var t = '{'x' * 500}';</script><p>short</p></body>",
            Inspection(True, "near-empty body with scripts"),
        ),
        (
            f"<body><div data-reactroot>{TEXT}</div>{SCRIPT}</body>",
            Inspection(True, "framework marker data-reactroot"),
        ),
        (
            f"<body><app ng-version='17'>{TEXT}</app>{SCRIPT}</body>",
            Inspection(True, "framework marker ng-version"),
        ),
        (
            f"<body>{TEXT}<script id='__NEXT_DATA__' type='application/json'>{{}}</script>{SCRIPT}</body>",
            Inspection(True, 'framework marker id="__NEXT_DATA__"'),
        ),
        (
            f"<body><div id='__nuxt'>{TEXT}</div>{SCRIPT}</body>",
            Inspection(True, 'framework marker id="__nuxt"'),
        ),
    ],
)
def test_inspect(html, expected):
    raw = f"<!doctype html><html><head><title>t</title></head>{html}</html>".encode()
    assert inspect(parse_page(raw), raw) == expected


def test_modes_never_and_always():
    page = Inspection(True, 'empty app root <div id="root">')
    assert not RenderPolicy("never").decide("h", page).render
    assert RenderPolicy("always").decide("h", Inspection(False, None)).reason == "always"


def test_a_page_without_scripts_is_never_rendered_by_auto():
    policy = RenderPolicy("auto")
    assert not policy.decide("h", Inspection(False, None)).render


def test_trials_then_the_verdict_of_each_kind_per_host():
    policy = RenderPolicy("auto", trials=2)
    scripted = Inspection(True, None)
    signalled = Inspection(True, "near-empty body with scripts")
    first, second = policy.decide("h", scripted), policy.decide("h", scripted)
    assert (first.trial, second.trial) == (True, True) and first.kind == SCRIPTED
    third = policy.decide("h", scripted)
    assert third.wait and not third.render
    assert policy.wait("h", SCRIPTED, "page 3")
    assert policy.decide("other", scripted).trial  # each host has its own trials
    assert policy.decide("h", signalled).trial  # and each kind of page
    assert policy.record("h", SCRIPTED, gained=False) == []  # one trial left: no verdict yet
    assert policy.record("h", SCRIPTED, gained=True) == ["page 3"]  # yes: the waiting page renders
    later = policy.decide("h", scripted)
    assert later.render and later.reason == "scripts; rendering found more on this host"
    assert policy.verdict("h", SIGNALLED) is None


def test_a_host_where_rendering_finds_nothing_stops_rendering():
    policy = RenderPolicy("auto", trials=2)
    page = Inspection(True, "near-empty body with scripts")
    for _ in range(2):
        assert policy.decide("h", page).trial
    assert policy.decide("h", page).wait
    policy.wait("h", SIGNALLED, "waiting")
    policy.record("h", SIGNALLED, gained=False)
    assert policy.record("h", SIGNALLED, gained=False) == []  # no: the waiting page is dropped
    assert not policy.decide("h", page).render and not policy.decide("h", page).wait


def test_waiting_pages_are_bounded():
    policy = RenderPolicy("auto", trials=1, waiting_limit=1)
    policy.decide("h", Inspection(True, None))
    assert policy.wait("h", SCRIPTED, "a")
    assert not policy.wait("h", SCRIPTED, "b")


def test_gained_is_what_the_static_parse_did_not_find():
    assert gained(["http://h/a", "http://h/api.json", "http://h/a"], {"http://h/a"}) == ["http://h/api.json"]
    assert gained([], {"http://h/a"}) == []


async def test_trials_under_way_and_pages_waiting_for_a_verdict_are_kept_for_a_resumed_crawl():
    """A crawl interrupted while a host's trials ran kept neither them nor the pages waiting for
    their verdict: resumed, it rendered those trials as plain renders that settle nothing, and
    the pages waiting went unrendered whatever the verdict."""
    from types import SimpleNamespace

    from archiver.crawling.crawler import QueueItem
    from archiver.crawling.renderer import Renderer
    from archiver.crawling.stats import CrawlStats

    def renderer() -> Renderer:
        pool, answers = SimpleNamespace(tabs=1), SimpleNamespace()
        return Renderer(
            RenderPolicy("auto", trials=1), pool, answers, CrawlStats(), timeout=5, max_redirects=5
        )

    scripted = Inspection(scripted=True, signal=None)
    before = renderer()
    trial, waiting = QueueItem("http://h/a", 1, 5), QueueItem("http://h/b", 1, 5)
    await before.offer(trial, {"http://h/x": "link"}, before.policy.decide("h", scripted))
    await before.offer(waiting, {}, before.policy.decide("h", scripted))
    after = renderer()
    after.restore(before.state())
    job = await after._jobs.take()
    assert (job.page.url, job.trial, job.static_links) == ("http://h/a", True, frozenset({"http://h/x"}))
    assert len(after._jobs) == 0 and after.policy.decide("h", scripted).wait  # no second trial begins
    assert [page.page.url for page in after.policy.record("h", SCRIPTED, gained=True)] == ["http://h/b"]
