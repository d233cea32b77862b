"""A real Redis for the tests: Debian's redis-server on a free port of 127.0.0.1, no persistence."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def running_redis(folder: Path) -> Iterator[str]:
    """redis://127.0.0.1:PORT/0 of a redis-server started in ``folder``, stopped after the block."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is missing: apt-get install redis-server (scripts/test.sh does)")
    port = free_port()
    folder.mkdir()
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        + ["--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            if _answers(port):
                break
            if process.poll() is not None:
                pytest.fail(f"redis-server ended at once (exit {process.returncode})")
            time.sleep(0.025)
        else:
            pytest.fail("redis-server did not answer within 5 s")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
