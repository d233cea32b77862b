"""Serve a site as if it were far away: nginx in a network namespace whose responses arrive 50 ms late.

A namespace gets one end of a veth pair (10.203.0.2/24), the host keeps the other
(10.203.0.1/24), and nginx runs inside the namespace. The delay is added to what leaves
the namespace, that is the server's side of every connection, so each request/response
round trip takes the delay longer while requests arrive at once:

- with ``tc qdisc ... netem delay 50ms limit 1000000`` on the namespace's veth (egress),
  where the kernel has netem: every packet out of the namespace, the handshake's
  SYN-ACK included, waits 50 ms (netem's default limit of 1000 packets would drop
  packets at high concurrency, hence the large limit);
- else with delayproxy.py inside the namespace in front of nginx, which holds every
  chunk of a response for 50 ms.

    python3 benchmarks/latency.py SITE_DIR        # measure the delay a site gets

Needs root (ip netns, ip link, tc). Everything is removed on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from delayproxy import running_delay_proxy
from measure import process_tree_cpu_seconds
from server import NginxServer, running_nginx

HOST_ADDRESS = "10.203.0.1"
NAMESPACE_ADDRESS = "10.203.0.2"
PREFIX_LENGTH = 24
NETEM_LIMIT = 1_000_000
SERVER_PORT = 8080
METHODS = ("auto", "netem", "proxy")


class LatencyError(RuntimeError):
    """The delayed network could not be set up."""


@dataclass(frozen=True)
class Namespace:
    """A network namespace reachable from the host over a veth pair, with netem on its side if available."""

    name: str
    host_link: str
    namespace_link: str
    netem: bool


@dataclass(frozen=True)
class DelayedSite:
    """A site served from a namespace with a delay: its URL, how the delay is made, what serves it."""

    url: str
    namespace: Namespace
    method: str
    server: NginxServer
    proxy_pid: int | None

    def server_cpu_seconds(self) -> float:
        """CPU seconds used so far by nginx and, if any, the delay proxy."""
        total = process_tree_cpu_seconds(self.server.pid)
        if self.proxy_pid is not None:
            total += process_tree_cpu_seconds(self.proxy_pid)
        return total


def _run(*command: str, netns: str | None = None) -> subprocess.CompletedProcess[str]:
    if netns:
        command = ("ip", "netns", "exec", netns, *command)
    return subprocess.run(command, capture_output=True, text=True, check=False)


def _must(*command: str, netns: str | None = None) -> None:
    done = _run(*command, netns=netns)
    if done.returncode != 0:
        raise LatencyError(f"`{' '.join(command)}` failed: {done.stderr.strip() or done.returncode}")


@contextmanager
def network_namespace(delay_ms: float, method: str = "auto") -> Iterator[Namespace]:
    """A fresh namespace behind a veth pair; with ``method`` netem or auto, netem delays its egress."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    if os.geteuid() != 0:
        raise LatencyError("latency mode needs root (ip netns, ip link, tc): run it as root or with sudo")
    tag = str(os.getpid())
    namespace = Namespace(
        name=f"archiver-bench-{tag}", host_link=f"abh{tag}", namespace_link=f"abn{tag}", netem=False
    )
    added = _run("ip", "netns", "add", namespace.name)
    if added.returncode != 0:
        raise LatencyError(f"cannot create a network namespace: {added.stderr.strip()}")
    try:
        _must(
            "ip", "link", "add", namespace.host_link, "type", "veth", "peer", "name", namespace.namespace_link
        )
        _must("ip", "link", "set", namespace.namespace_link, "netns", namespace.name)
        _must("ip", "addr", "add", f"{HOST_ADDRESS}/{PREFIX_LENGTH}", "dev", namespace.host_link)
        _must("ip", "link", "set", namespace.host_link, "up")
        _must(
            "ip",
            "addr",
            "add",
            f"{NAMESPACE_ADDRESS}/{PREFIX_LENGTH}",
            "dev",
            namespace.namespace_link,
            netns=namespace.name,
        )
        _must("ip", "link", "set", namespace.namespace_link, "up", netns=namespace.name)
        _must("ip", "link", "set", "lo", "up", netns=namespace.name)
        if method != "proxy":
            netem = _run(
                "tc",
                "qdisc",
                "add",
                "dev",
                namespace.namespace_link,
                "root",
                "netem",
                "delay",
                f"{delay_ms}ms",
                "limit",
                str(NETEM_LIMIT),
                netns=namespace.name,
            )
            if netem.returncode != 0 and method == "netem":
                raise LatencyError(f"netem is not available: {netem.stderr.strip()}")
            namespace = Namespace(
                namespace.name, namespace.host_link, namespace.namespace_link, netem=netem.returncode == 0
            )
        yield namespace
    finally:
        # Deleting the namespace destroys its veth end, and with it the host's end.
        _run("ip", "netns", "del", namespace.name)
        _run("ip", "link", "del", namespace.host_link)


@contextmanager
def delayed_site(
    site_dir: Path, delay_ms: float = 50, method: str = "auto", workers: str = "1"
) -> Iterator[DelayedSite]:
    """Serve ``site_dir`` from a namespace so every response arrives ``delay_ms`` late."""
    with ExitStack() as stack:
        namespace = stack.enter_context(network_namespace(delay_ms, method))
        if namespace.netem:
            server = stack.enter_context(
                running_nginx(site_dir, NAMESPACE_ADDRESS, SERVER_PORT, namespace.name, workers)
            )
            yield DelayedSite(server.url, namespace, "netem", server, None)
            return
        # The same port on both addresses: nginx's absolute redirects then name the proxy's port.
        server = stack.enter_context(
            running_nginx(site_dir, "127.0.0.1", SERVER_PORT, namespace.name, workers)
        )
        proxy_pid = stack.enter_context(
            running_delay_proxy(
                (NAMESPACE_ADDRESS, SERVER_PORT), ("127.0.0.1", SERVER_PORT), delay_ms, namespace.name
            )
        )
        yield DelayedSite(f"http://{NAMESPACE_ADDRESS}:{SERVER_PORT}", namespace, "proxy", server, proxy_pid)


def _host_port(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").partition(":")
    return host, int(port.rstrip("/"))


def round_trip_ms(url: str, path: str = "/robots.txt", samples: int = 20) -> float:
    """Median milliseconds of a GET on one kept-alive connection (the handshake is left out)."""
    connection = http.client.HTTPConnection(*_host_port(url), timeout=10)
    timings = []
    try:
        for _ in range(samples):
            connection.connect()
            started = time.perf_counter()
            connection.request("GET", path)
            connection.getresponse().read()
            timings.append((time.perf_counter() - started) * 1000)
    finally:
        connection.close()
    return statistics.median(timings)


def parallel_fetch(url: str, path: str = "/index.html", connections: int = 128) -> tuple[int, float, float]:
    """GET ``path`` on ``connections`` connections at once: (200s, median and slowest seconds).

    Every connection is made first, then all requests leave together: the handshakes are left out.
    """
    results: list[tuple[bool, float]] = []
    start = threading.Barrier(connections, timeout=30)

    def fetch() -> None:
        connection = http.client.HTTPConnection(*_host_port(url), timeout=30)
        try:
            connection.connect()
            start.wait()
            started = time.perf_counter()
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            results.append((response.status == 200, time.perf_counter() - started))
        except (OSError, threading.BrokenBarrierError):
            start.abort()  # the others must not wait for this one
            results.append((False, 0.0))
        finally:
            connection.close()

    threads = [threading.Thread(target=fetch) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    timings = [seconds for _, seconds in results]
    return sum(ok for ok, _ in results), statistics.median(timings), max(timings)


def netem_drops(namespace: Namespace) -> int | None:
    """Packets netem dropped so far on the namespace's veth (None without netem)."""
    if not namespace.netem:
        return None
    shown = _run("tc", "-s", "qdisc", "show", "dev", namespace.namespace_link, netns=namespace.name).stdout
    words = shown.replace(",", " ").split()
    return int(words[words.index("dropped") + 1]) if "dropped" in words else None


def describe_delay(site: DelayedSite, connections: int = 128) -> str:
    """A one-line check of the delay a site gets: round trip, a burst of parallel fetches, netem drops."""
    round_trip = round_trip_ms(site.url)
    ok, median, slowest = parallel_fetch(site.url, connections=connections)
    drops = netem_drops(site.namespace)
    dropped = "" if drops is None else f", netem dropped {drops} packets"
    return (
        f"delay by {site.method}: GET round trip {round_trip:.1f} ms; {ok}/{connections} parallel GETs "
        f"answered 200, median {median * 1000:.0f} ms, slowest {slowest * 1000:.0f} ms{dropped}"
    )


def main() -> int:
    """Command line: serve a generated site with the delay and print what a client measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="a folder made by sitegen.py")
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--method", choices=METHODS, default="auto")
    args = parser.parse_args()
    try:
        with delayed_site(args.site, args.delay_ms, args.method) as site:
            print(site.url)
            print(describe_delay(site))
    except LatencyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
