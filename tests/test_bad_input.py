"""Bad input to every subcommand, table-driven: a non-zero exit and one line on stderr, never a traceback.

Each case runs ``python -m archiver`` as users do. ``{snap}`` is a snapshot a real
crawl made (copied fresh for each case), ``{tmp}`` the case's own folder.
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


def _write(relative: str, content: bytes | str) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        target = Path(relative.format(snap=snap, tmp=tmp))
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            shutil.rmtree(target)
        for journal in ("-wal", "-shm"):  # a file put in a manifest's place comes without its log
            target.with_name(target.name + journal).unlink(missing_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    return make


def _settings(**changes: object) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        data = json.loads((snap / "crawl.json").read_text())
        data["settings"].update(changes)
        (snap / "crawl.json").write_text(json.dumps(data))

    return make


def _truncate_manifest(snap: Path, tmp: Path) -> None:
    manifest = snap / "manifest.sqlite3"
    manifest.write_bytes(manifest.read_bytes()[:1500])


def _foreign_manifest(snap: Path, tmp: Path) -> None:
    db = sqlite3.connect(snap / "manifest.sqlite3")
    db.execute("UPDATE urls SET warc_file = 'other-20200101000000-00001.warc.gz'")
    db.commit()
    db.close()


def _other_database(snap: Path, tmp: Path) -> None:
    (snap / "manifest.sqlite3").unlink()
    db = sqlite3.connect(snap / "manifest.sqlite3")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()


def _replaced_by_folder(name: str) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        (snap / name).unlink()
        (snap / name).mkdir()

    return make


def _folder(relative: str) -> Callable[[Path, Path], None]:
    def make(snap: Path, tmp: Path) -> None:
        Path(relative.format(snap=snap, tmp=tmp)).mkdir(parents=True, exist_ok=True)

    return make


URL = "http://127.0.0.1:9/"
OUT = "{tmp}/out"

# (id, arguments, what to prepare, a word the error must hold)
CASES: list[tuple[str, list[str], Callable[[Path, Path], None] | None, str]] = [
    # crawl: numbers
    ("concurrency-negative", ["crawl", URL, "-o", OUT, "--concurrency", "-1"], None, "--concurrency"),
    ("concurrency-huge", ["crawl", URL, "-o", OUT, "--concurrency", "100000000000"], None, "--concurrency"),
    ("concurrency-text", ["crawl", URL, "-o", OUT, "--concurrency", "many"], None, "--concurrency"),
    ("max-tries-huge", ["crawl", URL, "-o", OUT, "--max-tries", "10000000000000"], None, "--max-tries"),
    ("timeout-negative", ["crawl", URL, "-o", OUT, "--timeout", "-5"], None, "timeout"),
    ("timeout-nan", ["crawl", URL, "-o", OUT, "--timeout", "nan"], None, "--timeout"),
    ("timeout-inf", ["crawl", URL, "-o", OUT, "--timeout", "inf"], None, "--timeout"),
    ("delay-nan", ["crawl", URL, "-o", OUT, "--delay", "nan"], None, "--delay"),
    ("delay-huge", ["crawl", URL, "-o", OUT, "--delay", "1e300"], None, "--delay"),
    ("retry-after-inf", ["crawl", URL, "-o", OUT, "--max-retry-after", "inf"], None, "--max-retry-after"),
    ("max-depth-negative", ["crawl", URL, "-o", OUT, "--max-depth", "-1"], None, "--max-depth"),
    ("max-pages-negative", ["crawl", URL, "-o", OUT, "--max-pages", "-3"], None, "--max-pages"),
    ("max-bytes-inf", ["crawl", URL, "-o", OUT, "--max-bytes", "infK"], None, "size"),
    ("max-bytes-nan", ["crawl", URL, "-o", OUT, "--max-bytes", "nanM"], None, "size"),
    ("max-bytes-negative", ["crawl", URL, "-o", OUT, "--max-bytes", "-1"], None, "--max-bytes"),
    ("max-file-size-zero", ["crawl", URL, "-o", OUT, "--max-file-size", "0"], None, "--max-file-size"),
    ("warc-max-size-tiny", ["crawl", URL, "-o", OUT, "--warc-max-size", "10"], None, "--warc-max-size"),
    ("host-concurrency-zero", ["crawl", URL, "-o", OUT, "--host-concurrency", "0"], None, "host-concurrency"),
    ("max-redirects-huge", ["crawl", URL, "-o", OUT, "--max-redirects", "99999999999"], None, "redirects"),
    ("retry-on-not-status", ["crawl", URL, "-o", OUT, "--retry-on", "42"], None, "--retry-on"),
    ("retry-on-text", ["crawl", URL, "-o", OUT, "--retry-on", "often"], None, "statuses"),
    ("browser-tabs-zero", ["crawl", URL, "-o", OUT, "--browser-tabs", "0"], None, "--browser-tabs"),
    ("browser-tabs-huge", ["crawl", URL, "-o", OUT, "--browser-tabs", "100000"], None, "--browser-tabs"),
    ("browser-timeout-nan", ["crawl", URL, "-o", OUT, "--browser-timeout", "nan"], None, "--browser-timeout"),
    ("browser-mode-unknown", ["crawl", URL, "-o", OUT, "--browser", "sometimes"], None, "--browser"),
    (
        "chromium-missing",
        ["crawl", URL, "-o", OUT, "--browser", "always", "--chromium", "{tmp}/no-chromium"],
        None,
        "--chromium",
    ),
    ("max-time-zero", ["crawl", URL, "-o", OUT, "--max-time", "0"], None, "--max-time"),
    ("max-time-text", ["crawl", URL, "-o", OUT, "--max-time", "soon"], None, "duration"),
    ("max-time-huge", ["crawl", URL, "-o", OUT, "--max-time", "99999999h"], None, "--max-time"),
    ("max-time-unit-order", ["crawl", URL, "-o", OUT, "--max-time", "30s1h"], None, "duration"),
    (
        "node-timeout-nan",
        [
            "crawl",
            URL,
            "-o",
            OUT,
            "--frontier",
            "redis://127.0.0.1:9/0",
            "--crawl-id",
            "c",
            "--node-timeout",
            "nan",
        ],
        None,
        "--node-timeout",
    ),
    (
        "frontier-not-redis",
        ["crawl", URL, "-o", OUT, "--frontier", "http://x/", "--crawl-id", "c"],
        None,
        "Redis",
    ),
    (
        "frontier-no-crawl-id",
        ["crawl", URL, "-o", OUT, "--frontier", "redis://127.0.0.1:9/0"],
        None,
        "--crawl-id",
    ),
    ("crawl-id-alone", ["crawl", URL, "-o", OUT, "--crawl-id", "c"], None, "--frontier"),
    ("log-format-unknown", ["crawl", URL, "-o", OUT, "--log-format", "xml"], None, "--log-format"),
    ("input-file-missing", ["crawl", "-i", "{tmp}/none.txt", "-o", OUT], None, "{tmp}/none.txt"),
    (
        "input-file-not-a-url",
        ["crawl", "-i", "{tmp}/seeds.txt", "-o", OUT],
        _write("{tmp}/seeds.txt", "http://127.0.0.1:9/\nnot a url\n"),
        "seeds.txt",
    ),
    (
        "input-file-not-utf8",
        ["crawl", "-i", "{tmp}/s.txt", "-o", OUT],
        _write("{tmp}/s.txt", b"\xff\xfe"),
        "UTF-8",
    ),
    ("config-missing", ["crawl", URL, "-o", OUT, "--config", "{tmp}/none.toml"], None, "{tmp}/none.toml"),
    (
        "config-not-toml",
        ["crawl", URL, "-o", OUT, "--config", "{tmp}/c.toml"],
        _write("{tmp}/c.toml", "max-pages = = 3"),
        "c.toml",
    ),
    (
        "config-unknown-key",
        ["crawl", URL, "-o", OUT, "--config", "{tmp}/c.toml"],
        _write("{tmp}/c.toml", "warp-speed = 9"),
        "warp-speed",
    ),
    (
        "config-bad-value",
        ["crawl", URL, "-o", OUT, "--config", "{tmp}/c.toml"],
        _write("{tmp}/c.toml", "concurrency = -4"),
        "--concurrency",
    ),
    # crawl: text
    ("scope-unknown", ["crawl", URL, "-o", OUT, "--scope", "galaxy"], None, "--scope"),
    ("warc-prefix-path", ["crawl", URL, "-o", OUT, "--warc-prefix", "../up"], None, "--warc-prefix"),
    ("exclude-bad-regex", ["crawl", URL, "-o", OUT, "--exclude", "(["], None, "regular expression"),
    ("include-bad-regex", ["crawl", URL, "-o", OUT, "--include", "*"], None, "regular expression"),
    ("user-agent-not-utf8", ["crawl", URL, "-o", OUT, "--user-agent", NOT_UTF8], None, "--user-agent"),
    (
        "user-agent-newline",
        ["crawl", URL, "-o", OUT, "--user-agent", "a\r\nX-Injected: 1"],
        None,
        "--user-agent",
    ),
    ("header-no-colon", ["crawl", URL, "-o", OUT, "--header", "NoColon"], None, "header"),
    ("header-name-space", ["crawl", URL, "-o", OUT, "--header", "Bad Name: v"], None, "header"),
    ("header-injected", ["crawl", URL, "-o", OUT, "--header", "X-A: 1\r\nX-B: 2"], None, "header"),
    ("header-not-utf8", ["crawl", URL, "-o", OUT, "--header", "X-A: " + NOT_UTF8], None, "header"),
    ("cookie-not-pair", ["crawl", URL, "-o", OUT, "--cookie", "alone"], None, "NAME=VALUE"),
    ("cookie-not-utf8", ["crawl", URL, "-o", OUT, "--cookie", "a=" + NOT_UTF8], None, "cookie"),
    ("resolve-not-ip", ["crawl", URL, "-o", OUT, "--resolve", "example.com:not-an-ip"], None, "IP"),
    ("resolve-no-host", ["crawl", URL, "-o", OUT, "--resolve", ":127.0.0.1"], None, "HOST:IP"),
    ("resolve-bad-octet", ["crawl", URL, "-o", OUT, "--resolve", "h:999.1.1.1"], None, "IP"),
    ("seed-not-utf8", ["crawl", "http://127.0.0.1:9/" + NOT_UTF8, "-o", OUT], None, ""),
    ("seed-port-huge", ["crawl", "http://127.0.0.1:99999/", "-o", OUT], None, "bad URL"),
    ("seed-bad-punycode", ["crawl", "http://xn--zz.example/", "-o", OUT], None, "invalid punycode host"),
    ("seed-too-long", ["crawl", URL + "x" * 70_000, "-o", OUT], None, "longer than 65,536 characters"),
    ("no-output", ["crawl", URL], None, "-o DIR"),
    ("no-url", ["crawl", "-o", OUT], None, "URL"),
    ("abbreviation", ["crawl", URL, "-o", OUT, "--user", "alice"], None, "unrecognized"),
    # crawl: files
    ("ca-bundle-missing", ["crawl", URL, "-o", OUT, "--ca-bundle", "{tmp}/none.pem"], None, "--ca-bundle"),
    ("ca-bundle-folder", ["crawl", URL, "-o", OUT, "--ca-bundle", "{tmp}"], None, "--ca-bundle"),
    (
        "ca-bundle-not-pem",
        ["crawl", URL, "-o", OUT, "--ca-bundle", "{tmp}/x.pem"],
        _write("{tmp}/x.pem", "hello"),
        "--ca-bundle",
    ),
    ("cookies-file-folder", ["crawl", URL, "-o", OUT, "--cookies-file", "{tmp}"], None, "cookies"),
    (
        "cookies-file-garbage",
        ["crawl", URL, "-o", OUT, "--cookies-file", "{tmp}/c.txt"],
        _write("{tmp}/c.txt", b"\x00\xff\xfe garbage\n"),
        "cookies",
    ),
    ("output-is-a-file", ["crawl", URL, "-o", "{tmp}/f"], _write("{tmp}/f", "x"), "not a folder"),
    ("output-under-a-file", ["crawl", URL, "-o", "{tmp}/f/sub"], _write("{tmp}/f", "x"), "{tmp}/f"),
    ("output-not-empty", ["crawl", URL, "-o", "{tmp}/d"], _write("{tmp}/d/x", "x"), "not empty"),
    # crawl --resume
    ("resume-missing", ["crawl", "--resume", "{tmp}/none"], None, "{tmp}/none"),
    ("resume-a-file", ["crawl", "--resume", "{tmp}/f"], _write("{tmp}/f", "x"), "{tmp}/f"),
    ("resume-empty-folder", ["crawl", "--resume", "{tmp}"], None, "crawl.json"),
    (
        "resume-crawl-json-list",
        ["crawl", "--resume", "{snap}"],
        _write("{snap}/crawl.json", "[]"),
        "crawl.json",
    ),
    (
        "resume-crawl-json-not-json",
        ["crawl", "--resume", "{snap}"],
        _write("{snap}/crawl.json", "{"),
        "crawl.json",
    ),
    (
        "resume-crawl-json-not-utf8",
        ["crawl", "--resume", "{snap}"],
        _write("{snap}/crawl.json", b"\xff\xfe{}"),
        "crawl.json",
    ),
    (
        "resume-crawl-json-a-folder",
        ["crawl", "--resume", "{snap}"],
        _replaced_by_folder("crawl.json"),
        "crawl.json",
    ),
    (
        "resume-settings-missing",
        ["crawl", "--resume", "{snap}"],
        _write("{snap}/crawl.json", "{}"),
        "settings",
    ),
    ("resume-seeds-number", ["crawl", "--resume", "{snap}"], _settings(seeds=3), "seeds"),
    ("resume-seeds-empty", ["crawl", "--resume", "{snap}"], _settings(seeds=[]), "URL"),
    ("resume-seed-bad", ["crawl", "--resume", "{snap}"], _settings(seeds=["ftp://x/"]), "ftp://x/"),
    (
        "resume-concurrency-text",
        ["crawl", "--resume", "{snap}"],
        _settings(concurrency="many"),
        "concurrency",
    ),
    ("resume-concurrency-bool", ["crawl", "--resume", "{snap}"], _settings(concurrency=True), "concurrency"),
    ("resume-concurrency-zero", ["crawl", "--resume", "{snap}"], _settings(concurrency=0), "concurrency"),
    ("resume-delay-list", ["crawl", "--resume", "{snap}"], _settings(delay=[1]), "delay"),
    ("resume-timeout-null", ["crawl", "--resume", "{snap}"], _settings(timeout=None), "timeout"),
    ("resume-scope-unknown", ["crawl", "--resume", "{snap}"], _settings(scope="galaxy"), "scope"),
    ("resume-exclude-string", ["crawl", "--resume", "{snap}"], _settings(exclude="x"), "exclude"),
    (
        "resume-exclude-bad-regex",
        ["crawl", "--resume", "{snap}"],
        _settings(exclude=["(["]),
        "regular expression",
    ),
    ("resume-headers-flat", ["crawl", "--resume", "{snap}"], _settings(headers=["X: y"]), "headers"),
    ("resume-resolve-not-ip", ["crawl", "--resume", "{snap}"], _settings(resolve=[["h", "x"]]), "IP"),
    ("resume-obey-robots-text", ["crawl", "--resume", "{snap}"], _settings(obey_robots="no"), "obey_robots"),
    ("resume-warc-prefix-bad", ["crawl", "--resume", "{snap}"], _settings(warc_prefix="../x"), "warc-prefix"),
    (
        "resume-settings-text",
        ["crawl", "--resume", "{snap}"],
        _write("{snap}/crawl.json", '{"settings": "x"}'),
        "settings",
    ),
    ("resume-user-agent-number", ["crawl", "--resume", "{snap}"], _settings(user_agent=7), "user_agent"),
    ("resume-max-pages-float", ["crawl", "--resume", "{snap}"], _settings(max_pages=1.5), "max_pages"),
    (
        "resume-concurrency-huge",
        ["crawl", "--resume", "{snap}"],
        _settings(concurrency=10**12),
        "concurrency",
    ),
    (
        "resume-manifest-not-sqlite",
        ["crawl", "--resume", "{snap}"],
        _write("{snap}/manifest.sqlite3", "hello"),
        "manifest",
    ),
    ("resume-manifest-truncated", ["crawl", "--resume", "{snap}"], _truncate_manifest, "manifest"),
    ("resume-manifest-other-db", ["crawl", "--resume", "{snap}"], _other_database, "manifest"),
    (
        "resume-manifest-a-folder",
        ["crawl", "--resume", "{snap}"],
        _replaced_by_folder("manifest.sqlite3"),
        "manifest",
    ),
    ("resume-scope-changed", ["crawl", "--resume", "{snap}", "--scope", "any"], None, "--scope"),
    ("resume-url-given", ["crawl", "--resume", "{snap}", URL], None, "URL"),
    ("resume-two-folders", ["crawl", "--resume", "{snap}", "-o", "{tmp}"], None, "two folders"),
    # mirror
    ("mirror-missing", ["mirror", "{tmp}/none"], None, "{tmp}/none"),
    ("mirror-a-file", ["mirror", "{tmp}/f"], _write("{tmp}/f", "x"), "{tmp}/f"),
    ("mirror-empty-folder", ["mirror", "{tmp}"], None, "snapshot"),
    (
        "mirror-manifest-not-sqlite",
        ["mirror", "{snap}"],
        _write("{snap}/manifest.sqlite3", "hello"),
        "manifest",
    ),
    ("mirror-manifest-empty", ["mirror", "{snap}"], _write("{snap}/manifest.sqlite3", ""), "manifest"),
    ("mirror-manifest-truncated", ["mirror", "{snap}"], _truncate_manifest, "manifest"),
    ("mirror-manifest-other-db", ["mirror", "{snap}"], _other_database, "manifest"),
    ("mirror-manifest-foreign", ["mirror", "{snap}"], _foreign_manifest, "WARC"),
    ("mirror-no-warc", ["mirror", "{snap}"], lambda snap, tmp: shutil.rmtree(snap / "warc"), "WARC"),
    (
        "mirror-manifest-a-folder",
        ["mirror", "{snap}"],
        _replaced_by_folder("manifest.sqlite3"),
        "manifest",
    ),
    # verify
    ("verify-missing", ["verify", "{tmp}/none"], None, "{tmp}/none"),
    (
        "verify-a-file",
        ["verify", "{tmp}/f"],
        _write("{tmp}/f", "x"),
        "{tmp}/f is not a snapshot: a file, not a folder",
    ),
    ("verify-empty-folder", ["verify", "{tmp}"], None, "not a snapshot"),
    ("verify-resolve-not-ip", ["verify", "{snap}", "--resolve", "h:not-an-ip"], None, "IP"),
    ("verify-unknown-option", ["verify", "{snap}", "--fast"], None, "unrecognized"),
    # serve
    ("serve-port-huge", ["serve", "{snap}", "--port", "99999"], None, "--port"),
    ("serve-port-negative", ["serve", "{snap}", "--port", "-1"], None, "--port"),
    ("serve-port-text", ["serve", "{snap}", "--port", "http"], None, "--port"),
    ("serve-host-bad", ["serve", "{snap}", "--host", "999.1.1.1", "--port", "0"], None, "999.1.1.1"),
    ("serve-host-not-utf8", ["serve", "{snap}", "--host", NOT_UTF8, "--port", "0"], None, ""),
    ("serve-missing", ["serve", "{tmp}/none"], None, "{tmp}/none is not a snapshot: no such folder"),
    (
        "serve-a-file",
        ["serve", "{tmp}/f"],
        _write("{tmp}/f", "x"),
        "{tmp}/f is not a snapshot: a file, not a folder",
    ),
    # export
    ("export-no-wacz", ["export", "{snap}"], None, "--wacz"),
    ("export-missing", ["export", "{tmp}/none", "--wacz", "{tmp}/a.wacz"], None, "{tmp}/none"),
    ("export-not-a-snapshot", ["export", "{tmp}", "--wacz", "{tmp}/a.wacz"], None, "not a snapshot"),
    (
        "export-wacz-exists",
        ["export", "{snap}", "--wacz", "{tmp}/a.wacz"],
        _write("{tmp}/a.wacz", "x"),
        "--force",
    ),
    ("export-wacz-a-folder", ["export", "{snap}", "--wacz", "{tmp}", "--force"], None, "folder"),
    ("export-wacz-no-folder", ["export", "{snap}", "--wacz", "{tmp}/none/a.wacz"], None, "cannot write"),
    (
        "export-manifest-not-sqlite",
        ["export", "{snap}", "--wacz", "{tmp}/a.wacz"],
        _write("{snap}/manifest.sqlite3", "hello"),
        "manifest",
    ),
    # diff, merge, control
    ("diff-missing", ["diff", "{snap}", "{tmp}/none"], None, "{tmp}/none"),
    ("diff-not-a-snapshot", ["diff", "{tmp}", "{snap}"], None, "{tmp}"),
    ("merge-not-shared", ["merge", "{snap}"], None, "node"),
    ("merge-missing", ["merge", "{tmp}/none"], None, "{tmp}/none"),
    ("control-unknown-command", ["control", "{snap}", "explode"], None, "explode"),
    ("control-delay-text", ["control", "{snap}", "delay", "slow"], None, "delay"),
    ("control-concurrency-zero", ["control", "{snap}", "concurrency", "0"], None, "concurrency"),
    ("control-exclude-bad-regex", ["control", "{snap}", "exclude", "(["], None, "regular expression"),
    ("control-missing", ["control", "{tmp}/none", "pause"], None, "{tmp}/none"),
    ("control-redis-no-crawl-id", ["control", "redis://127.0.0.1:9/0", "pause"], None, "--crawl-id"),
    # the command itself
    ("no-command", [], None, "COMMAND"),
    ("unknown-command", ["fetch"], None, "fetch"),
]


@pytest.mark.parametrize(("args", "prepare", "word"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_a_non_zero_exit(
    made_snapshot: Path,
    tmp_path: Path,
    args: list[str],
    prepare: Callable[[Path, Path], None] | None,
    word: str,
) -> None:
    snap = tmp_path / "snap"
    shutil.copytree(made_snapshot, snap)
    case = tmp_path / "case"
    case.mkdir()
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
    if args and args[0] == "mirror" and before:  # a refused mirror build leaves the mirror as it was
        assert sorted(str(p.relative_to(snap)) for p in (snap / "mirror").rglob("*")) == before
