"""What a crawl holds beside its manifest rows, kept with them for --resume: its cookie jar
(COOKIES), the hosts whose robots.txt was out of reach (ROBOTS_STREAKS) and what --browser
auto's renders taught (render_state.py). Each is an entry (or
entries) of the manifest's crawl state, committed by the writer with each batch of rows where it
changed (Writer.keep_state), so a crawl resumed after a kill holds what the killed one held when
its rows were stored; keep_beside_rows() takes them back first (but the streaks, which
take_back_streaks() does with the robots.txt answers the crawl read)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from archiver.crawling.cookies import SiteCookieJar
from archiver.crawling.politeness import HostPolicy
from archiver.crawling.render_state import RENDERS
from archiver.crawling.renderer import Renderer
from archiver.crawling.saved_cookies import saved_cookies
from archiver.crawling.writer import Writer
from archiver.store.manifest import Manifest

COOKIES = "cookies"
"""Name of the crawl's cookies in the manifest's crawl state (Manifest.keep_state)."""
ROBOTS_STREAKS = "robots_out_of_reach"
"""Name in the crawl state of the hosts whose robots.txt was out of reach, how many times in a row."""


def keep_beside_rows(
    writer: Writer,
    manifest: Manifest,
    jar: SiteCookieJar | None,
    renderer: Renderer | None,
    policy: HostPolicy,
    resume: bool,
    given_cookies: Callable[[], list[dict[str, Any]]],
) -> None:
    """Have ``writer`` keep the crawl's cookie ``jar``, its ``renderer``'s state (either may be
    None) and ``policy``'s robots.txt streaks with its rows; resuming, first take back the
    cookies and renders the interrupted crawl kept, the cookies ``given_cookies()`` (--cookie,
    --cookies-file) over those servers set."""
    kept: dict[str, Callable[[], dict[str, str]]] = {}
    """By the name its entries in the manifest's crawl state begin with."""
    if jar is not None:
        if resume and (cookies := manifest.state(COOKIES)) is not None:
            jar.adopt(json.loads(cookies))  # those servers set before the interruption
            jar.adopt(given_cookies())  # ...but those given now replace theirs
        kept[COOKIES] = lambda: {COOKIES: saved_cookies(jar)}
    kept[ROBOTS_STREAKS] = lambda: {
        ROBOTS_STREAKS: json.dumps(policy.robots_streaks(), separators=(",", ":"))
    }
    if renderer is not None:
        if resume and (renders := manifest.states(RENDERS)):
            renderer.restore(renders)
        kept[RENDERS] = renderer.state
    writer.keep_state(
        lambda: {name: text for state in kept.values() for name, text in state().items()},
        {name: text for prefix in kept for name, text in manifest.states(prefix).items()},
    )


def take_back_streaks(manifest: Manifest, policy: HostPolicy) -> None:
    """Give ``policy`` the robots.txt streaks the interrupted crawl kept: one still out of reach
    is asked again now, then waited for longer each time."""
    if (streaks := manifest.state(ROBOTS_STREAKS)) is not None:
        with contextlib.suppress(ValueError, AttributeError):
            policy.adopt_streaks(json.loads(streaks))
