"""Check a snapshot as other web-archive tools read it, and say every difference.

    python3 benchmarks/replay_check.py SNAPSHOT [--tools VENV/bin] [--replaywebpage DIR]
                                       [--pages N] [--skip pywb,wacz,...] [--previous OLD ...]

Readers and checks, each reported as a list of problems (exit 1 when any):

- warcio: ``warcio check`` (block and payload digests) and ``warcio index`` of each WARC;
- spec: every record against WARC 1.1 as read here: the WARC-Target-URI a URI (no
  spaces, no bytes outside ASCII, no angle brackets), the WARC-Date in its form,
  Content-Length the block's length, record ids unique, a request concurrent to a
  record there is, a warcinfo first in each file naming it, a response's
  WARC-Payload-Digest the digest of its entity body as stored (no transfer
  coding, content coding kept), a revisit refers to a capture of the same payload
  that the snapshot or an earlier one (--previous) holds;
- cdxj: ``cdxj-indexer`` of the WARC files against our CDXJ index, line by line;
- pywb: ``wayback`` over the WARC files with our index, then with its own
  (``wb-manager reindex``): every page loaded in headless Chromium, each request
  answered 4xx/5xx by pywb or failed listed, unless the crawl refused it by design
  (a URL the manifest has as skipped, failed, or an error answer archived as such);
- wacz: ``archiver export --wacz``, ``wacz validate``, then each page in
  ReplayWeb.page in headless Chromium, the same way.

pywb, cdxj-indexer and py-wacz come from the interop virtual environment the tests
make (.cache/interop-venv); ReplayWeb.page from .cache/replaywebpage/package
(scripts/test.sh); Chromium from PATH; Playwright from this Python.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parent.parent
WARC_DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
RECORD_ID = re.compile(r"^<[a-zA-Z][a-zA-Z0-9+.-]*:[^<>\s]+>$")
TRUNCATED_REASONS = {"length", "time", "disconnect", "unspecified"}
WARCINFO_FIELDS = ("software", "format")


@dataclass
class Report:
    """Problems found, by reader."""

    problems: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, reader: str, problem: str) -> None:
        self.problems.setdefault(reader, []).append(problem)

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Row:
    url: str
    outcome: str
    status: int | None
    reason: str | None
    redirect_to: str | None


def manifest_rows(snapshot: Path) -> dict[str, Row]:
    db = sqlite3.connect(f"file:{snapshot / 'manifest.sqlite3'}?mode=ro", uri=True)
    try:
        return {
            url: Row(*row)
            for url, *row in db.execute("SELECT url, url, outcome, status, reason, redirect_to FROM urls")
        }
    finally:
        db.close()


def warc_files(snapshot: Path) -> list[Path]:
    return sorted((snapshot / "warc").glob("*.warc.gz"))


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, errors="replace", **kwargs)


# --- warcio ---------------------------------------------------------------------------------------


def check_warcio(files: list[Path], tools: Path, report: Report) -> None:
    for path in files:
        done = run([str(tools / "warcio"), "check", "-v", str(path)])
        if done.returncode != 0 or "fail" in done.stdout:
            failing = [line for line in done.stdout.splitlines() if "fail" in line or "WARC-" in line]
            report.add(
                "warcio check", f"{path.name}: exit {done.returncode}: {failing[:6]} {done.stderr[-300:]}"
            )
        done = run(
            [str(tools / "warcio"), "index", "-f", "warc-type,warc-target-uri,length,offset", str(path)]
        )
        if done.returncode != 0:
            report.add("warcio index", f"{path.name}: exit {done.returncode}: {done.stderr[-300:]}")
            continue
        for line in done.stdout.splitlines():
            entry = json.loads(line)
            if not entry.get("warc-type"):
                report.add("warcio index", f"{path.name}: a record of no type: {line[:200]}")


# --- WARC 1.1, record by record -------------------------------------------------------------------


def is_uri(text: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", text)) and all(
        0x20 < ord(ch) < 0x7F and ch not in '<>"{}|\\^`' for ch in text
    )


def sha1_of(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


@dataclass(frozen=True)
class Stored:
    """What a record of a snapshot says, for the checks across records."""

    file: str
    offset: int
    rec_type: str
    record_id: str
    target: str
    date: str
    payload_digest: str


def read_records(
    path: Path, report: Report, records: dict[str, Stored], concurrent: list[tuple[str, str, str]]
) -> list[Stored]:
    """Check each record of ``path`` on its own; what they say, for the checks across records."""
    kept = []
    with open(path, "rb") as f:
        iterator = ArchiveIterator(f, check_digests=True)
        first = True
        for record in iterator:
            headers = record.rec_headers
            where = f"{path.name}@{iterator.offset}"
            rec_type = record.rec_type
            if first and rec_type != "warcinfo":
                report.add("spec", f"{where}: the first record is {rec_type}, not warcinfo")
            first = False
            record_id = headers.get_header("WARC-Record-ID") or ""
            if not RECORD_ID.match(record_id):
                report.add("spec", f"{where}: WARC-Record-ID {record_id!r} is not <URI>")
            if record_id in records:
                report.add("spec", f"{where}: WARC-Record-ID {record_id} used twice")
            date = headers.get_header("WARC-Date") or ""
            if not WARC_DATE.match(date):
                report.add(
                    "spec", f"{where}: WARC-Date {date!r} is not of the form YYYY-MM-DDThh:mm:ss[.fff]Z"
                )
            if headers.protocol != "WARC/1.1":
                report.add("spec", f"{where}: version {headers.protocol}")
            target = headers.get_header("WARC-Target-URI") or ""
            if rec_type != "warcinfo" and not is_uri(target):
                report.add("spec", f"{where}: WARC-Target-URI {target[:120]!r} is not a URI")
            for name, value in headers.headers:
                if any(ord(ch) > 0x7F for ch in name) or "\n" in value or "\r" in value:
                    report.add("spec", f"{where}: WARC header {name!r} holds bytes a header cannot")
            truncated = headers.get_header("WARC-Truncated")
            if truncated is not None and truncated not in TRUNCATED_REASONS:
                report.add("spec", f"{where}: WARC-Truncated {truncated!r}")
            declared = int(headers.get_header("Content-Length") or -1)  # its block's: warcio check
            raw = record.raw_stream.read()
            if rec_type in ("response", "request", "revisit") and record.http_headers is None:
                report.add("spec", f"{where}: a {rec_type} of no HTTP head")
            if rec_type == "warcinfo":
                fields = dict(
                    line.split(":", 1) for line in raw.decode("utf-8", "replace").splitlines() if ":" in line
                )
                for name in WARCINFO_FIELDS:
                    if name not in fields:
                        report.add("spec", f"{where}: warcinfo names no {name}")
                if headers.get_header("WARC-Filename") != path.name:
                    report.add(
                        "spec", f"{where}: warcinfo WARC-Filename {headers.get_header('WARC-Filename')!r}"
                    )
            elif rec_type == "response":
                payload = headers.get_header("WARC-Payload-Digest")
                if payload != sha1_of(raw) and not truncated:
                    report.add(
                        "spec", f"{where}: payload digest {payload} of {target[:100]}, body is {sha1_of(raw)}"
                    )
                te = record.http_headers.get_header("Transfer-Encoding") if record.http_headers else None
                if te:
                    report.add("spec", f"{where}: body stored with Transfer-Encoding: {te} left in its head")
            elif rec_type == "request" and not headers.get_header("WARC-Concurrent-To"):
                report.add("spec", f"{where}: a request concurrent to nothing")
            elif rec_type == "revisit":
                for name in (
                    "WARC-Profile",
                    "WARC-Refers-To-Target-URI",
                    "WARC-Refers-To-Date",
                    "WARC-Payload-Digest",
                ):
                    if not headers.get_header(name):
                        report.add("spec", f"{where}: revisit of {target[:100]} has no {name}")
                refers_date = headers.get_header("WARC-Refers-To-Date") or ""
                if refers_date and not WARC_DATE.match(refers_date):
                    report.add("spec", f"{where}: WARC-Refers-To-Date {refers_date!r}")
            if declared < 0:
                report.add("spec", f"{where}: no Content-Length")
            for to in headers.get_header("WARC-Concurrent-To", "").split():
                concurrent.append((where, to, target))
            stored = Stored(
                path.name,
                iterator.offset,
                rec_type,
                record_id,
                target,
                date,
                headers.get_header("WARC-Payload-Digest") or "",
            )
            records[record_id] = stored
            kept.append(stored)
    return kept


def check_spec(files: list[Path], previous: list[Path], report: Report) -> None:
    records: dict[str, Stored] = {}
    concurrent: list[tuple[str, str, str]] = []
    ours: list[Stored] = []
    for path in files:
        try:
            ours += read_records(path, report, records, concurrent)
        except Exception as exc:  # noqa: BLE001 - a reader's failure is what we report
            report.add("spec", f"{path.name}: warcio cannot read it: {type(exc).__name__}: {exc}")
    for where, to, target in concurrent:
        other = records.get(to)
        if other is None:
            report.add("spec", f"{where}: WARC-Concurrent-To {to} names no record")
        elif other.target not in (target, target.removeprefix("urn:dom:")):
            report.add(
                "spec", f"{where}: a record of {target[:80]} concurrent to a record of {other.target[:80]}"
            )
    captures: dict[tuple[str, str], str] = {}  # (uri, date) -> payload digest
    for old in previous:
        for path in warc_files(old):
            with open(path, "rb") as f:
                for record in ArchiveIterator(f):
                    h = record.rec_headers
                    if record.rec_type in ("response", "revisit"):
                        captures[h.get_header("WARC-Target-URI"), h.get_header("WARC-Date")] = (
                            h.get_header("WARC-Payload-Digest") or ""
                        )
    for stored in ours:
        if stored.rec_type in ("response", "revisit"):
            captures.setdefault((stored.target, stored.date), stored.payload_digest)
    for path in files:
        with open(path, "rb") as f:
            iterator = ArchiveIterator(f)
            for record in iterator:
                if record.rec_type != "revisit":
                    continue
                h = record.rec_headers
                key = (h.get_header("WARC-Refers-To-Target-URI"), h.get_header("WARC-Refers-To-Date"))
                digest = captures.get(key)
                where = f"{path.name}@{iterator.offset}"
                if digest is None:
                    report.add("spec", f"{where}: revisit refers to {key}, which no snapshot given holds")
                elif digest != h.get_header("WARC-Payload-Digest"):
                    report.add("spec", f"{where}: revisit's payload digest differs from that of {key}")
    report.note(f"spec: {len(ours)} records read, {Counter(s.rec_type for s in ours)}")


# --- cdxj-indexer -----------------------------------------------------------------------------------

CDXJ_FIELDS = ("url", "mime", "status", "digest", "length", "offset", "filename")


def cdxj_entries(text: str) -> dict[tuple[str, str], tuple[str, str, dict[str, str]]]:
    """(filename, offset) -> (key, timestamp, block), for lines of records (not request records)."""
    entries = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, timestamp, block = line.split(" ", 2)
        entry = json.loads(block)
        if entry.get("mime") == "warc/request" or entry.get("method"):
            continue
        entries[entry["filename"], entry["offset"]] = (key, timestamp, entry)
    return entries


def check_cdxj(snapshot: Path, files: list[Path], tools: Path, report: Report) -> None:
    done = run([str(tools / "cdxj-indexer"), *(p.name for p in files)], cwd=snapshot / "warc")
    if done.returncode != 0:
        report.add("cdxj", f"cdxj-indexer failed: {done.stderr[-400:]}")
        return
    theirs = cdxj_entries(done.stdout)
    ours = cdxj_entries((snapshot / "indexes" / "index.cdxj").read_text(encoding="utf-8"))
    differences: Counter[str] = Counter()
    for place in sorted(set(theirs) | set(ours)):
        if place not in ours:
            key, ts, entry = theirs[place]
            if entry.get("mime") == "warc/revisit" and entry.get("status") == "304":
                continue  # a 304's revisit has no line of ours: replay plays the capture it confirmed
            report.add(
                "cdxj", f"only cdxj-indexer has {place}: {entry.get('url', '')[:100]} {entry.get('mime')}"
            )
            continue
        if place not in theirs:
            report.add("cdxj", f"only ours has {place}: {ours[place][2].get('url', '')[:100]}")
            continue
        (k1, t1, e1), (k2, t2, e2) = ours[place], theirs[place]
        if k1 != k2:
            report.add("cdxj", f"{place}: SURT {k1[:100]!r} against cdxj-indexer's {k2[:100]!r}")
        if t1 != t2:
            report.add("cdxj", f"{place}: timestamp {t1} against {t2}")
        for name in CDXJ_FIELDS:
            if e1.get(name) != e2.get(name):
                differences[name] += 1
                if differences[name] <= 5:
                    report.add(
                        "cdxj",
                        f"{place} {e1.get('url', '')[:80]}: {name} {e1.get(name)!r} against {e2.get(name)!r}",
                    )
    for name, count in differences.items():
        if count > 5:
            report.add("cdxj", f"... {count} lines differ in {name} in all")
    report.note(f"cdxj: {len(ours)} lines of ours, {len(theirs)} of cdxj-indexer")


# --- replay in Chromium -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pages_of(snapshot: Path, limit: int) -> list[tuple[str, str]]:
    """(url, 14-digit timestamp) of the snapshot's pages, as its WACZ lists them; ``limit`` of them
    spread over the list."""
    sys.path.insert(0, str(ROOT))
    from archiver.export.pages import snapshot_pages
    from archiver.store.manifest import Manifest
    from archiver.store.snapshot import Snapshot

    manifest = Manifest.open(Snapshot(snapshot).manifest_path, readonly=True, existing=True)
    try:
        pages = [
            (page.url, "".join(ch for ch in page.ts if ch.isdigit())[:14])
            for page in snapshot_pages(manifest)
        ]
    finally:
        manifest.close()
    if limit and len(pages) > limit:
        step = len(pages) / limit
        pages = [pages[int(i * step)] for i in range(limit)]
    return pages


def by_design(url: str, rows: dict[str, Row]) -> str | None:
    """Why the crawl did not archive ``url`` on purpose, or None."""
    row = rows.get(url.split("#", 1)[0])
    if row is None:
        return None
    if row.outcome in ("skipped",):
        return f"skipped: {row.reason}"
    if row.outcome == "failed":
        return f"failed: {row.reason}"
    if row.status is not None and row.status >= 400:
        return f"archived as {row.status}"
    return None


async def replay_pages(
    name: str,
    pages: list[tuple[str, str]],
    page_url: Any,
    original: Any,
    rows: dict[str, Row],
    report: Report,
    ready: Any = None,
) -> None:
    """Load each page (``page_url(url, ts)``) in headless Chromium; every request answered 4xx/5xx
    or failed whose ``original(request_url)`` the crawl did not refuse is a problem."""
    from playwright.async_api import async_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    missing: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            context = await browser.new_context()
            page = await context.new_page()
            if ready is not None:
                await ready(page)
            for url, ts in pages:
                bad: list[tuple[str, str]] = []

                def on_response(response: Any, bad: list[tuple[str, str]] = bad) -> None:
                    if response.status >= 400:
                        bad.append((response.url, str(response.status)))

                def on_failed(request: Any, bad: list[tuple[str, str]] = bad) -> None:
                    if "net::ERR_ABORTED" not in (request.failure or ""):
                        bad.append((request.url, request.failure or "failed"))

                page.on("response", on_response)
                page.on("requestfailed", on_failed)
                context.on("response", on_response)  # the service worker's own fetches
                try:
                    await page.goto(page_url(url, ts), wait_until="load", timeout=60_000)
                    await page.wait_for_timeout(300)
                except Exception as exc:  # noqa: BLE001 - reported
                    report.add(name, f"{url}: the page did not load: {str(exc).splitlines()[0]}")
                page.remove_listener("response", on_response)
                page.remove_listener("requestfailed", on_failed)
                context.remove_listener("response", on_response)
                for request_url, why in dict.fromkeys(bad):
                    target = original(request_url)
                    if target is None:
                        continue
                    reason = by_design(target, rows)
                    if reason:
                        refused[reason.split(":")[0]] += 1
                        continue
                    missing[target] += 1
                    if missing[target] == 1:
                        report.add(name, f"{url}: {target[:160]} answered {why}")
        finally:
            await browser.close()
    report.note(
        f"{name}: {len(pages)} pages replayed, {sum(missing.values())} requests missing,"
        f" refused by design: {dict(refused)}"
    )


def wayback(root: Path, tools: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = open(root / "wayback.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [str(tools / "wayback"), "-p", str(port), "-b", "127.0.0.1"], cwd=root, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}/snap"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/", timeout=5).close()  # noqa: S310
            return process, base
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.3)
    raise RuntimeError(f"pywb did not start: {(root / 'wayback.log').read_text()[-500:]}")


def pywb_original(base: str, url: str) -> str | None:
    match = re.match(re.escape(base) + r"/\d+[a-z_]*/(.*)$", url)
    return match.group(1) if match else None


def not_modified_urls(files: list[Path]) -> set[str]:
    """URLs whose capture is a 304's revisit (server-not-modified)."""
    found = set()
    for path in files:
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                profile = record.rec_headers.get_header("WARC-Profile") or ""
                if record.rec_type == "revisit" and profile.endswith("/server-not-modified"):
                    found.add(record.rec_headers.get_header("WARC-Target-URI"))
    return found


def check_pywb(
    snapshot: Path,
    files: list[Path],
    tools: Path,
    pages: list[tuple[str, str]],
    rows: dict[str, Row],
    work: Path,
    report: Report,
    previous: list[Path],
) -> None:
    for index in ("ours", "pywb-made"):
        root = work / f"pywb-{index}"
        collection = root / "collections" / "snap"
        (collection / "archive").mkdir(parents=True)
        (collection / "indexes").mkdir()
        for path in [*files, *(p for old in previous for p in warc_files(old))]:
            os.symlink(path, collection / "archive" / path.name)
        if index == "ours":
            for n, source in enumerate([snapshot, *previous]):
                shutil.copy(source / "indexes" / "index.cdxj", collection / "indexes" / f"index{n}.cdxj")
        else:
            done = run([str(tools / "wb-manager"), "reindex", "snap"], cwd=root)
            if done.returncode != 0:
                report.add(f"pywb ({index} index)", f"wb-manager reindex failed: {done.stderr[-400:]}")
                continue
        replayed = pages
        if index == "pywb-made":
            # pywb's own index plays a 304's revisit as itself, an empty 304 (the README says so);
            # ours has no line for it, and pywb plays the capture it confirmed.
            confirmed = not_modified_urls(files)
            replayed = [(url, ts) for url, ts in pages if url not in confirmed]
            if len(replayed) < len(pages):
                report.note(f"pywb (pywb-made index): {len(pages) - len(replayed)} pages of 304s left out")
        process, base = wayback(root, tools)
        try:
            asyncio.run(
                replay_pages(
                    f"pywb ({index} index)",
                    replayed,
                    lambda url, ts, base=base: f"{base}/{ts}mp_/{url}",
                    partial(pywb_original, base),
                    rows,
                    report,
                )
            )
            check_redirects(f"pywb ({index} index)", base, rows, report)
        finally:
            process.terminate()
            process.wait(timeout=10)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def check_redirects(name: str, base: str, rows: dict[str, Row], report: Report, most: int = 50) -> None:
    """Each redirect the crawl archived (``most`` of them) is replayed as one, to where it led."""
    opener = urllib.request.build_opener(_NoRedirect)
    redirects = [row for row in rows.values() if row.outcome == "redirected" and row.redirect_to][:most]
    for row in redirects:
        try:
            with opener.open(f"{base}/id_/{row.url}", timeout=30) as response:
                status, location = response.status, response.headers.get("Location", "")
        except urllib.error.HTTPError as error:
            status, location = error.code, error.headers.get("Location", "")
        target = row.redirect_to or ""
        led = _as_sent(urllib.parse.urljoin(row.url, location)).partition("#")[0]
        if status not in (301, 302, 303, 307, 308) or not led.endswith(target):
            report.add(name, f"redirect {row.url[:100]} replayed as {status} to {location[:100]!r}")
    report.note(f"{name}: {len(redirects)} redirects replayed")


def _as_sent(location: str) -> str:
    """``location`` as the server sent it: pywb's id_ mode sends a UTF-8 Location re-encoded as
    Latin-1 (each byte a character), which the manifest's URL, percent-encoded, never ends with."""
    with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):  # else: sent as it was
        location = location.encode("latin-1").decode("utf-8")
    return urllib.parse.quote(location, safe="/:?#[]@!$&'()*+,;=%~")


# --- WACZ ------------------------------------------------------------------------------------------


def player_page(url: str) -> str:
    return (
        '<!doctype html><html><head><script src="/replay/ui.js"></script></head><body>'
        f'<replay-web-page source="/archive.wacz" url="{url}" replaybase="/replay/" embed="replayonly" '
        'style="display:block;width:1000px;height:700px"></replay-web-page></body></html>'
    )


def serve_player(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``folder`` (archive.wacz, replay/ui.js, replay/sw.js, the pages) on a free port.
    Python's handler answers no Range request, so ReplayWeb.page reads the WACZ whole."""

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # the player drops a download it no longer needs

    server = Server(("127.0.0.1", 0), partial(Handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def check_wacz(
    snapshot: Path,
    tools: Path,
    rwp: Path,
    pages: list[tuple[str, str]],
    rows: dict[str, Row],
    work: Path,
    report: Report,
) -> None:
    folder = work / "player"
    (folder / "replay").mkdir(parents=True)
    wacz = folder / "archive.wacz"
    done = run(
        [sys.executable, "-m", "archiver", "export", str(snapshot), "--wacz", str(wacz)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if done.returncode != 0:
        report.add("wacz", f"archiver export failed ({done.returncode}): {done.stderr[-400:]}")
        return
    done = run([str(tools / "wacz"), "validate", "-f", str(wacz)])
    if done.returncode != 0 or "Validation succeeded" not in done.stdout:
        report.add("wacz validate", (done.stdout + done.stderr)[-600:])
    if not (rwp / "sw.js").is_file():
        report.note(f"wacz: no ReplayWeb.page in {rwp}: not replayed")
        return
    shutil.copy(rwp / "sw.js", folder / "replay" / "sw.js")
    shutil.copy(rwp / "ui.js", folder / "replay" / "ui.js")
    for n, (url, _ts) in enumerate(pages):
        (folder / f"page{n}.html").write_text(player_page(url), encoding="utf-8")
    server, origin = serve_player(folder)
    numbers = {url: n for n, (url, _ts) in enumerate(pages)}

    def original(request_url: str) -> str | None:
        # not the player's own API (/replay/w/api/...): an archived URL
        match = re.match(re.escape(origin) + r"/replay/w/[^/]+/\d*[a-z_]*/(https?:.*)$", request_url)
        return match.group(1) if match else None

    async def ready(page: Any) -> None:  # the service worker installed once, before the pages
        await page.goto(f"{origin}/page0.html", wait_until="load")
        for _ in range(240):
            if any("/replay/w/" in frame.url for frame in page.frames):
                return
            await page.wait_for_timeout(250)

    try:
        asyncio.run(
            replay_pages(
                "ReplayWeb.page",
                pages,
                lambda url, ts: f"{origin}/page{numbers[url]}.html",
                original,
                rows,
                report,
                ready,
            )
        )
    finally:
        server.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("--tools", type=Path, default=ROOT / ".cache" / "interop-venv" / "bin")
    parser.add_argument("--replaywebpage", type=Path, default=ROOT / ".cache" / "replaywebpage" / "package")
    parser.add_argument("--pages", type=int, default=0, help="pages to replay, spread over the list (0: all)")
    parser.add_argument("--skip", default="", help="readers left out: warcio,spec,cdxj,pywb,wacz")
    parser.add_argument(
        "--previous",
        type=Path,
        action="append",
        default=[],
        help="earlier snapshots a re-archive's revisits refer to",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    # The tools run from other folders (pywb's own): a relative path would name nothing there.
    args.tools, args.replaywebpage = args.tools.resolve(), args.replaywebpage.resolve()
    for folder in (args.tools,) + ((args.replaywebpage,) if "wacz" not in skip else ()):
        if not folder.is_dir():
            parser.error(f"no folder {folder}")
    snapshot = args.snapshot.resolve()
    files = warc_files(snapshot)
    report = Report()
    rows = manifest_rows(snapshot)
    work = Path(tempfile.mkdtemp(prefix="replay-check-"))
    try:
        if "warcio" not in skip:
            check_warcio(files, args.tools, report)
        if "spec" not in skip:
            check_spec(files, [p.resolve() for p in args.previous], report)
        if "cdxj" not in skip:
            check_cdxj(snapshot, files, args.tools, report)
        pages = pages_of(snapshot, args.pages) if {"pywb", "wacz"} - skip else []
        if "pywb" not in skip:
            check_pywb(
                snapshot, files, args.tools, pages, rows, work, report, [p.resolve() for p in args.previous]
            )
        if "wacz" not in skip:
            check_wacz(snapshot, args.tools, args.replaywebpage, pages, rows, work, report)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder: {work}", file=sys.stderr)
    for reader, problems in report.problems.items():
        print(f"## {reader}: {len(problems)} problem(s)")
        for problem in problems[:50]:
            print(f"- {problem}")
        if len(problems) > 50:
            print(f"- ... and {len(problems) - 50} more")
    if not report.problems:
        print("no problems")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
