"""Bad input to the commands that take a snapshot (crawl --resume, mirror, verify, serve, export,
diff, merge, control) and to the command itself, table-driven: a non-zero exit and one line on
stderr, never a traceback. A case's snapshot is a copy of a real crawl's, damaged as it says."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from bad_input import (
    NOT_UTF8,
    URL,
    Case,
    assert_refused,
    foreign_manifest,
    made_snapshot,
    other_database,
    replaced_by_folder,
    settings,
    truncate_manifest,
    written,
)

__all__ = ["made_snapshot"]  # the fixture, used by name

CASES: list[Case] = [
    # crawl --resume
    ("resume-missing", ["crawl", "--resume", "{tmp}/none"], None, "{tmp}/none"),
    ("resume-a-file", ["crawl", "--resume", "{tmp}/f"], written("{tmp}/f", "x"), "{tmp}/f"),
    ("resume-empty-folder", ["crawl", "--resume", "{tmp}"], None, "crawl.json"),
    (
        "resume-crawl-json-list",
        ["crawl", "--resume", "{snap}"],
        written("{snap}/crawl.json", "[]"),
        "crawl.json",
    ),
    (
        "resume-crawl-json-not-json",
        ["crawl", "--resume", "{snap}"],
        written("{snap}/crawl.json", "{"),
        "crawl.json",
    ),
    (
        "resume-crawl-json-not-utf8",
        ["crawl", "--resume", "{snap}"],
        written("{snap}/crawl.json", b"\xff\xfe{}"),
        "crawl.json",
    ),
    (
        "resume-crawl-json-a-folder",
        ["crawl", "--resume", "{snap}"],
        replaced_by_folder("crawl.json"),
        "crawl.json",
    ),
    (
        "resume-settings-missing",
        ["crawl", "--resume", "{snap}"],
        written("{snap}/crawl.json", "{}"),
        "settings",
    ),
    ("resume-seeds-number", ["crawl", "--resume", "{snap}"], settings(seeds=3), "seeds"),
    ("resume-seeds-empty", ["crawl", "--resume", "{snap}"], settings(seeds=[]), "URL"),
    ("resume-seed-bad", ["crawl", "--resume", "{snap}"], settings(seeds=["ftp://x/"]), "ftp://x/"),
    (
        "resume-concurrency-text",
        ["crawl", "--resume", "{snap}"],
        settings(concurrency="many"),
        "concurrency",
    ),
    ("resume-concurrency-bool", ["crawl", "--resume", "{snap}"], settings(concurrency=True), "concurrency"),
    ("resume-concurrency-zero", ["crawl", "--resume", "{snap}"], settings(concurrency=0), "concurrency"),
    ("resume-delay-list", ["crawl", "--resume", "{snap}"], settings(delay=[1]), "delay"),
    ("resume-timeout-null", ["crawl", "--resume", "{snap}"], settings(timeout=None), "timeout"),
    ("resume-scope-unknown", ["crawl", "--resume", "{snap}"], settings(scope="galaxy"), "scope"),
    ("resume-exclude-string", ["crawl", "--resume", "{snap}"], settings(exclude="x"), "exclude"),
    (
        "resume-exclude-bad-regex",
        ["crawl", "--resume", "{snap}"],
        settings(exclude=["(["]),
        "regular expression",
    ),
    ("resume-headers-flat", ["crawl", "--resume", "{snap}"], settings(headers=["X: y"]), "headers"),
    ("resume-resolve-not-ip", ["crawl", "--resume", "{snap}"], settings(resolve=[["h", "x"]]), "IP"),
    ("resume-obey-robots-text", ["crawl", "--resume", "{snap}"], settings(obey_robots="no"), "obey_robots"),
    ("resume-warc-prefix-bad", ["crawl", "--resume", "{snap}"], settings(warc_prefix="../x"), "warc-prefix"),
    (
        "resume-settings-text",
        ["crawl", "--resume", "{snap}"],
        written("{snap}/crawl.json", '{"settings": "x"}'),
        "settings",
    ),
    ("resume-user-agent-number", ["crawl", "--resume", "{snap}"], settings(user_agent=7), "user_agent"),
    ("resume-max-pages-float", ["crawl", "--resume", "{snap}"], settings(max_pages=1.5), "max_pages"),
    (
        "resume-concurrency-huge",
        ["crawl", "--resume", "{snap}"],
        settings(concurrency=10**12),
        "concurrency",
    ),
    (
        "resume-manifest-not-sqlite",
        ["crawl", "--resume", "{snap}"],
        written("{snap}/manifest.sqlite3", "hello"),
        "manifest",
    ),
    ("resume-manifest-truncated", ["crawl", "--resume", "{snap}"], truncate_manifest, "manifest"),
    ("resume-manifest-other-db", ["crawl", "--resume", "{snap}"], other_database, "manifest"),
    (
        "resume-manifest-a-folder",
        ["crawl", "--resume", "{snap}"],
        replaced_by_folder("manifest.sqlite3"),
        "manifest",
    ),
    ("resume-scope-changed", ["crawl", "--resume", "{snap}", "--scope", "any"], None, "--scope"),
    ("resume-url-given", ["crawl", "--resume", "{snap}", URL], None, "URL"),
    ("resume-two-folders", ["crawl", "--resume", "{snap}", "-o", "{tmp}"], None, "two folders"),
    # mirror
    ("mirror-missing", ["mirror", "{tmp}/none"], None, "{tmp}/none"),
    ("mirror-a-file", ["mirror", "{tmp}/f"], written("{tmp}/f", "x"), "{tmp}/f"),
    ("mirror-empty-folder", ["mirror", "{tmp}"], None, "snapshot"),
    (
        "mirror-manifest-not-sqlite",
        ["mirror", "{snap}"],
        written("{snap}/manifest.sqlite3", "hello"),
        "manifest",
    ),
    ("mirror-manifest-empty", ["mirror", "{snap}"], written("{snap}/manifest.sqlite3", ""), "manifest"),
    ("mirror-manifest-truncated", ["mirror", "{snap}"], truncate_manifest, "manifest"),
    ("mirror-manifest-other-db", ["mirror", "{snap}"], other_database, "manifest"),
    ("mirror-manifest-foreign", ["mirror", "{snap}"], foreign_manifest, "WARC"),
    ("mirror-no-warc", ["mirror", "{snap}"], lambda snap, tmp: shutil.rmtree(snap / "warc"), "WARC"),
    (
        "mirror-manifest-a-folder",
        ["mirror", "{snap}"],
        replaced_by_folder("manifest.sqlite3"),
        "manifest",
    ),
    # verify
    ("verify-missing", ["verify", "{tmp}/none"], None, "{tmp}/none"),
    (
        "verify-a-file",
        ["verify", "{tmp}/f"],
        written("{tmp}/f", "x"),
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
        written("{tmp}/f", "x"),
        "{tmp}/f is not a snapshot: a file, not a folder",
    ),
    # export
    ("export-no-wacz", ["export", "{snap}"], None, "--wacz"),
    ("export-missing", ["export", "{tmp}/none", "--wacz", "{tmp}/a.wacz"], None, "{tmp}/none"),
    ("export-not-a-snapshot", ["export", "{tmp}", "--wacz", "{tmp}/a.wacz"], None, "not a snapshot"),
    (
        "export-wacz-exists",
        ["export", "{snap}", "--wacz", "{tmp}/a.wacz"],
        written("{tmp}/a.wacz", "x"),
        "--force",
    ),
    ("export-wacz-a-folder", ["export", "{snap}", "--wacz", "{tmp}", "--force"], None, "folder"),
    ("export-wacz-no-folder", ["export", "{snap}", "--wacz", "{tmp}/none/a.wacz"], None, "cannot write"),
    (
        "export-manifest-not-sqlite",
        ["export", "{snap}", "--wacz", "{tmp}/a.wacz"],
        written("{snap}/manifest.sqlite3", "hello"),
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
    assert_refused(snap, case, args, prepare, word)
