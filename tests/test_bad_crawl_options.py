"""Bad options to archiver crawl of a new snapshot (numbers, text, files, the output folder),
table-driven: a non-zero exit and one line on stderr, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bad_input import NOT_UTF8, OUT, URL, Case, assert_refused, run, written

CASES: list[Case] = [
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
        written("{tmp}/seeds.txt", "http://127.0.0.1:9/\nnot a url\n"),
        "seeds.txt",
    ),
    (
        "input-file-not-utf8",
        ["crawl", "-i", "{tmp}/s.txt", "-o", OUT],
        written("{tmp}/s.txt", b"\xff\xfe"),
        "UTF-8",
    ),
    # Files that never end (a pipe, /dev/zero): read whole, they took the machine's memory.
    ("input-file-endless", ["crawl", "-i", "/dev/zero", "-o", OUT], None, "more than 64 MiB"),
    ("config-endless", ["crawl", URL, "-o", OUT, "--config", "/dev/zero"], None, "more than 64 MiB"),
    ("cookies-file-endless", ["crawl", URL, "-o", OUT, "--cookies-file", "/dev/zero"], None, "not a file"),
    (
        "input-file-huge-line",
        ["crawl", "-i", "{tmp}/seeds.txt", "-o", OUT],
        written("{tmp}/seeds.txt", "not a url " + "a" * 1_000_000),
        "seeds.txt, line 1: bad URL 'not a url aaa",
    ),
    (  # the line of a megabyte shown by its beginning
        "input-file-huge-line-cut",
        ["crawl", "-i", "{tmp}/seeds.txt", "-o", OUT],
        written("{tmp}/seeds.txt", "not a url " + "a" * 1_000_000),
        "aaa\u2026': not a valid URL",
    ),
    ("config-missing", ["crawl", URL, "-o", OUT, "--config", "{tmp}/none.toml"], None, "{tmp}/none.toml"),
    (
        "config-not-toml",
        ["crawl", URL, "-o", OUT, "--config", "{tmp}/c.toml"],
        written("{tmp}/c.toml", "max-pages = = 3"),
        "c.toml",
    ),
    (
        "config-unknown-key",
        ["crawl", URL, "-o", OUT, "--config", "{tmp}/c.toml"],
        written("{tmp}/c.toml", "warp-speed = 9"),
        "warp-speed",
    ),
    (
        "config-bad-value",
        ["crawl", URL, "-o", OUT, "--config", "{tmp}/c.toml"],
        written("{tmp}/c.toml", "concurrency = -4"),
        "--concurrency",
    ),
    # crawl: text
    ("scope-unknown", ["crawl", URL, "-o", OUT, "--scope", "galaxy"], None, "--scope"),
    ("warc-prefix-path", ["crawl", URL, "-o", OUT, "--warc-prefix", "../up"], None, "--warc-prefix"),
    # Longer than a file name takes, with the rest of a WARC file's name: no WARC file could be opened.
    ("warc-prefix-long", ["crawl", URL, "-o", OUT, "--warc-prefix", "p" * 250], None, "at most 100"),
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
        written("{tmp}/x.pem", "hello"),
        "--ca-bundle",
    ),
    ("cookies-file-folder", ["crawl", URL, "-o", OUT, "--cookies-file", "{tmp}"], None, "cookies"),
    (
        "cookies-file-garbage",
        ["crawl", URL, "-o", OUT, "--cookies-file", "{tmp}/c.txt"],
        written("{tmp}/c.txt", b"\x00\xff\xfe garbage\n"),
        "cookies",
    ),
    ("output-is-a-file", ["crawl", URL, "-o", "{tmp}/f"], written("{tmp}/f", "x"), "not a folder"),
    ("output-under-a-file", ["crawl", URL, "-o", "{tmp}/f/sub"], written("{tmp}/f", "x"), "{tmp}/f"),
    ("output-not-empty", ["crawl", URL, "-o", "{tmp}/d"], written("{tmp}/d/x", "x"), "not empty"),
]


@pytest.mark.parametrize(("args", "prepare", "word"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_crawl_option_is_one_line_and_a_non_zero_exit(
    tmp_path: Path, args: list[str], prepare: Callable[[Path, Path], None] | None, word: str
) -> None:
    case = tmp_path / "case"
    case.mkdir()
    assert_refused(tmp_path / "snap", case, args, prepare, word)


def test_a_bad_url_of_a_megabyte_is_said_in_a_line_of_its_beginning(tmp_path: Path) -> None:
    """The error named the whole of what was given: a seed file's line of 200 MB wrote 200 MB."""
    done = run("crawl", "not a url " + "a" * 100_000, "-o", str(tmp_path / "snap"))
    assert done.returncode == 2
    assert done.stderr.startswith("archiver: error: bad URL 'not a url aaa")
    assert len(done.stderr) < 400, len(done.stderr)


@pytest.mark.parametrize(
    "seed",
    [
        "http://alice:SEKRET@127.0.0.1:99999/",
        "http://alice:SEK@RET@ho st/",
        "ftp://alice:SEKRET@127.0.0.1/",
        "http://alice:" + "SEKRET" * 20 + "@127.0.0.1/" + "x" * 70_000,
    ],
)
def test_a_bad_seed_is_shown_with_its_password_withheld(tmp_path: Path, seed: str) -> None:
    """A seed that could not be crawled was shown in its error as given, its password with it,
    on the terminal and in the logs that keep it. It is shown with ``[withheld]`` in its place."""
    (tmp_path / "seeds.txt").write_text(seed + "\n")
    given = (["crawl", seed], ["crawl", "-i", str(tmp_path / "seeds.txt")])
    for args in given:
        done = run(*args, "-o", str(tmp_path / "snap"))
        assert done.returncode == 2, done.stderr
        assert f"bad URL '{seed.partition(':')[0]}://alice:[withheld]@" in done.stderr, done.stderr
        assert "SEK" not in done.stderr, done.stderr
