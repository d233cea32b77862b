"""A lost manifest gives back how each URL was found where a browser or an encoding decided it."""

from __future__ import annotations

from conftest import manifest_rows
from repairs import found, lose_and_repair
from script_site import png
from test_browser import CHROMIUM
from test_browser_frames import REPLACED, assert_read_as_chromium_reads_it, windows_1252_frame


async def test_a_frame_first_found_as_a_link_is_given_back_the_page_that_framed_it(site, run_crawl) -> None:
    """The home page links f.html (a windows-1252 page with no script, not rendered, whose onload
    handler adds fs.css) and p.html, a rendered page that frames it: the crawl notes f.html as
    framed by p.html (framed_by), so fs.css is read in f.html's encoding. A manifest written again
    from the WARC files gave f.html no framed_by: it counted as never having run in a browser. It
    is given back, and verify passes on the same mirror, fs.css read as Chromium read it."""
    site.page("/", links=["/f.html", "/p.html"])
    site.page("/p.html", body='<iframe src="f.html"></iframe><script>var x = 1;</script>')
    windows_1252_frame(site, "/f.html")
    site.file("/fs.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="auto", chromium=CHROMIUM, browser_tabs=1)).snapshot.root
    assert manifest_rows(root)[site.url("/f.html")].framed_by == site.url("/p.html")

    repaired = await lose_and_repair(root, site)
    assert {url: row.framed_by for url, row in repaired.after.items()} == {
        url: row.framed_by for url, row in repaired.before.items()
    }
    assert found(repaired.after) == found(repaired.before)
    assert_read_as_chromium_reads_it(site, root, "/fs.css", REPLACED)


async def test_what_a_rendered_pages_script_asked_for_is_found_on_that_page_again(site, run_crawl) -> None:
    """A rendered page's script fetches data.json, which no link names: the crawl found it on that
    page (a requisite, one level down). A manifest written again from the WARC files found it
    on no page; it is found on the page its request record names as Referer, and verify passes."""
    site.page("/", links=["/p.html"])
    site.page("/p.html", body="<script>fetch('/data.json')</script>")
    site.file("/data.json", b'{"a": 1}', "application/json")
    await site.start()
    root = (await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM)).snapshot.root
    assert found(manifest_rows(root))[site.url("/data.json")] == ("requisite", site.url("/p.html"), 2)

    repaired = await lose_and_repair(root, site, same_mirror=False)
    assert found(repaired.after) == found(repaired.before)


async def test_a_stylesheet_naming_no_encoding_is_read_in_its_pages_again(site, run_crawl) -> None:
    """A windows-1252 page links s.css, which names no encoding and asks for café.png: the crawl
    read it in the page's encoding. A manifest written again from the WARC files read it in
    UTF-8, queued a garbled café.png that the resume fetched (a 404), and left the real one found
    on no page; it is read as the crawl read it, nothing is fetched, and verify passes."""
    page = '<link rel="stylesheet" href="s.css"><p>caf\xe9</p>'
    site.file("/", page.encode("cp1252"), "text/html; charset=windows-1252")
    site.file("/s.css", "p{background:url(café.png)}".encode("cp1252"), "text/css")
    site.file("/caf\u00e9.png", png(200, 100, 0), "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    assert found(manifest_rows(root))[site.url("/caf%C3%A9.png")] == ("requisite", site.url("/s.css"), 2)

    repaired = await lose_and_repair(root, site)
    assert found(repaired.after) == found(repaired.before)
