"""A small site with every kind of page requisite, served by the ``site`` fixture."""

from __future__ import annotations

import struct
import zlib

from conftest import Site


def png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid PNG image of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'

HEAD = """<link rel="stylesheet" href="/static/site.css">
<link rel="icon" href="/favicon.png"><script src="/static/app.js"></script>"""


def build_demo_site(site: Site) -> Site:
    """Pages in folders, a query page, a redirect chain, CSS with url() and @import,
    images through src, srcset and <picture>, a script, an iframe, inline styles."""
    body = """<h1 id="top">Demo</h1>
<nav><a href="/docs/">Docs</a> <a href="/about">About</a> <a href="/old">Old link</a>
<a href="/search?q=a%20b&amp;page=2">Search</a> <a href="#top">Top</a></nav>
<img id="plain" src="/img/a.png" alt="a">
<img id="srcset" src="/img/a.png" srcset="/img/a.png 1x, /img/b.png 2x" alt="b">
<picture><source srcset="/img/c.png" type="image/png"><img id="pic" src="/img/a.png" alt="c"></picture>
<img id="svg" src="/img/logo.svg" alt="svg">
<div id="inline" style="background-image: url('/img/b.png'); width: 4px; height: 4px"></div>
<style>#styled { background: url(/img/c.png); width: 4px; height: 4px }</style><div id="styled"></div>
<iframe src="/frame.html" title="frame"></iframe>"""
    site.page("/", title="Demo home", head=HEAD, body=body)
    site.page(
        "/docs/",
        title="Docs",
        head=HEAD,
        body='<a href="../about">About</a> <a href="page2.html">Page 2</a><img src="../img/a.png" alt="a">',
    )
    site.page(
        "/docs/page2.html",
        title="Docs 2",
        head=HEAD,
        body='<a href="./">Docs</a> <a href="/">Home</a> <img src="/img/b.png" alt="b">',
    )
    site.page(
        "/about",
        title="About",
        head=HEAD,
        body='<a href="/">Home</a> <a href="/docs/page2.html#x">Docs 2</a>',
    )
    site.page("/new", title="New", head=HEAD, body='<a href="/">Home</a>')
    site.page("/search?q=a%20b&page=2", title="Search", head=HEAD, body='<a href="/">Home</a>')
    site.page(
        "/frame.html",
        title="Frame",
        head='<link rel="stylesheet" href="/static/site.css">',
        body="<p>in a frame</p>",
    )
    site.redirect("/old", "/older")
    site.redirect("/older", "/new", status=302)
    site.file("/static/site.css", '@import "theme.css"; body { background: url(../img/bg.png) }', "text/css")
    site.file("/static/theme.css", "h1 { color: rgb(0, 128, 0) }", "text/css")
    site.file("/static/app.js", "document.documentElement.dataset.js = 'ran';", "application/javascript")
    for name, colour in (("a", (200, 0, 0)), ("b", (0, 200, 0)), ("c", (0, 0, 200)), ("bg", (240, 240, 240))):
        site.file(f"/img/{name}.png", png(rgb=colour), "image/png")
    site.file("/favicon.png", png(), "image/png")
    site.file("/img/logo.svg", SVG, "image/svg+xml")
    return site
