"""Which pages --browser renders: the static signs of a page built by scripts, and a host's experience."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from archiver.crawling.render_policy import (
    SCRIPTED,
    SIGNALLED,
    Inspection,
    RenderPolicy,
    gained,
    inspect,
)
from archiver.crawling.renderer import Renderer
from archiver.crawling.stats import CrawlStats
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
            f"<body><div data-theme='dark' data-v-app>{TEXT}</div>{SCRIPT}</body>",
            Inspection(True, "framework marker data-v-app"),
        ),
        (
            f"<body><div data-theme='dark'>{TEXT} ng-version __NEXT_DATA__</div>{SCRIPT}</body>",
            Inspection(True, None),  # the names in text, not as markers
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


def test_a_yes_is_taken_back_once_renders_in_a_row_find_nothing_more():
    """A site of static pages whose home page alone builds something by script (a sponsor's
    logo): its trial found more, and every page with a script was rendered after it, a render
    each of a documentation site's pages for one image."""
    policy = RenderPolicy("auto", trials=1, dry_renders=3)
    scripted = Inspection(True, None)
    assert policy.decide("h", scripted).trial
    policy.record("h", SCRIPTED, gained=True)
    assert not policy.compared("h", SCRIPTED, gained=False)
    assert not policy.compared("h", SCRIPTED, gained=True)  # one that finds more begins the count again
    assert [policy.compared("h", SCRIPTED, gained=False) for _ in range(3)] == [False, False, True]
    assert policy.verdict("h", SCRIPTED) is False
    assert not policy.decide("h", scripted).render and not policy.decide("h", scripted).wait
    assert not policy.compared("h", SCRIPTED, gained=True)  # taken back for good
    assert policy.verdict("h", SCRIPTED) is False
    assert policy.decide("other", scripted).trial  # each host has its own experience
    [(_, _, finished, gains, dry, _)] = [entry for entry in policy.experience() if entry[0] == "h"]
    assert (finished, gains, dry) == (1, 1, 3)


async def test_renders_after_a_yes_are_compared_with_their_static_parse_and_kept_for_a_resumed_crawl():
    from archiver.crawling.crawler import QueueItem

    scripted = Inspection(scripted=True, signal=None)
    renderer = auto_renderer()
    assert renderer.policy.decide("h", scripted).trial
    renderer.policy.record("h", SCRIPTED, gained=True)
    await renderer.offer(
        QueueItem("http://h/a", 1, 5), {"http://h/x": "link"}, renderer.policy.decide("h", scripted)
    )
    job = await renderer._jobs.take()
    assert (job.trial, job.compared) == (False, True)  # its static links are read again as it renders
    renderer.policy.compared("h", SCRIPTED, gained=False)
    after = auto_renderer()
    after.restore(renderer.state())
    assert [entry[:5] for entry in after.policy.experience()] == [("h", SCRIPTED, 1, 1, 1)]


def test_waiting_pages_are_bounded():
    policy = RenderPolicy("auto", trials=1, waiting_limit=1)
    policy.decide("h", Inspection(True, None))
    assert policy.wait("h", SCRIPTED, "a")
    assert not policy.wait("h", SCRIPTED, "b")


def test_waiting_pages_are_bounded_on_every_host_together():
    """Pages wait for their host's verdict up to a limit that each host had to itself: a crawl
    meeting many hosts while their trials ran kept that many pages for each. Every host's
    waiting pages count together now, and a verdict makes room for others."""
    policy = RenderPolicy("auto", trials=1, waiting_limit=2)
    hosts = [f"h{number}" for number in range(4)]
    for host in hosts:
        policy.decide(host, Inspection(True, None))  # its trial
    assert [policy.wait(host, SCRIPTED, f"{host}/page") for host in hosts] == [True, True, False, False]
    assert policy.record("h0", SCRIPTED, gained=True) == ["h0/page"]
    assert policy.wait("h2", SCRIPTED, "h2/page")
    assert not policy.wait("h3", SCRIPTED, "h3/page")
    assert policy.record("h1", SCRIPTED, gained=False) == []  # no: its page is dropped, and its room
    assert policy.wait("h3", SCRIPTED, "h3/page")


def test_gained_is_what_the_static_parse_did_not_find():
    assert gained(["http://h/a", "http://h/api.json", "http://h/a"], {"http://h/a"}) == ["http://h/api.json"]
    assert gained([], {"http://h/a"}) == []


async def test_trials_under_way_and_pages_waiting_for_a_verdict_are_kept_for_a_resumed_crawl():
    """A crawl interrupted while a host's trials ran kept neither them nor the pages waiting for
    their verdict: resumed, it rendered those trials as plain renders that settle nothing, and
    the pages waiting went unrendered whatever the verdict."""

    from archiver.crawling.crawler import QueueItem

    scripted = Inspection(scripted=True, signal=None)
    before = auto_renderer()
    trial, waiting = QueueItem("http://h/a", 1, 5), QueueItem("http://h/b", 1, 5)
    await before.offer(trial, {"http://h/x": "link"}, before.policy.decide("h", scripted))
    await before.offer(waiting, {}, before.policy.decide("h", scripted))
    after = auto_renderer()
    after.restore(before.state())
    job = await after._jobs.take()
    assert (job.page.url, job.trial, job.static_links) == ("http://h/a", True, frozenset({"http://h/x"}))
    assert len(after._jobs) == 0 and after.policy.decide("h", scripted).wait  # no second trial begins
    assert [page.page.url for page in after.policy.record("h", SCRIPTED, gained=True)] == ["http://h/b"]


async def test_pages_waiting_for_a_verdict_are_kept_an_entry_of_a_hundred_at_a_time():
    """The renders' state was one JSON text encoded and written whole with every batch of rows,
    the waiting pages in it: thousands of pages wait while a site's trials render, so each batch
    cost milliseconds and hundreds of kilobytes. Full entries are now kept as they were."""

    from archiver.crawling.crawler import QueueItem
    from archiver.crawling.render_state import RENDERS, WAITING_CHUNK

    scripted = Inspection(scripted=True, signal=None)
    before = auto_renderer()
    await before.offer(QueueItem("http://h/trial", 1, 5), {}, before.policy.decide("h", scripted))
    urls = [f"http://h/p{n}" for n in range(2 * WAITING_CHUNK + 50)]
    for url in urls:
        await before.offer(QueueItem(url, 1, 5), {}, before.policy.decide("h", scripted))
    first = before.state()
    waiting = [f"{RENDERS} waiting h {SCRIPTED} {index}" for index in range(3)]
    assert sorted(first) == sorted([RENDERS, *waiting])
    await before.offer(QueueItem("http://h/late", 1, 5), {}, before.policy.decide("h", scripted))
    second = before.state()
    assert [name for name in first if first[name] != second[name]] == [waiting[2]]
    assert all(second[name] is first[name] for name in waiting[:2])  # kept, not encoded again

    after = auto_renderer()
    after.restore(second)
    assert (await after._jobs.take()).page.url == "http://h/trial"
    released = after.policy.record("h", SCRIPTED, gained=True)
    assert [job.page.url for job in released] == [*urls, "http://h/late"]

    before.policy.record("h", SCRIPTED, gained=False)  # the verdict: the waiting pages go
    assert list(before.state()) == [RENDERS]


async def test_the_renders_state_of_a_crawl_of_an_earlier_version_is_taken_back():
    """Before the waiting pages had entries of their own, they were kept in the hosts' entry."""
    import json

    earlier = [
        [
            "h",
            SCRIPTED,
            0,
            0,
            [
                ["http://h/a", 1, "link", "http://h/", "scripts", False, True, ["http://h/x"]],
                ["http://h/b", 1, "link", "http://h/", "scripts", False, False, []],
            ],
        ]
    ]
    renderer = auto_renderer()
    renderer.restore({"renders": json.dumps(earlier)})
    job = await renderer._jobs.take()
    assert (job.page.url, job.trial, job.static_links) == ("http://h/a", True, frozenset({"http://h/x"}))
    assert [job.page.url for job in renderer.policy.record("h", SCRIPTED, gained=True)] == ["http://h/b"]


def auto_renderer() -> Renderer:
    """A renderer for --browser auto whose hosts are settled by one trial (no browser: its tabs
    are not run)."""
    return Renderer(
        RenderPolicy("auto", trials=1),
        SimpleNamespace(tabs=1),
        SimpleNamespace(),
        CrawlStats(),
        timeout=5,
    )
