"""Serve examples/site on 127.0.0.1 (with one redirect), for the offline demo.

Usage: python examples/serve_site.py [PORT]
"""

import sys
from pathlib import Path

from aiohttp import web

SITE = Path(__file__).resolve().parent / "site"


async def old_about(request: web.Request) -> web.Response:
    raise web.HTTPMovedPermanently("/about.html")


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(SITE / "index.html")


async def blog_index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(SITE / "blog" / "index.html")


def make_app() -> web.Application:
    """The demo site as an aiohttp application (the tests serve it too)."""
    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/old-about", old_about)
    app.router.add_get("/blog/", blog_index)
    app.router.add_static("/", SITE)
    return app


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    web.run_app(make_app(), host="127.0.0.1", port=port, print=None)


if __name__ == "__main__":
    main()
