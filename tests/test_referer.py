"""A Referer is sent as a browser sends it: under the page's referrer policy (its
Referrer-Policy header, its <meta name="referrer">, its elements' referrerpolicy and
rel=noreferrer; strict-origin-when-cross-origin by default), and the WARC request record
holds it as sent."""

from __future__ import annotations

import ssl
from urllib.parse import quote

import pytest
import trustme
from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.findings import findings
from archiver.referrer_policy import header_policy, meta_policy, referer


@pytest.mark.parametrize(
    ("page", "target", "sent"),
    [
        ("http://h/a/b?q=1", "http://h/c", "http://h/a/b?q=1"),  # same origin: the whole URL
        ("http://h/a", "http://other/x", "http://h/"),  # another origin: the origin alone
        ("http://h:8080/a", "http://h/x", "http://h:8080/"),  # another port is another origin
        ("http://h/a", "https://h/x", "http://h/"),  # another scheme, too
        ("https://h/a", "http://h/x", None),  # https to http: nothing
        ("https://h/a", "https://cdn/x", "https://h/"),
        (None, "http://h/", None),  # a seed
        ("http://h/" + "a" * 5000, "http://h/x", "http://h/"),  # too long a URL: its origin
    ],
)
def test_default_referrer_policy(page, target, sent):
    assert referer(page, target) == referer(page, target, "strict-origin-when-cross-origin") == sent


SAME, CROSS, DOWN = "https://h/b", "https://cdn/x", "http://h/b"
"""From https://h/a?q: a URL of its origin, of another, and one over http."""


@pytest.mark.parametrize(
    ("policy", "same", "cross", "down"),
    [
        ("no-referrer", None, None, None),
        ("no-referrer-when-downgrade", "https://h/a?q", "https://h/a?q", None),
        ("same-origin", "https://h/a?q", None, None),
        ("origin", "https://h/", "https://h/", "https://h/"),
        ("strict-origin", "https://h/", "https://h/", None),
        ("origin-when-cross-origin", "https://h/a?q", "https://h/", "https://h/"),
        ("strict-origin-when-cross-origin", "https://h/a?q", "https://h/", None),
        ("unsafe-url", "https://h/a?q", "https://h/a?q", "https://h/a?q"),
    ],
)
def test_each_referrer_policy(policy, same, cross, down):
    page = "https://h/a?q"
    assert (referer(page, SAME, policy), referer(page, CROSS, policy), referer(page, DOWN, policy)) == (
        same,
        cross,
        down,
    )


@pytest.mark.parametrize(
    ("values", "policy"),
    [
        ("origin", "origin"),
        ("no-referrer, unsafe-url", "unsafe-url"),  # the last one known wins
        ("same-origin, a-policy-of-tomorrow", "same-origin"),  # unknown ones are ignored
        (["origin", " Strict-Origin "], "strict-origin"),  # headers repeated: one list
        ("never", ""),  # a legacy value is the meta's alone
        ("", ""),
        (None, ""),
    ],
)
def test_referrer_policy_header(values, policy):
    assert header_policy(values) == policy


@pytest.mark.parametrize(
    ("content", "policy"),
    [("never", "no-referrer"), ("always", "unsafe-url"), ("ORIGIN", "origin"), ("bogus", ""), (None, "")],
)
def test_referrer_policy_meta(content, policy):
    assert meta_policy(content) == policy


POLICY_PAGE = (
    b'<html><head><meta name="referrer" content="bogus"><meta name="referrer" content="origin">'
    b'<link rel=stylesheet href="/s.css" referrerpolicy="no-referrer"></head><body>'
    b'<a href="/plain">p</a><a href="/nr" rel="nofollow noreferrer">n</a>'
    b'<img src="/i.png" referrerpolicy="unsafe-url"><img src="/j.png" referrerpolicy="nonsense">'
    b'<div style="background: url(/bg.png)"></div><video crossorigin><source src="/v.mp4"></video>'
    b"<style>@font-face { src: url(/f.woff2) } p { background: url(/p.png) }</style>"
    b'<script type="module" src="/m.js"></script></body></html>'
)


@pytest.mark.parametrize("padding", [0, 300_000], ids=["tree", "streamed"])
def test_a_page_gives_its_links_their_referrer_policies(padding):
    """The meta's policy goes to every link but those whose element chooses another; an invalid
    value is ignored, as browsers ignore it. A page past findings.STREAMED_BYTES is read as a
    stream, alike. A font, a module script and a crossorigin element's URL are requested in
    CORS mode (with the page's Origin)."""
    body = POLICY_PAGE.replace(b"</body>", b"<!--" + b"x" * padding + b"--></body>")
    hints = findings(body, "http://h/", "text/html", "text/html")[4]
    assert {url: policy for url, (policy, _destination, _cors, _document) in hints.items()} == {
        "http://h/s.css": "no-referrer",
        "http://h/plain": "origin",
        "http://h/nr": "no-referrer",
        "http://h/i.png": "unsafe-url",
        "http://h/j.png": "origin",
        "http://h/bg.png": "origin",
        "http://h/v.mp4": "origin",
        "http://h/f.woff2": "origin",
        "http://h/p.png": "origin",
        "http://h/m.js": "origin",
    }
    cors = {url.rpartition("/")[2] for url, (_policy, _destination, cors, _document) in hints.items() if cors}
    assert cors == {"v.mp4", "f.woff2", "m.js"}


@pytest.mark.parametrize(
    ("markup", "mode"),
    [
        ('<img src="/x">', ""),
        ('<img crossorigin src="/x">', "same-origin"),
        ('<img crossorigin="Anonymous" src="/x">', "same-origin"),
        ('<img crossorigin="bogus" src="/x">', "same-origin"),  # an invalid value: anonymous
        ('<img crossorigin="use-credentials" src="/x">', "include"),
        ('<video crossorigin="use-credentials"><source src="/x"></video>', "include"),
        ('<video crossorigin poster="/x"></video>', ""),  # its poster is no-cors
        ('<video crossorigin><source src="/w"><source src="/x"></video>', "same-origin"),
        ('<picture><source srcset="/x"><img crossorigin src="/y"></picture>', "same-origin"),
        ('<picture><source srcset="/x"><img src="/y"></picture>', ""),
        ('<script src="/x"></script>', ""),  # a classic script: no-cors
        ('<script type="module" src="/x"></script>', "same-origin"),
        ('<script type="module" crossorigin="use-credentials" src="/x"></script>', "include"),
        ('<link rel="modulepreload" href="/x">', "same-origin"),
        ('<link rel="preload" as="fetch" href="/x">', ""),  # no crossorigin: no-cors, in Chromium
        ('<link rel="preload" as="fetch" crossorigin href="/x">', "same-origin"),
        ('<link rel="preload" as="fetch" crossorigin="use-credentials" href="/x">', "include"),
        ('<link rel="preload" as="font" href="/x">', ""),  # the font itself is another request
        ('<link rel="preload" as="font" crossorigin href="/x">', "same-origin"),
        ('<link rel="preload" as="image" href="/x">', ""),
        ('<link rel="preload" as="style" href="/x">', ""),
        ('<link rel="preload" as="script" href="/x">', ""),
        ('<link rel="preload" as="script" crossorigin href="/x">', "same-origin"),
        ('<link rel="stylesheet" href="/x">', ""),
        ('<link rel="manifest" href="/x">', "omit"),
        ('<link rel="manifest" crossorigin="use-credentials" href="/x">', "include"),
        ("<style>@font-face { src: url(/x) }</style>", "same-origin"),
        ("<style>b { background: url(/x) }</style>", ""),
        ("<iframe srcdoc='<script type=module src=/x></script>'></iframe>", "same-origin"),
    ],
)
def test_each_element_asks_in_the_cors_and_credentials_mode_html_gives_it(markup, mode):
    """The CORS mode of a link's request, as its credentials mode ('' for no-cors): HTML's CORS
    settings attribute, a module script's and a font's own, a preload's by its ``as``, a
    manifest's; a <picture>'s <source> asks as its <img>, a media element's <source>s as it
    (libxml2 nests the second in the first), a poster in no-cors mode, and a srcdoc document's
    links as its own elements say. A preload as=fetch was taken for no-cors, and these others
    went wrong too; then a preload without crossorigin (as=fetch, as=font) for CORS mode, which
    Chromium asks for in no-cors mode (Sec-Fetch-Mode: no-cors, no Origin)."""
    for padding in (0, 300_000):  # parsed as a tree, and as a stream
        body = f"<html><head>{markup}</head><body><!--{'x' * padding}--></body></html>".encode()
        assert findings(body, "http://h/", "text/html", "text/html")[4]["http://h/x"][2] == mode


def request_headers(root) -> dict[str, dict[str, str]]:
    """The request record's HTTP headers, by target URL."""
    found = {}
    for path in sorted((root / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "request":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    found[uri] = dict(record.http_headers.headers)
    return found


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    ca = trustme.CA()
    folder = tmp_path_factory.mktemp("tls")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    return ca, folder / "ca.pem"


async def test_referer_is_sent_and_recorded_as_a_browser_sends_it(site, other_site, run_crawl, authority):
    ca, ca_file = authority
    seen: dict[str, str | None] = {}

    def record(name: str):
        async def handler(request: web.Request) -> web.Response:
            seen[f"{name}{request.path_qs}"] = request.headers.get("Referer")
            return web.Response(text="x", content_type="text/plain")

        return handler

    for path in ("/logo.png", "/landing", "/plain.png"):
        other_site.handler(path, record("cdn"))
    await other_site.start()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)

    async def secure_page(request: web.Request) -> web.Response:
        body = f'<img src="{other_site.url("/plain.png")}">'  # https page, http image: no Referer
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", secure_page)
    secure = TestServer(app, host="127.0.0.1", scheme="https")
    await secure.start_server(ssl=context)
    secure_url = f"https://127.0.0.1:{secure.port}/"
    try:
        site.page(
            "/",
            links=["/same?x=1", "/to-cdn", secure_url],
            body=f'<img src="{other_site.url("/logo.png")}">',
        )
        site.handler("/same", record("site"))
        site.redirect("/to-cdn", other_site.url("/landing"))
        await site.start()
        result = await run_crawl(site.url("/"), scope="any", ca_bundle=str(ca_file))
    finally:
        await secure.close()
    home = site.url("/")
    origin = home.rstrip("/") + "/"
    assert seen["site/same?x=1"] == home  # same origin: the page's URL
    assert seen["cdn/logo.png"] == origin  # a requisite on another host: the origin
    assert seen["cdn/landing"] == origin  # through a redirect: still the page that linked
    assert seen["cdn/plain.png"] is None  # found on an https page, fetched over http
    assert manifest_rows(result.snapshot.root)[secure_url].outcome == "fetched"
    recorded = request_headers(result.snapshot.root)
    assert recorded[site.url("/same?x=1")]["Referer"] == home
    assert recorded[other_site.url("/logo.png")]["Referer"] == origin
    assert "Referer" not in recorded[site.url("/")]
    assert "Referer" not in recorded[other_site.url("/plain.png")]


async def test_referrer_policies_of_a_page_choose_its_referers(site, other_site, run_crawl):
    """A page's Referrer-Policy header, its <meta name="referrer"> (which wins over the header),
    its elements' referrerpolicy and rel=noreferrer choose the Referer of each request it makes,
    and of each hop of a redirect (a redirect's own header changes it for the hops after)."""
    seen: dict[str, str | None] = {}

    def record(name: str):
        async def handler(request: web.Request) -> web.Response:
            seen[f"{name}{request.path}"] = request.headers.get("Referer")
            return web.Response(text="x", content_type="text/plain")

        return handler

    for path in ("/logo.png", "/landing", "/open.png", "/after-hop"):
        other_site.handler(path, record("cdn"))
    await other_site.start()

    async def strict_header(request: web.Request) -> web.Response:
        body = (
            f'<a href="/same-hdr">s</a><img src="{other_site.url("/logo.png")}">'
            f'<a href="{other_site.url("/landing")}" rel=noreferrer>x</a>'
        )
        return web.Response(text=body, content_type="text/html", headers={"Referrer-Policy": "same-origin"})

    async def meta_page(request: web.Request) -> web.Response:
        body = (
            '<meta name="referrer" content="no-referrer"><a href="/same-meta">s</a>'
            f'<img src="{other_site.url("/open.png")}" referrerpolicy="unsafe-url"><a href="/hop">h</a>'
        )
        return web.Response(text=body, content_type="text/html", headers={"Referrer-Policy": "unsafe-url"})

    async def hop(request: web.Request) -> web.Response:
        # Seen with no Referer (the page's meta); its own header sends the next hop one.
        seen["site/hop"] = request.headers.get("Referer")
        headers = {"Location": other_site.url("/after-hop"), "Referrer-Policy": "unsafe-url"}
        return web.Response(status=302, headers=headers)

    site.page("/", links=["/strict", "/meta"])
    site.handler("/strict", strict_header)
    site.handler("/meta", meta_page)
    site.handler("/hop", hop)
    for path in ("/same-hdr", "/same-meta"):
        site.handler(path, record("site"))
    await site.start()
    await run_crawl(site.url("/"), scope="any")
    assert seen == {
        "site/same-hdr": site.url("/strict"),  # same-origin: the whole URL to its origin
        "cdn/logo.png": None,  # ...and nothing to another
        "cdn/landing": None,  # rel=noreferrer
        "site/same-meta": None,  # the meta's no-referrer wins over the header's unsafe-url
        "cdn/open.png": site.url("/meta"),  # the element's unsafe-url wins over the meta
        "site/hop": None,
        # The redirect's unsafe-url applies to what the hop was sent, nothing: none, as in Chromium.
        "cdn/after-hop": None,
    }


PAGE, ORIGIN = "page", "origin"
"""In CHAINS: the Referer a hop is sent is the linking page's whole URL, or its origin alone."""
CHAINS: dict[str, dict[str, tuple[str | None, ...]]] = {
    # How each hop names a page of server A (https) whose <meta name="referrer"> gives the policy,
    # for a link to a chain of redirects over A, B (http) and C (another https origin), as
    # Chromium 156 sends it: each hop's policy reduces the referrer the hop before left, so what
    # one hop leaves out no later hop sends.
    "": {
        "ABA": (PAGE, None, None),
        "ABC": (PAGE, None, None),
        "ACA": (PAGE, ORIGIN, ORIGIN),
        "AAB": (PAGE, PAGE, None),
        "ACC": (PAGE, ORIGIN, ORIGIN),
    },
    "no-referrer": dict.fromkeys(("ABA", "ABC", "ACA", "AAB", "ACC"), (None, None, None)),
    "no-referrer-when-downgrade": {
        "ABA": (PAGE, None, None),
        "ABC": (PAGE, None, None),
        "ACA": (PAGE, PAGE, PAGE),
        "AAB": (PAGE, PAGE, None),
        "ACC": (PAGE, PAGE, PAGE),
    },
    "same-origin": {
        "ABA": (PAGE, None, None),
        "ABC": (PAGE, None, None),
        "ACA": (PAGE, None, None),
        "AAB": (PAGE, PAGE, None),
        "ACC": (PAGE, None, None),
    },
    "origin": dict.fromkeys(("ABA", "ABC", "ACA", "AAB", "ACC"), (ORIGIN, ORIGIN, ORIGIN)),
    "strict-origin": {
        "ABA": (ORIGIN, None, None),
        "ABC": (ORIGIN, None, None),
        "ACA": (ORIGIN, ORIGIN, ORIGIN),
        "AAB": (ORIGIN, ORIGIN, None),
        "ACC": (ORIGIN, ORIGIN, ORIGIN),
    },
    "origin-when-cross-origin": {
        "ABA": (PAGE, ORIGIN, ORIGIN),
        "ABC": (PAGE, ORIGIN, ORIGIN),
        "ACA": (PAGE, ORIGIN, ORIGIN),
        "AAB": (PAGE, PAGE, ORIGIN),
        "ACC": (PAGE, ORIGIN, ORIGIN),
    },
    "unsafe-url": dict.fromkeys(("ABA", "ABC", "ACA", "AAB", "ACC"), (PAGE, PAGE, PAGE)),
}
CHAINS["strict-origin-when-cross-origin"] = CHAINS[""]  # the default


async def test_each_hop_of_a_redirect_is_sent_the_referer_chromium_sends_it(run_crawl, authority):
    """Each hop of a redirect chain is sent the Referer Chromium sends it, under each policy,
    over https, http and back: a hop's policy applies to what the hop before was sent, not to
    the page again, so a chain that went over http from an https page sends nothing after, and
    one that went to another origin sends the origin alone after, coming back to the page's."""
    ca, ca_file = authority
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    seen: dict[tuple[str, str], str | None] = {}
    bases: dict[str, str] = {}

    def chain_url(policy: str, hops: str) -> str:
        url = f"{bases[hops[-1]]}/end?tag={policy}-{hops}-{len(hops) - 1}"
        for at in range(len(hops) - 2, -1, -1):
            url = f"{bases[hops[at]]}/hop?tag={policy}-{hops}-{at}&to={quote(url, safe='')}"
        return url

    def server(name: str) -> web.Application:
        async def handler(request: web.Request) -> web.StreamResponse:
            if request.path == "/page":
                policy = request.query["p"]
                links = "".join(f'<a href="{chain_url(policy, hops)}">c</a>' for hops in CHAINS[policy])
                meta = f'<meta name="referrer" content="{policy}">' if policy else ""
                return web.Response(text=meta + links, content_type="text/html")
            if request.path == "/":
                links = "".join(f'<a href="/page?p={policy}">p</a>' for policy in CHAINS)
                return web.Response(text=links, content_type="text/html")
            seen[(name, request.query["tag"])] = request.headers.get("Referer")
            if request.path == "/hop":
                raise web.HTTPFound(request.query["to"])
            return web.Response(text="end", content_type="text/plain")

        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        return app

    servers = {
        name: TestServer(server(name), host="127.0.0.1", scheme="https" * (name != "B")) for name in "ABC"
    }
    for name, test_server in servers.items():
        await test_server.start_server(ssl=context if name != "B" else None)
        bases[name] = f"{'http' if name == 'B' else 'https'}://127.0.0.1:{test_server.port}"
    try:
        await run_crawl(
            bases["A"] + "/", scope="any", ca_bundle=str(ca_file), sitemaps=False, obey_robots=False
        )
    finally:
        for test_server in servers.values():
            await test_server.close()
    named: dict[str | None, str | None] = {PAGE: None, ORIGIN: bases["A"] + "/", None: None}
    wrong = {}
    for policy, chains in CHAINS.items():
        named[PAGE] = f"{bases['A']}/page?p={policy}"
        for hops, sent in chains.items():
            got = tuple(seen.get((hops[at], f"{policy}-{hops}-{at}"), "not asked") for at in range(len(hops)))
            if got != tuple(named[kind] for kind in sent):
                wrong[(policy, hops)] = got
    assert not wrong, wrong
