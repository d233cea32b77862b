"""What a crawl holds beside its manifest rows, kept with them for --resume: its cookie jar
(COOKIES) and what --browser auto's renders taught (render_state.py). Each is an entry (or
entries) of the manifest's crawl state, committed by the writer with each batch of rows where it
changed (Writer.keep_state), so a crawl resumed after a kill holds what the killed one held when
its rows were stored; keep_beside_rows() takes them back first."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from archiver.crawling.cookies import SiteCookieJar, saved_cookies
from archiver.crawling.render_state import RENDERS
from archiver.crawling.renderer import Renderer
from archiver.crawling.writer import Writer
from archiver.store.manifest import Manifest

COOKIES = "cookies"
"""Name of the crawl's cookies in the manifest's crawl state (Manifest.keep_state)."""


def keep_beside_rows(
    writer: Writer,
    manifest: Manifest,
    jar: SiteCookieJar | None,
    renderer: Renderer | None,
    resume: bool,
    given_cookies: Callable[[], list[dict[str, Any]]],
) -> None:
    """Have ``writer`` keep the crawl's cookie ``jar`` and its ``renderer``'s state (either may be
    None) with its rows; resuming, first take back what the interrupted crawl kept, the cookies
    ``given_cookies()`` (--cookie, --cookies-file) over those servers set."""
    kept: dict[str, Callable[[], dict[str, str]]] = {}
    """By the name its entries in the manifest's crawl state begin with."""
    if jar is not None:
        if resume and (cookies := manifest.state(COOKIES)) is not None:
            jar.adopt(json.loads(cookies))  # those servers set before the interruption
            jar.adopt(given_cookies())  # ...but those given now replace theirs
        kept[COOKIES] = lambda: {COOKIES: saved_cookies(jar)}
    if renderer is not None:
        if resume and (renders := manifest.states(RENDERS)):
            renderer.restore(renders)
        kept[RENDERS] = renderer.state
    if kept:
        writer.keep_state(
            lambda: {name: text for state in kept.values() for name, text in state().items()},
            {name: text for prefix in kept for name, text in manifest.states(prefix).items()},
        )
