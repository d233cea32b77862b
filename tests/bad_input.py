"""Bad input to the command line, refused: a non-zero exit and one line on stderr, never a
traceback. What the tables of cases share: how a case runs (``python -m archiver``, as users
do), what it prepares, and the check each case must pass.

``{snap}`` in a case is a snapshot a real crawl made (copied fresh for each case), ``{tmp}``
the case's own folder.
"""

from __future__ import annotations

import http.server
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

NOT_UTF8 = b"\xff\xfe-not-utf-8".decode("utf-8", "surrogateescape")
"""An argument holding bytes that are not UTF-8, as the shell may pass them."""
Case = tuple[str, list[str], Callable[[Path, Path], None] | None, str]
"""(id, arguments, what to prepare, a word the error must hold)."""


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b'<title>t</title><a href="/a">a</a>' if self.path == "/" else b"<p>a</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def made_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A snapshot of a two-page site, crawled and mirrored by the command line."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    snapshot = tmp_path_factory.mktemp("made") / "snap"
    try:
        done = run("crawl", f"http://127.0.0.1:{server.server_port}/", "-o", str(snapshot), "--quiet")
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
        server.server_close()
    yield snapshot


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def written(relative: str, content: bytes | str) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        target = Path(relative.format(snap=snap, tmp=tmp))
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            shutil.rmtree(target)
        for journal in ("-wal", "-shm"):  # a file put in a manifest's place comes without its log
            target.with_name(target.name + journal).unlink(missing_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    return make


def settings(**changes: object) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        data = json.loads((snap / "crawl.json").read_text())
        data["settings"].update(changes)
        (snap / "crawl.json").write_text(json.dumps(data))

    return make


def truncate_manifest(snap: Path, tmp: Path) -> None:
    manifest = snap / "manifest.sqlite3"
    manifest.write_bytes(manifest.read_bytes()[:1500])


def foreign_manifest(snap: Path, tmp: Path) -> None:
    db = sqlite3.connect(snap / "manifest.sqlite3")
    db.execute("UPDATE urls SET warc_file = 'other-20200101000000-00001.warc.gz'")
    db.commit()
    db.close()


def other_database(snap: Path, tmp: Path) -> None:
    (snap / "manifest.sqlite3").unlink()
    db = sqlite3.connect(snap / "manifest.sqlite3")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()


def replaced_by_folder(name: str) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        (snap / name).unlink()
        (snap / name).mkdir()

    return make


def made_folder(relative: str) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        Path(relative.format(snap=snap, tmp=tmp)).mkdir(parents=True, exist_ok=True)

    return make


URL = "http://127.0.0.1:9/"
OUT = "{tmp}/out"


def assert_refused(
    snap: Path, case: Path, args: list[str], prepare: Callable[[Path, Path], None] | None, word: str
) -> None:
    """Prepare the case (``snap``: a snapshot of its own, ``case``: its folder), run ``archiver
    ARGS``, and check the refusal: a non-zero exit, one line on stderr naming ``word``, no
    traceback; a refused mirror build leaves the mirror as it was."""
    if prepare is not None:
        prepare(snap, case)
    before = (
        sorted(str(p.relative_to(snap)) for p in (snap / "mirror").rglob("*"))
        if (snap / "mirror").exists()
        else []
    )
    done = run(*(arg.format(snap=snap, tmp=case) for arg in args))
    assert done.returncode not in (0, None), done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("archiver: error: "), lines[0]
    assert "internal error" not in lines[0], lines[0]
    assert word.format(snap=snap, tmp=case) in lines[0], lines[0]
    if args and args[0] == "mirror" and before:
        assert sorted(str(p.relative_to(snap)) for p in (snap / "mirror").rglob("*")) == before
