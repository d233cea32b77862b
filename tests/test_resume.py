"""Interrupt a crawl running as a subprocess (SIGKILL, SIGINT, a full disk), resume it, and check
nothing is lost; what a resume takes from the user, and refuses."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys

import pytest
from aiohttp import web
from conftest import manifest_rows
from crawl_processes import run_archiver, start_crawl, wait_for_hits, warc_responses
from test_crash import killed_as_it_made_its_manifest

from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.warc.members import torn_offset

PAGES = 60


async def slow_site(site, padding: int = 0) -> None:
    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.03)
        n = int(request.path.strip("/p") or -1)
        links = "".join(f'<a href="/p{k}">{k}</a>' for k in (n + 1, n + 2) if k < PAGES)
        filler = random.Random(n).randbytes(padding // 2).hex()
        return web.Response(text=f"<title>p{n}</title>{links}<!--{filler}-->", content_type="text/html")

    site.handler("/", page)
    for n in range(PAGES):
        site.handler(f"/p{n}", page)
    await site.start()


async def test_a_torn_record_is_cut_off_and_kept_aside(site, tmp_path):
    await slow_site(site)
    output = tmp_path / "snap"
    process = start_crawl(site.url("/"), output)
    await wait_for_hits(site, 10)
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.communicate, timeout=60)
    last = sorted((output / "warc").glob("*.warc.gz"))[-1]
    with open(last, "ab") as f:
        f.write(b"\x1f\x8b\x08\x00torn")  # the start of a record that never finished
    resumed = start_crawl("", output, "--resume")
    _, stderr = await asyncio.to_thread(resumed.communicate, timeout=120)
    assert resumed.returncode == 0
    tails = json.loads((output / "crawl.json").read_text())["crash_tails"]
    cut = next(tail for tail in tails if tail["file"] == last.name)
    assert f"{last.name}: cut the {cut['length']} bytes a crash left" in stderr
    assert last.stat().st_size == cut["offset"] and torn_offset(last) is None
    assert (output / cut["kept_in"]).read_bytes().endswith(b"\x1f\x8b\x08\x00torn")
    verified = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "archiver", "verify", str(output), "--no-mirror"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


async def test_records_written_but_never_committed_are_cut_off_and_fetched_again(site, run_crawl):
    """A crash between appending a batch's records (and CDXJ lines) and committing its rows leaves
    whole records that no row names, while their URLs are still queued. Left there, the URL fetched
    again would have two records; resume cuts them off (kept aside) and drops their CDXJ lines."""
    import base64
    import hashlib
    import io
    from datetime import UTC, datetime

    from archiver.warc.capture import Capture
    from archiver.warc.cdxj import cdxj_line
    from archiver.warc.exchange import encode_exchange

    site.page("/", links=["/a"])
    site.page("/a")
    site.page("/b")
    await site.start()
    first = await run_crawl(site.url("/"))
    root = first.snapshot.root
    last = sorted((root / "warc").glob("*.warc.gz"))[-1]
    committed_end = last.stat().st_size
    body = b"<p>fetched, written, never committed</p>"
    orphan = Capture(
        url=site.url("/b"),
        date=datetime.now(UTC),
        request_line="GET /b HTTP/1.1",
        request_headers=[("Host", site.host)],
        status_line="200 OK",
        http_version="HTTP/1.1",
        response_headers=[("Content-Type", "text/html")],
        body=io.BytesIO(body),
        body_length=len(body),
        payload_digest="sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode(),
    )
    exchange = encode_exchange(orphan)
    with open(last, "ab") as f:
        f.write(exchange.response + exchange.request)
    line = cdxj_line(
        orphan.url,
        "2026-01-02T03:04:05Z",
        mime="text/html",
        status=200,
        digest=orphan.payload_digest,
        length=len(exchange.response),
        offset=committed_end,
        filename=last.name,
    )
    (root / "indexes" / "index.cdxj.pending").write_text(line + "\n")
    with Manifest.open(root / "manifest.sqlite3") as manifest:  # /b was met, not yet stored
        manifest.upsert(ManifestRow(url=site.url("/b"), found_by="link", depth=1, outcome="queued"))

    resumed = start_crawl("", root, "--resume")
    _, stderr = await asyncio.to_thread(resumed.communicate, timeout=120)
    assert resumed.returncode == 0, stderr
    tails = json.loads((root / "crawl.json").read_text())["crash_tails"]
    assert tails == [
        {
            "file": last.name,
            "offset": committed_end,
            "length": len(exchange.response + exchange.request),
            "kept_in": f"crash-tails/{last.name}.{committed_end}.tail",
        }
    ]
    assert f"{last.name}: cut the {tails[0]['length']} bytes" in stderr
    assert last.stat().st_size == committed_end
    assert (root / tails[0]["kept_in"]).read_bytes() == exchange.response + exchange.request
    assert site.hits["/b"] == 1  # fetched again, once
    kept = ("/robots.txt", "/sitemap.xml")  # 404s, kept as every answer
    assert sorted(warc_responses(root)) == sorted(site.url(p) for p in ("/", "/a", "/b", *kept))
    assert (
        f'"offset": "{committed_end}", "filename": "{last.name}"'
        not in (root / "indexes/index.cdxj").read_text()
    )
    verify = [sys.executable, "-m", "archiver", "verify", str(root), "--no-mirror"]
    verified = await asyncio.to_thread(subprocess.run, verify, capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
async def test_interrupt_then_resume(site, tmp_path, how):
    await slow_site(site)
    output = tmp_path / "snap"
    process = start_crawl(site.url("/"), output)
    await wait_for_hits(site, 15)
    os.kill(process.pid, how)
    _, stderr = await asyncio.to_thread(process.communicate, timeout=60)
    if how == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
    else:
        assert process.returncode == 128 + how  # 130 for SIGINT, 143 for SIGTERM
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and f"crawl stopped (signal {how.name})" in lines[0], stderr
        assert "--resume" in stderr, stderr
    hits_before = dict(site.hits)
    assert sum(hits_before.values()) < PAGES + 1, "the crawl finished before it was interrupted"
    committed = {url for url, row in manifest_rows(output).items() if row.outcome == "fetched"}

    files_before = sorted(p.name for p in (output / "warc").glob("*.warc.gz"))
    resumed = start_crawl("", output, "--resume")
    _, stderr = await asyncio.to_thread(resumed.communicate, timeout=120)
    assert resumed.returncode == 0, stderr
    files_after = sorted(p.name for p in (output / "warc").glob("*.warc.gz"))
    assert files_after[: len(files_before)] == files_before and len(files_after) > len(files_before)

    rows = manifest_rows(output)
    pages = [site.url("/")] + [site.url(f"/p{n}") for n in range(PAGES)]
    assert all(rows[url].outcome == "fetched" for url in pages)
    assert not [r for r in rows.values() if r.outcome == "queued"]
    # Fetched twice only if in flight at the interruption, or written but not yet committed: a
    # page the manifest had committed is never fetched again. (How many were not committed
    # depends on how far the writer was behind when the signal came: on a loaded machine, a
    # batch of a few dozen.)
    twice = [site.url(path) for path, n in site.hits.items() if n > 1]
    assert not committed & set(twice), sorted(committed & set(twice))
    # Every manifest location holds that URL's record, and the WARCs hold every page.
    captured = set(warc_responses(output))
    assert set(pages) <= captured
    verified = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "archiver", "verify", str(output), "--no-mirror"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize(("padding", "full"), [(0, "the manifest"), (100_000, ".warc.gz")])
async def test_full_disk_stops_the_crawl_cleanly_and_resume_completes_it(site, tmp_path, padding, full):
    # Small pages fill the manifest's file first; big incompressible ones a WARC file.
    await slow_site(site, padding)
    output = tmp_path / "snap"
    process = start_crawl(site.url("/"), output, max_file_bytes=200_000)
    _, stderr = await asyncio.to_thread(process.communicate, timeout=120)
    assert process.returncode == 3, stderr  # stopped by a write error: resumable
    assert "write error" in stderr and full in stderr and "--resume" in stderr, stderr
    assert "Traceback" not in stderr
    assert sum(site.hits.values()) < PAGES + 1, "the disk never filled"
    for path in (output / "warc").glob("*.warc.gz"):
        assert torn_offset(path) is None, f"{path.name} ends in a torn record"

    resumed = start_crawl("", output, "--resume")
    _, stderr = await asyncio.to_thread(resumed.communicate, timeout=120)
    assert resumed.returncode == 0, stderr
    rows = manifest_rows(output)
    assert all(rows[site.url(f"/p{n}")].outcome == "fetched" for n in range(PAGES))
    verified = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "archiver", "verify", str(output), "--no-mirror"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


async def test_a_second_writer_is_refused_while_a_crawl_runs_and_a_killed_holder_never_blocks(site, tmp_path):
    release = asyncio.Event()

    async def held(request: web.Request) -> web.Response:
        await release.wait()  # the crawl keeps running (and holding its lock) until then
        return web.Response(text="<title>held</title>", content_type="text/html")

    site.page("/", links=["/held"])
    site.handler("/held", held)
    await site.start()
    output = tmp_path / "snap"
    process = start_crawl(site.url("/"), output)
    await wait_for_hits(site, 2)
    for command in (["crawl", "--resume", "-o", str(output)], ["mirror", str(output)]):
        refused = await asyncio.to_thread(run_archiver, *command)
        assert refused.returncode == 2, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, refused.stderr
        holder = f"is being written by archiver crawl (pid {process.pid}) since "
        assert lines[0].startswith(f"archiver: error: snapshot {output} {holder}"), lines[0]
    assert process.poll() is None, "the crawl holding the lock was disturbed"
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.communicate, timeout=60)
    assert "archiver crawl" in (output / ".lock").read_text()  # left behind, and harmless
    release.set()
    resumed = start_crawl("", output, "--resume")
    _, stderr = await asyncio.to_thread(resumed.communicate, timeout=120)
    assert resumed.returncode == 0, stderr
    mirrored = await asyncio.to_thread(run_archiver, "mirror", str(output))
    assert mirrored.returncode == 0, mirrored.stderr


async def test_options_given_with_resume_are_applied_and_recorded(site, run_crawl):
    """--max-pages raised, --exclude added, --delay changed: applied to what is left, saved in crawl.json."""
    site.page("/", links=[f"/p{n}" for n in range(8)])
    for n in range(8):
        site.page(f"/p{n}")
    await site.start()
    first = await run_crawl(site.url("/"), max_pages=3, delay=0.0)
    root = first.snapshot.root
    assert first.totals["skip_reasons"].get("page limit")
    resumed = await asyncio.to_thread(
        run_archiver, "crawl", "--resume", str(root), "--max-pages", "100", "--exclude", "/p7$",
        "--delay", "0.01", "--no-mirror", "--quiet",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    rows = manifest_rows(root)
    assert all(rows[site.url(f"/p{n}")].outcome == "fetched" for n in range(7))
    assert rows[site.url("/p7")].outcome == "skipped" and rows[site.url("/p7")].reason == "excluded"
    assert site.hits["/p7"] == 0
    crawl_json = json.loads((root / "crawl.json").read_text())
    settings = crawl_json["settings"]
    assert (settings["max_pages"], settings["exclude"], settings["delay"]) == (100, ["/p7$"], 0.01)
    assert crawl_json["runs"][-1]["changed"] == {"max_pages": 100, "exclude": ["/p7$"], "delay": 0.01}


@pytest.mark.parametrize(
    ("option", "word"),
    [
        (["--scope", "any"], "--scope cannot change when a crawl resumes (it was host)"),
        (["--include", "x"], "--include cannot change"),
        (["--max-depth", "1"], "--max-depth cannot change"),
        (["--warc-prefix", "other"], "--warc-prefix cannot change"),
        (["--previous", "/an/old/snapshot"], "--previous cannot change"),
    ],
)
async def test_options_that_would_change_what_was_decided_are_refused_with_resume(
    site, run_crawl, option, word
):
    site.page("/")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    before = (root / "crawl.json").read_text()
    refused = await asyncio.to_thread(run_archiver, "crawl", "--resume", "-o", str(root), *option)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(f"archiver: error: {word}")
    assert (root / "crawl.json").read_text() == before
    same = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--scope", "host", "--quiet")
    assert same.returncode == 0, same.stderr


def test_option_abbreviations_are_refused(tmp_path):
    done = run_archiver("crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "snap"), "--user", "alice")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "archiver: error: unrecognized arguments: --user alice (see: archiver crawl --help)"
    ]
    assert not (tmp_path / "snap").exists()


async def test_a_snapshot_whose_manifest_is_gone_is_not_resumed(site, run_crawl):
    # Recovery cuts the WARC files back to what the manifest names: with no manifest it
    # would have cut every record (and crawled it all again).
    site.page("/", links=["/a", "/b"]).page("/a").page("/b")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    warcs = {path: path.read_bytes() for path in (root / "warc").glob("*.warc.gz")}
    for path in root.glob("manifest.sqlite3*"):
        path.unlink()
    refused = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root))
    assert refused.returncode == 2
    assert refused.stderr == (
        f"archiver: error: {root} has WARC records but no manifest (manifest.sqlite3): "
        "resuming would cut them; write it again from its WARC files with: "
        f"archiver crawl --resume {root} --repair\n"
    )
    assert {path: path.read_bytes() for path in (root / "warc").glob("*.warc.gz")} == warcs
    assert not (root / "crash-tails").exists()


async def test_a_crawl_killed_as_it_made_its_manifest_is_resumed(site, run_crawl, tmp_path):
    """A crawl killed as it made its manifest left a hot rollback journal beside it (SQLite had
    written the new file's first page, switching it to WAL): --resume read the manifest
    read-only, which cannot roll a journal back, and refused it as damaged ("attempt to write a
    readonly database"), so the crawl could never be resumed. The resume, which holds the
    snapshot's lock, now rolls the journal back (nothing was committed yet) and crawls."""
    site.page("/", links=["/a"]).page("/a")
    await site.start()
    finished = (await run_crawl(site.url("/"))).snapshot.root
    killed = tmp_path / "killed"
    killed.mkdir()
    record = json.loads((finished / "crawl.json").read_text())
    record.update(status="running", finished=None)  # as the kill left it: its run never ended
    (killed / "crawl.json").write_text(json.dumps(record))
    killed_as_it_made_its_manifest(killed / "manifest.sqlite3")
    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(killed), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert set(manifest_rows(killed)) == {site.url("/"), site.url("/a")}
    verified = await asyncio.to_thread(run_archiver, "verify", str(killed))
    assert verified.returncode == 0, verified.stdout + verified.stderr
