"""What the rewrite tests share: a page, the URLs archived from it and their local paths, and
the rewriters called as the mirror calls them."""

from __future__ import annotations

from archiver.mirror.rewrite import rewrite_html

PAGE = "http://site.test/dir/page.html"
HERE = "site.test/dir/page.html"
ARCHIVED = {
    "http://site.test/target": "site.test/target.html",
    "http://site.test/dir/sibling.png": "site.test/dir/sibling.png",
    "http://site.test/img/a.png": "site.test/img/a.png",
    "http://site.test/img/b.png": "site.test/img/b.png",
    "http://site.test/style.css": "site.test/style.css",
    "http://site.test/list?page=2": "site.test/list@page=2.html",
    "http://site.test/old": "site.test/new/index.html",  # a redirect, resolved to its final file
    "http://cdn.test/lib.js": "cdn.test/lib.js",
    "http://other.test/base/x.html": "other.test/base/x.html",
    "http://site.test/%E6%97%A5%E6%9C%AC.html": "site.test/日本.html",
    "http://site.test/dir/page.html": HERE,
}


def resolve(url: str) -> str | None:
    return ARCHIVED.get(url)


def rewrite(markup: str, encoding: str | None = None, page: str = PAGE) -> str:
    return rewrite_html(markup.encode("utf-8"), page, encoding, resolve).decode("utf-8")


QUERIES = {
    "http://site.test/s?q=caf%E9": "site.test/s@q=caf-1252.html",
    "http://site.test/s?q=caf%C3%A9": "site.test/s@q=caf-utf8.html",
    "http://site.test/c?%C3%A9": "site.test/c.png",
}


SVG_URL = "http://site.test/dir/a.svg"
SVG_PATH = "site.test/dir/a.svg"
