"""The command line: each subcommand builds a config, calls the library, returns an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from archiver import __version__
from archiver.config import DEFAULT_USER_AGENT, SCOPES, CrawlConfig
from archiver.errors import ArchiverError

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2


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


def _add_crawl(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "crawl",
        help="archive a website into a snapshot folder",
        description="Crawl URLs into WARC files, a manifest and an offline mirror.",
    )
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs (http or https)")
    p.add_argument("-o", "--output", type=Path, required=True, help="snapshot folder (new or empty)")
    p.add_argument("--resume", action="store_true", help="continue the interrupted crawl in --output")
    p.add_argument(
        "--scope",
        choices=SCOPES,
        default="host",
        help="which links to follow: same host (default), domain, URL prefix, or any",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="REGEX",
        help="only follow URLs matching REGEX (repeatable)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="REGEX",
        help="never fetch URLs matching REGEX (repeatable)",
    )
    p.add_argument("--max-depth", type=int, help="links to follow from a seed (default: no limit)")
    p.add_argument("--max-pages", type=int, help="stop after fetching this many URLs")
    p.add_argument("--max-bytes", type=parse_size, help="stop after storing this many bytes")
    p.add_argument("--concurrency", type=int, default=16, help="fetch workers (default 16)")
    p.add_argument(
        "--host-concurrency", type=int, help="most fetches in flight to one host (default: --concurrency)"
    )
    p.add_argument(
        "--delay",
        type=float,
        default=0.0,
        help="seconds between requests to one host (robots.txt Crawl-delay raises it)",
    )
    p.add_argument("--ignore-robots", action="store_true", help="do not obey robots.txt")
    p.add_argument(
        "--max-retry-after",
        type=float,
        default=60.0,
        help="longest Retry-After (seconds) to wait out before retrying (default 60)",
    )
    p.add_argument("--max-redirects", type=int, default=10, help="longest redirect chain (default 10)")
    p.add_argument("--max-tries", type=int, default=4, help="tries per URL (default 4)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per fetch (default 30)")
    p.add_argument(
        "--max-file-size",
        type=parse_size,
        default=100 * 1024**2,
        help="truncate bodies past this size (default 100M)",
    )
    p.add_argument(
        "--warc-max-size",
        type=parse_size,
        default=1024**3,
        help="start a new WARC file past this size (default 1G)",
    )
    p.add_argument("--warc-prefix", default="archiver", help="WARC file name prefix")
    p.add_argument("--user-agent", default=DEFAULT_USER_AGENT, help="User-Agent header")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        type=parse_header,
        metavar="'NAME: VALUE'",
        help="extra request header (repeatable)",
    )
    p.add_argument(
        "--cookie",
        action="append",
        default=[],
        type=parse_cookie,
        metavar="NAME=VALUE",
        help="cookie sent to the seeds' hosts (repeatable)",
    )
    p.add_argument("--cookies-file", metavar="FILE", help="cookies.txt (Netscape format) to send")
    p.add_argument("--ca-bundle", metavar="FILE", help="PEM file of CAs to trust for HTTPS")
    p.add_argument("--insecure", action="store_true", help="do not check HTTPS certificates")
    p.add_argument(
        "--resolve",
        action="append",
        default=[],
        type=parse_resolve,
        metavar="HOST:IP",
        help="connect to IP for HOST instead of asking DNS (repeatable)",
    )
    p.add_argument("--no-mirror", action="store_true", help="skip building the offline mirror")
    p.add_argument("--quiet", action="store_true", help="no progress line and no report")
    p.set_defaults(func=cmd_crawl)


def cmd_crawl(args: argparse.Namespace) -> int:
    from archiver.crawling.run import crawl_command

    if args.resume:
        if args.urls:
            raise ArchiverError("--resume takes no URLs: it continues the crawl saved in --output")
        return crawl_command(None, args.output, resume=True, mirror=not args.no_mirror, quiet=args.quiet)
    if not args.urls:
        raise ArchiverError("give at least one URL to crawl (or --resume)")
    config = CrawlConfig(
        seeds=tuple(args.urls),
        output=args.output,
        scope=args.scope,
        include=tuple(args.include),
        exclude=tuple(args.exclude),
        max_depth=args.max_depth,
        max_pages=args.max_pages,
        max_bytes=args.max_bytes,
        concurrency=args.concurrency,
        host_concurrency=args.host_concurrency,
        delay=args.delay,
        obey_robots=not args.ignore_robots,
        max_retry_after=args.max_retry_after,
        max_redirects=args.max_redirects,
        max_tries=args.max_tries,
        timeout=args.timeout,
        max_file_size=args.max_file_size,
        warc_max_size=args.warc_max_size,
        warc_prefix=args.warc_prefix,
        user_agent=args.user_agent,
        headers=tuple(args.header),
        resolve=tuple(args.resolve),
        cookies=tuple(args.cookie),
        cookies_file=args.cookies_file,
        ca_bundle=args.ca_bundle,
        insecure=args.insecure,
        progress=not args.quiet and sys.stderr.isatty(),
    )
    return crawl_command(config, args.output, resume=False, mirror=not args.no_mirror, quiet=args.quiet)


def _add_mirror(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mirror",
        help="rebuild the offline mirror and index.html from the WARCs",
        description="Rebuild mirror/ and index.html of a snapshot from its WARC files "
        "and manifest (also after an interrupted crawl).",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.set_defaults(func=cmd_mirror)


def cmd_mirror(args: argparse.Namespace) -> int:
    from archiver.mirror.build import build_mirror

    stats = build_mirror(args.snapshot)
    print(stats.summary())
    return EXIT_OK


def _add_verify(sub: argparse._SubParsersAction) -> None:
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
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from archiver.verify.verifier import verify_command

    return verify_command(args.snapshot, as_json=args.json, check_mirror=not args.no_mirror)


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="browse a snapshot's mirror with a local web server",
        description="Serve a snapshot's index.html and mirror on a local port.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from archiver.mirror.serve import serve_command

    return serve_command(args.snapshot, host=args.host, port=args.port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="archiver",
        description="Archive a website into WARC files, an offline mirror and a manifest.",
    )
    parser.add_argument("--version", action="version", version=f"archiver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_crawl(sub)
    _add_mirror(sub)
    _add_verify(sub)
    _add_serve(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``archiver`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ArchiverError as exc:
        print(f"archiver: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("archiver: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
