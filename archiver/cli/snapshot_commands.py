"""``archiver mirror``, ``verify``, ``diff``, ``serve``, ``export``: the commands over snapshots made."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

from archiver.cli.exits import EXIT_OK, EXIT_PROBLEMS
from archiver.cli.options import Parser, parse_port, parse_resolve
from archiver.config_rules import check_text
from archiver.errors import SnapshotError
from archiver.report import shell_word


def add_mirror(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "mirror",
        help="rebuild the offline mirror and index.html from the WARCs",
        description="Rebuild mirror/ and index.html of a snapshot from its WARC files "
        "and manifest (also after an interrupted crawl), and key again the lines of its CDXJ "
        "index an earlier version keyed otherwise than pywb looks them up.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.set_defaults(parser=p, func=cmd_mirror)


def cmd_mirror(args: argparse.Namespace) -> int:
    """archiver mirror: rebuild the mirror, print its summary."""
    from archiver.mirror.build import build_mirror
    from archiver.store.merged_parts import stale_parts

    again = f"archiver mirror {shell_word(args.snapshot)}"
    args.hint = f"the mirror before is left as it was; build it again with: {again}"
    not_joined: list[str] = []
    if stale_parts(args.snapshot):  # a shared crawl whose node parts changed since their merge
        from archiver.crawling.merge import merge_nodes, not_merged

        merged, warnings = merge_nodes(args.snapshot)
        for warning in warnings:
            print(f"archiver: warning: {warning}", file=sys.stderr)
        not_joined = not_merged(args.snapshot, merged)
    stats = build_mirror(args.snapshot)
    print(stats.summary())
    if not_joined:  # the mirror is built, of what was merged: verify fails on the snapshot
        from archiver.crawling.merge import left_out

        print(f"archiver: error: {left_out(not_joined, args.snapshot)}", file=sys.stderr)
        return EXIT_PROBLEMS
    return EXIT_PROBLEMS if stats.unfaithful else EXIT_OK


def add_verify(sub: argparse._SubParsersAction[Parser]) -> None:
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
    from archiver.crawling.resume_options import given_again_in
    from archiver.verify.verifier import verify_snapshot

    report = verify_snapshot(args.snapshot, check_mirror=not args.no_mirror)
    report.resume_options = given_again_in(args.snapshot)
    if args.json:
        print(json.dumps({"snapshot": str(args.snapshot), **report.to_json(str(args.snapshot))}, indent=2))
    else:
        print(report.render_text(str(args.snapshot)))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def add_diff(sub: argparse._SubParsersAction[Parser]) -> None:
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

    old, new = Snapshot(args.old), Snapshot(args.new)
    for snapshot in (old, new):
        snapshot.check_manifest()  # lost or damaged: the WARC files give it back
    with Changes(old.manifest_path, new.manifest_path) as changes:
        report = changes.json_text if args.json else changes.text
        for piece in report(str(args.old), str(args.new)):
            sys.stdout.write(piece if args.json else piece + "\n")
    return EXIT_OK


def add_serve(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "serve",
        help="browse a snapshot's mirror with a local web server",
        description="Serve a snapshot's index.html and mirror on a local port.",
    )
    p.add_argument("snapshot", type=Path, help="snapshot folder")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=parse_port, default=8000, help="port, 0 for any free one (default 8000)")
    p.set_defaults(parser=p, func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """archiver serve: serve until Ctrl-C or SIGTERM."""
    from archiver.mirror.serve import LOG, OneLine, serve
    from archiver.store.snapshot import require_folder

    root = args.snapshot
    check_text("--host", args.host)
    require_folder(root)
    if not (root / "index.html").is_file() and not (root / "mirror").is_dir():
        raise SnapshotError(f"{root} has no index.html or mirror/ (run: archiver mirror {shell_word(root)})")

    async def run() -> None:
        started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(root, args.host, args.port, started))
        either: list[asyncio.Future[Any]] = [task, started]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if started.done():
            print(f"Serving {root} at {started.result()} (Ctrl-C to stop)", flush=True)
        await task

    said = logging.StreamHandler()  # a request it cannot read, on stderr beside the lines above
    said.addFilter(OneLine())
    LOG.addHandler(said)
    try:
        asyncio.run(run())  # Ctrl-C before it serves stops it like any command
    finally:
        LOG.removeHandler(said)
    print("Stopped.", file=sys.stderr, flush=True)
    return EXIT_OK


def add_export(sub: argparse._SubParsersAction[Parser]) -> None:
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
