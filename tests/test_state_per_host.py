"""What the crawl keeps of each host it meets stays bounded, however many hosts: robots.txt rules
parsed for the hosts judged last only, a dropped host's rules read again from the answer it kept
(its robots.txt not asked again), locks only for the hosts in use, URLs parked for a robots.txt
out of reach bounded in all, and nothing kept of a host to choose its proxy."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
import weakref
from collections import Counter
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from conftest import manifest_rows
from yarl import URL

import archiver
from archiver.crawling import local_frontier, network, politeness
from archiver.crawling.admission import ASKED_AT_ONCE, Admission
from archiver.crawling.frontier import QueueItem
from archiver.crawling.local_frontier import SqliteFrontier
from archiver.crawling.politeness import HostPolicy
from archiver.crawling.robots import RobotsRules
from archiver.scope import ROBOTS, ROBOTS_UNREACHABLE

HOSTS = 12
"""Hosts of the crawls below: four times the bound they are run with."""
BOUND = 3


def _names(port: int) -> list[str]:
    """Host names that all reach this machine's loopback (RFC 6761: names under ``localhost``)."""
    return [f"h{number}.localhost:{port}" for number in range(HOSTS)]


@pytest.fixture
def robots_site(site: Any) -> Any:
    """A site whose robots.txt keeps /private out, each of whose hosts has a page linking to it."""
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    site.page("/home", links=["/private", "/public"])
    site.page("/private")
    site.page("/public")
    return site


async def _down_but_the_seeds(request: web.Request) -> web.Response:
    """A robots.txt out of reach (503) on every host but the seed's (127.0.0.1)."""
    if request.host.startswith("127.0.0.1"):
        return web.Response(status=404)
    return web.Response(status=503)


class _RobotsOverHttp:
    """fetch_robots over HTTP to the test site, whatever the host asked: counts each host's asks."""

    def __init__(self, site: Any, http: aiohttp.ClientSession) -> None:
        self.site = site
        self.http = http
        self.asked: Counter[str] = Counter()

    async def __call__(self, host_url: str, again: bool) -> tuple[int | None, bytes, str]:
        self.asked[host_url] += 1
        async with self.http.get(self.site.url("/robots.txt")) as answer:
            return answer.status, await answer.read(), host_url + "/robots.txt"


async def test_a_crawl_of_many_hosts_keeps_the_rules_of_a_few_and_obeys_every_one(
    robots_site, run_crawl, monkeypatch
):
    """With --scope any, each host's parsed robots.txt (11 KB for none at all, megabytes for a big
    one) stayed for the whole crawl. Only the last judged are kept now; the others are parsed
    again from the answer kept: each robots.txt is fetched once, and every Disallow obeyed."""
    monkeypatch.setattr(politeness, "ROBOTS_PARSED_HOSTS", BOUND, raising=False)
    parsed: weakref.WeakSet[RobotsRules] = weakref.WeakSet()
    parses = 0
    parse = RobotsRules.parse.__func__

    def watched(cls: type[RobotsRules], text: str, agent: str) -> RobotsRules:
        nonlocal parses
        parses += 1
        rules = parse(cls, text, agent)
        parsed.add(rules)
        return rules

    most_alive = 0
    refusal = HostPolicy.refusal

    async def counted(self: HostPolicy, url: str) -> str | None:
        nonlocal most_alive
        reason = await refusal(self, url)
        gc.collect()
        most_alive = max(most_alive, len(parsed))
        return reason

    monkeypatch.setattr(RobotsRules, "parse", classmethod(watched))
    monkeypatch.setattr(HostPolicy, "refusal", counted)
    await robots_site.start()
    port = robots_site.server.port
    robots_site.page("/", links=[f"http://{name}/home" for name in _names(port)])
    result = await run_crawl(robots_site.url("/"), scope="any", sitemaps=False, concurrency=1)
    rows = manifest_rows(result.snapshot.root)
    assert robots_site.hits["/robots.txt"] == HOSTS + 1  # once a host, the seed's too
    for name in _names(port):
        assert rows[f"http://{name}/public"].outcome == "fetched"
        assert (rows[f"http://{name}/private"].outcome, rows[f"http://{name}/private"].reason) == (
            "skipped",
            ROBOTS,
        )
    assert robots_site.hits["/private"] == 0
    assert 0 < most_alive <= BOUND + 1  # the rules of the URL being judged, dropped or not
    assert parses > HOSTS + 1  # rules dropped were parsed again


async def test_rules_dropped_are_read_again_without_asking_the_robots_txt_again(robots_site, monkeypatch):
    monkeypatch.setattr(politeness, "ROBOTS_PARSED_HOSTS", BOUND, raising=False)
    await robots_site.start()
    names = _names(robots_site.server.port)
    async with aiohttp.ClientSession() as http:
        fetch_robots = _RobotsOverHttp(robots_site, http)
        policy = HostPolicy(
            concurrency=2, delay=0.0, obey_robots=True, user_agent="archiver", fetch_robots=fetch_robots
        )
        for name in names:
            assert await policy.refusal(f"http://{name}/public") is None
            assert policy.parsed_robots <= BOUND
        assert policy.parsed_robots == BOUND
        for name in names:  # each dropped (the last BOUND kept), read again from its answer
            assert await policy.refusal(f"http://{name}/private") == ROBOTS
            assert policy.parsed_robots <= BOUND
    assert fetch_robots.asked == Counter({f"http://{name}": 1 for name in names})


async def test_a_host_with_nothing_in_flight_keeps_no_locks(robots_site):
    """Each host met kept a condition and two locks for the whole crawl; they are kept only while
    a fetch holds or waits for one of its slots, or its robots.txt is read."""
    await robots_site.start()
    names = _names(robots_site.server.port)
    async with aiohttp.ClientSession() as http:
        policy = HostPolicy(
            concurrency=1,
            delay=0.01,
            obey_robots=True,
            user_agent="archiver",
            fetch_robots=_RobotsOverHttp(robots_site, http),
        )
        for name in names:
            assert await policy.refusal(f"http://{name}/public") is None
            async with policy.slot(f"http://{name}/public"):
                assert policy.hosts_in_use == 1 and policy.busy(f"http://{name}/public")
            assert policy.hosts_in_use == 0 and not policy.busy(f"http://{name}/public")
        async with policy.slot(f"http://{names[0]}/a"), policy.slot(f"http://{names[1]}/a"):
            assert policy.hosts_in_use == 2
        assert policy.hosts_in_use == 0


async def test_a_crawl_node_reads_rules_it_dropped_from_redis_without_asking_again(
    robots_site, redis_url, monkeypatch
):
    """Each crawl node kept every host's parsed rules; it keeps the last judged, and reads the
    others again from the answer one node stored in Redis for all, not from the host."""
    from archiver.crawling.redis_politeness import RedisHostPolicy
    from archiver.crawling.redis_state import Membership, connect

    monkeypatch.setattr(politeness, "ROBOTS_PARSED_HOSTS", BOUND, raising=False)
    await robots_site.start()
    names = _names(robots_site.server.port)
    crawl = connect(redis_url, "bounded")
    try:
        async with aiohttp.ClientSession() as http:
            fetch_robots = _RobotsOverHttp(robots_site, http)
            nodes = []
            for node in ("A", "B"):
                member = Membership(node, f"token-{node}", 100.0)
                await crawl.run("register", args=[crawl.prefix, node, member.token, 100_000])
                options = dict(concurrency=1, delay=0.0, obey_robots=True, user_agent="archiver")
                nodes.append(RedisHostPolicy(crawl, member, **options, fetch_robots=fetch_robots))
            for policy in nodes:
                for name in names:
                    assert await policy.refusal(f"http://{name}/public") is None
                    assert policy.parsed_robots <= BOUND
            for policy in nodes:
                for name in names:
                    assert await policy.refusal(f"http://{name}/private") == ROBOTS
                    assert policy.parsed_robots <= BOUND
    finally:
        await crawl.close()
    assert fetch_robots.asked == Counter({f"http://{name}": 1 for name in names})


async def test_urls_parked_for_robots_txt_out_of_reach_are_bounded_across_hosts(site, run_crawl, monkeypatch):
    """The URLs skipped while their host's robots.txt is out of reach are kept to be queued again
    once it answers: up to PARKED_MAX of them for each host, so that a crawl meeting many hosts
    that are down kept that many for each. PARKED_MAX counts every host's together now; the
    others stay skipped, for a resumed crawl to take up."""
    monkeypatch.setattr(local_frontier, "PARKED_MAX", BOUND)
    most_parked = 0
    park = SqliteFrontier.park

    async def counted(self: SqliteFrontier, key: str, item: QueueItem) -> None:
        nonlocal most_parked
        await park(self, key, item)
        most_parked = max(most_parked, sum(len(items) for items in self._parked.values()))

    monkeypatch.setattr(SqliteFrontier, "park", counted)
    site.handler("/robots.txt", _down_but_the_seeds)
    site.page("/home")
    await site.start()
    names = _names(site.server.port)
    site.page("/", links=[f"http://{name}/home" for name in names])
    result = await run_crawl(site.url("/"), scope="any", sitemaps=False, robots_retry=3600.0)
    rows = manifest_rows(result.snapshot.root)
    assert [rows[f"http://{name}/home"].reason for name in names] == [ROBOTS_UNREACHABLE] * HOSTS
    assert most_parked == BOUND


def test_nothing_is_kept_of_each_host_to_choose_its_proxy():
    """The proxy of each host (and whether NO_PROXY sends it around it) was kept for every host
    met; only the proxy of each scheme is kept now."""
    proxies = network.EnvironmentProxies({"http": "http://u:pw@proxy.test:3128", "no": "intra.test"})
    proxy = (URL("http://proxy.test:3128"), {"Proxy-Authorization": "Basic dTpwdw=="})
    tracemalloc.start()
    try:
        for number in range(5_000):
            assert proxies.for_url(URL(f"http://h{number}.test/")) == proxy
            assert proxies.for_url(URL(f"http://h{number}.intra.test/")) == (None, None)
        kept = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, network.__file__)])
    finally:
        tracemalloc.stop()
    assert sum(stat.size for stat in kept.statistics("filename")) < 10_000


MANY_DOWN = 40
"""Hosts down in the larger crawl of the test below: more than ASKED_AT_ONCE past BOUND."""


def _of_archiver(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` runs archiver's code (not the test server's, which keeps a task for each
    connection the crawl left open)."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and archiver.__file__.rpartition("/")[0] in code.co_filename


async def test_hosts_whose_robots_txt_is_out_of_reach_are_asked_again_by_one_task(
    site, run_crawl, tmp_path, monkeypatch
):
    """Each host whose robots.txt was out of reach had a task of its own, asking it again for the
    whole crawl: a crawl meeting many hosts that are down kept as many. One task asks them all
    now (ASKED_AT_ONCE at a time), and each is still asked again."""
    tasks_at_the_end: list[int] = []
    close = Admission.close

    def counted(self: Admission) -> None:
        tasks_at_the_end.append(sum(_of_archiver(task) for task in asyncio.all_tasks()))
        close(self)

    monkeypatch.setattr(Admission, "close", counted)
    asked: Counter[str] = Counter()

    async def down(request: web.Request) -> web.Response:
        asked[request.host] += 1
        return await _down_but_the_seeds(request)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(1.5)  # the hosts down are asked again meanwhile
        return web.Response(text="<title>slow</title>", content_type="text/html")

    site.handler("/robots.txt", down)
    site.handler("/slow", slow)
    site.page("/home")
    await site.start()
    names = [f"down{number}.localhost:{site.server.port}" for number in range(MANY_DOWN)]
    for hosts in (BOUND, MANY_DOWN):
        site.page("/", links=["/slow"] + [f"http://{name}/home" for name in names[:hosts]])
        output = tmp_path / f"{hosts}"
        await run_crawl(site.url("/"), output=output, scope="any", sitemaps=False, robots_retry=0.2)
    # (askers of the one task may be under way as the crawl ends: ASKED_AT_ONCE at most)
    assert tasks_at_the_end[1] - tasks_at_the_end[0] <= ASKED_AT_ONCE < MANY_DOWN - BOUND, tasks_at_the_end
    assert all(asked[name] >= 2 * 2 for name in names[:BOUND]), asked  # (two crawls)
    assert all(asked[name] >= 2 for name in names[BOUND:]), asked
