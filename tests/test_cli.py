"""The command line: help for every command, and one clear line for bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from archiver.cli import build_parser


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def subcommands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)


@pytest.mark.parametrize("command", subcommands())
def test_every_command_has_help(command):
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    sub = action.choices[command]
    assert sub.description, command
    for option in sub._actions:
        if option.dest != "help":
            assert option.help, f"{command} {option.option_strings or option.dest}"
    done = run_cli(command, "--help")
    assert done.returncode == 0 and "usage: archiver" in done.stdout


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("archiver: error:")
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize(
    ("url", "word"),
    [("not a url", "bad URL"), ("ftp://example.com/", "not an http"), ("http://", "no host")],
)
def test_bad_url(tmp_path, url, word):
    done = run_cli("crawl", url, "-o", str(tmp_path / "snap"))
    assert_one_line_error(done, word)
    assert not (tmp_path / "snap").exists()


def test_unreachable_seed(tmp_path):
    done = run_cli(
        "crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"), "--max-tries", "1", "--quiet"
    )
    assert_one_line_error(done, "could not fetch http://127.0.0.1:9/")


def test_output_not_empty(tmp_path):
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "something").write_text("x")
    done = run_cli("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"))
    assert_one_line_error(done, "not empty")


def test_output_not_writable(tmp_path):
    (tmp_path / "file").write_text("x")
    done = run_cli("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "file" / "snap"))
    assert_one_line_error(done, "cannot write")


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--resume", "http://127.0.0.1:9/"], "--resume takes no URLs"),
        (["http://127.0.0.1:9/", "--concurrency", "0"], "--concurrency"),
        (["http://127.0.0.1:9/", "--exclude", "(["], "bad regular expression"),
        (["--resume"], "is not a snapshot: no such folder"),
    ],
)
def test_conflicting_or_bad_options(tmp_path, args, word):
    done = run_cli("crawl", *args, "-o", str(tmp_path / "snap"))
    assert_one_line_error(done, word)


@pytest.mark.parametrize("option", ["--ca-bundle", "--cookies-file"])
def test_a_missing_file_is_refused_before_a_snapshot_is_made(tmp_path, option):
    done = run_cli(
        "crawl", "http://127.0.0.1:9/", option, str(tmp_path / "none.txt"), "-o", str(tmp_path / "snap")
    )
    assert_one_line_error(done, "No such file")
    assert not (tmp_path / "snap").exists()


def test_a_ca_bundle_that_is_not_pem_is_one_line(tmp_path):
    (tmp_path / "ca.pem").write_text("not a certificate")
    done = run_cli(
        "crawl", "http://127.0.0.1:9/", "--ca-bundle", str(tmp_path / "ca.pem"), "-o", str(tmp_path / "snap")
    )
    assert_one_line_error(done, "cannot read --ca-bundle")


async def test_crawl_command_end_to_end(site, tmp_path):
    site.page("/", links=["/a", "/missing"])
    site.page("/a", title="Page A")
    await site.start()
    import asyncio

    done = await asyncio.to_thread(
        run_cli, "crawl", site.url("/"), "-o", str(tmp_path / "snap"), "--no-mirror"
    )
    assert done.returncode == 4, done.stderr  # complete, with an error answer: the 404
    assert "3 URLs met: 3 fetched" in done.stdout
    assert "404: 1" in done.stdout
    assert (tmp_path / "snap" / "crawl.json").is_file()
    assert "200 text/html" in (tmp_path / "snap" / "logs" / "crawl.log").read_text()
    # manifest.sqlite3 alone holds the whole manifest: nothing is left only in its -wal file.
    import contextlib
    import shutil
    import sqlite3

    shutil.copy(tmp_path / "snap" / "manifest.sqlite3", tmp_path / "alone.sqlite3")
    with contextlib.closing(sqlite3.connect(tmp_path / "alone.sqlite3")) as copy:
        alone = copy.execute("SELECT url FROM urls ORDER BY url").fetchall()
    with contextlib.closing(sqlite3.connect(tmp_path / "snap" / "manifest.sqlite3")) as whole:
        assert alone == whole.execute("SELECT url FROM urls ORDER BY url").fetchall()
    assert (site.url("/a"),) in alone


def test_crawl_options_take_their_defaults_from_crawl_config(tmp_path):
    """One source of defaults: a crawl given no options is the CrawlConfig of the same seeds."""
    import dataclasses

    from archiver.cli.options import given_settings as _given_settings
    from archiver.config import CrawlConfig

    args = build_parser().parse_args(["crawl", "http://example.com/", "-o", str(tmp_path)])
    assert _given_settings(args) == {}
    crawl_help = run_cli("crawl", "--help").stdout
    optioned = [f for f in dataclasses.fields(CrawlConfig) if "option" in f.metadata]
    assert len(optioned) >= 24
    for field in optioned:
        option = field.metadata["option"]
        assert (option.flag or "--" + field.name.replace("_", "-")) in crawl_help
    assert "fetch workers (default: 16)" in " ".join(crawl_help.split())
    given = build_parser().parse_args(
        ["crawl", "http://example.com/", "-o", str(tmp_path), "--concurrency", "3", "--exclude", "a"]
    )
    assert _given_settings(given) == {"concurrency": 3, "exclude": ("a",)}


async def test_the_library_never_prints(site, tmp_path, capfd):
    """crawl() says what happened in its result and its log file, never on the terminal."""
    from archiver.config import CrawlConfig
    from archiver.crawling.run import crawl

    site.page("/", links=["/a"])
    site.page("/a")
    await site.start()
    output = tmp_path / "snap"
    await crawl(CrawlConfig(seeds=(site.url("/"),), output=output, max_tries=1))
    warc = sorted((output / "warc").glob("*.warc.gz"))[-1]
    with open(warc, "ab") as f:
        f.write(b"\x1f\x8b\x08\x00torn")  # a warning on resume
    shown = []
    result = await crawl(
        CrawlConfig(seeds=(site.url("/"),), output=output),
        resume=True,
        progress=lambda stats, queued: shown.append(queued),
    )
    assert result.warnings and "a crash left" in result.warnings[0]
    assert "a crash left" in (output / "logs" / "crawl.log").read_text()
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""


def test_the_readme_and_help_show_the_same_exit_codes():
    import re

    from archiver.cli import exits

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    in_readme = [int(code) for code in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)]
    in_help = [int(code) for code in re.findall(r"^  (\d+) ", exits.TABLE, re.MULTILINE)]
    defined = sorted(value for name, value in vars(exits).items() if name.startswith("EXIT_"))
    assert in_readme == in_help == defined
    assert exits.TABLE in build_parser().format_help()
