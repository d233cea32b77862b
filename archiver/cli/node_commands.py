"""``archiver merge`` and ``control``: the commands of a crawl that is running or shared by nodes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from archiver.cli.exits import EXIT_OK, EXIT_PROBLEMS
from archiver.cli.options import Parser
from archiver.crawling.control import COMMANDS
from archiver.errors import ConfigError
from archiver.report import shell_word


def add_merge(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "merge",
        help="join the parts that crawl nodes wrote into the snapshot's manifest and index",
        description="Join DIR/nodes/*/ (the parts the nodes of a crawl shared through Redis "
        "wrote, maybe copied together from several machines) into DIR's manifest, CDXJ index "
        "and crawl.json, so mirror and verify read the whole crawl. The last node of a "
        "crawl to leave does it; archiver mirror does it when a part changed.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder of a shared crawl")
    p.add_argument(
        "--repair",
        action="store_true",
        help="first write again from its WARC files the manifest of a part that lost it or whose "
        "manifest is damaged (set aside beside it), and join it",
    )
    p.set_defaults(parser=p, func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    """archiver merge: join the node parts, say what was left out."""
    from archiver.crawling.merge import left_out, merge_nodes, not_merged
    from archiver.mirror.build import build_mirror
    from archiver.store.snapshot import Snapshot

    args.hint = (
        f"the parts are left as they were; join them again with: archiver merge {shell_word(args.snapshot)}"
    )
    joined, warnings = merge_nodes(args.snapshot, repair=args.repair)
    for warning in warnings:
        print(f"archiver: warning: {warning}", file=sys.stderr)
    not_joined = not_merged(args.snapshot, joined)
    print(
        f"merged the parts of {args.snapshot}: {', '.join(joined) or 'none'}"
        + (f" (left out: {', '.join(not_joined)})" if not_joined else "")
    )
    unfaithful = False
    if joined and Snapshot(args.snapshot).mirror_dir.is_dir():
        # The merged manifest is new: the mirror is built again from it, as the node that merges
        # builds it (its files recorded, what the parts joined now holds mirrored too).
        stats = build_mirror(args.snapshot)
        print(stats.summary())
        unfaithful = stats.unfaithful
    if not_joined:  # verify fails on the snapshot: so does the merge
        print(f"archiver: error: {left_out(not_joined, args.snapshot)}", file=sys.stderr)
        return EXIT_PROBLEMS
    return EXIT_PROBLEMS if unfaithful else EXIT_OK


def add_control(sub: argparse._SubParsersAction[Parser]) -> None:
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
