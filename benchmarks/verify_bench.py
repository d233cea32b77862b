"""Benchmark ``archiver verify``: build a snapshot of N pages, time verify, report peak RSS.

The snapshot is written with the library (WARC, manifest, CDXJ, crawl.json and a
mirror of relative links), as a crawl of a site of N linked pages would leave it.
Generation and verify each run in a fresh process, so verify's peak RSS is its own
(a child forked from a big parent inherits the parent's high-water mark).

    python benchmarks/verify_bench.py --pages 10000
    python benchmarks/verify_bench.py --pages 10000 --body-kb 64 --big-mb 200
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from archiver.config import CrawlConfig
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow, MirrorFile
from archiver.warc.capture import Capture
from archiver.warc.cdxj import cdxj_line, write_sorted
from archiver.warc.files import WarcFiles

HOST = "bench.example"
LINKS_PER_PAGE = 10


def sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def page_name(index: int) -> str:
    return "index.html" if index == 0 else f"p{index}.html"


def page_url(index: int) -> str:
    return f"http://{HOST}/" if index == 0 else f"http://{HOST}/p{index}.html"


def page_body(index: int, pages: int, body_kb: int, rng: random.Random, local: bool) -> bytes:
    targets = rng.sample(range(pages), min(LINKS_PER_PAGE, pages))
    links = "".join(f'<a href="{page_name(t) if local else page_url(t)}">page {t}</a>\n' for t in targets)
    css, img = ("style.css", "logo.png") if local else ("/style.css", "/logo.png")
    padding = rng.randbytes(body_kb * 512).hex()  # hex of random bytes: compresses about 2:1
    return (
        f"<!doctype html><html><head><title>Page {index}</title>"
        f'<link rel="stylesheet" href="{css}"></head><body><img src="{img}">\n'
        f"{links}<p>{padding}</p></body></html>"
    ).encode()


def capture(url: str, body: bytes, content_type: str) -> Capture:
    path = url.split(HOST, 1)[1] or "/"
    return Capture(
        url=url,
        date=datetime.now(UTC),
        request_line=f"GET {path} HTTP/1.1",
        request_headers=[("Host", HOST), ("User-Agent", "bench")],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", content_type), ("Content-Length", str(len(body)))],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest=sha1(body),
        ip_address="127.0.0.1",
    )


def generate(root: Path, pages: int, body_kb: int, big_mb: int) -> None:
    """Write a complete, intact snapshot of ``pages`` HTML pages (plus a stylesheet and images)."""
    rng = random.Random(1)
    config = CrawlConfig(seeds=(page_url(0),), output=root)
    for folder in ("warc", "indexes", "logs", f"mirror/{HOST}"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "crawl.json").write_text(json.dumps({"archiver_version": "bench", "settings": config.to_json()}))
    resources = [
        (f"http://{HOST}/style.css", b"body { background: url(logo.png) }", "text/css"),
        (f"http://{HOST}/logo.png", b"\x89PNG" + bytes(range(256)) * 8, "image/png"),
        (f"http://{HOST}/logo-copy.png", b"\x89PNG" + bytes(range(256)) * 8, "image/png"),
    ]
    if big_mb:
        resources.append(
            (f"http://{HOST}/big.bin", os.urandom(big_mb * 1024 * 1024), "application/octet-stream")
        )
    lines = []
    mirrored_files = []
    with (
        WarcFiles(root / "warc", "bench", 256 * 1024**2) as warcs,
        Manifest.open(root / "manifest.sqlite3") as manifest,
    ):
        items = [(page_url(i), i) for i in range(pages)] + [(url, -1) for url, _, _ in resources]
        for url, index in items:
            if index >= 0:
                state = rng.getstate()
                body, mime = page_body(index, pages, body_kb, rng, local=False), "text/html"
                rng.setstate(state)
                mirrored = page_body(index, pages, body_kb, rng, local=True)
                name = page_name(index)
            else:
                body, mime = next((b, m) for u, b, m in resources if u == url)
                mirrored, name = body, url.rsplit("/", 1)[1]
            written = warcs.write_capture(capture(url, body, mime))
            (root / "mirror" / HOST / name).write_bytes(mirrored)
            mirrored_files.append(
                MirrorFile(f"{HOST}/{name}", hashlib.sha256(mirrored).hexdigest(), len(mirrored))
            )
            manifest.upsert(
                ManifestRow(
                    url=url,
                    found_by="seed" if index == 0 else "link",
                    depth=min(index, 1),
                    outcome="fetched",
                    status=200,
                    content_type=mime,
                    length=len(body),
                    payload_digest=written.payload_digest,
                    fetched_at=written.date,
                    warc_file=written.warc_file,
                    warc_offset=written.offset,
                    warc_length=written.length,
                    record_type=written.record_type,
                    local_path=f"{HOST}/{name}",
                )
            )
            lines.append(
                cdxj_line(
                    url,
                    written.date,
                    mime=mime,
                    status=200,
                    digest=written.payload_digest,
                    length=written.length,
                    offset=written.offset,
                    filename=written.warc_file,
                )
            )
        manifest.replace_mirror_files(mirrored_files)
    write_sorted(lines, root / "indexes" / "index.cdxj")
    (root / "index.html").write_text(f'<a href="mirror/{HOST}/index.html">{HOST}</a>')


def measure(root: Path) -> None:
    """Run verify in this process and print one JSON line of measurements."""
    from archiver.verify.verifier import verify_snapshot

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    report = verify_snapshot(root)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "ok": report.ok,
                "seconds": round(seconds, 2),
                "cpu_seconds": round(
                    usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime, 2
                ),
                "peak_rss_mib": round(peak / 1024, 1),
                "peak_rss_of_child_process_mib": round(child / 1024, 1),
                "rss_before_verify_mib": round(before / 1024, 1),
                "stats": dict(report.stats),
                "problems": dict(report.counts),
            }
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--body-kb", type=int, default=8, help="size of each page (KiB)")
    parser.add_argument("--big-mb", type=int, default=0, help="add one response of this many MiB")
    parser.add_argument("--keep", type=Path, help="build the snapshot here and keep it")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.measure)
        return 0
    if args.generate:
        generate(args.generate, args.pages, args.body_kb, args.big_mb)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch) / "snap"
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--generate",
                str(root),
                "--pages",
                str(args.pages),
                "--body-kb",
                str(args.body_kb),
                "--big-mb",
                str(args.big_mb),
            ],
            check=True,
        )
        warc_bytes = sum(p.stat().st_size for p in (root / "warc").iterdir())
        print(
            f"generated {args.pages} pages, {warc_bytes / 1024**2:.1f} MiB of WARC "
            f"in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        done = subprocess.run(
            [sys.executable, __file__, "--measure", str(root)], capture_output=True, text=True, check=True
        )
        result = json.loads(done.stdout)
        result.update(pages=args.pages, warc_mib=round(warc_bytes / 1024**2, 1))
        print(json.dumps(result, indent=2))
        return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
