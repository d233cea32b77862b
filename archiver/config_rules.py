"""The rules a crawl's settings must follow, checked once when a CrawlConfig is made (pure).

Every number has a range: a negative, a NaN, an infinity or an absurd size is
an error that names the option, never a crawl that hangs or a traceback later.
Text that becomes part of a request (headers, cookies, the User-Agent) may hold
no line break or control character, nor bytes that are not UTF-8.

>>> check_range("concurrency", 0)
Traceback (most recent call last):
...
archiver.errors.ConfigError: --concurrency must be from 1 to 1,000, not 0
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import math
import re
from pathlib import Path
from typing import Any

from archiver.config_options import flag_of
from archiver.errors import ConfigError

NEVER = "never"
AUTO = "auto"
ALWAYS = "always"
BROWSER_MODES = (NEVER, AUTO, ALWAYS)
"""--browser: render no page, the pages scripts build (render_policy decides), or every HTML page."""

DAY = 86_400.0
RANGES: dict[str, tuple[float, float]] = {
    "concurrency": (1, 1000),
    "host_concurrency": (1, 1000),
    "max_tries": (1, 100),
    "max_redirects": (0, 100),
    "max_depth": (0, 1_000_000),
    "max_pages": (0, 10**12),
    "max_links_per_page": (1, 10**6),
    "max_bytes": (0, 2**60),
    "max_file_size": (1, 2**50),
    "warc_max_size": (1024, 2**50),
    "writer_queue_size": (1, 100_000),
    "delay": (0, DAY),
    "max_retry_after": (0, DAY),
    "retry_base_delay": (0, DAY),
    "timeout": (0.001, DAY),
    "connect_timeout": (0.001, DAY),
    "browser_tabs": (1, 64),
    "browser_timeout": (0.001, DAY),
    "worker_processes": (0, 256),
    "max_time": (0.001, 366 * DAY),
    "node_timeout": (0.001, DAY),
    "robots_max_age": (0.001, 366 * DAY),
    "robots_retry": (0.001, DAY),
}
"""Lowest and highest value of each numeric setting (None, where allowed, means no limit)."""

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header or cookie name (RFC 9110 token)."""
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def option_name(name: str) -> str:
    """'max_pages' -> '--max-pages'."""
    return "--" + name.replace("_", "-")


def check_range(name: str, value: float | None) -> None:
    """ConfigError unless ``value`` (a number, or None) is in the range RANGES gives ``name``."""
    if value is None:
        return
    low, high = RANGES[name]
    if not (math.isfinite(value) and low <= value <= high):
        shown = f"{high:g}" if isinstance(high, float) else f"{high:,}"
        raise ConfigError(f"{option_name(name)} must be from {low:g} to {shown}, not {value!r}")


def check_text(option: str, text: str) -> None:
    """ConfigError if ``text`` holds a line break, a control character or bytes that are not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{option} holds bytes that are not UTF-8: {text!r}") from None
    if _CONTROL.search(text):
        raise ConfigError(f"{option} holds a line break or control character: {text!r}")


def check_header(option: str, name: str, value: str) -> None:
    """ConfigError unless ``name: value`` can be sent as one header line (or ``name=value`` as a cookie)."""
    check_text(option, f"{name} {value}")
    if not _TOKEN.fullmatch(name):
        raise ConfigError(f"{option} {name!r}: not a valid name (letters, digits and !#$%&'*+.^_`|~-)")
    if option == "--cookie" and ";" in value:
        raise ConfigError(f"--cookie {name}: a value may not hold ';'")


def check_resolve(host: str, address: str) -> None:
    """ConfigError unless ``host:address`` is a host name and an IP address (--resolve)."""
    check_text("--resolve", host)
    if not host:
        raise ConfigError(f"--resolve {host}:{address}: give HOST:IP")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise ConfigError(f"--resolve {host}:{address}: {address!r} is not an IP address") from None


def check_settings(config: Any) -> None:
    """Every rule a CrawlConfig follows (those above, its choices, patterns and shared-crawl options)."""
    for name in RANGES:
        check_range(name, getattr(config, name))
    for f in dataclasses.fields(config):
        option = f.metadata.get("option")
        if option is not None and option.choices and getattr(config, f.name) not in option.choices:
            raise ConfigError(f"{flag_of(f)} must be one of {', '.join(option.choices)}")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", config.warc_prefix):
        raise ConfigError("--warc-prefix may hold only letters, digits, '.', '_' and '-'")
    if len(config.warc_prefix) > MAX_FILE_NAME_PART:
        raise ConfigError(f"--warc-prefix takes at most {MAX_FILE_NAME_PART} characters")
    if config.ca_bundle and config.insecure:
        raise ConfigError("--ca-bundle and --insecure contradict each other: give one")
    if any(not 100 <= status <= 599 for status in config.retry_on):
        raise ConfigError("--retry-on takes HTTP statuses, from 100 to 599")
    for pattern in config.include + config.exclude:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"bad regular expression {pattern!r}: {exc}") from None
    if config.frontier is not None or config.crawl_id is not None:
        check_shared(config.frontier, config.crawl_id, config.node)
        if config.browser != NEVER:
            raise ConfigError("--browser does not go with --frontier yet: crawl nodes fetch over HTTP")
        if config.previous is not None:
            raise ConfigError("--previous does not go with --frontier yet: re-archive with one process")
    check_text("--user-agent", config.user_agent)
    for name, value in config.headers:
        check_header("--header", name, value)
    for name, value in config.cookies:
        check_header("--cookie", name, value)
    for host, address in config.resolve:
        check_resolve(host, address)


MAX_FILE_NAME_PART = 100
"""Characters of --warc-prefix, and of --node, which name WARC files (PREFIX-NODE-DATE-SERIAL.warc.gz):
both and the rest fit in the 255 bytes a file system takes in a name. Longer, every WARC file
failed to open, and the crawl's resume, which keeps its prefix, failed alike."""
NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.]*"
"""A crawl node's name: it goes into file names after a '-', so it holds none, and names its
folder under nodes/, so it does not begin with a '.' ('..' was the snapshot's own folder)."""


def check_shared(frontier: str | None, crawl_id: str | None, node: str | None) -> None:
    """Refuse a shared crawl's options that do not go together (ConfigError says why).

    >>> check_shared("redis://h:6379/0", None, None)
    Traceback (most recent call last):
    ...
    archiver.errors.ConfigError: --frontier needs --crawl-id NAME: the name the crawl's nodes share
    """
    if frontier is None:
        raise ConfigError("--crawl-id goes with --frontier redis://HOST:PORT/DB")
    if not frontier.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"--frontier takes a Redis URL (redis://HOST:PORT/DB), not {frontier!r}")
    if crawl_id is None:
        raise ConfigError("--frontier needs --crawl-id NAME: the name the crawl's nodes share")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", crawl_id):
        raise ConfigError("--crawl-id may hold only letters, digits, '.', '_' and '-'")
    if node is not None and not re.fullmatch(NAME_PATTERN, node):
        raise ConfigError("--node may hold only letters, digits, '.' and '_', and begins with no '.'")
    if node is not None and len(node) > MAX_FILE_NAME_PART:
        raise ConfigError(f"--node takes at most {MAX_FILE_NAME_PART} characters")


def setting_from_json(name: str, annotation: str, value: Any) -> Any:
    """``value`` from crawl.json as the field's type (JSON has lists for tuples); ConfigError if it is not."""
    kinds = [kind.strip() for kind in annotation.split("|")]
    if value is None and "None" in kinds:
        return None
    kind = kinds[0]
    if kind == "tuple[str, ...]" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if kind == "tuple[int, ...]" and isinstance(value, list) and all(type(v) is int for v in value):
        return tuple(value)
    pairs = isinstance(value, list) and all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in value
    )
    if kind == "tuple[tuple[str, str], ...]" and pairs:
        return tuple((a, b) for a, b in value)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if (
        (kind == "bool" and isinstance(value, bool))
        or (kind == "int" and number and isinstance(value, int))
        or (kind == "str" and isinstance(value, str))
    ):
        return value
    if kind == "float" and number:
        return float(value)
    if kind == "Path" and isinstance(value, str) and value:
        return Path(value)
    raise ConfigError(f"crawl.json: the setting {name} is not a {kind}: {json.dumps(value)[:60]}")
