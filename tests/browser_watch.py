"""Watching a crawl's browser from a test: the requests it made and those routed to the crawl,
its pools and tabs (BrowserWatch), and the processes it runs (``children``, ``subtree``)."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

import pytest

from archiver.crawling import browser_pool as pool_module
from archiver.crawling import page_network as network_module


class BrowserWatch:
    """Every request the browser made (from its own events) and every one routed to the crawl."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[str] = []
        self.routed: list[str] = []
        self.first_routed: dict[str, float] = {}
        """When (time.monotonic()) each URL was first routed to the crawl."""
        self.pools: list[pool_module.BrowserPool] = []
        self.tabs: list[pool_module.Tab] = []
        self.tabs_opened = 0
        open_tab = pool_module.BrowserPool._open_tab
        handle = network_module.PageNetwork.handle
        watch = self

        async def watched_tab(pool: pool_module.BrowserPool) -> pool_module.Tab:
            if pool not in watch.pools:
                watch.pools.append(pool)
            tab = await open_tab(pool)
            watch.tabs.append(tab)
            watch.tabs_opened += 1
            tab.context.on("request", lambda request: watch.made.append(request.url))
            return tab

        async def watched_handle(network: network_module.PageNetwork, route: Any) -> None:
            watch.routed.append(route.request.url)
            watch.first_routed.setdefault(route.request.url, time.monotonic())
            await handle(network, route)

        monkeypatch.setattr(pool_module.BrowserPool, "_open_tab", watched_tab)
        monkeypatch.setattr(network_module.PageNetwork, "handle", watched_handle)


def children(pid: int) -> list[int]:
    """The processes process ``pid`` started, by pid (read from /proc)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as children:
            found += [int(child) for child in children.read().split()]
    return found


def subtree(pid: int) -> list[int]:
    """Process ``pid`` and every process under it, by pid."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            todo += children(current)
            found.append(current)
    return found
