"""The CSS of a frame a script loads from a blob: URL, read by the crawl, the mirror and verify as
Chromium reads it.

A blob: URL is no base for a relative URL: in the document of such a frame, Chromium loads nothing
for ``url(rel.png)``, ``url(/root.png)`` or ``@import 'imp.css'`` (in a <style> or a style
attribute), only for an absolute URL. A rendered DOM keeps that document in the srcdoc of its
iframe, where the mirror's file would be its base: there each such URL would load a file beside
the page's, which verify reported missing.
"""

from __future__ import annotations

from conftest import manifest_rows
from script_site import png
from test_browser import CHROMIUM, CHROMIUM_ARGS, Recorder, async_playwright

from archiver.verify.verifier import verify_snapshot

RELATIVE = ("/rel.png", "/root.png", "/imp.css", "/inl.png")
"""What the blob: frame's CSS names with relative URLs, which resolve to nothing there."""


def blob_framing_page(origin: str) -> str:
    blob = (
        "<style>@import 'imp.css'; p{background:url(rel.png)} div{background:url(/root.png)}"
        f" span{{background:url({origin}/abs.png)}}</style>"
        "<p style=\"background:url('inl.png')\">blob</p><div>div</div><span>span</span>"
    )
    return (
        "<!doctype html><html><head><title>Blob frame</title></head><body><script>"
        "const frame = document.createElement('iframe');"
        f"frame.src = URL.createObjectURL(new Blob([{blob!r}], {{type: 'text/html'}}));"
        "document.body.append(frame);</script></body></html>"
    )


async def test_relative_urls_of_a_blob_frames_css_load_nothing_in_the_mirror_either(site, run_crawl):
    await site.start()
    site.file("/", blob_framing_page(site.url("").rstrip("/")))
    for path in ("/rel.png", "/root.png", "/inl.png", "/abs.png"):
        site.file(path, png(0, 120, 240), "image/png")
    site.file("/imp.css", "b{color:red}", "text/css")
    result = await run_crawl(site.url("/"), browser="always", chromium=CHROMIUM, max_tries=1)
    root = result.snapshot.root
    rows = manifest_rows(root)

    # The crawl asked for what Chromium asks for: the absolute URL alone.
    assert site.hits == {"/": 1, "/abs.png": 1}
    assert rows[site.url("/abs.png")].outcome == "fetched"
    assert not any(site.url(path) in rows for path in RELATIVE)
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))

    # The mirror's page, opened from file:// with the origin gone, loads none of them either.
    mirrored = root / "mirror" / site.host.replace(":", "+") / "index.html"
    await site.close()
    assert async_playwright is not None
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page()
        recorder = Recorder(page)
        await page.goto(mirrored.as_uri(), wait_until="networkidle")
        frames = len(page.frames)
        await browser.close()
    assert frames == 2
    asked = [url.rsplit("/", 1)[-1] for url in recorder.requests]
    assert not any(path.lstrip("/") in asked for path in RELATIVE), recorder.requests
    assert "abs.png" in asked
