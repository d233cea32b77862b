"""Command-line options: the parsers of option values, and crawl options made from CrawlConfig's fields.

A crawl option's default, help and --resume rule live beside its CrawlConfig
field; argparse keeps no default of its own, so an option given is told from
one left out (which --resume needs).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from archiver.cli.exits import EXIT_USAGE
from archiver.config import CrawlConfig
from archiver.config_options import Option, flag_of, human_size
from archiver.config_rules import check_resolve
from archiver.errors import ConfigError

TEXT_FILE_LIMIT = 64 * 1024**2
"""The most bytes of a file of URLs (-i) or of settings (--config) read: about 600,000 URLs."""


class Parser(argparse.ArgumentParser):
    """argparse without abbreviations (``--user`` is not ``--user-agent``), saying a usage error
    in one line; the subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"archiver: error: {message} (see: {self.prog} --help)\n")


def parse_size(text: str) -> int:
    """'10M' -> 10485760; plain numbers are bytes."""
    units = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
    text = text.strip().lower().removesuffix("b")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except (ValueError, OverflowError):  # OverflowError: inf
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 500K, 10M, 1G)") from None


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")


def parse_duration(text: str) -> float:
    """Seconds of '90', '30s', '10m', '2h' or '1h30m'.

    >>> parse_duration("1h30m"), parse_duration("90"), parse_duration("2.5m")
    (5400.0, 90.0, 150.0)
    """
    text = text.strip().lower()
    found = _DURATION.fullmatch(text)
    unitless = found is not None and found.group(3) and (found.group(1) or found.group(2))
    if not text or found is None or not any(found.groups()) or (unitless and text[-1] != "s"):
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 90, 30s, 10m, 2h, 1h30m)")
    hours, minutes, seconds = (float(part or 0) for part in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"not a header: {text!r} (use 'Name: value')")
    return name.strip(), value.strip()


def parse_cookie(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"not NAME=VALUE: {text!r}")
    return name.strip(), value.strip()


def parse_resolve(text: str) -> tuple[str, str]:
    host, sep, address = text.partition(":")
    if not sep or not host or not address:
        raise argparse.ArgumentTypeError(f"not HOST:IP: {text!r}")
    host, address = host.lower(), address.strip("[]")
    try:
        check_resolve(host, address)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return host, address


def parse_port(text: str) -> int:
    """A TCP port number, 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port (0 to 65535): {text!r}")
    return port


def parse_statuses(text: str) -> tuple[int, ...]:
    """'429,503' -> (429, 503); an empty text is no status at all."""
    try:
        return tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not HTTP statuses: {text!r} (use e.g. 429,502,503,504)") from None


_PARSERS: dict[str, Callable[[str], Any]] = {
    "size": parse_size,
    "header": parse_header,
    "cookie": parse_cookie,
    "resolve": parse_resolve,
    "regex": str,
    "host": str,
    "statuses": parse_statuses,
    "duration": parse_duration,
}
_REPEATED = frozenset({"header", "cookie", "resolve", "regex", "host"})


def _default_text(option: Option, default: Any) -> str:
    if option.default_text is not None:
        return option.default_text
    if option.kind == "size":
        return human_size(default)
    return f"{default:g}" if isinstance(default, float) else str(default)


def add_config_option(parser: argparse.ArgumentParser, field: dataclasses.Field[Any], option: Option) -> None:
    """Add the option of a CrawlConfig field; its default stays the field's (argparse keeps none)."""
    flag = flag_of(field)
    default = _default_text(option, field.default)
    text = f"{option.help} (default: {default})" if default else option.help
    kwargs: dict[str, Any] = {"dest": field.name, "default": argparse.SUPPRESS, "help": text}
    if option.kind == "flag":
        kwargs["action"] = "store_true"
    elif option.kind == "no-flag":
        kwargs["action"] = "store_false"
    elif option.kind == "choice":
        kwargs["choices"] = option.choices
    else:
        annotation = str(field.type).split("|")[0].strip()
        number = {"int": int, "float": float}.get(annotation, str)
        kwargs["type"] = _PARSERS.get(option.kind, number)
        kwargs["metavar"] = option.metavar
        if option.kind in _REPEATED:
            kwargs["action"] = "append"
    parser.add_argument(flag, **kwargs)


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The CrawlConfig options given on the command line (those not given keep the field's default)."""
    given = {}
    for field in dataclasses.fields(CrawlConfig):
        if "option" in field.metadata and hasattr(args, field.name):
            value = getattr(args, field.name)
            given[field.name] = tuple(value) if isinstance(value, list) else value
    return given


def read_text(name: str | Path, option: str) -> str:
    """The text of file ``name`` (``-``: standard input), or a ConfigError saying why not: one
    that cannot be read, is not UTF-8, or holds more than TEXT_FILE_LIMIT bytes (a pipe that never
    ends, /dev/zero: read whole, it would take the machine's memory)."""
    try:
        if str(name) == "-":
            data = sys.stdin.buffer.read(TEXT_FILE_LIMIT + 1)
        else:
            with open(name, "rb") as file:
                data = file.read(TEXT_FILE_LIMIT + 1)
    except OSError as exc:
        raise ConfigError(f"{option} {name}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > TEXT_FILE_LIMIT:
        raise ConfigError(f"{option} {name}: more than {TEXT_FILE_LIMIT // 1024**2} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{option} {name}: not UTF-8 text") from None
