"""The command line, and the only place that prints: each subcommand builds a config, calls
the library, says what happened, and returns an exit code.

    __init__.py          main() and the parser of the archiver command
    exits.py             the exit codes
    options.py           option values, and the crawl options made from CrawlConfig
    crawl_command.py     archiver crawl
    snapshot_commands.py archiver mirror, verify, diff, serve, export
    node_commands.py     archiver merge, control
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from archiver import __version__
from archiver.cli.crawl_command import add_crawl
from archiver.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_STOPPED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    TABLE,
)
from archiver.cli.node_commands import add_control, add_merge
from archiver.cli.options import Parser, read_text
from archiver.cli.snapshot_commands import add_diff, add_export, add_mirror, add_serve, add_verify
from archiver.crawl_files import OptionShape, config_arguments
from archiver.errors import ArchiverError, FrontierLost, WriteError
from archiver.stop_signals import Terminated, obey, raised_and_noted
from archiver.store.manifest import write_failed


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``archiver`` command and its subcommands."""
    parser = Parser(
        prog="archiver",
        description="Archive a website into WARC files, an offline mirror and a manifest.",
        epilog=TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"archiver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_crawl(sub)
    add_mirror(sub)
    add_verify(sub)
    add_diff(sub)
    add_serve(sub)
    add_export(sub)
    add_merge(sub)
    add_control(sub)
    return parser


def _with_config_file(parser: argparse.ArgumentParser, argv: list[str], args: argparse.Namespace) -> Any:
    """The command line parsed again with the options of its --config file before its own
    (argparse keeps the last value given, so the command line wins)."""
    shapes, given = {}, set()
    for action in args.parser._actions:
        repeatable = isinstance(action, argparse._AppendAction)
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in ("--help", "--config", "--resume"):
                shapes[flag[2:]] = OptionShape(takes_value=action.nargs != 0, repeatable=repeatable)
                if repeatable and hasattr(args, action.dest):  # given on the command line
                    given.add(flag[2:])
    text = read_text(args.config, "--config")
    extra = config_arguments(text, str(args.config), shapes, given)
    at = argv.index(args.command) + 1
    return parser.parse_known_args([*argv[:at], *extra, *argv[at:]])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``archiver`` command; returns the exit code (see exits.py).

    Whatever stops a command, it says so in one line on stderr: never a traceback.
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args, unknown = parser.parse_known_args(argv)
    try:
        if getattr(args, "config", None) is not None:
            args, unknown = _with_config_file(parser, argv, args)
    except ArchiverError as exc:
        print(f"archiver: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if unknown:  # said by the subcommand's parser, whose help lists its options
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.hint = ""
    """What the user can do next if the command stops now; the commands keep it up to date."""
    try:
        with raised_and_noted():
            code = int(args.func(args))
            obey()  # a stop that a library swallowed, and the command did not meet again
        sys.stdout.flush()  # a broken pipe is met here, not at exit
        return code
    except BrokenPipeError:
        # Nobody reads what is left to print: say nothing more (at exit either).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return _stopped(args, "interrupted (Ctrl-C)", EXIT_INTERRUPTED)
    except Terminated:
        return _stopped(args, "stopped by SIGTERM", EXIT_TERMINATED)
    except (WriteError, FrontierLost) as exc:
        return _stopped(args, f"error: {exc}", EXIT_STOPPED)
    except ArchiverError as exc:
        return _stopped(args, f"error: {exc}", EXIT_USAGE, hint=False)
    except sqlite3.Error as exc:  # a manifest damaged past its first page, or a full disk
        if write_failed(exc):
            return _stopped(args, f"error: cannot write the manifest: {exc}", EXIT_STOPPED)
        return _stopped(args, f"error: the snapshot's manifest cannot be used: {exc}", EXIT_USAGE, hint=False)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        if exc.errno in _DISK_FULL:
            return _stopped(args, f"error: {where}{exc.strerror}", EXIT_STOPPED)
        return _stopped(args, f"error: {where}{exc.strerror or exc}", EXIT_USAGE, hint=False)


_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _stopped(args: argparse.Namespace, what: str, code: int, *, hint: bool = True) -> int:
    """Say in one line why the command stopped (and, if it helps, what to do next); returns ``code``."""
    line = f"archiver: {what}"
    if hint and args.hint:
        line += f"; {args.hint}"
    with contextlib.suppress(OSError):
        print(line.replace("\n", "\\n"), file=sys.stderr, flush=True)  # a path's newline, as written
    return code
