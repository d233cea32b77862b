"""The command line, and the only place that prints: each subcommand builds a config, calls
the library, says what happened, and returns an exit code."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from archiver import __version__
from archiver.config import CrawlConfig, Option, flag_of, human_size
from archiver.crawl_files import OptionShape, config_arguments, parse_url_list
from archiver.crawling.control import COMMANDS
from archiver.errors import ArchiverError, ConfigError, SnapshotError

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_WITH_ERRORS = 4
EXIT_TIME_LIMIT = 15
EXIT_INTERRUPTED = 130


def parse_size(text: str) -> int:
    """'10M' -> 10485760; plain numbers are bytes."""
    units = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
    text = text.strip().lower().removesuffix("b")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
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
    return host.lower(), address.strip("[]")


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
PASSWORD_VARIABLE = "ARCHIVER_HTTP_PASSWORD"


def _default_text(option: Option, default: Any) -> str:
    if option.default_text is not None:
        return option.default_text
    if option.kind == "size":
        return human_size(default)
    return f"{default:g}" if isinstance(default, float) else str(default)


def _add_config_option(
    parser: argparse.ArgumentParser, field: dataclasses.Field[Any], option: Option
) -> None:
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


def _add_crawl(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "crawl",
        help="archive a website into a snapshot folder",
        description="Crawl URLs into WARC files, a manifest and an offline mirror.",
    )
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs (http or https)")
    p.add_argument(
        "-i",
        "--input-file",
        metavar="FILE",
        help="seed URLs from FILE, one a line (blank lines and # comments skipped; - reads stdin)",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="options from a TOML file, keyed by their long names (max-pages = 100); the command line wins",
    )
    p.add_argument("-o", "--output", type=Path, metavar="DIR", help="snapshot folder (new or empty)")
    p.add_argument(
        "--resume",
        nargs="?",
        const=True,
        metavar="DIR",
        help="continue the crawl saved in DIR (or --output); options given with it apply from now on "
        "and are saved, except those that would change what the crawl already decided",
    )
    for field in dataclasses.fields(CrawlConfig):
        option = field.metadata.get("option")
        if option is not None:
            _add_config_option(p, field, option)
    p.add_argument(
        "--no-mirror", action="store_true", help="do not write the offline mirror (archiver mirror writes it)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress line and no report")
    p.set_defaults(parser=p, func=cmd_crawl)


def _given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The CrawlConfig options given on the command line (those not given keep the field's default)."""
    given = {}
    for field in dataclasses.fields(CrawlConfig):
        if "option" in field.metadata and hasattr(args, field.name):
            value = getattr(args, field.name)
            given[field.name] = tuple(value) if isinstance(value, list) else value
    return given


def _password_from_environment(settings: dict[str, Any], seeds: Sequence[str]) -> dict[str, Any]:
    """ARCHIVER_HTTP_PASSWORD as --http-password, when a user was given and no password was:
    a password on the command line is seen by every process on the machine."""
    from archiver.request_headers import split_userinfo

    password = os.environ.get(PASSWORD_VARIABLE)
    wanted = settings.get("http_user") or any(split_userinfo(seed)[1] is not None for seed in seeds)
    if password is None or settings.get("http_password") is not None or not wanted:
        return {}
    return {"http_password": password}


def _check_files(config: CrawlConfig) -> None:
    """Refuse a --ca-bundle or --cookies-file that is not a file, a --browser with no
    Playwright or Chromium to drive, and a --previous that is no snapshot, before a snapshot is made.

    Here and not in CrawlConfig, which looks at no disk; the fetcher reports a file it cannot read.
    """
    for path in (config.ca_bundle, config.cookies_file):
        if path and not Path(path).is_file():
            raise ConfigError(f"no such file: {path}")
    if config.browser != "never":
        from archiver.crawling.browser_pool import require_browser

        require_browser(config.chromium)  # the error says what to install
    if config.previous is not None:
        from archiver.store.previous import check_previous

        check_previous(Path(config.previous), config.output)


def cmd_crawl(args: argparse.Namespace) -> int:
    """archiver crawl: crawl (or resume), build the mirror, print the report."""
    from archiver.store.lock import snapshot_lock
    from archiver.store.snapshot import Snapshot

    output = _output_folder(args)
    args.resume = args.resume is not None
    if args.input_file is not None:
        args.urls = [*args.urls, *parse_url_list(_read_text(args.input_file, "-i"), args.input_file)]
    if args.resume:
        if args.urls:
            raise ConfigError("--resume takes no URLs: it continues the crawl saved in its folder")
        config = _resumed_config(output, _given_settings(args))
    else:
        if not args.urls:
            raise ConfigError("give at least one URL to crawl (or --resume DIR)")
        given = _given_settings(args)
        given.update(_password_from_environment(given, args.urls))
        config = CrawlConfig(seeds=tuple(args.urls), output=output, **given)
    _check_files(config)
    progress = not args.quiet and sys.stderr.isatty()
    if config.frontier is not None:
        # A crawl node: it locks its own part of the folder, which other nodes share.
        return _crawl_and_mirror(config, args, progress)
    if not args.resume:
        Snapshot(output).check_new()
    # Held across the crawl and the mirror build, so no other writer comes in between.
    command = "archiver crawl --resume" if args.resume else "archiver crawl"
    with snapshot_lock(output, command, create=not args.resume):
        return _crawl_and_mirror(config, args, progress)


def _resumed_config(output: Path, given: dict[str, Any]) -> CrawlConfig:
    """The settings saved in ``output``/crawl.json, with the options ``given`` with --resume."""
    from archiver.store.snapshot import Snapshot

    settings = Snapshot(output).read_crawl_json().get("settings")
    seeds = settings.get("seeds") if isinstance(settings, dict) else None
    if "http_password" not in given and isinstance(seeds, list) and all(isinstance(s, str) for s in seeds):
        given.update(_password_from_environment({**settings, **given}, seeds))  # type: ignore[dict-item]
    # crawl.json keeps no password and no credential header: they are given again.
    secrets = {"http_password": given.pop("http_password")} if "http_password" in given else {}
    if "headers" in given:
        secrets["headers"] = given["headers"]
    try:
        saved = CrawlConfig.from_json(settings, output=output, **secrets)
    except ConfigError as exc:
        raise SnapshotError(f"cannot resume {output}: {exc}") from None
    return saved.resumed(given)


def _output_folder(args: argparse.Namespace) -> Path:
    """The snapshot folder: -o DIR, or --resume DIR."""
    named = Path(args.resume) if isinstance(args.resume, str) else None  # --resume alone gives True
    if named is not None and "://" in args.resume:
        raise ConfigError("--resume takes no URLs: it continues the crawl saved in its folder")
    if named is not None and args.output is not None and named != args.output:
        raise ConfigError(f"--resume {named} and -o {args.output} name two folders: give one")
    output = named or args.output
    if output is None:
        raise ConfigError("give the snapshot folder: -o DIR (or --resume DIR)")
    return output


def _crawl_and_mirror(config: CrawlConfig, args: argparse.Namespace, progress: bool) -> int:
    from archiver.crawling.crawl_report import render_report
    from archiver.crawling.run import MAX_TIME_STOP
    from archiver.store.totals import has_errors

    result = _run_async(_crawl_until_stopped(config, args.resume, progress, not args.no_mirror))
    for warning in result.warnings:
        print(f"archiver: warning: {warning}", file=sys.stderr)
    if result.seeds_failed and len(result.seeds_failed) == len(config.seeds):
        url, why = result.seeds_failed[0]
        raise ArchiverError(f"could not fetch {url}: {why}")
    if result.mirror is not None and not args.quiet:
        print(result.mirror.summary())
    if not args.quiet:
        print(render_report(result.totals, result.stats))
    if result.interrupted:
        print(
            f"archiver: crawl stopped ({result.stats.stop_reason}); continue it with: "
            f"archiver crawl --resume {config.output} (or browse what is there after: "
            f"archiver mirror {config.output})",
            file=sys.stderr,
        )
        if (result.stats.stop_reason or "").startswith(MAX_TIME_STOP):
            return EXIT_TIME_LIMIT
        return EXIT_INTERRUPTED if "signal" in (result.stats.stop_reason or "") else EXIT_PROBLEMS
    return EXIT_WITH_ERRORS if has_errors(result.totals) else EXIT_OK


async def _crawl_until_stopped(config: CrawlConfig, resume: bool, progress: bool, mirror: bool) -> Any:
    """crawl(), stopped cleanly by Ctrl-C or SIGTERM, with a progress line on the terminal if asked."""
    from archiver.crawling.crawl_report import progress_line
    from archiver.crawling.run import crawl
    from archiver.crawling.stats import CrawlStats

    stop: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def show(stats: CrawlStats, queued: int) -> None:
        sys.stderr.write(f"\r\x1b[K{progress_line(stats, queued)}")
        sys.stderr.flush()

    with _signals_stop(stop):
        try:
            return await crawl(
                config, resume=resume, progress=show if progress else None, stop=stop, mirror=mirror
            )
        finally:
            if progress:
                sys.stderr.write("\r\x1b[K")


@contextlib.contextmanager
def _signals_stop(stop: asyncio.Future[str]) -> Iterator[None]:
    """While the block runs, Ctrl-C and SIGTERM give ``stop`` its reason instead of killing the process."""
    loop = asyncio.get_running_loop()
    installed = []

    def on_signal(sig: signal.Signals) -> None:
        if not stop.done():
            stop.set_result(f"signal {sig.name}")

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def _run_async(coroutine: Any) -> Any:
    """Run ``coroutine`` on uvloop's event loop where it is installed (a quarter less CPU per request)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def _add_mirror(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "mirror",
        help="rebuild the offline mirror and index.html from the WARCs",
        description="Rebuild mirror/ and index.html of a snapshot from its WARC files "
        "and manifest (also after an interrupted crawl).",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.set_defaults(parser=p, func=cmd_mirror)


def cmd_mirror(args: argparse.Namespace) -> int:
    """archiver mirror: rebuild the mirror, print its summary."""
    from archiver.crawling.merge import stale_parts
    from archiver.mirror.build import build_mirror

    if stale_parts(args.snapshot):  # a shared crawl whose node parts changed since their merge
        from archiver.crawling.merge import merge_nodes

        for warning in merge_nodes(args.snapshot):
            print(f"archiver: warning: {warning}", file=sys.stderr)
    stats = build_mirror(args.snapshot)
    print(stats.summary())
    return EXIT_OK


def _add_verify(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "verify",
        help="check a snapshot is complete and intact (exit 0 only if so)",
        description="Read a snapshot cold and report every integrity, consistency, "
        "completeness and mirror problem. Exit 0: complete; 1: problems "
        "found; 2: not a snapshot.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder (or a folder of WARC files)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--resolve",
        action="append",
        default=[],
        type=parse_resolve,
        metavar="HOST:IP",
        help="connect to IP for HOST instead of asking DNS (repeatable)",
    )
    p.add_argument("--no-mirror", action="store_true", help="do not check the mirror's links")
    p.set_defaults(parser=p, func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    """archiver verify: print the report; 0 if complete, 1 if not."""
    from archiver.verify.verifier import verify_snapshot

    report = verify_snapshot(args.snapshot, check_mirror=not args.no_mirror)
    if args.json:
        print(json.dumps({"snapshot": str(args.snapshot), **report.to_json()}, indent=2))
    else:
        print(report.render_text(str(args.snapshot)))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _add_diff(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "diff",
        help="say what changed between two snapshots: new, changed, unchanged and gone URLs",
        description="Compare two snapshots' manifests. A URL is archived in a snapshot when it "
        "has a record in its WARC files; new: archived in NEW only; gone: archived in OLD, not "
        "in NEW; unchanged: archived in both with the same status, payload and redirect "
        "target; changed: archived in both, and one of those differs.",
    )
    p.add_argument("old", type=Path, help="the earlier snapshot folder")
    p.add_argument("new", type=Path, help="the later snapshot folder")
    p.add_argument("--json", action="store_true", help="print the report as JSON (every URL of each kind)")
    p.set_defaults(parser=p, func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    """archiver diff: print the change report; 0 once printed."""
    from archiver.store.changes import Changes
    from archiver.store.snapshot import Snapshot

    old, new = Snapshot(args.old).manifest_path, Snapshot(args.new).manifest_path
    with Changes(old, new) as changes:
        report = changes.json_text if args.json else changes.text
        for piece in report(str(args.old), str(args.new)):
            sys.stdout.write(piece if args.json else piece + "\n")
    return EXIT_OK


def _add_merge(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "merge",
        help="join the parts that crawl nodes wrote into the snapshot's manifest and index",
        description="Join DIR/nodes/*/ (the parts the nodes of a crawl shared through Redis "
        "wrote, maybe copied together from several machines) into DIR's manifest, CDXJ index "
        "and crawl.json, so mirror and verify read the whole crawl. The last node of a "
        "crawl to leave does it; archiver mirror does it when a part changed.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder of a shared crawl")
    p.set_defaults(parser=p, func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    """archiver merge: join the node parts, say what was left out."""
    from archiver.crawling.merge import merge_nodes

    for warning in merge_nodes(args.snapshot):
        print(f"archiver: warning: {warning}", file=sys.stderr)
    print(f"merged the parts of {args.snapshot}: {', '.join(_node_names(args.snapshot))}")
    return EXIT_OK


def _node_names(root: Path) -> list[str]:
    from archiver.store.snapshot import Snapshot

    return Snapshot(root).node_names()


def _add_control(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "control",
        help="steer a running crawl: pause, resume, stop, exclude, delay, concurrency, status",
        description="Give a running crawl a command, applied within a second or two by every "
        "process of it and noted in crawl.json: pause (no new fetches), resume, stop (as Ctrl-C "
        "would), exclude REGEX (skip matching URLs from now on, queued ones included), delay "
        "SECONDS (between requests to one host), concurrency N (most fetches in flight to one "
        "host), or status (the crawl's counts).",
    )
    p.add_argument(
        "target",
        metavar="TARGET",
        help="the crawl's snapshot folder, or its Redis URL (redis://HOST:PORT/DB, with --crawl-id)",
    )
    p.add_argument("command", choices=COMMANDS, help="what to do")
    p.add_argument("argument", nargs="?", help="the regular expression, seconds or number it takes")
    p.add_argument("--crawl-id", metavar="NAME", help="the shared crawl's name in Redis")
    p.add_argument("--json", action="store_true", help="status as JSON")
    p.set_defaults(parser=p, func=cmd_control)


def cmd_control(args: argparse.Namespace) -> int:
    """archiver control: give the command, or print the status line (or JSON)."""
    from archiver.crawling.control_target import Target, issue, status

    target = Target.parse(args.target, args.crawl_id)
    if args.command != "status":
        issue(target, args.command, args.argument)
        print(f"{args.command}{' ' + args.argument if args.argument else ''}: given to {args.target}")
        return EXIT_OK
    if args.argument is not None:
        raise ConfigError("status takes no argument")
    counts = status(target)
    print(json.dumps(counts, sort_keys=True) if args.json else _status_line(counts))
    return EXIT_OK


def _status_line(counts: dict[str, Any]) -> str:
    """'running: 120 fetched, 30 queued, 2 in flight, 0 failed, 3 skipped, 1.2 MiB, 40.1 pages/s'."""
    from archiver.sizes import human_bytes

    if "fetched" not in counts:
        return str(counts.get("state"))
    line = (
        f"{counts.get('state')}: {counts.get('fetched', 0)} fetched, {counts.get('queued', 0)} queued, "
        f"{counts.get('in_flight', 0)} in flight, {counts.get('failed', 0)} failed, "
        f"{counts.get('skipped', 0)} skipped, {human_bytes(int(counts.get('bytes') or 0))}"
    )
    if "pages_per_second" in counts:
        line += f", {counts['pages_per_second']} pages/s"
    if counts.get("nodes"):
        line += f"; nodes: {', '.join(counts['nodes'])}"
    return line


def _add_serve(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "serve",
        help="browse a snapshot's mirror with a local web server",
        description="Serve a snapshot's index.html and mirror on a local port.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.set_defaults(parser=p, func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """archiver serve: serve until Ctrl-C or SIGTERM."""
    from archiver.mirror.serve import serve

    root = args.snapshot
    if not (root / "index.html").is_file() and not (root / "mirror").is_dir():
        raise SnapshotError(f"{root} has no index.html or mirror/ (run: archiver mirror {root})")

    async def run() -> None:
        started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(root, args.host, args.port, started))
        either: list[asyncio.Future[Any]] = [task, started]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if started.done():
            print(f"Serving {root} at {started.result()} (Ctrl-C to stop)", flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    print("Stopped.", file=sys.stderr, flush=True)
    return EXIT_OK


def _add_export(sub: argparse._SubParsersAction[_Parser]) -> None:
    p = sub.add_parser(
        "export",
        help="write a snapshot as a WACZ file (for ReplayWeb.page)",
        description="Package a snapshot's WARC files, a CDXJ index, its pages with their titles "
        "and a datapackage with SHA-256 hashes as one WACZ 1.1.1 file, which ReplayWeb.page "
        "opens and py-wacz validates.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.add_argument("--wacz", type=Path, required=True, metavar="FILE", help="the .wacz file to write")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    p.set_defaults(parser=p, func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """archiver export: write the WACZ, print what it holds."""
    from archiver.export.wacz import export_wacz

    print(export_wacz(args.snapshot, args.wacz, force=args.force).summary())
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    """argparse without abbreviations (``--user`` is not ``--user-agent``), saying a usage error
    in one line; the subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"archiver: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``archiver`` command and its subcommands."""
    parser = _Parser(
        prog="archiver",
        description="Archive a website into WARC files, an offline mirror and a manifest.",
    )
    parser.add_argument("--version", action="version", version=f"archiver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_crawl(sub)
    _add_mirror(sub)
    _add_verify(sub)
    _add_diff(sub)
    _add_serve(sub)
    _add_export(sub)
    _add_merge(sub)
    _add_control(sub)
    return parser


def _read_text(name: str | Path, option: str) -> str:
    """The text of file ``name`` (``-``: standard input), or a ConfigError saying why not."""
    try:
        if str(name) == "-":
            return sys.stdin.read()
        return Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{option} {name}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{option} {name}: not UTF-8 text") from None


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
    text = _read_text(args.config, "--config")
    extra = config_arguments(text, str(args.config), shapes, given)
    at = argv.index(args.command) + 1
    return parser.parse_known_args([*argv[:at], *extra, *argv[at:]])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``archiver`` command; returns the exit code."""
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
    try:
        return int(args.func(args))
    except ArchiverError as exc:
        print(f"archiver: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("archiver: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
