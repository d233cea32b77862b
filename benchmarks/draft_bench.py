"""Drafting mirror files while the crawl runs: CPU milliseconds a page, as the crawl calls it.

Generates a site with sitegen, then drafts each of N pages (mirror.document.draft) the
way a crawl does early on, when none of the URLs a page links to is fetched yet: every
link is a guess of LocalPaths (an empty manifest, the site's scope), with one rewrite
memo for all the pages. Prints the CPU time a page, the guesses noted (each one makes
the page checked at the end of the crawl) and the peak RSS.

    python3 benchmarks/draft_bench.py [--pages 1000] [--work DIR]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sitegen import docroot, generate_site  # noqa: E402

from archiver.mirror.document import draft  # noqa: E402
from archiver.mirror.linker import Memo  # noqa: E402
from archiver.mirror.local_paths import LocalPaths  # noqa: E402
from archiver.scope import Scope  # noqa: E402
from archiver.store.manifest import Manifest  # noqa: E402

HOST = "http://127.0.0.1:8080"


def measure(www: Path, pages: int) -> str:
    """Draft the first ``pages`` pages of the site in ``www``; one line of results."""
    files = sorted(www.rglob("*.html"))[:pages]
    documents = [(f"{HOST}/{path.relative_to(www)}", path.read_bytes()) for path in files]
    with Manifest.open(":memory:") as manifest:
        paths = LocalPaths(manifest.connection, guessing=Scope.from_seeds([HOST + "/index.html"]))
        memo = Memo()
        guesses = 0
        started = time.process_time()
        for url, body in documents:
            guesses += len(draft(body, url, "text/html", None, paths, memo).guesses)
        seconds = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return (
        f"{len(documents)} pages: {seconds * 1000 / len(documents):.2f} ms of CPU a page, "
        f"{guesses} guesses noted, peak RSS {peak} MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--work", type=Path, help="where the site is generated (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        site = (args.work or Path(scratch)) / f"site-{args.pages}"
        generate_site(site, args.pages)
        print(measure(docroot(site), args.pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
