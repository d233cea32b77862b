"""The settings a resume takes only from its command line, though crawl.json keeps them.

A snapshot may come from elsewhere, and its crawl.json says what it likes: were a resume to
take every setting from there, it would have archiver run any program (``--browser always
--chromium PROGRAM``), send the cookies of any file of the user's to the sites it names
(``--cookies-file``) or trust any CA (``--ca-bundle``). These are given again; the commands
that name a resume name them too (given_again()).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from archiver.config import CrawlConfig
from archiver.config_options import flag_of
from archiver.crawling.chromium import find_chromium
from archiver.errors import ArchiverError, ConfigError
from archiver.report import shell_word
from archiver.store.snapshot import Snapshot

GIVEN_AGAIN = ("chromium", "cookies_file", "ca_bundle")
"""Settings naming a program to run or a file to read, outside the snapshot."""


def check_given_again(saved: CrawlConfig, given: dict[str, Any]) -> None:
    """ConfigError if a setting of GIVEN_AGAIN is set in ``saved`` (crawl.json's) and not among
    the options ``given`` with --resume, but for the Chromium a crawl without --chromium drives."""
    for f in dataclasses.fields(saved):
        path = getattr(saved, f.name)
        if f.name in GIVEN_AGAIN and path is not None and f.name not in given and not _found(f.name, path):
            raise ConfigError(
                f"this crawl was given {flag_of(f)} {path}, which crawl.json names but a resume takes "
                f"only from its command line: give it again ({flag_of(f)} {shell_word(path)})"
            )


def given_again(settings: Any) -> str:
    """The options of GIVEN_AGAIN a resume of the crawl whose settings (crawl.json's) are
    ``settings`` is to be given, as a command line writes them after its folder ('' for none).

    >>> given_again({"cookies_file": "my cookies.txt", "ca_bundle": None})
    " --cookies-file 'my cookies.txt'"
    """
    if not isinstance(settings, dict):
        return ""
    words = []
    for name in GIVEN_AGAIN:
        path = settings.get(name)
        if isinstance(path, str) and not _found(name, path):
            words.append(f" --{name.replace('_', '-')} {shell_word(path)}")
    return "".join(words)


def given_again_in(folder: Path) -> str:
    """given_again() of the crawl in ``folder``: '' where its crawl.json cannot be read."""
    try:
        return given_again(Snapshot(folder).read_crawl_json().get("settings"))
    except (ArchiverError, OSError, ValueError):
        return ""


def _found(name: str, path: str) -> bool:
    """Whether ``path``, saved for setting ``name``, is what a resume uses unnamed: the Chromium
    on PATH (chromium.find_chromium), not a program only crawl.json names."""
    if name != "chromium":
        return False
    try:
        return os.path.realpath(find_chromium()) == os.path.realpath(path)
    except ConfigError:  # none on PATH
        return False
