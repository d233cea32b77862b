"""Serve a generated site with nginx, configured for throughput, from a temporary prefix of its own."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sitegen import REDIRECTS_CONF, docroot

NGINX_FALLBACK = "/usr/sbin/nginx"
START_TIMEOUT = 120.0
"""Seconds nginx may take to listen: the 100,000 redirects of a 1,000,000-page site take it 10 s to read."""
STOP_TIMEOUT = 5.0
DEFAULT_NETNS_PORT = 8080
"""Port used inside a fresh network namespace, where nothing else listens."""


class ServerError(RuntimeError):
    """nginx is missing or would not start."""


@dataclass(frozen=True)
class NginxServer:
    """A running nginx: its base URL, master pid and prefix folder."""

    url: str
    pid: int
    prefix: Path


def nginx_binary() -> str:
    """The nginx executable, or ServerError telling how to install it."""
    found = shutil.which("nginx") or (NGINX_FALLBACK if os.access(NGINX_FALLBACK, os.X_OK) else None)
    if found is None:
        raise ServerError("nginx not found: install it with `apt-get install nginx-light` (or nginx)")
    return found


def nginx_version() -> str:
    """nginx's version line, e.g. 'nginx/1.22.1'."""
    done = subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True, check=False)
    return (done.stderr or done.stdout).strip().removeprefix("nginx version: ")


def free_port(host: str) -> int:
    """A TCP port free on ``host`` right now (nginx binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def nginx_config(site_dir: Path, host: str, port: int, prefix: Path, workers: str) -> str:
    """An nginx.conf serving ``site_dir`` statically, tuned so the server is never what a crawl waits on.

    No access log, sendfile, a large keepalive_requests (a crawler reuses its
    connections for the whole crawl) and an open-file cache small enough to stay
    under the process's open-file limit (at 100,000 files a larger one made
    nginx answer 500 "Too many open files").
    """
    temp = prefix / "temp"
    run_as = "user root;\n" if os.geteuid() == 0 else ""
    return f"""daemon off;
master_process on;
worker_processes {workers};
{run_as}pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
worker_rlimit_nofile 65536;
events {{ worker_connections 8192; }}
http {{
    types {{
        text/html html; text/css css; text/plain txt; application/javascript js;
        image/png png; image/gif gif; image/jpeg jpg; font/woff2 woff2;
        image/svg+xml svg; image/x-icon ico; application/json json; application/zip zip;
    }}
    default_type application/octet-stream;
    charset utf-8;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 100000;
    keepalive_timeout 120s;
    open_file_cache max=4096 inactive=60s;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    server {{
        listen {host}:{port} backlog=4096;
        server_name bench;
        root {docroot(site_dir).resolve()};
        include {(site_dir / REDIRECTS_CONF).resolve()};
        location / {{ }}
    }}
}}
"""


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _error_log_tail(prefix: Path) -> str:
    try:
        return " | ".join((prefix / "error.log").read_text(errors="replace").strip().splitlines()[-3:])
    except OSError:
        return "(no error log)"


@contextmanager
def running_nginx(
    site_dir: Path, host: str = "127.0.0.1", port: int = 0, netns: str | None = None, workers: str = "1"
) -> Iterator[NginxServer]:
    """Run nginx serving ``site_dir`` on ``host:port`` (port 0: a free one), inside ``netns`` if given.

    Yields once the listening socket is bound (nginx writes its pid file after binding)
    and, when reachable from here, accepts connections; stops nginx on exit.
    """
    binary = nginx_binary()
    if port == 0:
        port = DEFAULT_NETNS_PORT if netns else free_port(host)
    prefix = Path(tempfile.mkdtemp(prefix="archiver-bench-nginx-"))
    (prefix / "temp").mkdir()
    config = prefix / "nginx.conf"
    config.write_text(nginx_config(site_dir, host, port, prefix, workers))
    command = [binary, "-p", str(prefix), "-c", str(config), "-e", str(prefix / "error.log")]
    if netns:
        command = ["ip", "netns", "exec", netns, *command]
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    # A loopback address inside another namespace cannot be reached from here: the pid file must do.
    reachable = netns is None or not _is_loopback(host)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not ((prefix / "nginx.pid").exists() and (not reachable or _accepts(host, port))):
            if process.poll() is not None:
                raise ServerError(f"nginx exited with {process.returncode}: {_error_log_tail(prefix)}")
            if time.monotonic() > deadline:
                raise ServerError(f"nginx did not listen on {host}:{port}: {_error_log_tail(prefix)}")
            time.sleep(0.05)
        yield NginxServer(url=f"http://{host}:{port}", pid=process.pid, prefix=prefix)
    finally:
        stop_process(process)
        shutil.rmtree(prefix, ignore_errors=True)


def stop_process(process: subprocess.Popen[bytes], polite: signal.Signals = signal.SIGQUIT) -> None:
    """Ask a server to quit (SIGQUIT is nginx's graceful stop), then insist with SIGTERM and SIGKILL."""
    for stop_signal in (polite, signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def serve_site(
    site_dir: Path, host: str = "127.0.0.1", port: int = 0, netns: str | None = None, workers: str = "1"
) -> Iterator[str]:
    """Serve ``site_dir`` with nginx for the duration of the block; yields the base URL."""
    with running_nginx(site_dir, host, port, netns, workers) as server:
        yield server.url
