"""A test site built by scripts: an app shell whose text, links, images and data arrive by JavaScript.

- ``/`` is an empty app root and a script. The script fetches ``/api/items.json``,
  writes its items as text and as links to client-side routes (``/app/item/N``)
  and its title as the document's title,
  assembles image URLs at run time (``"/img/" + "pic" + n + ".png"``), puts
  them far down the page as lazy images (IntersectionObserver: ``data-src``
  becomes ``src`` when scrolled into view), moves to the route ``/app/home``
  with history.pushState, and tries what the crawl must refuse: a POST, a
  WebSocket, a service worker (its fetches would bypass the crawl), and an
  excluded tracking pixel.
- ``/app/...`` serves the same shell (as single-page apps are served); the
  script renders the route it finds in location.pathname, fetching
  ``/api/item/N.json`` for an item, whose name becomes the document's title.
- ``/about.html`` is a plain page with no script at all (never rendered).
- ``/style.css`` has a background image; every image is a real PNG.
"""

from __future__ import annotations

import json
import struct
import zlib

from aiohttp import web

ITEMS = 3
SHELL = """<!doctype html>
<html><head><meta charset="utf-8"><title>Script app</title>
<link rel="stylesheet" href="/style.css"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div>
<script src="/app.js"></script></body></html>
"""
APP_JS = r"""
(function () {
  var root = document.getElementById("root");
  function el(tag, text) {
    var node = document.createElement(tag); if (text) node.textContent = text; return node;
  }
  function lazyImages(names) {
    var spacer = el("div"); spacer.style.height = "3000px"; root.appendChild(spacer);
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        entry.target.src = entry.target.dataset.src; observer.unobserve(entry.target);
      });
    });
    names.forEach(function (n) {
      var img = el("img"); img.className = "lazy"; img.width = 20; img.height = 20;
      img.dataset.src = "/img/" + "pic" + n + ".png";   // assembled at run time
      root.appendChild(img); observer.observe(img);
    });
  }
  function home() {
    fetch("/api/items.json").then(function (r) { return r.json(); }).then(function (data) {
      root.appendChild(el("h1", data.title));
      document.title = data.title + " - Script app";
      var list = el("ul");
      data.items.forEach(function (item) {
        var li = el("li"); var a = el("a", item.name); a.href = "/app/item/" + item.id; li.appendChild(a);
        list.appendChild(li);
      });
      root.appendChild(list);
      var about = el("a", "About"); about.href = "/about.html"; root.appendChild(about);
      lazyImages(data.items.map(function (item) { return item.id; }));
      history.pushState({}, "", "/app/home");
    });
    fetch("/api/log", {method: "POST", body: "seen"}).catch(function () {});
    try { new WebSocket("ws://" + location.host + "/live"); } catch (e) {}
    if (navigator.serviceWorker) navigator.serviceWorker.register("/sw.js").catch(function () {});
    var pixel = new Image(); pixel.src = "/tracking.gif?u=" + encodeURIComponent(location.pathname);
  }
  function item(id) {
    fetch("/api/item/" + id + ".json").then(function (r) { return r.json(); }).then(function (data) {
      root.appendChild(el("h1", data.name));
      document.title = data.name;
      root.appendChild(el("p", data.text));
      var img = el("img"); img.src = "/img/pic" + id + ".png"; root.appendChild(img);
      var back = el("a", "Home"); back.href = "/"; root.appendChild(back);
    });
  }
  var match = location.pathname.match(/^\/app\/item\/(\d+)$/);
  if (match) { item(match[1]); } else { home(); }
})();
"""
SERVICE_WORKER = "self.addEventListener('fetch', event => event.respondWith(fetch(event.request)));\n"
STYLE = "body { font-family: sans-serif; background: url(/bg.png) repeat-x; }\n"
ABOUT = """<!doctype html><html><head><title>About</title><link rel="stylesheet" href="/style.css">
</head><body><h1>About this app</h1><p>A plain page: no script, nothing to render.</p>
<a href="/">Home</a></body></html>
"""


def png(red: int, green: int, blue: int, size: int = 4) -> bytes:
    """A real PNG of one colour (a browser decodes it: naturalWidth > 0)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    row = b"\x00" + bytes((red, green, blue)) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size))
        + chunk(b"IEND", b"")
    )


def item_text(number: int) -> str:
    return f"Item {number} text, written by a script from JSON"


def build_script_site(site: object) -> object:
    """Add the routes of the scripted site to a conftest Site; returns it."""

    async def shell(request: web.Request) -> web.StreamResponse:
        return web.Response(text=SHELL, content_type="text/html")

    add = site.file  # type: ignore[attr-defined]
    site.handler("/", shell)  # type: ignore[attr-defined]
    site.handler("/app/home", shell)  # type: ignore[attr-defined]
    for number in range(1, ITEMS + 1):
        site.handler(f"/app/item/{number}", shell)  # type: ignore[attr-defined]
        add(
            f"/api/item/{number}.json",
            json.dumps({"name": f"Item {number}", "text": item_text(number)}),
            "application/json",
        )
        add(f"/img/pic{number}.png", png(40 * number, 100, 200), "image/png")
    items = [{"id": number, "name": f"Item {number}"} for number in range(1, ITEMS + 1)]
    add("/api/items.json", json.dumps({"title": "Built by a script", "items": items}), "application/json")
    add("/app.js", APP_JS, "application/javascript")
    add("/style.css", STYLE, "text/css")
    add("/bg.png", png(250, 250, 240), "image/png")
    add("/about.html", ABOUT)
    add("/sw.js", SERVICE_WORKER, "application/javascript")
    return site


def wide_font(advance: int = 2000, character: str = "W") -> bytes:
    """A real TrueType font (a browser's sanitiser takes it) whose one glyph, for ``character``, is a
    box ``advance`` units wide in a 1000-unit em: text set in it is far wider than in any fallback."""

    def table_checksum(data: bytes) -> int:
        padded = data + b"\x00" * (-len(data) % 4)
        return sum(struct.unpack(f">{len(padded) // 4}I", padded)) & 0xFFFFFFFF

    code = ord(character)
    glyph = struct.pack(">hhhhhH", 1, 0, 0, 1000, 700, 3) + struct.pack(">H", 0)  # one contour, no code
    glyph += bytes([0x01] * 4)  # four points on the curve, each coordinate a 16-bit delta
    glyph += struct.pack(">4h", 0, 0, 1000, 0) + struct.pack(">4h", 0, 700, 0, -700)
    glyph += b"\x00" * (-len(glyph) % 4)
    segments = [(code, code, (1 - code) % 0x10000), (0xFFFF, 0xFFFF, 1)]
    count = len(segments)
    search = 2 ** (count.bit_length() - 1)
    cmap_body = struct.pack(">HHHH", count * 2, search * 2, search.bit_length() - 1, count * 2 - search * 2)
    cmap_body += struct.pack(f">{count}H", *(end for _start, end, _delta in segments)) + b"\x00\x00"
    cmap_body += struct.pack(f">{count}H", *(start for start, _end, _delta in segments))
    cmap_body += struct.pack(f">{count}H", *(delta for _start, _end, delta in segments))
    cmap_body += struct.pack(f">{count}H", *([0] * count))
    subtable = struct.pack(">HHH", 4, 6 + len(cmap_body), 0) + cmap_body
    names = [(1, "Wide"), (2, "Regular"), (4, "Wide"), (6, "Wide-Regular")]
    strings = b"".join(text.encode("utf-16-be") for _id, text in names)
    name = struct.pack(">HHH", 0, len(names), 6 + 12 * len(names))
    offset = 0
    for name_id, text in names:
        size = len(text.encode("utf-16-be"))
        name += struct.pack(">6H", 3, 1, 0x409, name_id, size, offset)
        offset += size
    os2 = struct.pack(">HhHHH", 4, advance, 400, 5, 0) + struct.pack(">10h", *([0] * 10)) + b"\x00" * 12
    os2 += b"\x00" * 16 + b"NONE" + struct.pack(">HHH", 0x40, code, code)
    os2 += (
        struct.pack(">hhhHH", 800, -200, 0, 800, 200) + b"\x00" * 8 + struct.pack(">hhHHH", 0, 700, 0, 32, 1)
    )
    tables = {
        b"OS/2": os2,
        b"cmap": struct.pack(">HHHHI", 0, 1, 3, 1, 12) + subtable,
        b"glyf": glyph,
        b"head": struct.pack(">IIIIHH", 0x10000, 0x10000, 0, 0x5F0F3CF5, 0x000B, 1000)
        + b"\x00" * 16
        + struct.pack(">hhhhHHhhh", 0, 0, 1000, 700, 0, 8, 2, 0, 0),
        b"hhea": struct.pack(">Ihhh", 0x10000, 800, -200, 0)
        + struct.pack(">Hhhhhhh", advance, 0, 0, 1000, 1, 0, 0)
        + b"\x00" * 8
        + struct.pack(">hH", 0, 2),
        b"hmtx": struct.pack(">HhHh", 500, 0, advance, 0),
        b"loca": struct.pack(">3H", 0, 0, len(glyph) // 2),
        b"maxp": struct.pack(">IHHHHHHHHHHHHHH", 0x10000, 2, 4, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0),
        b"name": name + strings,
        b"post": struct.pack(">IIhhIIIII", 0x30000, 0, -100, 50, 0, 0, 0, 0, 0),
    }
    search = 2 ** (len(tables).bit_length() - 1)
    font = struct.pack(
        ">IHHHH", 0x10000, len(tables), search * 16, search.bit_length() - 1, (len(tables) - search) * 16
    )
    offset = len(font) + 16 * len(tables)
    body = b""
    for tag, data in sorted(tables.items()):
        font += tag + struct.pack(">III", table_checksum(data), offset + len(body), len(data))
        body += data + b"\x00" * (-len(data) % 4)
    return font + body
