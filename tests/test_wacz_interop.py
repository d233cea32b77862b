"""Other tools read our WACZ: py-wacz validates it, pywb replays it, and ReplayWeb.page opens it in
headless Chromium and replays a page, for the demo snapshot and a crawl of the local test site.

py-wacz and pywb live in the interop virtual environment (tests/test_interop.py);
ReplayWeb.page is the ``replaywebpage`` npm package, which scripts/test.sh
unpacks into .cache/replaywebpage (or where ARCHIVER_REPLAYWEBPAGE points). Its
service worker registers only in a secure context, which http://127.0.0.1 is.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from demo_site import build_demo_site
from test_browser import CHROMIUM, CHROMIUM_ARGS, async_playwright
from test_interop import _get, _wait_for, free_port, interop_venv

from archiver.export import wacz as wacz_module
from archiver.export import zipnum
from archiver.export.wacz import export_wacz

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parent.parent
REPLAYWEBPAGE = Path(os.environ.get("ARCHIVER_REPLAYWEBPAGE", ROOT / ".cache" / "replaywebpage" / "package"))
sys.path.insert(0, str(ROOT / "examples"))
from serve_site import make_app as demo_app  # noqa: E402


@dataclass(frozen=True)
class Exported:
    """A WACZ of a crawl, and a page of it with a text it shows."""

    path: Path
    origin: str
    page: str
    text: str


@pytest.fixture(scope="session")
def tools() -> Path:
    return interop_venv() / "bin"


@pytest.fixture(params=["demo", "site"])
async def wacz(request, site, run_crawl, tmp_path) -> Exported:
    """The README's demo (examples/site), or the local test site of every requisite
    (tests/demo_site.py), crawled and exported; its server stopped before any replay."""
    if request.param == "demo":
        server = TestServer(demo_app(), host="127.0.0.1")
        await server.start_server()
        origin = f"http://127.0.0.1:{server.port}"
        try:
            result = await run_crawl(origin + "/")
        finally:
            await server.close()
        page, text = "/about.html", "We grow tomatoes."
    else:
        await build_demo_site(site).start()
        origin = site.url("/").rstrip("/")
        result = await run_crawl(origin + "/")
        await site.close()
        page, text = "/docs/page2.html", "Docs"
    target = tmp_path / f"{request.param}.wacz"
    export_wacz(result.snapshot.root, target)
    return Exported(target, origin, page, text)


async def validated(tools: Path, package: Path) -> None:
    """py-wacz's ``wacz validate`` accepts ``package``."""
    done = await asyncio.to_thread(
        subprocess.run, [str(tools / "wacz"), "validate", "-f", str(package)], text=True, capture_output=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation succeeded, the passed WACZ is valid" in done.stdout


@contextlib.asynccontextmanager
async def pywb_replaying(tools: Path, root: Path, package: Path) -> AsyncIterator[str]:
    """pywb given ``package`` alone (wb-manager add --unpack-wacz), in ``root``: the base URL of
    its collection while the block runs."""
    root.mkdir()
    for command in (["init", "snap"], ["add", "--unpack-wacz", "snap", str(package)]):
        done = await asyncio.to_thread(
            subprocess.run, [str(tools / "wb-manager"), *command], cwd=root, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
    port = free_port()
    with open(root / "wayback.log", "w") as log:
        process = subprocess.Popen(
            [str(tools / "wayback"), "-p", str(port), "-b", "127.0.0.1"], cwd=root, stdout=log, stderr=log
        )
        try:
            base = f"http://127.0.0.1:{port}/snap"
            await asyncio.to_thread(_wait_for, f"{base}/", process)
            yield base
        finally:
            process.terminate()
            process.wait(timeout=10)


async def test_py_wacz_validates_it(wacz, tools):
    await validated(tools, wacz.path)


async def test_pywb_replays_it(wacz, tools, tmp_path):
    """pywb takes a WACZ in (wb-manager add --unpack-wacz) and replays its pages."""
    async with pywb_replaying(tools, tmp_path / "pywb", wacz.path) as base:
        status, body, _ = await asyncio.to_thread(_get, f"{base}/2026id_/{wacz.origin}{wacz.page}")
        assert status == 200 and wacz.text.encode() in body, (status, body[:300])


@pytest.fixture
def replaywebpage() -> Path:
    if not (REPLAYWEBPAGE / "sw.js").is_file():
        if os.environ.get("CI") == "true":
            raise AssertionError(f"no ReplayWeb.page in {REPLAYWEBPAGE} (scripts/test.sh unpacks it)")
        pytest.skip("ReplayWeb.page is not installed (scripts/test.sh installs it)")
    if async_playwright is None or not os.path.exists(CHROMIUM):
        pytest.skip("Chromium or Playwright is not installed")
    return REPLAYWEBPAGE


def player(package: Path, wacz: Path, url: str) -> web.Application:
    """A page embedding ReplayWeb.page on ``url`` of ``wacz``, served with its UI and service worker."""
    embed = (
        f'<!doctype html><html><head><script src="/replay/ui.js"></script></head><body>'
        f'<replay-web-page source="/archive.wacz" url="{url}" replaybase="/replay/" embed="replayonly" '
        f'style="display:block;width:1000px;height:700px"></replay-web-page></body></html>'
    )
    script = {"Content-Type": "application/javascript"}

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=embed, content_type="text/html")

    def serve(path: Path, headers: dict[str, str] | None = None) -> Any:
        async def handler(request: web.Request) -> web.FileResponse:
            return web.FileResponse(path, headers=headers)

        return handler

    app = web.Application()
    app.router.add_get("/", index)
    # FileResponse answers Range requests: ReplayWeb.page reads a WACZ a part at a time.
    app.router.add_get("/archive.wacz", serve(wacz))
    app.router.add_get("/replay/sw.js", serve(package / "sw.js", script))
    app.router.add_get("/replay/ui.js", serve(package / "ui.js", script))
    return app


async def replayed_text(package: Path, wacz: Path, url: str, text: str) -> tuple[str, str]:
    """The URL and text of the frame in which ReplayWeb.page shows ``url``, once ``text`` is in it.

    On a first visit the player's frame can be asked of our server before the service
    worker controls it, and shows our 404 (replayweb.page issue 412); the player reloads
    itself then, but not always: as its users do, the page is reloaded (twice at most).
    """
    server = TestServer(player(package, wacz, url), host="127.0.0.1")
    await server.start_server()
    assert async_playwright is not None
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                await page.goto(f"http://127.0.0.1:{server.port}/")
                reloads = 0
                for _ in range(240):  # up to a minute on a busy machine
                    shown = await frame_texts(page)
                    for frame_url, body in shown.items():
                        if "/replay/w/" in frame_url and text in body:
                            return frame_url, body
                    missed = any("/replay/?" in u and "404: Not Found" in b for u, b in shown.items())
                    if missed and reloads < 2:
                        reloads += 1
                        await page.reload()
                        continue
                    await asyncio.sleep(0.25)
                shown = await frame_texts(page)
                raise AssertionError(f"{text!r} never shown after {reloads} reloads; frames: {shown}")
            finally:
                await browser.close()
    finally:
        await server.close()


async def frame_texts(page: Any) -> dict[str, str]:
    """Each frame's URL and the text it shows (a frame that went away meanwhile shows nothing)."""
    texts = {}
    for frame in page.frames:
        try:
            texts[frame.url] = await frame.evaluate("document.body ? document.body.innerText : ''")
        except Exception:  # noqa: BLE001 - a frame detached or navigating while asked
            texts[frame.url] = ""
    return texts


async def test_replaywebpage_replays_a_page_of_it_in_chromium(wacz, replaywebpage):
    url = wacz.origin + wacz.page
    frame, body = await replayed_text(replaywebpage, wacz.path, url, wacz.text)
    # The page came out of the archive (its server is stopped), in the replay frame, by its URL.
    assert frame.endswith(f"mp_/{url}"), frame
    assert wacz.text in body


async def test_replaywebpage_replays_a_folder_page_that_ends_a_block_of_the_index(
    site, run_crawl, tmp_path, replaywebpage, monkeypatch
):
    """ReplayWeb.page looks /a/ up by the key /a/ where pywb's is /a: a block ending with /a/,
    the next starting with /a-b (which sorts between the two), hid /a/ from it."""
    site.page("/", links=["/a/", "/a-b"], title="Home")
    site.page("/a/", title="Folder", body="<p>In the folder</p>")
    site.page("/a-b", title="Beside", body="<p>Beside the folder</p>")
    await site.start()
    result = await run_crawl(site.url("/"))
    url = site.url("/a/")
    await site.close()
    # Blocks of a line (not 1,024), so that every line ends one.
    monkeypatch.setattr(
        wacz_module, "write_blocks", functools.partial(zipnum.write_blocks, lines_per_block=1)
    )
    target = tmp_path / "folder.wacz"
    export_wacz(result.snapshot.root, target)
    frame, body = await replayed_text(replaywebpage, target, url, "In the folder")
    assert frame.endswith(f"mp_/{url}"), frame
