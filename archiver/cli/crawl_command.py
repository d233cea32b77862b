"""``archiver crawl``: crawl or resume into a snapshot, build its mirror, print the report."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from archiver.cli.exits import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_STOPPED,
    EXIT_TERMINATED,
    EXIT_TIME_LIMIT,
    EXIT_USAGE,
    EXIT_WITH_ERRORS,
)
from archiver.cli.options import Parser, add_config_option, given_settings, read_text
from archiver.config import CrawlConfig
from archiver.config_rules import NEVER
from archiver.crawl_files import parse_url_list
from archiver.errors import ConfigError, SnapshotError
from archiver.report import resume_command, shell_word
from archiver.request_headers import PASSWORD_VARIABLE


def add_crawl(sub: argparse._SubParsersAction[Parser]) -> None:
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
    p.add_argument(
        "--repair",
        action="store_true",
        help="with --resume: first read every WARC record, as archiver verify does, and fetch again the "
        "captures found damaged (set aside in damaged-records/)",
    )
    for field in dataclasses.fields(CrawlConfig):
        option = field.metadata.get("option")
        if option is not None:
            add_config_option(p, field, option)
    p.add_argument(
        "--no-mirror", action="store_true", help="do not write the offline mirror (archiver mirror writes it)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress line and no report")
    p.set_defaults(parser=p, func=cmd_crawl)


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
    """Read --ca-bundle and --cookies-file as the fetcher will, so one that cannot be read is
    refused before a snapshot is made (CrawlConfig looks at no disk); refuse a --browser
    with no Playwright or Chromium to drive, and a --previous that is no snapshot."""
    from archiver.crawling.given_cookies import read_cookies_file
    from archiver.crawling.network import ssl_setting

    ssl_setting(config)
    if config.cookies_file:
        read_cookies_file(config.cookies_file)
    if config.browser != NEVER:
        from archiver.crawling.chromium import require_browser

        require_browser(config.chromium)  # the error says what to install
    if config.previous is not None:
        from archiver.store.previous import check_previous

        check_previous(Path(config.previous), config.output)


def cmd_crawl(args: argparse.Namespace) -> int:
    """archiver crawl: crawl (or resume), build the mirror, print the report."""
    from archiver.memory import map_large_blocks
    from archiver.store.lock import snapshot_lock
    from archiver.store.snapshot import Snapshot, require_folder

    map_large_blocks()  # page bodies in flight come and go by the thousand
    output = _output_folder(args)
    args.resume = args.resume is not None
    if args.input_file is not None:
        args.urls = [*args.urls, *parse_url_list(read_text(args.input_file, "-i"), args.input_file)]
    if args.repair and not args.resume:
        raise ConfigError("--repair goes with --resume: it repairs the crawl saved in the folder")
    if args.resume:
        if args.urls:
            raise ConfigError("--resume takes no URLs: it continues the crawl saved in its folder")
        require_folder(output)
        if args.repair:
            _restore_crawl_json(output)
        config = _resumed_config(output, given_settings(args))
    else:
        if not args.urls:
            raise ConfigError("give at least one URL to crawl (or --resume DIR)")
        given = given_settings(args)
        given.update(_password_from_environment(given, args.urls))
        config = CrawlConfig(seeds=tuple(args.urls), output=output, **given)
    _check_files(config)
    if args.repair and config.frontier is not None:
        raise ConfigError(
            "--repair is for a crawl of one process: the manifest of a shared crawl's node part, lost or "
            "damaged, is written again from its WARC files with: "
            f"archiver merge {shell_word(output)} --repair"
        )
    if args.repair:
        _set_aside_disagreeing_manifest(output, config)
    progress = not args.quiet and sys.stderr.isatty()
    if config.frontier is not None:
        # A crawl node: it locks its own part of the folder, which other nodes share.
        args.hint = "the same command joins the shared crawl again"
        return _crawl_and_mirror(config, args, progress)
    if not args.resume:
        Snapshot(output).check_new()
    # Held across the crawl and the mirror build, so no other writer comes in between.
    command = "archiver crawl --resume" if args.resume else "archiver crawl"
    with snapshot_lock(output, command, create=not args.resume):
        args.hint = f"continue it with: {resume_command(output, _given_again(config))}"
        return _crawl_and_mirror(config, args, progress)


def _restore_crawl_json(output: Path) -> None:
    """Give a lost or unreadable crawl.json back from the WARC files (--repair), under the
    snapshot's lock, before its settings are read."""
    from archiver.store.crawl_json_rebuild import crawl_json_lost, restore_crawl_json
    from archiver.store.lock import snapshot_lock
    from archiver.store.snapshot import Snapshot

    snapshot = Snapshot(output)
    if not crawl_json_lost(snapshot):
        return
    with snapshot_lock(output, "archiver crawl --resume --repair"):
        warning = restore_crawl_json(snapshot)
    print(f"archiver: warning: {warning}", file=sys.stderr)


def _set_aside_disagreeing_manifest(output: Path, config: CrawlConfig) -> None:
    """Set aside (--repair) a manifest that disagrees with the WARC files, the record of truth, as
    verify finds it (report.MENDED_BY_A_NEW_MANIFEST: a row naming a place that holds no record
    of its URL, a record no row names, a row's facts that no page or redirect bears out, a WARC
    file gone), and write it again from them, as the resume writes a lost one: what verify says
    mends it. Done under the snapshot's lock, before the crawl takes it, and said in one line (the
    resume then finds the manifest it goes on from)."""
    from archiver.report import KINDS, MENDED_BY_A_NEW_MANIFEST
    from archiver.store.lock import snapshot_lock
    from archiver.store.rebuild import crawl_seeds, rebuild_manifest, set_aside_manifest
    from archiver.store.snapshot import Snapshot
    from archiver.verify.verifier import verify_locked

    snapshot = Snapshot(output)
    if not snapshot.manifest_path.is_file():
        return
    with snapshot_lock(output, "archiver crawl --resume --repair"):
        report = verify_locked(snapshot, check_mirror=False)
        found = [name for name in KINDS if report.counts[name] and name in MENDED_BY_A_NEW_MANIFEST]
        if not found:
            return
        kept = set_aside_manifest(snapshot)
        settings = config.to_json()
        captures = rebuild_manifest(snapshot, config.warc_prefix, settings, crawl_seeds(settings))
    problem = report.examples[found[0]][0]
    print(
        f"archiver: warning: the manifest disagrees with the WARC files ({problem.kind}: {problem.where}: "
        f"{problem.detail}): set aside as {kept}, written again from the WARC files, {captures} captures; "
        "the crawl goes on from them",
        file=sys.stderr,
    )


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
    from archiver.crawling.resume_options import check_given_again

    check_given_again(saved, given)
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


_SIGNAL_EXITS = {
    f"signal {signal.SIGINT.name}": EXIT_INTERRUPTED,
    f"signal {signal.SIGTERM.name}": EXIT_TERMINATED,
}


def _crawl_and_mirror(config: CrawlConfig, args: argparse.Namespace, progress: bool) -> int:
    from archiver.crawling.control import CONTROL_STOP
    from archiver.crawling.crawl_report import render_report
    from archiver.crawling.merge import left_out
    from archiver.crawling.stopping import BROWSER_STOP, MAX_TIME_STOP
    from archiver.store.totals import has_errors

    result = _run_async(_crawl_until_stopped(config, args.resume, progress, not args.no_mirror, args.repair))
    for warning in result.warnings:
        print(f"archiver: warning: {warning}", file=sys.stderr)
    if result.seeds_failed and len(result.seeds_failed) == len(config.seeds):
        url, why = result.seeds_failed[0]
        print(f"archiver: error: could not fetch {url}: {why}", file=sys.stderr)
        return EXIT_PROBLEMS
    if result.mirror is not None and not args.quiet:
        print(result.mirror.summary())
    if not args.quiet:
        print(render_report(result.totals, result.stats))
    if result.interrupted and (result.stats.stop_reason or "").startswith(BROWSER_STOP):
        others = _given_again(dataclasses.replace(config, chromium=None))  # the Chromium: a new one
        print(
            f"archiver: error: {result.stats.stop_reason}; give a Chromium or Chrome that starts with "
            f"--chromium PATH, or crawl with --browser never (what was fetched is kept: "
            f"{resume_command(config.output, others)} --chromium PATH continues it)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if result.interrupted:
        reason = result.stats.stop_reason or ""
        print(
            f"archiver: crawl stopped ({reason}); continue it with: "
            f"{resume_command(config.output, _given_again(config))} "
            f"(or browse what is there after: archiver mirror {shell_word(config.output)})",
            file=sys.stderr,
        )
        if reason.startswith(MAX_TIME_STOP):
            return EXIT_TIME_LIMIT
        if reason == CONTROL_STOP:
            return EXIT_INTERRUPTED  # as Ctrl-C would
        return _SIGNAL_EXITS.get(reason, EXIT_STOPPED)
    if result.parts_left_out:
        print(f"archiver: error: {left_out(result.parts_left_out, config.output)}", file=sys.stderr)
        return EXIT_PROBLEMS
    if result.mirror is not None and result.mirror.unfaithful:
        # As archiver mirror exits for the same files, and before the URLs that failed: the
        # snapshot itself lacks what its summary lists.
        print(
            f"archiver: error: the mirror left {len(result.mirror.errors)} captures without a file and kept "
            f"{len(result.mirror.kept)} as the crawl wrote them, whose records cannot be read "
            f"(archiver verify {shell_word(config.output)} names each; "
            f"{resume_command(config.output, _given_again(config), repair=True)} fetches them again)",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    return EXIT_WITH_ERRORS if has_errors(result.totals) else EXIT_OK


async def _crawl_until_stopped(
    config: CrawlConfig, resume: bool, progress: bool, mirror: bool, repair: bool = False
) -> Any:
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
                config,
                resume=resume,
                progress=show if progress else None,
                stop=stop,
                mirror=mirror,
                repair=repair,
            )
        finally:
            if progress:
                sys.stderr.write("\r\x1b[K")


@contextlib.contextmanager
def _signals_stop(stop: asyncio.Future[str]) -> Iterator[None]:
    """While the block runs, Ctrl-C and SIGTERM give ``stop`` its reason instead of killing the process."""
    loop = asyncio.get_running_loop()
    installed = {}

    def on_signal(sig: signal.Signals) -> None:
        if not stop.done():
            stop.set_result(f"signal {sig.name}")

    for sig in (signal.SIGINT, signal.SIGTERM):
        before = signal.getsignal(sig)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
            installed[sig] = before
    try:
        yield
    finally:
        for sig, before in installed.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, before)  # the command's own handler, for the phases after the crawl


def _run_async(coroutine: Any) -> Any:
    """Run ``coroutine`` on uvloop's event loop where it is installed (a quarter less CPU per request)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def _given_again(config: CrawlConfig) -> str:
    """The options a resume of this crawl is to be given again (resume_options.given_again)."""
    from archiver.crawling.resume_options import given_again

    return given_again(config.to_json())
