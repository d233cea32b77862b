"""WACZ export: `archiver export --wacz` on a generated snapshot, beside py-wacz's `wacz create`.

    python3 benchmarks/wacz_bench.py --pages 10000 [--pywacz VENV/bin/wacz] > wacz.md

Generates a site (sitegen.py), serves it with nginx (server.py), crawls it once
(`archiver crawl --no-mirror`), then times each exporter in a child process:
wall time, user + system CPU and peak RSS (os.wait4), and the size of what it
wrote. py-wacz, when given, gets the same WARC files and is asked for pages
(--detect-pages) as our export lists them; `wacz validate` checks both files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import serve_site  # noqa: E402
from sitegen import generate_site  # noqa: E402


def measured(command: list[str]) -> tuple[float, float, float, int]:
    """Run ``command``; its wall seconds, CPU seconds, peak RSS in MB and exit code."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    if status:
        sys.stderr.write(process.stderr.read().decode(errors="replace") if process.stderr else "")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def pages_in(wacz: Path) -> int:
    with zipfile.ZipFile(wacz) as package:
        return max(0, len(package.read("pages/pages.jsonl").splitlines()) - 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--pywacz", help="py-wacz's wacz command, to compare (optional)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "archiver-wacz-bench")
    parser.add_argument("--keep", action="store_true", help="keep the snapshot and the WACZ files")
    args = parser.parse_args()
    work = args.workdir
    site = work / f"site-{args.pages}-seed0"
    generate_site(site, args.pages, 0)  # reused when it is there
    snapshot = work / "snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    with serve_site(site) as url:
        crawl = [sys.executable, "-m", "archiver", "crawl", f"{url}/index.html", "-o", str(snapshot)]
        wall, cpu, rss, code = measured([*crawl, "--no-mirror", "--quiet"])
    sys.stderr.write(f"crawl: {wall:.1f} s, exit {code}\n")
    warcs = sorted(str(path) for path in (snapshot / "warc").glob("*.warc.gz"))
    warc_bytes = sum(os.path.getsize(path) for path in warcs)
    rows = []
    ours = work / "archiver.wacz"
    ours.unlink(missing_ok=True)
    result = measured([sys.executable, "-m", "archiver", "export", str(snapshot), "--wacz", str(ours)])
    rows.append(("archiver export --wacz", *result, ours))
    if args.pywacz:
        theirs = work / "py-wacz.wacz"
        theirs.unlink(missing_ok=True)
        command = [args.pywacz, "create", "--detect-pages", "-o", str(theirs), *warcs]
        rows.append(("wacz create --detect-pages", *measured(command), theirs))
    size_mib = warc_bytes / 1024**2
    print(f"Snapshot: {args.pages} generated pages, {len(warcs)} WARC files, {size_mib:.1f} MiB\n")
    print("| exporter | wall s | CPU s | peak RSS MB | WACZ MiB | pages listed | validates |")
    print("|---|---|---|---|---|---|---|")
    for name, wall, cpu, rss, code, path in rows:
        valid = "-"
        if args.pywacz and code == 0:
            validate = [args.pywacz, "validate", "-f", str(path)]
            checked = subprocess.run(validate, capture_output=True, text=True)
            valid = "yes" if checked.returncode == 0 else "NO"
        size = path.stat().st_size / 1024**2 if code == 0 else 0
        listed = pages_in(path) if code == 0 else 0
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {size:.1f} | {listed} | {valid} |")
    if not args.keep:
        shutil.rmtree(snapshot, ignore_errors=True)
        for *_, path in rows:
            path.unlink(missing_ok=True)
    return 0 if all(row[4] == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
