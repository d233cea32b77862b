"""A Referer is sent as a browser sends it (strict-origin-when-cross-origin), and the WARC
request record holds it as sent."""

from __future__ import annotations

import ssl

import pytest
import trustme
from aiohttp import web
from aiohttp.test_utils import TestServer
from conftest import manifest_rows
from warcio.archiveiterator import ArchiveIterator

from archiver.request_headers import referer


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
    ],
)
def test_referrer_policy(page, target, sent):
    assert referer(page, target) == sent


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
