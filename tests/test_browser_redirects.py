"""The hops of a redirect a rendered page's request meets go as Chromium sends them.

The crawl captures each hop of a request its browser makes, and must send each the Referer,
Origin and other headers Chromium sends it when it loads the page on its own; its browser is
answered each hop at its own URL, as Chromium alone is. A server records each request as it arrives; the
two are compared hop by hop.
"""

from __future__ import annotations

from test_as_chromium_asks import CHROMIUM, RecordingSite, chromium_asks, crawl_asks, only
from test_as_chromium_asks import recording as recording  # noqa: F401 - the fixture, where pytest finds it

ADDING = (
    "<script>"
    "let i = document.createElement('img'); i.src = '/i1'; document.body.append(i);"
    "let l = document.createElement('link'); l.rel = 'stylesheet'; l.href = '/s1';"
    " document.head.append(l);"
    "let f = document.createElement('iframe'); f.src = '/f1'; document.body.append(f);"
    "let u = document.createElement('img'); u.referrerPolicy = 'unsafe-url'; u.src = '/u1';"
    " document.body.append(u);"
    "let o = document.createElement('img'); o.src = '/o1'; document.body.append(o);"
    "let t = document.createElement('link'); t.rel = 'stylesheet'; t.href = '/t.css';"
    " document.head.append(t);"
    "</script>"
)
"""A script that adds images, stylesheets and a frame, most asked for through a redirect (t.css
names an image that is)."""


def chain(
    site: RecordingSite, first: str, end: str, end_type: str, body: str = "x", **first_headers: str
) -> list[str]:
    """Serve at ``first`` a redirect to another origin, which redirects back to ``end`` (of
    ``end_type``); the hop at ``first`` answers with ``first_headers`` too. Returns the compared
    keys of the three requests."""
    site.file(first, "", status=302, Location=site.other(f"{first}-away"), **first_headers)
    site.file(f"{first}-away", "", status=302, Location=site.url(end))
    site.file(end, body, end_type)
    return [f"127.0.0.1 {first}", f"localhost {first}-away", f"127.0.0.1 {end}"]


async def test_each_hop_of_a_rendered_pages_redirects_is_sent_what_chromium_sends_it(
    recording,
    run_crawl,
    tmp_path,  # noqa: F811 - the fixture imported
):
    """Images, a stylesheet, a frame and a stylesheet's image, asked for by the crawl's browser
    through a redirect to another origin and back: Chromium sends the first hop the page's URL,
    the next its origin alone (strict-origin-when-cross-origin), and the last that origin still
    (what the hop before was sent, under the policy); a hop's Referrer-Policy (no-referrer,
    origin, unsafe-url) rules the hops after it. The crawl sends each hop what Chromium sends."""
    recording.file("/p.html", "<p>page</p>" + ADDING)
    paths = chain(recording, "/i1", "/i.png", "image/png")
    paths += chain(recording, "/s1", "/s.css", "text/css", "p { color: red }", Referrer_Policy="no-referrer")
    paths += chain(recording, "/f1", "/f.html", "text/html", "<p>frame</p>")
    paths += chain(recording, "/u1", "/u.png", "image/png", Referrer_Policy="origin")
    paths += chain(recording, "/o1", "/o.png", "image/png", Referrer_Policy="unsafe-url")
    paths += chain(recording, "/c1", "/c.png", "image/png")
    recording.file("/t.css", "p { background: url(/c1) }", "text/css")
    chromium = only(await chromium_asks(recording, "/p.html"), paths)
    assert all(chromium.values()), chromium  # Chromium asked for each
    referers = {path: dict(sent).get("referer") for path, sent in chromium.items()}
    page, origin = "http://127.0.0.1:PORT/p.html", "http://127.0.0.1:PORT/"
    assert [referers[path] for path in paths[:3]] == [page, origin, origin], referers
    assert referers["127.0.0.1 /s.css"] is None
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", "/p.html", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium


async def test_a_frame_and_a_stylesheet_reached_through_a_redirect_live_at_the_chains_end(
    recording,
    run_crawl,
    tmp_path,  # noqa: F811 - the fixture imported
):
    """A frame and a stylesheet a script adds, each asked for through a redirect into a folder,
    name an image by a relative URL: Chromium resolves it against the chain's end (/dir/a.png,
    /css/b.png), where the document and the stylesheet live, and sends that end as the Referer.
    The crawl's browser, given the end's body at the chain's first URL, asked for /a.png and
    /b.png, from /f1 and /s1."""
    recording.file(
        "/p.html",
        "<p>page</p><script>"
        "let f = document.createElement('iframe'); f.src = '/f1'; document.body.append(f);"
        "let l = document.createElement('link'); l.rel = 'stylesheet'; l.href = '/s1';"
        " document.head.append(l);"
        "</script>",
    )
    recording.file("/f1", "", status=302, Location="/dir/f.html")
    recording.file(
        "/dir/f.html",
        "<p>frame</p><script>let i = document.createElement('img'); i.src = 'a.png';"
        " document.body.append(i)</script>",
    )
    recording.file("/s1", "", status=301, Location="/css/s.css")
    recording.file("/css/s.css", "p { background: url(b.png) }", "text/css")
    paths = ["127.0.0.1 /dir/a.png", "127.0.0.1 /css/b.png", "127.0.0.1 /a.png", "127.0.0.1 /b.png"]
    chromium = only(await chromium_asks(recording, "/p.html"), paths)
    assert [bool(asked) for asked in chromium.values()] == [True, True, False, False], chromium
    rendered = await crawl_asks(
        recording, run_crawl, tmp_path / "browser", "/p.html", browser="always", chromium=CHROMIUM
    )
    assert only(rendered, paths) == chromium
