"""A re-archive asks with the validators of the previous capture (If-None-Match,
If-Modified-Since) and takes a 304 as confirming that URL's own capture: not another with its
payload, not one whose head changed since, not a damaged one."""

from __future__ import annotations

import gzip
import random
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from rearchive_site import LAST_MODIFIED, PNG, ChangingSite, host, warc_record
from test_verify_tamper import edit_in_place, edit_record_of, server_blanked

from archiver.report import DANGLING_REVISIT
from archiver.store.changes import Changes
from archiver.verify.verifier import verify_snapshot
from archiver.warc.records import NOT_MODIFIED_PROFILE, REVISIT_PROFILE
from tests.conftest import manifest_rows


async def test_a_304_confirms_the_urls_own_capture_not_another_with_its_payload(site, run_crawl, tmp_path):
    """OLD stored /app (200, HTML) as a revisit of /missing (a 404 with the same bytes), and
    /page (text/html) as one of /raw (text/plain): a 304 to /app or /page took the other URL's
    status and type, so /app became a 404 and /page was not parsed."""
    shell = b'<!doctype html><title>app</title><a href="/deep">deep</a>'
    pages = ChangingSite(site, validators=True)
    pages.page("/", ["/missing", "/app", "/raw", "/page"])
    pages.put("/app", shell, "text/html")
    pages.put("/raw", shell, "text/plain")
    pages.put("/page", shell, "text/html")
    pages.page("/deep", [])
    site.routes = {path: pages.serve for path in ("/", "/missing", "/app", "/raw", "/page", "/deep")}

    async def shell_404(request: web.Request) -> web.StreamResponse:
        return web.Response(status=404, body=shell, content_type="text/html")

    site.routes["/missing"] = shell_404
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False, concurrency=1)
    old_rows = manifest_rows(old)
    for path, other in (("/app", "/missing"), ("/page", "/missing")):
        assert old_rows[site.url(path)].record_type == "revisit", path
        assert warc_record(old, site.url(path))[0]["WARC-Refers-To-Target-URI"] == site.url(other)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False, concurrency=1)
    rows = manifest_rows(new)
    for path in ("/app", "/page"):
        assert (rows[site.url(path)].status, rows[site.url(path)].content_type) == (200, "text/html"), path
    assert rows[site.url("/deep")].outcome == "fetched"
    with Changes(old / "manifest.sqlite3", new / "manifest.sqlite3") as changes:
        assert changes.counts()["changed"] == changes.counts()["gone"] == 0
    assert verify_snapshot(new).ok


@pytest.mark.parametrize("weak", ["", "W/"])
async def test_a_304_that_names_another_version_is_asked_again(site, run_crawl, tmp_path, weak):
    """A server that answers If-Modified-Since alone, with the new version's ETag: that 304 does
    not confirm what OLD holds (RFC 9111, section 4.3.4: a weak ETag, compared weakly, must match
    too); the page is fetched whole."""
    version = {"n": 1}

    async def serve(request: web.Request) -> web.StreamResponse:
        etag = f'{weak}"v{version["n"]}"'
        if request.headers.get("If-Modified-Since"):
            return web.Response(status=304, headers={"ETag": etag})
        body = f"<!doctype html><p>version {version['n']}</p>"
        return web.Response(
            text=body, content_type="text/html", headers={"ETag": etag, "Last-Modified": LAST_MODIFIED}
        )

    site.handler("/", serve)
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    version["n"] = 2
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    row = manifest_rows(new)[site.url("/")]
    assert (
        row.record_type == "response"
        and row.payload_digest != manifest_rows(old)[site.url("/")].payload_digest
    )
    assert "version 2" in (new / "mirror" / host(site) / "index.html").read_text()
    assert verify_snapshot(new).ok


def logo_confirmed_by_304(asked: list[str | None]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A logo that answers 304 (and a Cache-Control) to its own Last-Modified, noting each
    If-Modified-Since it is asked with in ``asked``."""

    async def serve(request: web.Request) -> web.StreamResponse:
        asked.append(request.headers.get("If-Modified-Since"))
        if request.headers.get("If-Modified-Since") == LAST_MODIFIED:
            return web.Response(status=304, headers={"Cache-Control": "max-age=60"})
        return web.Response(body=PNG, content_type="image/png", headers={"Last-Modified": LAST_MODIFIED})

    return serve


async def test_a_third_snapshot_asks_with_the_validators_a_304_left_out(site, run_crawl, tmp_path):
    """The 304 MID stored sends no Last-Modified (it need not): NEW still asks with OLD's, as the
    head of the response the 304 confirmed, updated by the 304's headers."""
    asked: list[str | None] = []
    site.handler("/logo.png", logo_confirmed_by_304(asked))
    await site.start()
    old, mid, new = tmp_path / "old", tmp_path / "mid", tmp_path / "new"
    for output, previous in ((old, None), (mid, old), (new, mid)):
        await run_crawl(
            site.url("/logo.png"), output=output, previous=previous and str(previous), sitemaps=False
        )
    assert asked == [None, LAST_MODIFIED, LAST_MODIFIED]
    headers, status = warc_record(new, site.url("/logo.png"))
    assert (
        status.startswith("304")
        and headers["WARC-Refers-To-Date"] == manifest_rows(old)[site.url("/logo.png")].fetched_at
    )
    assert verify_snapshot(new).ok
    assert (new / "mirror" / host(site) / "logo.png").read_bytes() == PNG


async def test_a_304_of_the_previous_snapshot_whose_head_changed_gives_no_validators(
    site, run_crawl, tmp_path
):
    """MID stored a 304 for the logo (a revisit, its block its head alone). Its head changed
    since (only its digest tells): NEW does not ask with validators read through it, nor
    take what it confirmed for a 304, but fetches the logo whole."""
    asked: list[str | None] = []
    site.handler("/logo.png", logo_confirmed_by_304(asked))
    await site.start()
    old, mid, new = tmp_path / "old", tmp_path / "mid", tmp_path / "new"
    for output, previous in ((old, None), (mid, old)):
        await run_crawl(
            site.url("/logo.png"), output=output, previous=previous and str(previous), sitemaps=False
        )
    confirmed = manifest_rows(mid)[site.url("/logo.png")]
    assert confirmed.record_type == "revisit" and confirmed.warc_file and confirmed.warc_offset is not None
    assert confirmed.warc_length is not None
    edit_in_place(
        mid / "warc" / confirmed.warc_file,
        confirmed.warc_offset,
        confirmed.warc_length,
        server_blanked(b"max-age=60", b"max-age=61"),
    )
    await run_crawl(site.url("/logo.png"), output=new, previous=str(mid), sitemaps=False)
    assert asked == [None, LAST_MODIFIED, None]
    # The body whole, a 200, refers to OLD's intact response by its payload's digest.
    headers, status = warc_record(new, site.url("/logo.png"))
    assert status.startswith("200") and headers["WARC-Profile"] == REVISIT_PROFILE
    assert headers["WARC-Refers-To-Date"] == manifest_rows(old)[site.url("/logo.png")].fetched_at
    assert verify_snapshot(new).ok


@pytest.mark.parametrize("confirmed_by_304", [False, True], ids=["response", "304"])
async def test_a_previous_response_whose_head_changed_gives_no_validators(
    site, run_crawl, tmp_path, confirmed_by_304
):
    """OLD's response of the logo has its Last-Modified changed since (its payload intact, only
    its digest tells): NEW does not ask with that date, read as OLD's own head or as the head a
    304 of MID confirmed, but fetches the logo whole."""
    asked: list[str | None] = []
    site.handler("/logo.png", logo_confirmed_by_304(asked))
    await site.start()
    old, mid, new = tmp_path / "old", tmp_path / "mid", tmp_path / "new"
    chain = ((old, None), (mid, old)) if confirmed_by_304 else ((old, None),)
    for output, previous in chain:
        await run_crawl(
            site.url("/logo.png"), output=output, previous=previous and str(previous), sitemaps=False
        )
    response = manifest_rows(old)[site.url("/logo.png")]
    assert response.record_type == "response" and response.warc_file and response.warc_offset is not None
    assert response.warc_length is not None
    changed = LAST_MODIFIED.replace("10:00", "11:00")
    edit_in_place(
        old / "warc" / response.warc_file,
        response.warc_offset,
        response.warc_length,
        server_blanked(LAST_MODIFIED.encode(), changed.encode()),
    )
    before = list(asked)
    await run_crawl(site.url("/logo.png"), output=new, previous=str(chain[-1][0]), sitemaps=False)
    assert asked == [*before, None]
    headers, status = warc_record(new, site.url("/logo.png"))
    assert status.startswith("200")


async def test_a_damaged_original_of_a_304_past_the_decode_limit_is_named_not_read(site, run_crawl, tmp_path):
    """NEW's page is a 304 of OLD's, a page that decodes past the 32 MiB verify reads for links,
    so the rest of OLD's record is never read to its digests. OLD's record has its head changed
    since (its charset, only its digest tells): verify names that damage, and takes nothing
    from the record, neither its headers nor its body, to judge NEW's page by."""
    page = '<!doctype html><title>café</title><a href="/a">a</a>'.encode() + b"<p>filler</p>" * (3 << 20)
    tail = random.Random(0).randbytes(1 << 20)  # read past the decode limit, never reached
    body = gzip.compress(page + b"<!--" + tail + b"-->", mtime=0)
    etag = '"big"'

    async def serve(request: web.Request) -> web.StreamResponse:
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        headers = {"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip", "ETag": etag}
        return web.Response(body=body, headers=headers)

    site.handler("/", serve)
    site.page("/a")
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    assert warc_record(new, site.url("/"))[0]["WARC-Profile"] == NOT_MODIFIED_PROFILE
    assert verify_snapshot(new).ok
    edit_record_of(old, site.url("/"), lambda record: record.replace(b"charset=utf-8", b"charset=cp866", 1))
    report = verify_snapshot(new)
    text = report.render_text(str(new))
    assert set(report.counts) == {DANGLING_REVISIT}, text
    assert f"original {site.url('/')} in {new / '..' / 'old'}" in text and "digests" in text
