"""The files an operator hands a crawl, parsed (pure): a list of URLs (-i/--input-file) and
a TOML config file (--config) whose keys are the crawl's long options.

>>> parse_url_list("# seeds\\nhttp://a.test/\\n\\n  http://b.test/x  # the docs\\n", "seeds.txt")
['http://a.test/', 'http://b.test/x']
>>> shapes = {"max-pages": OptionShape(True, False), "exclude": OptionShape(True, True),
...           "quiet": OptionShape(False, False)}
>>> config_arguments('max_pages = 10\\nexclude = ["/a", "/b"]\\nquiet = true', "c.toml", shapes)
['--max-pages=10', '--exclude=/a', '--exclude=/b', '--quiet']
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from archiver.errors import BadURL, ConfigError
from archiver.urls import normalize_url

_COMMENT = re.compile(r"(^|\s)#.*$")
"""A comment: from a '#' that starts the line or follows a space (a URL's fragment follows no space)."""


def parse_url_list(text: str, source: str) -> list[str]:
    """The URLs of ``text``, one a line; blank lines and ``#`` comments are skipped.

    ``source`` names the file in errors: a line that is not an http(s) URL is a
    ConfigError saying which line.
    """
    urls = []
    for number, line in enumerate(text.splitlines(), 1):
        url = _COMMENT.sub("", line).strip()
        if not url:
            continue
        try:
            normalize_url(url)
        except BadURL as exc:
            raise ConfigError(f"{source}, line {number}: {exc}") from None
        urls.append(url)
    return urls


@dataclass(frozen=True)
class OptionShape:
    """What a long option of the command line takes: a value or none (a flag), once or repeated."""

    takes_value: bool
    repeatable: bool


def config_arguments(
    text: str, source: str, options: Mapping[str, OptionShape], given: Collection[str] = ()
) -> list[str]:
    """The options the TOML ``text`` sets, as command-line arguments.

    Keys are the long options without their dashes (``max-pages`` or ``max_pages``);
    a flag is ``true`` or ``false``; a repeatable option takes a list. Put before the
    command line's own arguments, whose later values win; a repeatable option the
    command line gives (in ``given``) replaces the file's list instead of adding to it.
    Unknown keys and values of the wrong kind are a ConfigError naming the key.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not TOML: {exc}") from None
    arguments = []
    for key, value in data.items():
        name = key.replace("_", "-")
        shape = options.get(name)
        if shape is None:
            raise ConfigError(f"{source}: unknown key {key!r} (keys are the long options of archiver crawl)")
        if name not in given:
            arguments += _arguments(name, shape, value, f"{source}: {key}")
    return arguments


def _arguments(name: str, shape: OptionShape, value: Any, where: str) -> list[str]:
    """``value`` of the option ``name`` as arguments; ``where`` names the key in errors."""
    if not shape.takes_value:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} is a flag: give true or false, not {value!r}")
        return [f"--{name}"] if value else []
    values = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not shape.repeatable:
        raise ConfigError(f"{where} takes one value, not a list")
    for one in values:
        if isinstance(one, bool) or not isinstance(one, str | int | float):
            raise ConfigError(f"{where}: give a string or a number, not {one!r}")
    return [f"--{name}={one}" for one in values]
