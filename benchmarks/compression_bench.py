"""Benchmark the gzip compression of WARC records: CPU per page and size, codec by codec.

Each HTML page of a generated site is compressed as one gzip member, as a
response record's block is: by the standard library's zlib, by ISA-L (isal,
what archiver uses, at records.GZIP_LEVEL) and, where it is installed, by
zlib-ng. Sizes are given against zlib at level 6, the usual default.

    python benchmarks/compression_bench.py --pages 3000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from isal import isal_zlib
from sitegen import docroot, generate_site, load_site, page_path

from archiver.warc.records import GZIP_LEVEL

Compress = Callable[[bytes], bytes]


def member(module: Any, level: int) -> Compress:
    """One gzip member of ``data`` by ``module`` (zlib's interface) at ``level``."""

    def compress(data: bytes) -> bytes:
        compressor = module.compressobj(level, module.DEFLATED, 16 + module.MAX_WBITS)
        return compressor.compress(data) + compressor.flush()

    return compress


def compressors() -> list[tuple[str, Compress]]:
    found = [(f"zlib {level}", member(zlib, level)) for level in (6, 9)]
    found += [
        (f"isal {level}" + (" (archiver)" if level == GZIP_LEVEL else ""), member(isal_zlib, level))
        for level in (1, 2, 3)
    ]
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return found
    return found + [(f"zlib-ng {level}", member(zlib_ng, level)) for level in (3, 6)]


def measure(compress: Compress, pages: list[bytes], runs: int) -> tuple[float, int]:
    """(best seconds over ``runs`` passes, bytes out) for every page."""
    best = float("inf")
    size = 0
    for _ in range(runs):
        started = time.process_time()
        size = sum(len(compress(page)) for page in pages)
        best = min(best, time.process_time() - started)
    return best, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3000, help="pages compressed (default 3000)")
    parser.add_argument("--runs", type=int, default=3, help="passes; the best counts (default 3)")
    parser.add_argument("--site", type=Path, help="a site sitegen.py generated (default: a new one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        site_dir = args.site or Path(scratch) / "site"
        info = load_site(site_dir) or generate_site(site_dir, args.pages)
        root = docroot(site_dir)
        pages = [
            (root / page_path(index).lstrip("/")).read_bytes() for index in range(min(args.pages, info.pages))
        ]
    print(f"{len(pages)} pages, {sum(map(len, pages)) / len(pages) / 1024:.1f} KB each on average")
    print("| codec, level | us/page | output MB | size against zlib 6 |")
    print("|---|---|---|---|")
    reference = None
    for name, compress in compressors():
        seconds, size = measure(compress, pages, args.runs)
        reference = reference or size
        per_page = seconds / len(pages) * 1e6
        print(f"| {name} | {per_page:.0f} | {size / 1e6:.2f} | {size / reference - 1:+.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
