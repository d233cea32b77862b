"""``archiver serve``: a local web server of a snapshot's index.html and mirror.

Serves only ``index.html`` and files under ``mirror/``, never through a
symbolic link, with the content type their extension names (or, for a file
whose name has none, the type the manifest recorded). A mirror file that is not
what the mirror build wrote (written_files.py) is refused with a 500 and one
line in the log: served, it would pass for the archive. make_app() is the
aiohttp application, for embedding; serve() runs it until cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mimetypes
import signal
from pathlib import Path

from aiohttp import web

from archiver.errors import ArchiverError, UnsafePathError
from archiver.mirror.written_files import WrittenFiles
from archiver.paths import EXTENSIONS
from archiver.store.manifest import Manifest
from archiver.store.rows import FETCHED
from archiver.store.snapshot import Snapshot
from archiver.warc.safe_join import safe_join

_BY_EXTENSION = {ext: mime for mime, exts in reversed(EXTENSIONS.items()) for ext in exts}
_BY_EXTENSION.update(
    {
        ".html": "text/html",
        ".htm": "text/html",
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".xml": "application/xml",
    }
)


class OneLine(logging.Filter):
    """A request the server could not read (a header past its limit, a malformed request line)
    is said in one line, what the error says cut short: a traceback says nothing to whoever
    browses a snapshot, and a client can send as many as it likes."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            said = " ".join(str(error).split())
            record.msg = f"{record.getMessage()}: {type(error).__name__}{': ' if said else ''}{said}"[:240]
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


LOG = logging.getLogger("archiver.serve")
"""What the server says of the requests it could not read (aiohttp's server logger otherwise):
``archiver serve`` shows it on stderr, through OneLine."""


def content_type_of(name: str, recorded: str | None = None) -> str:
    """The Content-Type to serve a file named ``name`` with."""
    suffix = Path(name).suffix.lower()
    mime = _BY_EXTENSION.get(suffix) or mimetypes.guess_type(name)[0] or recorded
    return mime or "application/octet-stream"


def _recorded_types(snapshot: Snapshot) -> dict[str, str]:
    """Content types from the manifest of files whose names carry no known extension."""
    if not snapshot.manifest_path.is_file():
        return {}
    found = {}
    with Manifest.open(snapshot.manifest_path, readonly=True) as manifest:
        for row in manifest.rows(FETCHED):
            if row.local_path and row.content_type:
                suffix = Path(row.local_path).suffix.lower()
                if suffix not in _BY_EXTENSION:
                    found[row.local_path] = row.content_type
    return found


def make_app(snapshot_root: Path) -> web.Application:
    """The aiohttp application serving ``snapshot_root``."""
    snapshot = Snapshot(Path(snapshot_root))
    recorded = _recorded_types(snapshot)
    written = WrittenFiles(snapshot)

    async def handle(request: web.Request) -> web.StreamResponse:
        relative = request.match_info["path"]
        if relative in ("", "index.html"):
            relative = "index.html"
        elif not relative.startswith("mirror/"):
            raise web.HTTPNotFound(text="only index.html and mirror/ are served")
        try:
            path = safe_join(snapshot.root, relative.rstrip("/"))
            if path.is_dir():
                if not relative.endswith("/"):
                    # As web servers answer a folder named without its slash: its index.html
                    # served at the folder's name would resolve its relative links one folder up.
                    raw = request.rel_url
                    query = f"?{raw.raw_query_string}" if raw.raw_query_string else ""
                    raise web.HTTPMovedPermanently(location=f"{raw.raw_path}/{query}")
                path = safe_join(snapshot.root, relative.rstrip("/") + "/index.html")
            elif relative.endswith("/"):
                raise web.HTTPNotFound()  # a file is no folder
            if not path.is_file():
                raise web.HTTPNotFound()
        except (UnsafePathError, OSError):  # OSError: a name too long for the file system, ...
            raise web.HTTPNotFound() from None
        # Every file served is what the mirror build wrote (index.html too), else refused.
        in_snapshot = path.relative_to(snapshot.root).as_posix()
        changed = await written.changed(in_snapshot, path)
        if changed is not None:
            said = f"{in_snapshot}: not served, {changed} (archiver verify names it)"
            LOG.warning("%s", said)
            raise web.HTTPInternalServerError(text=said)
        mime = content_type_of(path.name, recorded.get(relative.removeprefix("mirror/")))
        return web.FileResponse(path, headers={"Content-Type": mime, "Cache-Control": "no-cache"})

    app = web.Application()
    app.router.add_get("/{path:.*}", handle)  # HEAD too, as link checkers and curl -I ask
    return app


async def serve(
    snapshot_root: Path, host: str, port: int, started: asyncio.Future[str] | None = None
) -> None:
    """Serve until cancelled (or Ctrl-C, or SIGTERM); ``started`` gets the base URL once listening.

    Cancelling it stops the server and closes every connection.
    """
    runner = web.AppRunner(make_app(snapshot_root), access_log=None, logger=LOG)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise ArchiverError(
                f"cannot listen on {host}:{port}: {exc.strerror}; try another --port"
            ) from None
        bound = runner.addresses[0]
        address = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"http://{address}:{bound[1]}/"
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for ending in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(ending, stop.set)
        if started is not None and not started.done():
            started.set_result(url)
        await stop.wait()
    finally:
        await runner.cleanup()
