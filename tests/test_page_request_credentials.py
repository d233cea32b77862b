"""What a page loads carries the origin and cookies a browser sends with it: as its CORS
mode says, from a sandboxed frame or a page its policy sandboxes (origin null)."""

from __future__ import annotations

from aiohttp import web
from conftest import manifest_rows


async def test_what_a_page_loads_carries_the_origin_and_cookies_a_browser_sends(site, other_site, run_crawl):
    """A font (in a stylesheet of another origin too), a module script and an element with a
    crossorigin attribute are CORS-mode requests: they carry the page's Origin, which a server
    answering the origins it allows alone needs; they went without. What a stylesheet or a frame
    of another site loads is judged by SameSite against the page shown (Chromium's site for
    cookies), not the stylesheet's or frame's site: cdn.test's Lax cookie went with them. A
    frame's requests are its document's: a font its stylesheets name (through an @import too)
    carries the frame's Origin; it carried the page shown's."""
    seen: dict[str, tuple[str | None, dict[str, str]]] = {}

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>cdn</title>", content_type="text/html")
        response.headers.add("Set-Cookie", "lax=1; SameSite=Lax; Path=/")
        return response

    def noted(content_type: str, body: str = "x", cors: bool = False):
        async def serve(request: web.Request) -> web.Response:
            origin = request.headers.get("Origin")
            seen[request.path] = (origin, dict(request.cookies))
            if cors and origin is None:  # fonts for the origins it allows alone
                return web.Response(status=403, text="no origin")
            headers = {"Access-Control-Allow-Origin": origin} if origin else {}
            return web.Response(text=body, content_type=content_type, headers=headers)

        return serve

    await site.start()
    home = f"http://site.test:{site.server.port}"
    css = "body { background: url(bg.png) } @font-face { font-family: f; src: url(f.woff2) }"
    frame = (
        f"<title>frame</title><img src='/frame.png'><link rel=stylesheet href='/fs.css'>"
        f"<script type=module src='{home}/fm.js'></script>"
    )
    other_site.handler("/setup", setup)
    other_site.handler("/s.css", noted("text/css", css))
    other_site.handler("/frame", noted("text/html", frame))
    frame_css = f"@import url(fs2.css); @font-face {{ font-family: g; src: url({home}/ff.woff2) }}"
    other_site.handler("/fs.css", noted("text/css", frame_css))
    other_site.handler("/fs2.css", noted("text/css", f"@font-face {{ src: url({home}/ff2.woff2) }}"))
    for path in ("/bg.png", "/plain.png", "/c.png", "/frame.png"):
        other_site.handler(path, noted("image/png"))
    for path in ("/f.woff2", "/m.js"):
        other_site.handler(path, noted("font/woff2", cors=True))
    await other_site.start()
    cdn = f"http://cdn.test:{other_site.server.port}"
    site.page(
        "/",
        head=f'<link rel=stylesheet href="{cdn}/s.css"><style>@font-face {{ src: url(/own.woff2) }}</style>',
        body=(
            f'<script type=module src="{cdn}/m.js"></script><img crossorigin src="{cdn}/c.png">'
            f'<img src="{cdn}/plain.png"><iframe src="{cdn}/frame"></iframe>'
        ),
    )
    site.handler("/own.woff2", noted("font/woff2"))
    for path in ("/ff.woff2", "/ff2.woff2", "/fm.js"):
        site.handler(path, noted("font/woff2", cors=True))
    resolve = (("site.test", "127.0.0.1"), ("cdn.test", "127.0.0.1"))
    result = await run_crawl(f"{cdn}/setup", f"{home}/", resolve=resolve, concurrency=1, scope="host")
    for path in ("/f.woff2", "/m.js", "/c.png"):
        assert seen[path][0] == home, path
    assert seen["/plain.png"][0] is None and seen["/bg.png"][0] is None
    assert seen["/own.woff2"][0] == home  # same-origin: Chromium names it all the same
    for path in ("/ff.woff2", "/ff2.woff2", "/fm.js"):
        assert seen[path][0] == cdn, path  # the frame's requests: its origin
    assert manifest_rows(result.snapshot.root)[f"{cdn}/f.woff2"].status == 200
    for path in ("/s.css", "/bg.png", "/f.woff2", "/frame", "/frame.png", "/fs.css"):
        assert seen[path][1] == {}, path  # all loaded for site.test's page: cross-site


async def test_cors_requests_send_cookies_and_origin_as_their_credentials_mode_says(
    site, other_site, run_crawl
):
    """A font, a module script, a <link rel=preload as=fetch crossorigin> and an element with
    crossorigin (or crossorigin=anonymous) are CORS-mode requests whose credentials go to the
    page's own origin alone; crossorigin=use-credentials sends them anywhere; a web app
    manifest's go nowhere. One that sends none keeps none its answer sets. Through a redirect
    from another origin back to the page's, the Origin is null (Fetch's tainted origin) and the
    credentials stay home. The crawl sent the jar's cookies with every one, the page's Origin
    after a redirect, and asked for a preload as=fetch without its Origin. A preload without
    crossorigin is no-cors, and a font of the page's own origin goes with its Origin, as
    Chromium asks for them (the crawl asked for the one in CORS mode, the other without an
    Origin), also after a redirect to that origin (the hop went without)."""
    seen: dict[str, tuple[str | None, dict[str, str]]] = {}

    def noted(set_cookie: str | None = None):
        async def serve(request: web.Request) -> web.Response:
            seen[request.path] = (request.headers.get("Origin"), dict(request.cookies))
            response = web.Response(text="<title>x</title>", content_type="text/html")
            if set_cookie:
                response.headers.add("Set-Cookie", set_cookie)
            return response

        return serve

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>set</title>", content_type="text/html")
        response.headers.add("Set-Cookie", "c=1; Path=/")
        return response

    other_site.handler("/setup", setup)
    paths = (
        "/f.woff2",
        "/m.js",
        "/anon.png",
        "/any.png",
        "/cred.png",
        "/plain.png",
        "/data.json",
        "/plain.json",
    )
    for path in (*paths, "/app.webmanifest", "/landed.js", "/after"):
        other_site.handler(path, noted("leak=1; Path=/" if path == "/anon.png" else None))
    await other_site.start()
    cdn = f"http://cdn.site.test:{other_site.server.port}"
    site.handler("/", noted("w=1; Path=/"))
    await site.start()
    home = f"http://www.site.test:{site.server.port}"
    site.page(
        "/page",
        head=(
            f"<style>@font-face {{ src: url({cdn}/f.woff2) }} @font-face {{ src: url(/own.woff2) }}"
            "@font-face { src: url(/own-moved.woff2) }</style>"
            f'<link rel=preload as=fetch crossorigin href="{cdn}/data.json">'
            f'<link rel=preload as=fetch href="{cdn}/plain.json">'
            f'<link rel=manifest href="{cdn}/app.webmanifest">'
            '<link rel=manifest href="/own.webmanifest">'
        ),
        body=(
            f'<script type=module src="{cdn}/m.js"></script><img crossorigin src="{cdn}/anon.png">'
            f'<img crossorigin=anonymous src="{cdn}/any.png">'
            f'<img crossorigin=use-credentials src="{cdn}/cred.png">'
            f'<img src="{cdn}/plain.png"><img crossorigin src="{cdn}/hop.png">'
            f'<script type=module src="/own-hop.js"></script><a href="{cdn}/after">after</a>'
        ),
    )
    other_site.redirect("/hop.png", f"{home}/back.png")
    site.redirect("/own-hop.js", f"{cdn}/landed.js")
    site.redirect("/own-moved.woff2", "/own-landed.woff2")
    for path in ("/own.woff2", "/own.webmanifest", "/back.png", "/own-landed.woff2"):
        site.handler(path, noted())
    resolve = (("www.site.test", "127.0.0.1"), ("cdn.site.test", "127.0.0.1"))
    await run_crawl(f"{cdn}/setup", f"{home}/", f"{home}/page", resolve=resolve, concurrency=1)
    for path in ("/f.woff2", "/m.js", "/anon.png", "/any.png", "/data.json", "/app.webmanifest"):
        assert seen[path] == (home, {}), path  # same-origin credentials, or none: not to cdn
    assert seen["/cred.png"] == (home, {"c": "1"})
    assert seen["/plain.png"] == seen["/plain.json"] == (None, {"c": "1"})  # no-cors: the cookies go
    assert seen["/own.woff2"] == (home, {"w": "1"})  # the page's own origin: they go too
    assert seen["/own-landed.woff2"] == (home, {"w": "1"})  # its Origin kept through a redirect
    assert seen["/own.webmanifest"] == (None, {})  # a manifest's never go
    assert seen["/back.png"] == ("null", {})  # tainted by its hop through cdn
    assert seen["/landed.js"] == (home, {})  # from its own origin to another: not tainted
    assert seen["/after"][1] == {"c": "1"}  # /anon.png's answer set no cookie


async def test_a_sandboxed_frames_requests_carry_origin_null(site, other_site, run_crawl):
    """A frame an iframe sandboxes without allow-same-origin has no origin: its CORS-mode requests
    (a font, a crossorigin image), those of a sandboxed srcdoc document and those of the frames
    it holds in turn go with Origin: null and no credentials, as Chromium sends them. They
    carried the frame's own origin (or the page's). So do the fonts of a crossorigin stylesheet
    it loads through a redirect (they carried the page's origin), and what it loads is of no
    site: the page's SameSite=Lax cookie stays home, as Chromium keeps it (it went, the page's
    site judged). Its no-cors requests (an image) name no origin, as in Chromium 156."""
    origins: dict[str, str | None] = {}
    cookies: dict[str, tuple[str | None, dict[str, str]]] = {}

    async def noted(request: web.Request) -> web.Response:
        origins[request.path] = request.headers.get("Origin")
        return web.Response(body=b"x", content_type="application/octet-stream")

    async def cookied(request: web.Request) -> web.Response:
        cookies[request.path] = (request.headers.get("Origin"), dict(request.cookies))
        return web.Response(body=b"x", content_type="image/png")

    await site.start()
    home = site.url("/").rstrip("/")
    for path in (
        "/s.woff2",
        "/b.woff2",
        "/n.png",
        "/o.woff2",
        "/p.woff2",
        "/pn.png",
        "/q.woff2",
        "/r.woff2",
        "/m.woff2",
    ):
        site.handler(path, noted)
    for path in ("/boxed.png", "/open.png"):
        site.handler(path, cookied)
    # A document its own Content-Security-Policy sandboxes has no origin either, and its frames
    # none; allow-same-origin keeps it, and a policy only reported sandboxes nothing.
    for path, name, policy, font in (
        ("/csp", "Content-Security-Policy", "img-src *, sandbox allow-scripts", "p"),
        ("/csp-origin", "Content-Security-Policy", "sandbox allow-same-origin", "q"),
        ("/csp-report", "Content-Security-Policy-Report-Only", "sandbox", "r"),
    ):
        style = f"<style>@font-face {{ src: url({home}/{font}.woff2) }}</style>"
        other_site.file(
            path, style + "<iframe src=/csp-nested></iframe>" * (font == "p"), headers={name: policy}
        )
    other_site.page("/csp-nested", body=f"<img crossorigin src='{home}/pn.png'>")
    other_site.page(
        "/boxed",
        head=f"<style>@font-face {{ src: url({home}/b.woff2) }}</style>"
        "<link rel=stylesheet crossorigin href=/moved.css>",
        body=f"<iframe src=/nested></iframe><img src='{home}/boxed.png'>",
    )
    other_site.redirect("/moved.css", "/real.css")
    other_site.file("/real.css", f"@font-face {{ src: url({home}/m.woff2) }}", "text/css")
    other_site.page("/nested", body=f"<img crossorigin src='{home}/n.png'>")
    other_site.page(
        "/open",
        head=f"<style>@font-face {{ src: url({home}/o.woff2) }}</style>",
        body=f"<img src='{home}/open.png'>",
    )
    await other_site.start()
    cdn = other_site.url("/").rstrip("/")
    srcdoc = f"<style>@font-face {{ src: url({cdn}/s.woff2) }}</style>".replace('"', "&quot;")
    site.file(
        "/",
        f'<iframe sandbox="allow-scripts" src="{cdn}/boxed"></iframe>'
        f'<iframe sandbox srcdoc="{srcdoc}"></iframe>'
        f'<iframe sandbox="allow-scripts Allow-Same-Origin" src="{cdn}/open"></iframe>'
        + "".join(f'<iframe src="{cdn}/{path}"></iframe>' for path in ("csp", "csp-origin", "csp-report")),
        headers={"Set-Cookie": "lax=1; SameSite=Lax; Path=/"},
    )
    other_site.handler("/s.woff2", noted)
    await run_crawl(site.url("/"), scope="any")
    assert origins == {
        "/s.woff2": "null",
        "/b.woff2": "null",
        "/n.png": "null",
        "/o.woff2": cdn,
        "/p.woff2": "null",
        "/pn.png": "null",
        "/q.woff2": cdn,
        "/r.woff2": cdn,
        "/m.woff2": "null",
    }
    # Its image, no-cors, names no origin, as in Chromium (test_as_chromium_asks compares them).
    assert cookies == {"/boxed.png": (None, {}), "/open.png": (None, {"lax": "1"})}


async def test_what_a_page_its_policy_sandboxes_loads_goes_as_chromium_sends_it(site, run_crawl):
    """A page its Content-Security-Policy sandboxes has no origin: Chromium sends no Referer with
    what it loads (an image, a frame, a font), no cookie its SameSite keeps home, and names the
    null origin only where the request is CORS-mode (a font), not on an image or a frame, as it
    does in a sandboxed frame. The crawl sent the page's URL as Referer, and Origin: null on
    the image. What its stylesheet loads names the stylesheet as Referer, and no origin (it named
    the null one), as in Chromium."""
    seen: dict[str, tuple[str | None, str | None, dict[str, str]]] = {}

    async def noted(request: web.Request) -> web.Response:
        headers = request.headers
        seen[request.path] = (headers.get("Origin"), headers.get("Referer"), dict(request.cookies))
        return web.Response(body=b"x", content_type="application/octet-stream")

    for path in ("/i.png", "/f.woff2", "/frame", "/bg.png"):
        site.handler(path, noted)
    site.file("/s.css", "body { background: url(/bg.png) }", "text/css")
    site.file(
        "/",
        "<style>@font-face { font-family: f; src: url(/f.woff2) }</style><link rel=stylesheet href=/s.css>"
        "<img src=/i.png><iframe src=/frame></iframe>",
        headers={"Content-Security-Policy": "sandbox allow-scripts", "Set-Cookie": "lax=1; SameSite=Lax"},
    )
    await site.start()
    await run_crawl(site.url("/"))
    assert seen == {
        "/i.png": (None, None, {}),
        "/f.woff2": ("null", None, {}),
        "/frame": (None, None, {}),
        "/bg.png": (None, site.url("/s.css"), {}),  # a stylesheet's requests name it, as Chromium's do
    }
