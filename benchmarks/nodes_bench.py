"""Throughput of a crawl shared by 1, 2, 4... crawl nodes (one Redis, one generated site).

    python3 benchmarks/nodes_bench.py --pages 10000 --nodes 1,2,4 [--latency-ms 50] > nodes.md

The site (sitegen.py) is served by nginx (server.py), through the delay proxy
(delayproxy.py) when --latency-ms is given; a redis-server with no persistence
is started for the run. Each run starts N ``archiver crawl ... --frontier redis://
--crawl-id`` processes at once into a fresh folder, and times them from the first
start to the last exit (merge included, mirror not: --no-mirror). Every node gets
--concurrency; --host-concurrency is the whole crawl's, across its nodes (default:
--concurrency times the most nodes, so that politeness is not what is measured).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from delayproxy import running_delay_proxy
from server import free_port, serve_site
from sitegen import generate_site, load_site


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port("127.0.0.1")
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        + ["--dir", str(folder)],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(200):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"redis://127.0.0.1:{port}/0"
        time.sleep(0.025)
    raise RuntimeError("redis-server did not start")


def run(
    url: str, redis: str, nodes: int, args: argparse.Namespace, work: Path, run_id: str
) -> dict[str, float]:
    output = work / f"out-{run_id}"
    shutil.rmtree(output, ignore_errors=True)
    host_limit = args.host_concurrency or args.concurrency * max(args.node_counts)
    command = [sys.executable, "-m", "archiver", "crawl", url, "-o", str(output), "--quiet", "--no-mirror"]
    command += ["--frontier", redis, "--crawl-id", run_id, "--concurrency", str(args.concurrency)]
    command += ["--host-concurrency", str(host_limit)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    processes = [subprocess.Popen([*command, "--node", f"n{k}"]) for k in range(nodes)]
    codes = [process.wait() for process in processes]
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if any(code not in (0, 4) for code in codes):  # 4: done, some URLs failed (the site's dead links)
        raise RuntimeError(f"a node failed: exit codes {codes}")
    with sqlite3.connect(output / "manifest.sqlite3") as db:
        fetched = db.execute("SELECT COUNT(*) FROM urls WHERE outcome = 'fetched'").fetchone()[0]
        pages = db.execute(
            "SELECT COUNT(*) FROM urls WHERE outcome = 'fetched' AND content_type = 'text/html'"
        ).fetchone()[0]
    if not args.keep:
        shutil.rmtree(output)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "fetched": fetched, "pages": pages, "cpu": cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000, help="site size in HTML pages (default 10000)")
    parser.add_argument("--nodes", default="1,2,4", help="node counts to run (default 1,2,4)")
    parser.add_argument("--concurrency", type=int, default=16, help="each node's --concurrency (default 16)")
    parser.add_argument("--host-concurrency", type=int, help="the crawl's --host-concurrency")
    parser.add_argument("--latency-ms", type=float, default=0, help="serve through the delay proxy")
    parser.add_argument("--runs", type=int, default=1, help="runs of each node count (default 1)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "archiver-nodes-bench")
    parser.add_argument("--keep", action="store_true", help="keep the output folders")
    args = parser.parse_args()
    args.node_counts = [int(n) for n in args.nodes.split(",")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    site_dir = args.workdir / f"site-{args.pages}"
    if load_site(site_dir, args.pages, 0) is None:
        generate_site(site_dir, args.pages, 0)
    redis_dir = Path(tempfile.mkdtemp(dir=args.workdir))
    redis, redis_url = start_redis(redis_dir)
    load = os.getloadavg()[0]
    lines = [
        f"pages {args.pages}, latency {args.latency_ms} ms, --concurrency {args.concurrency} a node, "
        f"load {load:.1f} at start\n",
        "| nodes | wall s | pages/s | URLs fetched | CPU s (all nodes) |",
        "|---|---|---|---|---|",
    ]
    try:
        with serve_site(site_dir) as base:
            url = base.rstrip("/") + "/index.html"
            if args.latency_ms:
                upstream = base.split("//")[1].rstrip("/").split(":")
                listen = ("127.0.0.1", free_port("127.0.0.1"))
                proxy = running_delay_proxy(listen, (upstream[0], int(upstream[1])), args.latency_ms)
                proxy.__enter__()
                url = f"http://{listen[0]}:{listen[1]}/index.html"
            try:
                for nodes in args.node_counts:
                    for number in range(args.runs):
                        got = run(url, redis_url, nodes, args, args.workdir, f"n{nodes}r{number}")
                        print(f"{nodes} nodes: {got}", file=sys.stderr)
                        lines.append(
                            f"| {nodes} | {got['wall']:.1f} | {got['pages'] / got['wall']:.1f} | "
                            f"{got['fetched']} | {got['cpu']:.1f} |"
                        )
            finally:
                if args.latency_ms:
                    proxy.__exit__(None, None, None)
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(redis_dir, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
