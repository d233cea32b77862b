"""``archiver serve``: the index and the mirror over HTTP on 127.0.0.1, with right content types."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from snapshot_builder import SnapshotBuilder

from archiver.mirror.build import build_mirror
from archiver.mirror.serve import content_type_of, make_app

S = "http://site.test"


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    snap = SnapshotBuilder(tmp_path / "snap")
    snap.page(f"{S}/", '<link rel=stylesheet href="/s.css"><a href="/a b?x=1">a</a>', title="Home")
    snap.page(f"{S}/a b?x=1", "<p>query page</p>")
    snap.file(f"{S}/s.css", b"body{color:red}", "text/css")
    snap.file(f"{S}/app", b"console.log(1)", "application/javascript")
    snap.file(f"{S}/blob", b"\x00\x01", "application/x-custom")
    snap.file(f"{S}/pic.png", b"\x89PNG", "image/png")
    root = snap.close()
    build_mirror(root)
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", root / "mirror" / "site.test" / "leak.html")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "index.html").write_text("secret")
    os.symlink(tmp_path / "outside", root / "mirror" / "site.test" / "elsewhere")
    return root


@pytest.fixture
async def server(snapshot: Path) -> AsyncIterator[TestServer]:
    test_server = TestServer(make_app(snapshot), host="127.0.0.1")
    await test_server.start_server()
    yield test_server
    await test_server.close()


@pytest.mark.parametrize(
    ("path", "status", "content_type", "contains"),
    [
        ("/", 200, "text/html", b"Home"),
        ("/index.html", 200, "text/html", b"filter"),
        ("/mirror/site.test/index.html", 200, "text/html", b'href="s.css"'),
        ("/mirror/site.test/", 200, "text/html", b'href="s.css"'),
        ("/mirror/site.test/s.css", 200, "text/css", b"color:red"),
        ("/mirror/site.test/app.js", 200, "text/javascript", b"console"),
        ("/mirror/site.test/pic.png", 200, "image/png", b"PNG"),
        ("/mirror/site.test/blob", 200, "application/x-custom", b"\x00\x01"),
        ("/mirror/site.test/a%20b@x=1.html", 200, "text/html", b"query page"),
        ("/mirror/site.test/leak.html", 404, None, None),
        ("/mirror/site.test/../../secret.txt", 404, None, None),
        ("/mirror/site.test/%2e%2e/%2e%2e/secret.txt", 404, None, None),
        ("/manifest.sqlite3", 404, None, None),
        ("/mirror/nothing.html", 404, None, None),
        ("/mirror/site.test/" + "n" * 300 + ".html", 404, None, None),  # past the file system's limit
        ("/mirror/" + "/".join(["d" * 200] * 30), 404, None, None),
        ("/mirror/site.test/%00.html", 404, None, None),
        # A folder linked out of the mirror, an encoded slash or backslash, Windows' absolute
        # paths and drive names: never a file outside the mirror.
        ("/mirror/site.test/elsewhere/", 404, None, None),
        ("/mirror/site.test/elsewhere/index.html", 404, None, None),
        ("/mirror/site.test/..%2f..%2fsecret.txt", 404, None, None),
        ("/mirror/site.test/%2e%2e%2f%2e%2e%2fsecret.txt", 404, None, None),
        ("/mirror/site.test/..%5c..%5csecret.txt", 404, None, None),
        ("/mirror/site.test/%2E%2E/%2E%2E/secret.txt", 404, None, None),
        ("/mirror/C:%5Csecret.txt", 404, None, None),
        ("/mirror/C:/secret.txt", 404, None, None),
        ("/mirror/%5c%5c127.0.0.1%5cshare%5csecret.txt", 404, None, None),
        ("/mirror//etc/passwd", 404, None, None),
        ("/mirror/site.test/index.html/../../../secret.txt", 404, None, None),
        ("/mirror/site.test/" + "%2e%2e/" * 600 + "secret.txt", 404, None, None),
    ],
)
async def test_serves_index_and_mirror(
    server: TestServer, path: str, status: int, content_type: str | None, contains: bytes | None
) -> None:
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{server.port}{path}"
        async with session.get(aiohttp.client.URL(url, encoded=True)) as response:
            assert response.status == status
            body = await response.read()
            if content_type:
                assert response.content_type == content_type
            if contains:
                assert contains in body
            assert b"secret" not in body


def append_a_line(page: Path) -> None:
    page.write_bytes(page.read_bytes() + b"<p>added since</p>")


def put_a_page_there(page: Path) -> None:
    (page.parent / "added.html").write_bytes(b"<p>added since</p>")


@pytest.mark.parametrize(
    ("edit", "served", "why"),
    [
        (append_a_line, "index.html", "it changed since the mirror build wrote it ("),
        (put_a_page_there, "added.html", "the mirror build did not write it"),
    ],
)
async def test_a_mirror_file_that_is_not_what_the_build_wrote_is_refused(
    snapshot: Path, edit: Callable[[Path], None], served: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Served as it is, a file edited (or added) since the mirror build would pass for the
    archive: a 500 and one line naming it, while the files the build wrote are served."""
    edit(snapshot / "mirror" / "site.test" / "index.html")
    test_server = TestServer(make_app(snapshot), host="127.0.0.1")
    await test_server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{test_server.port}/mirror/site.test/"
            for _twice in range(2):  # the second time from what the first found
                async with session.get(base + served) as response:
                    assert response.status == 500
                    said = await response.text()
            async with session.get(base + "s.css") as response:
                assert response.status == 200 and await response.read() == b"body{color:red}"
    finally:
        await test_server.close()
    assert said.startswith(f"mirror/site.test/{served}: not served, {why}"), said
    assert said.endswith("(archiver verify names it)") and "\n" not in said
    logged = [record.getMessage() for record in caplog.records if record.name == "archiver.serve"]
    assert logged == [said, said]


@pytest.mark.parametrize("asked", ["", "index.html"])
async def test_an_index_html_that_is_not_what_the_build_wrote_is_refused(
    snapshot: Path, asked: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The snapshot's index.html, edited since the mirror build wrote it, would pass for the
    archive's front page: refused as a changed mirror file is, whether asked by name or as /."""
    append_a_line(snapshot / "index.html")
    test_server = TestServer(make_app(snapshot), host="127.0.0.1")
    await test_server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{test_server.port}/{asked}") as response:
                assert response.status == 500
                said = await response.text()
            async with session.get(f"http://127.0.0.1:{test_server.port}/mirror/site.test/s.css") as response:
                assert response.status == 200
    finally:
        await test_server.close()
    assert said.startswith("index.html: not served, it changed since the mirror build wrote it ("), said
    assert said.endswith("(archiver verify names it)") and "\n" not in said
    logged = [record.getMessage() for record in caplog.records if record.name == "archiver.serve"]
    assert logged == [said]


async def test_a_folder_named_without_its_slash_is_redirected_and_a_file_is_no_folder(
    server: TestServer,
) -> None:
    """A folder asked without its slash was answered with its index.html, whose relative links
    then resolved one folder up (404s); a file asked with a slash was served too. As web servers
    (nginx, Python's http.server) do: a 301 to the folder's URL, its query kept; a 404."""
    base = f"http://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession() as session:
        for asked, location in (
            ("/mirror/site.test", "/mirror/site.test/"),
            ("/mirror/site.test?q=1", "/mirror/site.test/?q=1"),
        ):
            async with session.get(base + asked, allow_redirects=False) as response:
                assert (response.status, response.headers.get("Location")) == (301, location)
        async with session.get(base + "/mirror/site.test") as response:
            assert response.status == 200 and str(response.url).endswith("/mirror/site.test/")
        async with session.get(base + "/mirror/site.test/s.css/") as response:
            assert response.status == 404


async def test_a_file_is_checked_again_until_found_as_written(snapshot: Path) -> None:
    """serve remembered a file found changed for good: a crawl writes a file before it records what
    it wrote, and a request between the two kept it refused after the record came. And a file
    found as written was not checked again after an edit that put its modification time back
    (as cp -p, rsync -t and tar do): the edit was served as the archive."""
    page = snapshot / "mirror" / "site.test" / "s.css"
    manifest = sqlite3.connect(snapshot / "manifest.sqlite3")
    (written,) = manifest.execute("SELECT sha256 FROM mirror_files WHERE path = 'site.test/s.css'").fetchone()
    test_server = TestServer(make_app(snapshot), host="127.0.0.1")
    await test_server.start_server()
    url = f"http://127.0.0.1:{test_server.port}/mirror/site.test/s.css"
    try:
        async with aiohttp.ClientSession() as session:
            for sha256, status in (("0" * 64, 500), (written, 200)):  # recorded after the request
                with manifest:
                    manifest.execute(
                        "UPDATE mirror_files SET sha256 = ? WHERE path = 'site.test/s.css'", (sha256,)
                    )
                async with session.get(url) as response:
                    assert response.status == status
            before = page.stat()
            page.write_bytes(b"body{color:RED}")  # the same size
            os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))
            async with session.get(url) as response:
                assert response.status == 500, await response.read()
    finally:
        await test_server.close()
        manifest.close()


@pytest.mark.parametrize(
    ("name", "recorded", "expected"),
    [
        ("a.html", None, "text/html"),
        ("a.css", None, "text/css"),
        ("a.svg", None, "image/svg+xml"),
        ("a.woff2", None, "font/woff2"),
        ("x", "application/x-y", "application/x-y"),
        ("x", None, "application/octet-stream"),
        ("a.php.html", None, "text/html"),
    ],
)
def test_content_type_of(name: str, recorded: str | None, expected: str) -> None:
    assert content_type_of(name, recorded) == expected


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_serve_command_runs_until_stopped(snapshot: Path, stop: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve", str(snapshot), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("Serving ") and "http://127.0.0.1:" in line, line
        url = line.split(" at ", 1)[1].split()[0]
        import urllib.request

        with urllib.request.urlopen(url + "mirror/site.test/s.css", timeout=5) as response:
            assert response.read() == b"body{color:red}"
            assert response.headers["Content-Type"].startswith("text/css")
        head = urllib.request.Request(url + "mirror/site.test/s.css", method="HEAD")
        with urllib.request.urlopen(head, timeout=5) as response:  # as link checkers ask
            assert response.status == 200 and response.read() == b""
            assert response.headers["Content-Length"] == str(len(b"body{color:red}"))
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        bad = [b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n", b"GET /\x00 HTTP/9.9 x\r\n\r\n"]
        for request in bad:
            assert _answer(port, request).split(b"\r\n")[0].endswith(b" 400 Bad Request"), request[:40]
        process.send_signal(stop)
        assert process.wait(timeout=10) == 0
        stderr = process.stderr.read()  # type: ignore[union-attr]
        assert "Traceback" not in stderr and "Stopped." in stderr
        said = [line for line in stderr.splitlines() if "Error handling request" in line]
        assert len(said) == len(bad), stderr  # one line each, saying what was wrong
        assert "LineTooLong" in said[0] and "8190 bytes" in said[0], said
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]


def _answer(port: int, request: bytes) -> bytes:
    """What the server answers ``request``, sent as raw bytes."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(request)
        return connection.recv(4096)


def test_serve_command_refuses_a_folder_that_is_no_snapshot(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "archiver", "serve", str(tmp_path)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "archiver mirror" in result.stderr and "Traceback" not in result.stderr


def test_port_in_use_is_one_line(snapshot: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "archiver", "serve", str(snapshot), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 2
    assert "cannot listen" in result.stderr and "Traceback" not in result.stderr
