"""The settings a resume takes only from its command line, though crawl.json keeps them.

A snapshot may come from elsewhere, and its crawl.json says what it likes: were a resume to
take every setting from there, it would have archiver run any program (``--browser always
--chromium PROGRAM``), send the cookies of any file of the user's to the sites it names
(``--cookies-file``) or trust any CA (``--ca-bundle``). These are given again; the commands
that name a resume name them too (given_again()).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from archiver.config import CrawlConfig
from archiver.config_saved import given_again as saved_given_again
from archiver.config_saved import to_give
from archiver.crawling.chromium import find_chromium
from archiver.errors import ArchiverError, ConfigError
from archiver.report import shell_word
from archiver.request_headers import PASSWORD_VARIABLE
from archiver.store.snapshot import Snapshot


def check_given_again(saved: CrawlConfig, given: dict[str, Any]) -> None:
    """ConfigError if a setting of GIVEN_AGAIN is set in ``saved`` (crawl.json's) and not among
    the options ``given`` with --resume, but for the Chromium a crawl without --chromium drives."""
    for name, flag, path in to_give(saved.to_json(), _found):
        if name not in given:
            raise ConfigError(
                f"this crawl was given {flag} {path}, which crawl.json names but a resume takes "
                f"only from its command line: give it again ({flag} {shell_word(path)})"
            )


def given_again(settings: Any) -> str:
    """The options a resume of the crawl whose settings (crawl.json's) are ``settings`` is to be
    given again, as a command line writes them after its folder ('' for none): config_saved's,
    but the Chromium a resume finds on PATH and the password it finds in ARCHIVER_HTTP_PASSWORD.

    >>> given_again({"cookies_file": "my cookies.txt", "ca_bundle": None})
    " --cookies-file 'my cookies.txt'"
    """
    return saved_given_again(settings, _found, password_at_hand=PASSWORD_VARIABLE in os.environ)


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
