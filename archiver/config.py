"""CrawlConfig: every setting of a crawl, validated once, saved in crawl.json (config_saved.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver import __version__, config_saved
from archiver.config_options import ADD, REFUSE, option
from archiver.config_rules import BROWSER_MODES, NEVER, check_settings
from archiver.domains import has_bad_punycode
from archiver.errors import BadURL, ConfigError, password_withheld
from archiver.request_headers import Credentials
from archiver.scope import BAD_PUNYCODE, MAX_LINKS_PER_PAGE, MAX_URL_LENGTH, TOO_LONG
from archiver.urls import normalize_url

SCOPES = ("host", "domain", "prefix", "any")
LOG_FORMATS = ("text", "json")
DEFAULT_USER_AGENT = f"archiver/{__version__} (+https://pypi.org/project/archiver/)"
DEFAULT_RETRY_ON = (429, 502, 503, 504)
"""Answers that say "not now": a 500 is the server's answer, recorded as it is (as wget does)."""


@dataclass(frozen=True)
class CrawlConfig:
    """The settings of one crawl; the fields with an ``option`` are the crawl's command-line options.

    >>> CrawlConfig(seeds=("http://example.com/",), output=Path("snap")).scope
    'host'
    """

    seeds: tuple[str, ...]
    output: Path
    scope: str = field(
        default="host",
        metadata=option(
            "which links to follow: same host, domain, URL prefix, or any",
            kind="choice",
            choices=SCOPES,
            on_resume=REFUSE,
            why_refused="URLs already judged out of scope would stay skipped; start a new crawl",
        ),
    )
    include: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "only follow URLs matching REGEX (repeatable)",
            kind="regex",
            metavar="REGEX",
            default_text="",
            on_resume=REFUSE,
            why_refused="URLs already skipped for not matching would stay skipped; start a new crawl",
        ),
    )
    exclude: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "never fetch URLs matching REGEX (repeatable)",
            kind="regex",
            metavar="REGEX",
            default_text="",
            on_resume=ADD,
        ),
    )
    max_depth: int | None = field(
        default=None,
        metadata=option(
            "links to follow from a seed",
            metavar="N",
            default_text="no limit",
            on_resume=REFUSE,
            why_refused="URLs already skipped for their depth would stay skipped; start a new crawl",
        ),
    )
    max_links_per_page: int = field(
        default=MAX_LINKS_PER_PAGE,
        metadata=option(
            "links of a page followed, in its order; the page's row says how many more it had",
            metavar="N",
        ),
    )
    """Links (and requisites) taken from one page: the rest get no rows (scope.links_kept())."""
    max_pages: int | None = field(
        default=None,
        metadata=option(
            "stop after fetching this many URLs, counting every run", metavar="N", default_text="no limit"
        ),
    )
    max_bytes: int | None = field(
        default=None,
        metadata=option(
            "stop after storing this many bytes, counting every run",
            kind="size",
            metavar="SIZE",
            default_text="no limit",
        ),
    )
    max_time: float | None = field(
        default=None,
        metadata=option(
            "stop this run after DURATION (90, 30s, 10m, 2h, 1h30m), cleanly: --resume continues it",
            kind="duration",
            metavar="DURATION",
            default_text="no limit",
        ),
    )
    """Seconds a run may last before it stops as a signal would stop it (each run its own)."""
    concurrency: int = field(default=16, metadata=option("fetch workers", metavar="N"))
    host_concurrency: int | None = field(
        default=None,
        metadata=option("most fetches in flight to one host", metavar="N", default_text="--concurrency"),
    )
    """Most fetches in flight to one host (default: --concurrency)."""
    delay: float = field(
        default=0.0,
        metadata=option(
            "seconds between requests to one host (robots.txt Crawl-delay raises it)", metavar="S"
        ),
    )
    """Seconds between the starts of two requests to one host."""
    obey_robots: bool = field(
        default=True,
        metadata=option("do not obey robots.txt", kind="no-flag", flag="--ignore-robots", default_text=""),
    )
    sitemaps: bool = field(
        default=True,
        metadata=option(
            "do not read the seeds' hosts' sitemaps (robots.txt Sitemap: lines, /sitemap.xml)",
            kind="no-flag",
            flag="--no-sitemaps",
            default_text="",
        ),
    )
    """Read the sitemaps of the seeds' hosts, and queue the URLs they list (in scope)."""
    log_format: str = field(
        default="text",
        metadata=option(
            "logs/crawl.log as lines of text, or as one JSON object a line",
            kind="choice",
            choices=LOG_FORMATS,
        ),
    )
    max_redirects: int = field(default=10, metadata=option("longest redirect chain", metavar="N"))
    max_tries: int = field(
        default=4,
        metadata=option(
            "tries per URL (connection errors, timeouts, bodies cut short, --retry-on answers)", metavar="N"
        ),
    )
    retry_base_delay: float = 0.5
    """Seconds before the first retry; doubled on each further try, with jitter."""
    max_retry_after: float = field(
        default=60.0,
        metadata=option("longest Retry-After (seconds) to wait out before retrying", metavar="S"),
    )
    """Longest wait honoured from a Retry-After header, and longest backoff."""
    retry_on: tuple[int, ...] = field(
        default=DEFAULT_RETRY_ON,
        metadata=option(
            "HTTP statuses tried again; any other answer is archived as sent",
            kind="statuses",
            metavar="STATUS,...",
            default_text=",".join(map(str, DEFAULT_RETRY_ON)),
        ),
    )
    """HTTP statuses tried again (while tries remain), as transient; connection errors,
    timeouts and bodies cut short always are. Any other answer is recorded as sent."""
    timeout: float = field(
        default=30.0,
        metadata=option("seconds for one whole try: connection, headers and body", metavar="S"),
    )
    """Seconds allowed for one whole try: connection, headers and body."""
    connect_timeout: float = 10.0
    max_file_size: int = field(
        default=100 * 1024 * 1024,
        metadata=option("truncate bodies past this size", kind="size", metavar="SIZE"),
    )
    """Bodies past this many bytes are stored truncated (WARC-Truncated: length)."""
    warc_max_size: int = field(
        default=1024**3,
        metadata=option("start a new WARC file past this size", kind="size", metavar="SIZE"),
    )
    warc_prefix: str = field(
        default="archiver",
        metadata=option(
            "WARC file name prefix",
            metavar="PREFIX",
            on_resume=REFUSE,
            why_refused="the crawl's WARC files are found by their prefix",
        ),
    )
    user_agent: str = field(
        default=DEFAULT_USER_AGENT,
        metadata=option("User-Agent header", metavar="TEXT"),
    )
    writer_queue_size: int = 64
    robots_max_age: float = 86_400.0
    """Seconds a robots.txt is used before it is asked again: 24 hours, as RFC 9309 (2.4) asks."""
    robots_retry: float = 60.0
    """Seconds before a robots.txt out of reach is asked again (its host kept out meanwhile), doubled
    each time it is still out of reach, up to an hour (and to robots_max_age)."""
    worker_processes: int | None = None
    """Processes that parse pages and encode records in a big crawl (None: one per CPU beyond the first)."""
    headers: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata=option(
            "request header, sent to the seeds' hosts only (see --credentials-host; repeatable)",
            kind="header",
            flag="--header",
            metavar="'NAME: VALUE'",
            default_text="",
        ),
    )
    """(name, value) pairs sent to the seeds' hosts (and credentials_hosts) only."""
    cookies: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata=option(
            "cookie, sent to the seeds' hosts only (see --credentials-host; repeatable)",
            kind="cookie",
            flag="--cookie",
            metavar="NAME=VALUE",
            default_text="",
        ),
    )
    """(name, value) pairs sent to the seeds' hosts (and credentials_hosts) only."""
    credentials_hosts: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "another host that gets --header, --cookie and --http-user credentials (repeatable)",
            kind="host",
            flag="--credentials-host",
            metavar="HOST[:PORT]",
            default_text="",
            on_resume=ADD,
        ),
    )
    """More hosts (host or host:port) that get headers, cookies and HTTP authentication."""
    http_user: str | None = field(
        default=None,
        metadata=option("user for HTTP Basic authentication, sent to the seeds' hosts only", metavar="USER"),
    )
    http_password: str | None = field(
        default=None,
        repr=False,
        metadata=option(
            "its password (else the ARCHIVER_HTTP_PASSWORD environment variable); never saved",
            metavar="PASSWORD",
            default_text="",
        ),
    )
    """Never saved: crawl.json keeps no password (a resumed crawl is given it again)."""
    cookies_file: str | None = field(
        default=None,
        metadata=option("cookies.txt (Netscape format) to send", metavar="FILE", default_text=""),
    )
    """A Netscape/Mozilla cookies.txt file, as curl and wget write them."""
    ca_bundle: str | None = field(
        default=None, metadata=option("PEM file of CAs to trust for HTTPS", metavar="FILE", default_text="")
    )
    """PEM file of certificate authorities to trust for HTTPS."""
    insecure: bool = field(
        default=False, metadata=option("do not check HTTPS certificates", kind="flag", default_text="")
    )
    """Do not check HTTPS certificates at all."""
    resolve: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata=option(
            "connect to IP for HOST instead of asking DNS (repeatable)",
            kind="resolve",
            metavar="HOST:IP",
            default_text="",
        ),
    )
    """(host, IP address) pairs used instead of DNS, like curl's --resolve."""
    browser: str = field(
        default=NEVER,
        metadata=option(
            "render HTML pages in headless Chromium: never, auto (the pages scripts build) or always; "
            "every request the browser makes goes through the crawl",
            kind="choice",
            choices=BROWSER_MODES,
        ),
    )
    """Which HTML pages to render in a browser: never, auto (those scripts build) or always."""
    browser_tabs: int = field(
        default=2, metadata=option("pages rendered at once, in one browser", metavar="N")
    )
    browser_timeout: float = field(
        default=30.0, metadata=option("seconds to render one page, loading to DOM", metavar="S")
    )
    chromium: str | None = field(
        default=None,
        metadata=option(
            "the Chromium or Chrome to drive",
            metavar="PATH",
            default_text="chromium-headless-shell, chromium or google-chrome on PATH",
        ),
    )
    """The Chromium to drive (None: the first of chromium.CHROMIUM_NAMES on PATH)."""
    previous: str | None = field(
        default=None,
        metadata=option(
            "re-archive against the snapshot OLD: conditional requests, unchanged payloads stored "
            "as revisits of OLD's records, and a change report",
            metavar="OLD",
            on_resume=REFUSE,
            why_refused="the revisits already written refer to its records",
        ),
    )
    """A previous snapshot of the site; crawl.json keeps its path relative to this one's folder."""
    frontier: str | None = field(
        default=None,
        metadata=option(
            "share the crawl with other crawl nodes through Redis (needs --crawl-id)",
            metavar="redis://HOST:PORT/DB",
            default_text="",
        ),
    )
    """A Redis URL: the crawl's queue, seen set and politeness live there, shared by its nodes."""
    crawl_id: str | None = field(
        default=None,
        metadata=option(
            "the shared crawl's name in Redis (with --frontier)", metavar="NAME", default_text=""
        ),
    )
    node: str | None = field(
        default=None,
        metadata=option(
            "this crawl node's name: its part of the snapshot is DIR/nodes/NAME",
            metavar="NAME",
            default_text="the host's name and a number",
        ),
    )
    node_timeout: float = field(
        default=30.0,
        metadata=option(
            "seconds a crawl node may go silent before its URLs are given to the others", metavar="S"
        ),
    )

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ConfigError("give at least one URL to crawl")
        for seed in self.seeds:
            normalized = normalize_url(seed)  # a BadURL now, before any folder is made
            if len(normalized) > MAX_URL_LENGTH:
                raise BadURL(
                    f"{password_withheld(seed)[:60]}...",
                    f"longer than {MAX_URL_LENGTH:,} characters ({TOO_LONG})",
                )
            if has_bad_punycode(normalized):
                raise BadURL(seed, f"its host has an xn-- label that is no valid IDNA ({BAD_PUNYCODE})")
        check_settings(self)
        # A user without a password (or the reverse) is refused here, saying what to do.
        Credentials.build(
            self.seeds, extra_hosts=self.credentials_hosts, user=self.http_user, password=self.http_password
        )

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON-ready values, for crawl.json (tuples become lists, paths strings)."""
        return config_saved.saved_settings(self)

    @classmethod
    def check_saved(cls, data: Any) -> None:
        """ConfigError unless ``data`` (crawl.json's settings) is an object whose known settings
        each have their field's type: what reads them (the mirror's index.html, an export)
        may then take them as they are."""
        config_saved.check_saved(cls, data)

    @classmethod
    def from_json(cls, data: Any, **overrides: Any) -> CrawlConfig:
        """Rebuild the settings saved in crawl.json (unknown keys are ignored); ConfigError if they
        are not settings (a value of the wrong type, seeds or output missing). ``overrides`` must
        give what crawl.json does not keep: the password, credential headers."""
        return config_saved.settings_from_json(cls, data, overrides)

    def resumed(self, given: dict[str, Any]) -> CrawlConfig:
        """These settings with the options ``given`` with --resume, as each option's on_resume says.

        >>> saved = CrawlConfig(seeds=("http://h/",), output=Path("s"), exclude=("a",))
        >>> saved.resumed({"delay": 2.0, "exclude": ("b",)}).exclude
        ('a', 'b')
        >>> saved.resumed({"scope": "any"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        archiver.errors.ConfigError: --scope cannot change when a crawl resumes (it was host): ...
        """
        return config_saved.resumed(self, given)
