"""A real site for the crawl benchmark: Debian's Python documentation (``apt-get install python3-doc``),
served by nginx as it is, plus the odd answers real sites give that it lacks.

The site folder holds ``www``, a symbolic link to the documentation's HTML, and the nginx
include that server.py's config loads: a 500, a redirect loop, two redirect chains (one of
three hops to a page, one to a folder) and a link to a missing page, all linked from
/index.html by nginx's sub_filter (the files themselves are never changed).

    python3 benchmarks/realsite.py DIR     # make the site folder and print what it holds
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from dataclasses import asdict
from pathlib import Path

from sitegen import REDIRECTS_CONF, SiteInfo, docroot

CANDIDATES = ("/usr/share/doc/python3/html", "/usr/share/doc/python3.*/html")
ODD_LINKS = (
    ("odd/error.html", "a page answering 500"),
    ("odd/loop-a.html", "a redirect loop"),
    ("odd/chain-1.html", "a chain of three redirects"),
    ("odd/moved", "a redirect to a folder"),
    ("odd/missing.html", "a page that does not exist"),
)
ODD_RULES = """
location = /odd/error.html { return 500; }
location = /odd/loop-a.html { return 302 /odd/loop-b.html; }
location = /odd/loop-b.html { return 302 /odd/loop-a.html; }
location = /odd/chain-1.html { return 301 /odd/chain-2.html; }
location = /odd/chain-2.html { return 302 /odd/chain-3.html; }
location = /odd/chain-3.html { return 301 /contents.html; }
location = /odd/moved { return 301 /library/; }
location = /index.html {
    sub_filter_once on;
    sub_filter '</body>' '<p class="odd">LINKS</p></body>';
}
"""


class RealSiteError(RuntimeError):
    """The documentation is not installed."""


def documentation() -> Path:
    """The folder of the Python documentation's HTML, or RealSiteError saying how to get it."""
    for pattern in CANDIDATES:
        for found in sorted(glob.glob(pattern)):
            if (Path(found) / "index.html").is_file():
                return Path(found).resolve()
    raise RealSiteError("the Python documentation is not installed: `apt-get install python3-doc`")


def make_real_site(site_dir: Path) -> SiteInfo:
    """Make (or refresh) the site folder; its SiteInfo counts the files served.

    ``pages`` counts every .html file, ``assets`` every other file (a crawl from
    /index.html reaches most of them, not necessarily all).
    """
    source = documentation()
    site_dir.mkdir(parents=True, exist_ok=True)
    www = docroot(site_dir)
    if www.is_symlink() or www.exists():
        www.unlink()
    www.symlink_to(source, target_is_directory=True)
    links = " ".join(f'<a href="{href}">{text}</a>' for href, text in ODD_LINKS)
    (site_dir / REDIRECTS_CONF).write_text(ODD_RULES.replace("LINKS", links))
    pages = assets = page_bytes = asset_bytes = 0
    for path in source.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        if path.suffix == ".html":
            pages, page_bytes = pages + 1, page_bytes + size
        else:
            assets, asset_bytes = assets + 1, asset_bytes + size
    return SiteInfo(
        pages=pages,
        assets=assets,
        redirects=5,
        missing=1,
        links=0,
        page_bytes=page_bytes,
        asset_bytes=asset_bytes,
        total_bytes=page_bytes + asset_bytes,
        seed=0,
    )


def main() -> int:
    """Command line: make the site folder and print its SiteInfo as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    try:
        print(json.dumps(asdict(make_real_site(args.directory)), indent=2))
    except RealSiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
