"""A site that changes between two crawls, and the steps of re-archiving it against its previous
snapshot, for the re-archive tests (and the WACZ export of a re-archive)."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
from pathlib import Path
from typing import Any

from aiohttp import web

from archiver.warc.reader import WarcReader
from tests.conftest import Site, manifest_rows

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8

LAST_MODIFIED = "Mon, 02 Mar 2026 10:00:00 GMT"


class ChangingSite:
    """The pages of the site as they stand, served with or without validators; counts the
    conditional requests and the 304s answered."""

    def __init__(self, site: Site, validators: bool) -> None:
        self.site = site
        self.validators = validators
        self.pages: dict[str, tuple[bytes, str, dict[str, str]]] = {}
        self.conditional: list[str] = []
        self.not_modified: list[str] = []
        self.unconditional: set[str] = set()
        """Paths served with validators whose conditional requests are answered in full all the
        same: their unchanged bodies become identical-payload revisits, not 304s."""

    def put(self, path: str, body: bytes, content_type: str, **headers: str) -> None:
        self.pages[path] = (body, content_type, headers)

    def page(self, path: str, links: list[str], text: str = "") -> None:
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
        html = (
            f'<!doctype html><html><head><title>{path}</title><link rel="stylesheet" href="/style.css">'
            f'</head><body><img src="/logo.png">{text}{anchors}</body></html>'
        )
        self.put(path, html.encode(), "text/html; charset=utf-8")

    def remove(self, path: str) -> None:
        del self.pages[path]

    async def serve(self, request: web.Request) -> web.StreamResponse:
        found = self.pages.get(request.path)
        if found is None:
            return web.Response(status=404, text="gone", content_type="text/plain")
        body, content_type, extra = found
        headers = {"Content-Type": content_type, **extra}
        if self.validators:
            headers["ETag"] = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
            headers["Last-Modified"] = LAST_MODIFIED
            asked = request.headers.get("If-None-Match")
            if asked or request.headers.get("If-Modified-Since"):
                self.conditional.append(request.path)
            if asked == headers["ETag"] and request.path not in self.unconditional:
                self.not_modified.append(request.path)
                return web.Response(status=304, headers={"ETag": headers["ETag"]})
        return web.Response(body=body, headers=headers)


async def built_site(site: Site, validators: bool) -> ChangingSite:
    pages = ChangingSite(site, validators)
    pages.page("/", ["/same", "/changed", "/gone"])
    pages.page("/same", ["/"], "always the same")
    pages.page("/changed", ["/"], "first version")
    pages.page("/gone", ["/"], "removed before the second crawl")
    pages.put("/style.css", b"body { background: url(/logo.png) }", "text/css")
    # Stored gzipped: the 304 path must mirror it from OLD's payload decoded with OLD's headers.
    pages.put("/logo.png", gzip.compress(PNG, mtime=0), "image/png", **{"Content-Encoding": "gzip"})
    site.routes = {path: pages.serve for path in ("/", "/same", "/changed", "/gone", "/new", "/style.css")}
    site.routes["/logo.png"] = pages.serve
    await site.start()
    return pages


def change_site(pages: ChangingSite) -> None:
    pages.page("/", ["/same", "/changed", "/new"])
    pages.page("/changed", ["/"], "second version")
    pages.remove("/gone")
    pages.page("/new", ["/"], "added before the second crawl")


async def rearchived(
    site: Site, run_crawl: Any, tmp_path: Path, *, chain: bool = False
) -> tuple[ChangingSite, list[Path]]:
    """Snapshots of a site, each re-archived against the one before, with both kinds of revisits:
    /same answers its conditional requests with 304s (server-not-modified revisits); /style.css,
    /logo.png and /copy.css (the bytes of /style.css: two revisits of one original) answer them
    in full (identical-payload revisits). OLD is taken, the site changes, NEW is taken against
    OLD; with ``chain``, MID is taken against OLD after the change, and NEW against MID."""
    pages = await built_site(site, validators=True)
    pages.unconditional = {"/style.css", "/logo.png", "/copy.css"}
    pages.put("/copy.css", pages.pages["/style.css"][0], "text/css")
    site.routes["/copy.css"] = pages.serve
    pages.page("/", ["/same", "/changed", "/gone", "/copy.css"])
    snapshots = [tmp_path / name for name in (["old", "mid", "new"] if chain else ["old", "new"])]
    for before, snapshot in zip([None, *snapshots], snapshots, strict=False):
        if before is not None:
            # A second apart: replay tells captures apart by their 14-digit timestamps.
            await asyncio.sleep(1.1)
        if before == snapshots[0]:
            change_site(pages)
            pages.page("/", ["/same", "/changed", "/new", "/copy.css"])
        previous = str(before) if before is not None else None
        await run_crawl(site.url("/"), output=snapshot, previous=previous, sitemaps=False)
    return pages, snapshots


def revisits(snapshot: Path) -> dict[str, tuple[str, str, str]]:
    """URL -> the profile of its revisit record and the URL and date it refers to, for each
    revisit of ``snapshot`` (robots.txt's too)."""
    found = {}
    with WarcReader(snapshot / "warc") as reader:
        for url, row in manifest_rows(snapshot, for_crawlers=True).items():
            if row.record_type == "revisit":
                assert row.warc_file is not None and row.warc_offset is not None
                headers = reader.record(row.warc_file, row.warc_offset).rec_headers
                found[url] = (
                    headers.get_header("WARC-Profile"),
                    headers.get_header("WARC-Refers-To-Target-URI"),
                    headers.get_header("WARC-Refers-To-Date"),
                )
    return found


def host(site: Site) -> str:
    """The mirror's folder of the site's host (its port after a '+')."""
    return site.host.replace(":", "+")


def warc_record(snapshot: Path, url: str) -> tuple[dict[str, str], str]:
    """The WARC headers and HTTP status line of the response or revisit record of ``url``."""
    row = manifest_rows(snapshot)[url]
    assert row.warc_file is not None and row.warc_offset is not None
    with WarcReader(snapshot / "warc") as reader:
        record = reader.record(row.warc_file, row.warc_offset)
        return dict(record.rec_headers.headers), record.http_headers.statusline
