"""The settings of a crawl as crawl.json keeps them: written without their secrets (the
password, credential headers), read back checked field by field, and changed by the options
given with --resume as each option's on_resume says (config_options.py).

config.py says what the settings are; CrawlConfig's to_json(), check_saved(), from_json()
and resumed() are these. Three settings name a program or a file outside the snapshot, which
a resume takes only from its command line (GIVEN_AGAIN): every command that names a resume
names them (given_again()), and the options whose values crawl.json does not keep, with
``[withheld]`` in their place (withheld_given()).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver.config_options import ADD, REFUSE, Option, flag_of
from archiver.config_rules import setting_from_json
from archiver.errors import ConfigError
from archiver.report import shell_word
from archiver.request_headers import SECRET_HEADERS, WITHHELD, split_userinfo, without_password

if TYPE_CHECKING:
    from archiver.config import CrawlConfig


def saved_settings(config: CrawlConfig) -> dict[str, Any]:
    """The settings as JSON-ready values, for crawl.json (tuples become lists, paths strings)."""

    def ready(value: Any) -> Any:
        if isinstance(value, tuple):
            return [ready(item) for item in value]
        return str(value) if isinstance(value, Path) else value

    data = {name: ready(value) for name, value in dataclasses.asdict(config).items()}
    data["seeds"] = [without_password(seed) for seed in config.seeds]
    del data["http_password"]  # never saved
    # Like the password, a credential header is never written: a resume is given it again.
    data["headers"] = [
        [name, WITHHELD if name.lower() in SECRET_HEADERS else value] for name, value in config.headers
    ]
    return data


def check_saved(cls: type[CrawlConfig], data: Any) -> None:
    """ConfigError unless ``data`` (crawl.json's settings) is an object whose known settings
    each have their field's type."""
    if not isinstance(data, dict):
        raise ConfigError("crawl.json: its settings are not a JSON object")
    for f in dataclasses.fields(cls):
        if f.name in data:
            setting_from_json(f.name, str(f.type), data[f.name])


def settings_from_json(cls: type[CrawlConfig], data: Any, overrides: dict[str, Any]) -> CrawlConfig:
    """The settings saved in crawl.json (unknown keys are ignored), with ``overrides``: what
    crawl.json does not keep; ConfigError if they are not settings."""
    if not isinstance(data, dict):
        raise ConfigError("crawl.json holds no settings")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in overrides:
            continue
        if f.name in data:
            values[f.name] = setting_from_json(f.name, str(f.type), data[f.name])
        elif f.default is dataclasses.MISSING and f.name not in overrides:
            raise ConfigError(f"crawl.json: the settings have no {f.name}")
    values.update(overrides)
    # A message naming a resume writes WITHHELD for each value crawl.json does not keep
    # (withheld_given()): run as written, the resume asks for them.
    withheld = [name for name, value in values.get("headers", ()) if value == WITHHELD]
    if withheld:
        raise ConfigError(
            f"this crawl sent a {', '.join(withheld)} header, which crawl.json does not keep: "
            f"give it again with --header (its value in place of {WITHHELD})"
        )
    if values.get("http_password") == WITHHELD:
        raise ConfigError(
            f"give the password in place of {WITHHELD}: with --http-password or the "
            "ARCHIVER_HTTP_PASSWORD environment variable"
        )
    if isinstance(values.get("previous"), str) and "previous" not in overrides and "output" in values:
        # crawl.json names it relative to the snapshot's folder (see crawling/run.py).
        values["previous"] = str(Path(values["output"]) / values["previous"])
    return cls(**values)


def resumed(config: CrawlConfig, given: dict[str, Any]) -> CrawlConfig:
    """``config`` with the options ``given`` with --resume, as each option's on_resume says."""
    changes = {}
    for f in dataclasses.fields(config):
        if f.name not in given:
            continue
        option: Option = f.metadata["option"]
        value, saved = given[f.name], getattr(config, f.name)
        if option.on_resume == REFUSE and not _same_setting(f.name, value, saved):
            raise ConfigError(
                f"{flag_of(f)} cannot change when a crawl resumes (it was {saved}): {option.why_refused}"
            )
        if option.on_resume == ADD:
            value = saved + tuple(item for item in value if item not in saved)
        changes[f.name] = value
    return dataclasses.replace(config, **changes)


def _same_setting(name: str, value: Any, saved: Any) -> bool:
    """Whether a value given with --resume is the saved one (a path: the same folder, however
    written)."""
    if name == "previous" and isinstance(value, str) and isinstance(saved, str):
        return Path(value).resolve() == Path(saved).resolve()
    return bool(value == saved)


GIVEN_AGAIN = ("chromium", "cookies_file", "ca_bundle")
"""Settings naming a program to run or a file to read, outside the snapshot, which a resume takes
only from its command line (crawling/resume_options.py): the commands that name a resume name them."""


def _nowhere_else(name: str, path: str) -> bool:
    return False


def to_give(settings: Any, found: Callable[[str, str], bool] = _nowhere_else) -> list[tuple[str, str, str]]:
    """(name, option, path) of each setting of GIVEN_AGAIN that crawl.json's ``settings`` set,
    but those a resume ``found`` without being given (the Chromium on PATH).

    >>> to_give({"cookies_file": "c.txt", "chromium": None, "ca_bundle": 3})
    [('cookies_file', '--cookies-file', 'c.txt')]
    """
    from archiver.config import CrawlConfig  # which imports this module

    if not isinstance(settings, dict):
        return []
    flags = {f.name: flag_of(f) for f in dataclasses.fields(CrawlConfig) if f.name in GIVEN_AGAIN}
    named = ((name, settings.get(name)) for name in GIVEN_AGAIN)
    return [
        (name, flags[name], path) for name, path in named if isinstance(path, str) and not found(name, path)
    ]


def withheld_given(settings: Any, password_at_hand: bool = False) -> list[tuple[str, str]]:
    """(option, value) of each option a resume of the crawl whose crawl.json ``settings`` are
    must be given though crawl.json keeps no value of it, WITHHELD in place of that value (which
    a resume refuses, saying what to give): every --header when one is withheld (given with
    --resume, they replace the saved ones), and --http-password for a crawl that sent one,
    unless ``password_at_hand`` (ARCHIVER_HTTP_PASSWORD is set, which a resume reads).

    >>> withheld_given({"headers": [["Authorization", "[withheld]"], ["X-K", "v"]], "http_user": "al"})
    [('--header', 'Authorization: [withheld]'), ('--header', 'X-K: v'), ('--http-password', '[withheld]')]
    >>> withheld_given({"headers": [["X-K", "v"]], "seeds": ["http://al@h/"]}, password_at_hand=True)
    []
    """
    if not isinstance(settings, dict):
        return []
    headers = [
        (pair[0], pair[1])
        for pair in settings.get("headers") or ()
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) for part in pair)
    ]
    named = []
    if any(value == WITHHELD for _name, value in headers):
        named += [("--header", f"{name}: {value}") for name, value in headers]
    seeds = settings.get("seeds")
    users = (
        [split_userinfo(seed)[1] for seed in seeds if isinstance(seed, str)]
        if isinstance(seeds, list)
        else []
    )
    if (settings.get("http_user") or any(user is not None for user in users)) and not password_at_hand:
        named.append(("--http-password", WITHHELD))
    return named


def given_again(
    settings: Any, found: Callable[[str, str], bool] = _nowhere_else, password_at_hand: bool = False
) -> str:
    """The options of to_give() and withheld_given(), as a command line writes them after the
    folder ('' for none).

    >>> given_again({"cookies_file": "my cookies.txt", "ca_bundle": None})
    " --cookies-file 'my cookies.txt'"
    >>> given_again({"headers": [["Authorization", "[withheld]"]]})
    " --header 'Authorization: [withheld]'"
    """
    paths = [(flag, path) for _name, flag, path in to_give(settings, found)]
    named = paths + withheld_given(settings, password_at_hand)
    return "".join(f" {flag} {shell_word(value)}" for flag, value in named)
