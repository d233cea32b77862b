"""Other web-archive tools accept what we write: warcio check, cdxj-indexer, pywb replay.

pywb pins old dependencies, so it lives in its own virtual environment, made
on first use in .cache/interop-venv (or where ARCHIVER_INTEROP_VENV points),
with cdxj-indexer and py-wacz (whose ``wacz validate`` checks our WACZ files);
made again when that list changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gzip
import http.client
import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import brotlicffi
import pytest
from aiohttp import web
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from raw_server import RawRequest, RawServer
from warcio.archiveiterator import ArchiveIterator

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parent.parent
INTEROP_PACKAGES = ["pywb==2.10.*", "cdxj-indexer", "wacz==0.6.*"]


def interop_venv() -> Path:
    """A virtual environment holding pywb, cdxj-indexer and py-wacz, made once."""
    venv = Path(os.environ.get("ARCHIVER_INTEROP_VENV", ROOT / ".cache" / "interop-venv"))
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    # The suite runs in several processes: the first to get here makes it, the others wait.
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or marker.read_text() != " ".join(INTEROP_PACKAGES):
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", *INTEROP_PACKAGES], check=True, timeout=600
            )
            marker.write_text(" ".join(INTEROP_PACKAGES))
    return venv


@pytest.fixture(scope="session")
def tools() -> Path:
    return interop_venv() / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SITE_HTML = (
    "<title>Home</title><a href='/a'>a</a><a href='/old'>old</a><img src='/x.png'>"
    "<a href='/gz'>gz</a><img src='/y.png'><a href='/docs/'>docs</a>"
)


async def build_snapshot(site, run_crawl, br: bool = False):
    """A crawl of a small site: a redirect, a gzip page sent chunked, two identical images; with
    ``br``, a page sent as brotli too (replayed by pywb only where its brotli module reads it)."""
    zipped = gzip.compress(b"<title>Zipped</title><p>compressed page</p>")

    async def gz(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Encoding": "gzip"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(zipped)
        await response.write_eof()
        return response

    site.file("/", SITE_HTML + ("<a href='/br'>br</a>" if br else ""))
    if br:
        body = brotlicffi.compress(b"<title>Brotli</title><p>br page</p>")
        site.file("/br", body, "text/html", headers={"Content-Encoding": "br"})
    site.page("/a", title="Page A")
    site.page("/docs/", title="Docs")  # pywb keys a path without its trailing slash
    site.redirect("/old", "/a")
    site.handler("/gz", gz)
    site.file("/x.png", b"\x89PNG same", "image/png")
    site.file("/y.png", b"\x89PNG same", "image/png")  # identical: stored as a revisit
    await site.start()
    return await run_crawl(site.url("/"))


READ_EVERY_RECORD = """
import json, sys
from warcio.archiveiterator import ArchiveIterator
kinds, bodies = [], {}
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for record in ArchiveIterator(f, check_digests="raise"):
            body = record.content_stream().read()
            kinds.append(record.rec_type)
            if record.rec_type == "response":
                bodies[record.rec_headers.get_header("WARC-Target-URI")] = body.decode("latin-1")
print(json.dumps({"kinds": kinds, "bodies": bodies}))
"""


async def test_warcio_check_and_iterator_accept_every_record(site, run_crawl, tools):
    """warcio as pywb has it, whose ``brotli`` module (brotlipy) decodes a body sent as br."""
    result = await build_snapshot(site, run_crawl, br=True)
    files = sorted(map(str, (result.snapshot.root / "warc").glob("*.warc.gz")))
    checked = await asyncio.to_thread(
        subprocess.run, [str(tools / "warcio"), "check", "-v", *files], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "digest pass" in checked.stdout and "fail" not in checked.stdout
    read = await asyncio.to_thread(
        subprocess.run,
        [str(tools / "python"), "-c", READ_EVERY_RECORD, *files],
        capture_output=True,
        text=True,
    )
    assert read.returncode == 0, read.stderr
    records = json.loads(read.stdout)
    kinds = records["kinds"]
    assert kinds.count("warcinfo") == len(files)
    assert kinds.count("request") == kinds.count("response") + kinds.count("revisit")
    assert kinds.count("revisit") == 1
    assert records["bodies"][site.url("/br")] == "<title>Brotli</title><p>br page</p>"
    assert records["bodies"][site.url("/gz")] == "<title>Zipped</title><p>compressed page</p>"


def test_archiver_brings_no_brotli_module_warcio_fails_with():
    """warcio decodes br with whatever module named ``brotli`` it finds, and fails on every br record
    (of any tool) with Google's (``'brotli.Decompressor' object has no attribute 'unused_data'``):
    nothing archiver installs may bring one. Read from the installed distributions, so a
    dependency that comes to require one (``aiohttp[speedups]`` does) fails here too."""
    needed, seen = ["archiver"], set()
    while needed:
        name = canonicalize_name(needed.pop())
        if name in seen:
            continue
        seen.add(name)
        for line in importlib.metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                needed.append(requirement.name)
    modules = {
        name: {str(file).split("/")[0].removesuffix(".py") for file in importlib.metadata.files(name) or []}
        for name in seen
    }
    assert "warcio" in seen and "brotlicffi" in seen
    assert [name for name, tops in modules.items() if "brotli" in tops] == []


async def test_cdxj_matches_cdxj_indexer(site, run_crawl, tools):
    result = await build_snapshot(site, run_crawl)
    warc_dir = result.snapshot.root / "warc"
    files = sorted(p.name for p in warc_dir.glob("*.warc.gz"))
    done = await asyncio.to_thread(
        subprocess.run,
        [str(tools / "cdxj-indexer"), "--sort", *files],
        cwd=warc_dir,
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = {_comparable(line) for line in done.stdout.splitlines() if line.strip()}
    ours = {
        _comparable(line)
        for line in (result.snapshot.root / "indexes" / "index.cdxj").read_text().splitlines()
    }
    assert ours == theirs


def _comparable(line: str) -> tuple:
    key, timestamp, block = line.split(" ", 2)
    entry = json.loads(block)
    return (
        key,
        timestamp,
        entry["url"],
        entry.get("mime"),
        entry.get("status"),
        entry["digest"],
        entry["offset"],
        entry["length"],
        entry["filename"],
    )


def _get(url: str) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of ``url``; a body that ends before its Content-Length comes
    back as far as it came (the headers say how long it was meant to be)."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "identity"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            try:
                return response.status, response.read(), dict(response.headers)
            except http.client.IncompleteRead as cut:
                return response.status, cut.partial, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"pywb exited with {process.returncode}")
        try:
            _get(url)
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("pywb did not start")


@contextlib.asynccontextmanager
async def pywb_replaying(
    snapshot: Path, tmp_path: Path, tools: Path, *, own_index: bool
) -> AsyncIterator[str]:
    """pywb's ``wayback`` serving the WARC files of ``snapshot`` as collection ``snap``, by the
    snapshot's own CDXJ index or (``own_index`` False) one pywb makes; yields the collection's URL."""
    root = tmp_path / "pywb"
    collection = root / "collections" / "snap"
    (collection / "archive").mkdir(parents=True)
    (collection / "indexes").mkdir()
    for warc in (snapshot / "warc").glob("*.warc.gz"):
        shutil.copy(warc, collection / "archive")
    if own_index:
        shutil.copy(snapshot / "indexes" / "index.cdxj", collection / "indexes")
    else:
        await asyncio.to_thread(
            subprocess.run,
            [str(tools / "wb-manager"), "reindex", "snap"],
            cwd=root,
            check=True,
            capture_output=True,
        )
    port = free_port()
    log = open(root / "wayback.log", "w")  # noqa: SIM115
    process = subprocess.Popen(
        [str(tools / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}/snap"
        await asyncio.to_thread(_wait_for, f"{base}/", process)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.mark.parametrize("index", ["pywb-made", "ours"])
async def test_pywb_replays_archived_urls(site, run_crawl, tools, tmp_path, index):
    """pywb serves every capture with status 200 through its id_ URLs (raw replay)."""
    result = await build_snapshot(site, run_crawl)
    urls = {
        "/": SITE_HTML.encode(),
        "/a": None,
        "/x.png": b"\x89PNG same",
        "/y.png": b"\x89PNG same",
        "/gz": None,
        "/docs/": None,
    }
    original = {path: (site.url(path), body) for path, body in urls.items()}
    old_url = site.url("/old")
    await site.close()  # replay must come from the archive alone
    async with pywb_replaying(result.snapshot.root, tmp_path, tools, own_index=index == "ours") as base:
        for path, (url, body) in original.items():
            status, data, headers = await asyncio.to_thread(_get, f"{base}/2026id_/{url}")
            assert status == 200, (path, status, data[:200])
            if body is not None:
                assert data == body, path
        status, data, _ = await asyncio.to_thread(_get, f"{base}/2026id_/{original['/gz'][0]}")
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        assert b"compressed page" in data
        # the redirect is replayed as a redirect
        status, _, headers = await asyncio.to_thread(_get_no_redirect, f"{base}/2026id_/{old_url}")
        assert status in (301, 302)
        assert headers.get("Location", "").endswith("/a")


def _get_no_redirect(url: str) -> tuple[int, bytes, dict[str, str]]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


CUT_PAGE = b"<title>cut</title><a href='/cut'>cut</a><a href='/big'>big</a>"


async def cut_answers(request: RawRequest, writer: asyncio.StreamWriter) -> None:
    """/cut: 24 of the 1,000 bytes its Content-Length promises, then the close; /big: 20,000
    bytes, whole, for --max-file-size to cut; /: a page linking both."""
    if request.path == "/cut":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n" + b"c" * 24
        )
    elif request.path == "/big":
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 20000\r\n\r\n" + b"b" * 20_000
        )
    elif request.path == "/":
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(CUT_PAGE)
        writer.write(head + CUT_PAGE)
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize("index", ["pywb-made", "ours"])
async def test_pywb_replays_a_body_cut_short_as_stored(run_crawl, tools, tmp_path, index):
    """A record whose body was cut short (the peer closed, or --max-file-size) replays whole as
    stored: its head keeps no Content-Length of the bytes that never came, which pywb would send
    and leave every client waiting for."""
    server = await RawServer(cut_answers).start()
    cut_url, big_url = server.url("/cut"), server.url("/big")
    try:
        result = await run_crawl(server.url("/"), max_tries=1, max_file_size=10_000)
    finally:
        await server.close()
    stored = {}
    for path in sorted((result.snapshot.root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "response":
                    truncated = record.rec_headers.get_header("WARC-Truncated")
                    stored[record.rec_headers.get_header("WARC-Target-URI")] = (
                        truncated,
                        record.raw_stream.read(),
                    )
    assert stored[cut_url] == ("disconnect", b"c" * 24)
    assert stored[big_url] == ("length", b"b" * 10_000)
    async with pywb_replaying(result.snapshot.root, tmp_path, tools, own_index=index == "ours") as base:
        for url in (cut_url, big_url):
            status, data, headers = await asyncio.to_thread(_get, f"{base}/2026id_/{url}")
            assert status == 200, (url, status, data[:200])
            assert headers.get("Content-Length") in (None, str(len(data))), (url, headers)
            assert data == stored[url][1], url
