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
_FLAGS = {f.name: flag_of(f) for f in dataclasses.fields(CrawlConfig) if f.name in GIVEN_AGAIN}


def check_given_again(saved: CrawlConfig, given: dict[str, Any]) -> None:
    """ConfigError if a setting of GIVEN_AGAIN is set in ``saved`` (crawl.json's) and not among
    the options ``given`` with --resume, but for the Chromium a crawl without --chromium drives."""
    for name, flag, path in _to_give(saved.to_json()):
        if name not in given:
            raise ConfigError(
                f"this crawl was given {flag} {path}, which crawl.json names but a resume takes "
                f"only from its command line: give it again ({flag} {shell_word(path)})"
            )


def given_again(settings: Any) -> str:
    """The options of GIVEN_AGAIN a resume of the crawl whose settings (crawl.json's) are
    ``settings`` is to be given, as a command line writes them after its folder ('' for none).

    >>> given_again({"cookies_file": "my cookies.txt", "ca_bundle": None})
    " --cookies-file 'my cookies.txt'"
    """
    return "".join(f" {flag} {shell_word(path)}" for _name, flag, path in _to_give(settings))


def given_again_in(folder: Path) -> str:
    """given_again() of the crawl in ``folder``: '' where its crawl.json cannot be read."""
    try:
        return given_again(Snapshot(folder).read_crawl_json().get("settings"))
    except (ArchiverError, OSError, ValueError):
        return ""


def _to_give(settings: Any) -> list[tuple[str, str, str]]:
    """(name, option, path) of each setting of GIVEN_AGAIN that ``settings`` sets and a resume
    is to be given again."""
    if not isinstance(settings, dict):
        return []
    named = ((name, settings.get(name)) for name in GIVEN_AGAIN)
    return [
        (name, _FLAGS[name], path) for name, path in named if isinstance(path, str) and not _found(name, path)
    ]


def _found(name: str, path: str) -> bool:
    """Whether ``path``, saved for setting ``name``, is what a resume uses unnamed: the Chromium
    on PATH (chromium.find_chromium), not a program only crawl.json names."""
    if name != "chromium":
        return False
    try:
        return os.path.realpath(find_chromium()) == os.path.realpath(path)
    except ConfigError:  # none on PATH
        return False
