"""CrawlConfig: every setting of a crawl, validated once, saved in crawl.json."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver import __version__
from archiver.errors import ConfigError

SCOPES = ("host", "domain", "prefix", "any")
DEFAULT_USER_AGENT = f"archiver/{__version__} (+https://pypi.org/project/archiver/)"


@dataclass(frozen=True)
class CrawlConfig:
    """The settings of one crawl.

    >>> CrawlConfig(seeds=("http://example.com/",), output=Path("snap")).scope
    'host'
    """

    seeds: tuple[str, ...]
    output: Path
    scope: str = "host"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None
    max_bytes: int | None = None
    concurrency: int = 16
    host_concurrency: int | None = None
    """Most fetches in flight to one host (default: --concurrency)."""
    delay: float = 0.0
    """Seconds between the starts of two requests to one host."""
    obey_robots: bool = True
    max_redirects: int = 10
    max_tries: int = 4
    retry_base_delay: float = 0.5
    """Seconds before the first retry; doubled on each further try, with jitter."""
    max_retry_after: float = 60.0
    """Longest wait honoured from a Retry-After header, and longest backoff."""
    timeout: float = 30.0
    """Seconds allowed for one whole fetch, body included."""
    connect_timeout: float = 10.0
    max_file_size: int = 100 * 1024 * 1024
    """Bodies past this many bytes are stored truncated (WARC-Truncated: length)."""
    warc_max_size: int = 1024**3
    warc_prefix: str = "archiver"
    user_agent: str = DEFAULT_USER_AGENT
    writer_queue_size: int = 64
    worker_processes: int | None = None
    """Processes that parse pages and encode records in a big crawl (None: one per CPU beyond the first)."""
    progress: bool = True
    headers: tuple[tuple[str, str], ...] = field(default=())
    cookies: tuple[tuple[str, str], ...] = field(default=())
    """(name, value) pairs sent to the seeds' hosts."""
    cookies_file: str | None = None
    """A Netscape/Mozilla cookies.txt file, as curl and wget write them."""
    ca_bundle: str | None = None
    """PEM file of certificate authorities to trust for HTTPS."""
    insecure: bool = False
    """Do not check HTTPS certificates at all."""
    resolve: tuple[tuple[str, str], ...] = field(default=())
    """(host, IP address) pairs used instead of DNS, like curl's --resolve."""

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ConfigError("give at least one URL to crawl")
        if self.scope not in SCOPES:
            raise ConfigError(f"--scope must be one of {', '.join(SCOPES)}")
        for name in ("concurrency", "max_tries", "writer_queue_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        for name in ("max_depth", "max_pages", "max_bytes", "max_redirects"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"--{name.replace('_', '-')} must not be negative")
        if self.max_file_size < 1 or self.warc_max_size < 1024:
            raise ConfigError("--max-file-size must be positive and --warc-max-size at least 1024")
        if self.host_concurrency is not None and self.host_concurrency < 1:
            raise ConfigError("--host-concurrency must be at least 1")
        if self.delay < 0 or self.max_retry_after < 0:
            raise ConfigError("--delay and --max-retry-after must not be negative")
        if self.timeout <= 0 or self.connect_timeout <= 0:
            raise ConfigError("timeouts must be positive")
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.warc_prefix):
            raise ConfigError("--warc-prefix may hold only letters, digits, '.', '_' and '-'")
        if self.ca_bundle and self.insecure:
            raise ConfigError("--ca-bundle and --insecure contradict each other: give one")
        for path in (self.ca_bundle, self.cookies_file):
            if path and not Path(path).is_file():
                raise ConfigError(f"no such file: {path}")
        for pattern in self.include + self.exclude:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"bad regular expression {pattern!r}: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON-ready values, for crawl.json."""
        data = dataclasses.asdict(self)
        data["output"] = str(self.output)
        data["seeds"] = list(self.seeds)
        data["headers"] = [list(pair) for pair in self.headers]
        data["resolve"] = [list(pair) for pair in self.resolve]
        data["cookies"] = [list(pair) for pair in self.cookies]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], **overrides: Any) -> CrawlConfig:
        """Rebuild the settings saved in crawl.json (unknown keys are ignored)."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["output"] = Path(values["output"])
        for name in ("seeds", "include", "exclude"):
            values[name] = tuple(values.get(name, ()))
        for name in ("headers", "resolve", "cookies"):
            values[name] = tuple(tuple(pair) for pair in values.get(name, ()))
        values.update(overrides)
        return cls(**values)
