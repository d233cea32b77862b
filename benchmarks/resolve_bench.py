"""Link resolution, the crawl's hot path: microseconds per link, as the crawl calls it.

Generates a site with sitegen (pages of about 40 links, relative and root-relative),
reads every link of N pages with the crawl's parser, then times links.resolve_reference
on them in page order (CPU time, best of 5): once with the crawl's memo (what the crawl pays), once with the
memo cleared before each page's links (every link a first sight), and once per link
with no memo at all (the parser alone).

    python3 benchmarks/resolve_bench.py [--pages 1000] [--work DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sitegen import docroot, generate_site  # noqa: E402

from archiver import links  # noqa: E402
from archiver.html_stream import parse_html  # noqa: E402
from archiver.links import base_contexts, iter_html_references, resolve_reference  # noqa: E402


def page_links(www: Path, pages: int) -> list[tuple[str, list[str]]]:
    """(page URL, its link values) of the first ``pages`` pages of the site."""
    found = []
    for path in sorted(www.rglob("*.html"))[:pages]:
        url = "http://127.0.0.1:8080/" + path.relative_to(www).as_posix()
        root = parse_html(path.read_bytes())
        values = [value for *_, value, _kind in iter_html_references(root)] if root is not None else []
        found.append((url, values))
    return found


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "resolve-bench")
    args = parser.parse_args()
    site = args.work / f"site-{args.pages}"
    generate_site(site, args.pages, 1)
    pages = page_links(docroot(site), args.pages)
    count = sum(len(values) for _url, values in pages)

    def memo() -> None:
        links._normalized.cache_clear()
        for url, values in pages:
            contexts = base_contexts(url)
            for value in values:
                resolve_reference(value, url, contexts)

    def cold() -> None:
        for url, values in pages:
            links._normalized.cache_clear()
            contexts = base_contexts(url)
            for value in values:
                resolve_reference(value, url, contexts)

    def none() -> None:
        for url, values in pages:
            contexts = base_contexts(url)
            for value in values:
                resolve_reference(value, url, contexts, remember=False)

    print(f"{len(pages)} pages, {count} links ({count / len(pages):.1f} a page)")
    for name, work in (("with the crawl's memo", memo), ("memo cleared each page", cold), ("no memo", none)):
        seconds = best_of(5, work)
        per_link, per_page = seconds / count * 1e6, seconds / len(pages) * 1e6
        print(f"{name:24} {per_link:6.2f} us a link, {per_page:7.1f} us a page")


if __name__ == "__main__":
    main()
