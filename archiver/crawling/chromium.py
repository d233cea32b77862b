"""The Chromium a crawl drives: which one, how it is launched, its processes kept out of the way.

The browser is the system's Chromium (Debian's ``chromium-headless-shell`` or
``chromium`` package, or any found on PATH or given with ``--chromium``);
Playwright's own browser download is never used. It is launched with a fresh
profile and with no way out to the network of its own: every request of a page is answered by the crawler (see
crawling/browser.py), and anything that slips past that (a preconnect, a DNS
prefetch) meets a proxy that refuses connections (refusing_port()) and a resolver
that knows no name (CHROMIUM_ARGS). Speculation rules (a page's ``<script
type="speculationrules">`` and its ``Speculation-Rules`` header) have Chromium prefetch and
prerender the pages they name from its own process, where neither the routing nor a tab's
DevTools session sees the requests, and no switch of Chromium 156 turns that off (not
``--disable-features=Prerender2,...`` nor ``--disable-blink-features=SpeculationRules``); so
Chromium never holds the rules: the header is not given to it (page_devtools.given_headers())
and NO_SPECULATION_SCRIPT disarms each rules script before Chromium reads it. A prefetch is the
browser's guess at the next navigation, not a part of the page: the pages the page links to
are crawled as its links.

The browser runs in Linux's idle scheduling class (lower_priority()): on a
static site crawled with ``--browser auto``, its few trial renders take the CPU
the HTTP crawl leaves unused instead of slowing it.

The pool of tabs that keeps one such browser running is crawling/browser_pool.py.

>>> find_chromium("/no/such/chromium")
Traceback (most recent call last):
...
archiver.errors.ConfigError: no Chromium at /no/such/chromium (give the path of ... with --chromium)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from archiver.crawling.page_dom import SCRIPTS
from archiver.errors import ConfigError

T = TypeVar("T")

CHROMIUM_NAMES = (
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
)
"""Looked for on PATH in this order. Debian's chromium-headless-shell is the same Chromium
without its desktop parts (the headless mode Playwright itself prefers): launching it and
rendering the first page cost 1.7 CPU seconds against 3.6 for chromium, and each page about
half as much (benchmarks/README.md)."""
INSTALL_HINT = (
    "install Debian's chromium-headless-shell or chromium (apt-get install chromium-headless-shell) "
    "or give its path with --chromium"
)
PLAYWRIGHT_HINT = "pip install 'archiver[browser]' (Playwright for Python)"
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    # Every frame in its page's renderer: the page's DevTools session sees each request of its
    # frames, of other sites too, and answers the next hops of their redirects (page_devtools.py).
    "--disable-site-isolation-trials",
    # No SharedWorker: its requests reach neither the routing nor the page's DevTools session (a
    # dedicated worker's reach both), so what it fetched was never archived; a page's script
    # sees no SharedWorker, as in a browser that lacks them, and keeps its work in the page.
    "--disable-blink-features=SharedWorker",
    # No name resolves: a request that escaped routing cannot find a host.
    "--host-resolver-rules=MAP * ~NOTFOUND",
)

NO_SPECULATION_SCRIPT = (SCRIPTS / "no_speculation.js").read_text(encoding="utf-8").strip()
"""Run in every document of a tab before its scripts (BrowserPool adds it to each tab's context):
every ``<script type="speculationrules">``, the parser's or a script's, leaves Chromium no rules
to prefetch or prerender by, and the DOM keeps it as the page wrote it (see the module
docstring)."""


def find_chromium(path: str | None = None) -> str:
    """The Chromium to drive: ``path`` if given, else the first of CHROMIUM_NAMES on PATH."""
    if path:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise ConfigError(f"no Chromium at {path} (give the path of a Chromium or Chrome with --chromium)")
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ConfigError(f"--browser needs Chromium, and none is on PATH: {INSTALL_HINT}")


def require_browser(chromium: str | None) -> str:
    """Check at start that a browser can be driven: the Chromium's path, or a ConfigError saying
    what to install."""
    try:
        # Found, not imported: a crawl that renders nothing never pays for importing it.
        installed = importlib.util.find_spec("playwright.async_api") is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        installed = False
    if not installed:
        raise ConfigError(f"--browser needs Playwright, which is not installed: {PLAYWRIGHT_HINT}")
    return find_chromium(chromium)


def refusing_port() -> socket.socket:
    """A bound socket that never listens: connections to its port are refused, and no one else takes it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def use_node_compile_cache() -> None:
    """Have Playwright's driver (a Node.js program of 12 MB of bundled JavaScript, which it
    compiles at every start) keep its compiled code in Node's compile cache, as
    ``module.enableCompileCache()`` does: in ``node-compile-cache`` of the temporary folder, or
    where NODE_COMPILE_CACHE says. Its start costs 0.57 CPU s instead of 0.69 from the second
    crawl on (medians of 5 starts; Node 26 as Playwright 1.65 bundles it). Node treats the
    cache as a quiet optimization: one it cannot write or read is ignored, and a changed
    Playwright compiles afresh. Set in this process's environment, which the driver is started
    with (Chromium and the crawl's worker processes ignore it); a user's
    NODE_DISABLE_COMPILE_CACHE or NODE_COMPILE_CACHE is left as it is."""
    if "NODE_DISABLE_COMPILE_CACHE" not in os.environ:
        os.environ.setdefault("NODE_COMPILE_CACHE", os.path.join(tempfile.gettempdir(), "node-compile-cache"))


DRIVER_GONE = "Connection closed while reading from the driver"


def quiet_about_the_driver_gone(loop: asyncio.AbstractEventLoop) -> None:
    """When Playwright's driver process ends (a signal to the whole process group, as a
    terminal's Ctrl-C or timeout(1) sends, ends it first), Playwright sets that error on a future
    of its own that nothing reads once it has started, and asyncio printed it on stderr as
    "never retrieved", three lines after the crawl's one. The calls in flight fail alike, and
    the pool and the crawl deal with those: that one future is left unsaid."""

    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if "future" in context and error is not None and str(error) == DRIVER_GONE:
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux /proc); none where /proc does not tell."""
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):  # a thread that ended meanwhile
                children = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found += [int(child) for child in children.split()]
    return found


def descendants(pid: int) -> list[int]:
    """Every process under ``pid``: its children, theirs, and so on."""
    found: list[int] = []
    todo = [pid]
    while todo:
        children = child_pids(todo.pop())
        found += children
        todo += children
    return found


def driver_pids() -> list[int]:
    """Playwright's driver: the child of this process that runs ``run-driver`` (Linux /proc)."""
    found = []
    for child in child_pids(os.getpid()):
        with contextlib.suppress(OSError):
            if b"run-driver" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
    return found


def renderer_pids(browser_argument: str) -> list[int]:
    """The renderer processes of the browser launched with ``browser_argument`` (an argument no
    other browser of this process has), found under Playwright's driver."""
    return _browser_processes(browser_argument, renderers=True)


def browser_pids(browser_argument: str) -> list[int]:
    """The browser launched with ``browser_argument`` and its processes other than renderers (its
    GPU, network and utility processes): those that answer the browser's own DevTools calls and
    open its tabs, whatever its pages' scripts do."""
    return _browser_processes(browser_argument, renderers=False)


def _browser_processes(browser_argument: str, renderers: bool) -> list[int]:
    argument = browser_argument.encode()
    browsers, found = [], []
    for pid in [each for driver in driver_pids() for each in descendants(driver)]:
        with contextlib.suppress(OSError):
            # Chromium's own children rewrite theirs as one string ("... --type=renderer ...").
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            if argument in command.split(b"\0") and b"--type=" not in command:
                browsers.append(pid)
    for browser in browsers:
        if not renderers:
            found.append(browser)
        for pid in descendants(browser):
            with contextlib.suppress(OSError):
                if (b"--type=renderer" in Path(f"/proc/{pid}/cmdline").read_bytes()) == renderers:
                    found.append(pid)
    return sorted(set(found))


def cpu_times(pids: list[int]) -> dict[int, float]:
    """The CPU time (user and system, every thread) each of the processes ``pids`` has used, in
    seconds; one that ended meanwhile is left out."""
    times = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            # Past the command's name, which may hold spaces and parentheses: state is field 3,
            # utime and stime fields 14 and 15 (proc(5)).
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            times[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return times


def cpu_used_since(before: dict[int, float], now: dict[int, float]) -> float:
    """CPU seconds the processes of ``now`` used since ``before`` (cpu_times() both): a process
    that began meanwhile counts all its time, one that ended counts none.

    >>> cpu_used_since({1: 2.0, 2: 1.0}, {1: 2.5, 3: 0.25})
    0.75
    """
    return sum(time - before.get(pid, 0.0) for pid, time in now.items())


def run_waits(pids: list[int]) -> dict[int, float]:
    """The time each of the processes ``pids`` (its main thread: a renderer's runs the page's
    scripts) has spent ready to run but waiting for a CPU, in seconds (Linux schedstat); one that
    ended meanwhile, or whose waits the kernel does not count, is left out."""
    waits = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            waits[pid] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    return waits


def longest_wait_since(before: dict[int, float], now: dict[int, float]) -> float:
    """The longest any process of ``now`` waited for a CPU since ``before`` (run_waits() both),
    in seconds: a process that began meanwhile counts all its waits.

    >>> longest_wait_since({1: 2.0, 2: 1.0}, {1: 2.5, 2: 1.25, 3: 0.75})
    0.75
    >>> longest_wait_since({}, {})
    0.0
    """
    return max((wait - before.get(pid, 0.0) for pid, wait in now.items()), default=0.0)


DRIVER_POLL = 0.002
"""Seconds between looks for Playwright's driver process while Playwright starts it."""


async def started_at_idle_priority(starting: Awaitable[T]) -> T:
    """Await ``starting`` (Playwright's start, which starts its driver), the driver lowered to the
    idle class as soon as its process exists rather than once it has started: its start compiles
    12 MB of JavaScript (0.57 CPU s), which at the crawl's own priority took that CPU from it."""
    task = asyncio.ensure_future(starting)
    try:
        while not task.done():
            found = driver_pids()
            if found:
                lower_priority(found)
                break
            await asyncio.wait({task}, timeout=DRIVER_POLL)
    except BaseException:  # cancelled while it looks: the start goes with it
        task.cancel()
        raise
    started = await task
    lower_priority(driver_pids())  # threads it had started before it was found
    return started


def lower_priority(pids: list[int]) -> None:
    """Let ``pids`` (every thread of each) run only on CPU the crawl leaves idle (SCHED_IDLE); the
    processes they start inherit it, and Chromium's own changes of its threads' nice values do
    not undo it (a scheduling class, not a niceness). Where the class is unknown, nothing changes."""
    for pid in pids:
        threads = [pid]
        with contextlib.suppress(OSError):
            threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        for thread in threads:
            with contextlib.suppress(OSError, AttributeError):
                os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))


_EXITED = re.compile(r"<process did exit: exitCode=(-?\d+|null), signal=(\w+)>")
_ERROR_LINE = re.compile(r"\[pid=\d+\]\[err\] *(\S.*)")


def launch_exit(message: str) -> str | None:
    """What the error of a Playwright launch (``message``) says of a browser that exited as it
    started: how it ended, and the first line it wrote on its standard error; None if it did not
    exit (a launch that took too long, a driver that went away).

    >>> launch_exit("launch: closed\\n[pid=7][err] libnss3.so: cannot open\\n"
    ...             "[pid=7] <process did exit: exitCode=127, signal=null>")
    'it exited with code 127: libnss3.so: cannot open'
    >>> launch_exit("BrowserType.launch: Timeout 60000ms exceeded.") is None
    True
    """
    exited = _EXITED.search(message)
    if exited is None:
        return None
    code, signal = exited.groups()
    how = f"it exited with code {code}" if code != "null" else f"it was killed by {signal}"
    said = _ERROR_LINE.search(message)
    return f"{how}: {said.group(1).strip()[:200]}" if said else how


def browser_error_types() -> tuple[type[BaseException], ...]:
    """Playwright's error class (imported only when a browser is used)."""
    from playwright.async_api import Error

    return (Error,)
