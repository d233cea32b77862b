"""Live control of a running crawl: pause, resume, stop, exclude, delay, concurrency.

An operator's command (``archiver control``) is written where the crawl
looks for it: the snapshot's control file for a crawl of one process
(store/control_file.py), the crawl's Redis keys for crawl nodes
(crawling/redis_control.py). Each process polls its source every
``POLL_EVERY`` seconds (``follow_controls``), applies what is new, notes it in
crawl.json with the time it took effect, and publishes its counts for
``archiver control ... status``.

>>> parse_command("delay", "1.5")
('delay', '1.5')
>>> parse_command("concurrency", "0")
Traceback (most recent call last):
...
archiver.errors.ConfigError: concurrency takes a whole number from 1 to 1000, not '0'
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

from archiver.config_rules import RANGES
from archiver.errors import ConfigError
from archiver.numerals import whole_number
from archiver.scope import matches
from archiver.store.crawl_record import now

log = logging.getLogger("archiver.crawl")

POLL_EVERY = 1.0
"""Seconds between two looks at the control source: a command takes effect within that."""
CONTROL_STOP = "stopped by archiver control"
"""The stop reason of a crawl that `archiver control TARGET stop` ended."""

COMMANDS = ("pause", "resume", "stop", "exclude", "delay", "concurrency", "status")
"""What ``archiver control`` says; every one but status changes the crawl."""
CONTROLS = "controls"
"""crawl.json key: [{command, argument, issued, applied}] of the commands a run applied."""


def parse_command(name: str, argument: str | None) -> tuple[str, str | None]:
    """Check an operator's command and its argument; ConfigError says what is wrong."""
    if name not in COMMANDS:
        raise ConfigError(f"unknown command {name!r}: use one of {', '.join(COMMANDS)}")
    takes = {"exclude": "a regular expression", "delay": "seconds", "concurrency": "a number"}
    if name not in takes:
        if argument is not None:
            raise ConfigError(f"{name} takes no argument")
        return name, None
    if argument is None:
        raise ConfigError(f"{name} takes {takes[name]}")
    if name == "exclude":
        try:
            re.compile(argument)
        except re.error as exc:
            raise ConfigError(f"bad regular expression {argument!r}: {exc}") from None
    elif name == "delay":
        # The ranges the crawl's own --delay and --host-concurrency take, which the command joins:
        # a value past them stalled the crawl, and its resume refused the settings it left.
        low, high = RANGES["delay"]
        try:
            seconds = float(argument)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and low <= seconds <= high):
            raise ConfigError(f"delay takes seconds from {low:g} to {high:g}, not {argument!r}")
    else:
        low, high = RANGES["host_concurrency"]
        if not low <= (whole_number(argument) or 0) <= high:
            raise ConfigError(f"concurrency takes a whole number from {low:g} to {high:g}, not {argument!r}")
    return name, argument


@dataclass(frozen=True)
class Command:
    """One operator's command as a source hands it to a crawl."""

    name: str
    argument: str | None
    issued: str
    """When ``archiver control`` wrote it (crawl.json's time format)."""
    replayed: bool = False
    """Issued before this process joined the crawl (a node started late replays the log, so it
    is paused, excludes and delays as the others do; a replayed stop is not obeyed)."""


class ControlSource(Protocol):
    """Where a crawl reads its operator's commands and publishes its counts."""

    async def new_commands(self) -> list[Command]:
        """Commands not handed out before, oldest first."""

    async def publish(self, status: dict[str, Any]) -> None:
        """Make this process's counts readable by ``archiver control ... status``."""


class Tunable(Protocol):
    """The politeness settings an operator changes while a crawl runs."""

    def set_delay(self, seconds: float) -> None:
        """Seconds between two requests to one host from now on (robots.txt may ask more)."""

    def set_concurrency(self, fetches: int) -> None:
        """Most fetches in flight to one host from now on."""


class Controls:
    """What the crawler obeys between fetches: a pause, and excludes added while it runs."""

    def __init__(self) -> None:
        self._running = asyncio.Event()
        self._running.set()
        self._ended = False
        self.excludes: tuple[re.Pattern[str], ...] = ()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def pause(self) -> None:
        if not self._ended:  # a crawl that is ending is never held back again
            self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def end(self) -> None:
        """The crawl stops or failed: whoever waits for a resume goes on (to see it end), now
        and from now on, whatever the operator said."""
        self._ended = True
        self._running.set()

    async def running(self) -> None:
        """Return at once unless paused; then when resumed or ended."""
        if not self._running.is_set():
            await self._running.wait()

    def excluded(self, url: str) -> bool:
        """True if an exclude added while the crawl runs matches ``url``."""
        return matches(self.excludes, url)


class Steered(Protocol):
    """The crawler as the controls see it (crawling/crawler.py's Crawler)."""

    controls: Controls
    scope: Any
    stats: Any

    def stop(self, reason: str) -> None: ...


def apply(command: Command, crawler: Steered, policy: Tunable) -> bool:
    """Apply ``command`` to the crawl; False if it was not obeyed (a replayed stop)."""
    controls = crawler.controls
    if command.name == "pause":
        controls.pause()
    elif command.name == "resume":
        controls.resume()
    elif command.name == "stop":
        if command.replayed:
            return False
        crawler.stop(CONTROL_STOP)
    elif command.name == "exclude":
        assert command.argument is not None
        pattern = re.compile(command.argument)
        controls.excludes = (*controls.excludes, pattern)
        # Links met from now on are skipped as --exclude skips them; queued ones when taken.
        crawler.scope = dataclasses.replace(crawler.scope, exclude=(*crawler.scope.exclude, pattern))
    elif command.name == "delay":
        policy.set_delay(float(command.argument or 0))
    elif command.name == "concurrency":
        policy.set_concurrency(int(command.argument or 1))
    return True


def describe(controls: Controls, settings: dict[str, str]) -> str:
    """The progress line's note: 'paused, delay 2s, 4 a host, 1 exclude added'."""
    parts = ["paused"] if controls.paused else []
    if "delay" in settings:
        parts.append(f"delay {settings['delay']}s")
    if "concurrency" in settings:
        parts.append(f"{settings['concurrency']} a host")
    if controls.excludes:
        count = len(controls.excludes)
        parts.append(f"{count} exclude{'s' if count > 1 else ''} added")
    return ", ".join(parts)


async def follow_controls(
    source: ControlSource,
    crawler: Steered,
    policy: Tunable,
    record: Any,
    status: Any,
    done: asyncio.Event,
) -> None:
    """Apply the operator's commands as they come, until ``done`` is set.

    Ended by ``done``, never cancelled: a source reading or writing in a thread
    (control_file.py) is let finish its call, since a thread still in SQLite
    when the crawl returns would outlive it (and a fork then, as verify's,
    could inherit SQLite's locks held).

    ``record`` (a CrawlRecord) notes each command in crawl.json, and an added
    exclude among the settings, so a resumed crawl and verify know it.
    ``status()`` gives this process's counts to publish each round.
    """
    changed: dict[str, str] = {}
    while not done.is_set():
        try:
            for command in await source.new_commands():
                if not apply(command, crawler, policy):
                    continue
                if command.name in ("delay", "concurrency"):
                    changed[command.name] = command.argument or ""
                log.info("control: %s %s (issued %s)", command.name, command.argument or "", command.issued)
                _note(record, command)
            crawler.stats.note = describe(crawler.controls, changed)
            await source.publish(status())
        except Exception as exc:  # an unreachable source must not end the crawl
            log.warning("cannot read the crawl's controls: %s", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), POLL_EVERY)


SETTINGS = {"delay": ("delay", float), "concurrency": ("host_concurrency", int)}
"""The crawl setting a command changes for the rest of the crawl (its resumes too), and its type."""


def _note(record: Any, command: Command) -> None:
    if record is None:
        return
    settings = record.data.setdefault("settings", {})
    if command.name == "exclude":
        excludes = list(settings.get("exclude") or [])
        if command.argument not in excludes:
            settings["exclude"] = [*excludes, command.argument]
    elif command.name in SETTINGS:
        name, kind = SETTINGS[command.name]
        settings[name] = kind(command.argument)
    entry = {"command": command.name, "argument": command.argument, "issued": command.issued}
    with contextlib.suppress(OSError):  # a crawl.json that cannot be written is reported at the end
        record.note(CONTROLS, [{**entry, "applied": now(), "replayed": command.replayed}])


def status_of(stats: Any, controls: Controls, queued: int, state: str = "running") -> dict[str, Any]:
    """The counts a process publishes: what ``archiver control ... status`` prints."""
    elapsed = max(stats.elapsed(), 1e-6)
    return {
        "state": "paused" if controls.paused and state == "running" else state,
        "fetched": stats.fetched,
        "failed": stats.failed,
        "skipped": stats.skipped,
        "queued": queued,
        "in_flight": stats.in_flight,
        "bytes": stats.bytes,
        "pages_per_second": round(stats.fetched / elapsed, 2),
        "updated": time.time(),
    }
