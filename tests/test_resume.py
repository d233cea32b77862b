"""Interrupt a crawl running as a subprocess (SIGKILL, SIGINT), resume it, and check nothing is lost."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import logging
import os
import random
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from conftest import manifest_rows
from subprocesses import track
from test_crash import killed_as_it_made_its_manifest
from test_verify_tamper import edit_in_place, files, gunzip_the_warcs, members, server_blanked
from warcio.archiveiterator import ArchiveIterator

from archiver.crawling.frontier import QueueItem, request_facts, requeued
from archiver.crawling.resume import check_records_in_place, records_out_of_place
from archiver.errors import SnapshotError
from archiver.request_headers import destination_negotiation
from archiver.store.manifest import Manifest
from archiver.store.rows import ManifestRow
from archiver.store.snapshot import Snapshot
from archiver.verify.verifier import verify_snapshot
from archiver.warc.members import torn_offset

PAGES = 60
CONCURRENCY = 3


def start_crawl(
    seed: str, output: Path, *extra: str, max_file_bytes: int | None = None
) -> subprocess.Popen[str]:
    def full_disk() -> None:
        # Files may not grow past max_file_bytes: writes fail with EFBIG, as on a full disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        limit = resource.RLIM_INFINITY if max_file_bytes is None else max_file_bytes
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return track(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "archiver",
                "crawl",
                *([seed] if seed else []),
                "-o",
                str(output),
                "--concurrency",
                str(CONCURRENCY),
                "--no-mirror",
                "--quiet",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=full_disk if max_file_bytes else None,
        )
    )


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


async def wait_for_hits(site, count: int, seconds: float = 30) -> None:
    for _ in range(int(seconds / 0.02)):
        if sum(site.hits.values()) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("crawl did not get going")


def warc_responses(snapshot: Path) -> list[str]:
    urls = []
    for path in sorted((snapshot / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            try:
                for record in ArchiveIterator(f):
                    if record.rec_type in ("response", "revisit"):
                        urls.append(record.rec_headers.get_header("WARC-Target-URI"))
            except Exception:  # a record torn by SIGKILL ends that file's readable part
                pass
    return urls


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


def run_archiver(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120
    )


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
        f"resuming would cut them; write it again from them with: archiver crawl --resume {root} --repair\n"
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


async def test_a_warc_file_cut_inside_what_was_committed_is_set_aside_and_its_urls_fetched_again(
    site, run_crawl
):
    """Not a crash's tail: records the manifest names were cut (damage, a copy cut short). The
    torn rest is kept aside, the URLs whose records it held are fetched again, said in one line,
    and the snapshot is whole again, each URL captured once."""
    site.page("/", links=[f"/p{n}" for n in range(20)])
    for n in range(20):
        site.page(f"/p{n}", body="<p>text</p>" * 50)
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    (warc,) = (root / "warc").glob("*.warc.gz")
    os.truncate(warc, warc.stat().st_size // 2)
    hits = sum(site.hits.values())
    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    (line,) = resumed.stderr.splitlines()
    assert line.startswith(f"archiver: warning: {warc.name}: cut the ") and "where it is damaged" in line
    (tail,) = json.loads((root / "crawl.json").read_text())["crash_tails"]
    assert (root / tail["kept_in"]).stat().st_size == tail["length"]
    refetched = sum(site.hits.values()) - hits
    assert refetched > 0 and f"the {refetched} URLs whose records were there are fetched again: " in line
    responses = warc_responses(root)
    assert sorted(responses) == sorted(set(responses)) and len(responses) == 23  # + robots, sitemap
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


@pytest.mark.parametrize(
    "inserted", [b"\r\n", gzip.compress(b"a member of no record")], ids=["bytes", "member"]
)
async def test_a_warc_file_whose_records_moved_since_the_crawl_is_not_resumed(site, run_crawl, inserted):
    """Bytes inserted into a WARC file move the records after it: the manifest's offsets name
    other bytes. Recovery took the first moved record for a crash's tail and cut the rest (or, the
    bytes a whole gzip member, saw nothing), and the crawl went on over rows naming no record.
    The resume is refused in one line before anything is written."""
    site.page("/", links=[f"/p{n}" for n in range(8)])
    for n in range(8):
        site.page(f"/p{n}")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    (warc,) = (root / "warc").glob("*.warc.gz")
    data = warc.read_bytes()
    middle = members(warc)[len(members(warc)) // 2]
    warc.write_bytes(data[:middle] + inserted + data[middle:])
    before = files(root)
    refused = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root))
    assert refused.returncode == 2, refused.stderr
    assert (
        refused.stderr.startswith(f"archiver: error: warc/{warc.name}@") and refused.stderr.count("\n") == 1
    )
    assert "is not where the manifest says" in refused.stderr
    assert refused.stderr.endswith(
        f"resuming would build on it (archiver verify {root} lists what else is wrong)\n"
    )
    assert files(root) == before and not (root / "crash-tails").exists()


async def test_records_moved_in_an_uncompressed_warc_file_are_found_too(site, run_crawl):
    """A user may gunzip a snapshot's WARC files: bytes inserted into one move its records all
    the same, and the check looked for gzip members alone, so it passed every record."""
    site.page("/", links=[f"/p{n}" for n in range(4)])
    for n in range(4):
        site.page(f"/p{n}")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    gunzip_the_warcs(root)
    assert records_out_of_place(Snapshot(root)) is None  # each record where its row says
    (warc,) = (root / "warc").glob("*.warc")
    data = warc.read_bytes()
    middle = data.index(b"WARC/1.1\r\n", len(data) // 2)
    warc.write_bytes(data[:middle] + b"\r\n" + data[middle:])
    moved = records_out_of_place(Snapshot(root))
    assert moved is not None and "is not where the manifest says (no record starts" in moved, moved


async def test_what_a_power_cut_leaves_past_the_last_record_is_no_moved_record(site, run_crawl):
    """Past the last record a row names (here a rendered DOM, which no request record follows), a
    crash may leave anything, zeros after a power cut: that is recovery's to cut, not a moved record."""
    site.page("/", links=["/a"]).page("/a")
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    (warc,) = (root / "warc").glob("*.warc.gz")
    offsets = members(warc)
    last = manifest_rows(root)[site.url("/a")]
    # The record after /a's response (its request) taken for /a's rendered DOM, the last record named.
    start = offsets[offsets.index(last.warc_offset) + 1]
    length = offsets[offsets.index(start) + 1] - start
    with Manifest.open(root / "manifest.sqlite3") as manifest:
        manifest.connection.execute(
            "UPDATE urls SET dom_warc_file = ?, dom_warc_offset = ?, dom_warc_length = ? WHERE url = ?",
            (warc.name, start, length, last.url),
        )
        manifest.commit()
    with open(warc, "ab") as out:
        out.write(bytes(4096))
    check_records_in_place(Snapshot(root))  # nothing moved
    data = warc.read_bytes()
    warc.write_bytes(data[:start] + b"\r\n" + data[start:])
    with pytest.raises(
        SnapshotError, match=f"warc/{warc.name}@{last.warc_offset}: the record of {last.url} "
    ):
        check_records_in_place(Snapshot(root))


async def test_a_resumed_crawl_reads_a_stylesheet_in_its_pages_encoding(site, run_crawl):
    # The page that links it was read by the crawl before: its encoding is read back from the
    # snapshot, so the resumed crawl fetches what verify and the mirror read in it.
    site.file("/", b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>', "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    first = await run_crawl(site.url("/"), max_pages=1)
    root = first.snapshot.root
    assert manifest_rows(root)[site.url("/l.css")].reason == "page limit"  # left for the resumed crawl
    await run_crawl(site.url("/"), output=root, resume=True, max_pages=10)
    rows = manifest_rows(root)
    assert rows[site.url("/caf%C3%A9.png")].status == 200
    assert not [url for url in rows if "%EF%BF%BD" in url]
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))


async def test_a_resumed_crawl_and_verify_say_when_a_referrers_encoding_cannot_be_read_back(
    site, run_crawl, caplog
):
    # The page's record was damaged since its crawl: the encoding it was read in is not known.
    # The resumed crawl says so once (not once a stylesheet), verify names each stylesheet
    # whose links it cannot check, and neither reads them silently as UTF-8.
    page = b'<link rel=stylesheet href="l.css"><link rel=stylesheet href="m.css"><p>caf\xe9</p>'
    site.file("/", page, "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/m.css", b"b{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), max_pages=1)).snapshot.root
    seed = manifest_rows(root)[site.url("/")]
    assert seed.warc_file is not None and seed.warc_offset is not None and seed.warc_length is not None
    edit_in_place(
        root / "warc" / seed.warc_file,
        seed.warc_offset,
        seed.warc_length,
        # Another letter in the page; its Server header blanked, so it compresses no longer.
        server_blanked(b"\xe9<", b"\xe8<"),
    )
    with caplog.at_level(logging.WARNING, logger="archiver"):
        await run_crawl(site.url("/"), output=root, resume=True, max_pages=10)
    unknown = [r.getMessage() for r in caplog.records if "cannot be read back" in r.getMessage()]
    assert len(unknown) == 1, unknown
    assert unknown[0].startswith(f"the encoding the crawl read {site.url('/')} in cannot be read back: ")
    report = verify_snapshot(root)
    assert report.counts["digest_mismatch"] == 1
    assert {problem.where for problem in report.examples["unknown_encoding"]} == {
        site.url("/l.css"),
        site.url("/m.css"),
    }
    assert "unrecorded_link" not in report.counts


async def test_a_resumed_crawl_reads_no_referrers_encoding_from_a_large_record_whose_head_changed(
    site, run_crawl, caplog
):
    # The page decodes past the 32 MiB read of it to learn its encoding, so the rest of its
    # record, where its digests are settled, was never read: its head's charset changed since
    # (only the digests tell) was taken, and the stylesheet read in it, without a word.
    page = b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>' + b"<p>filler</p>" * (3 << 20)
    body = gzip.compress(page + b"<!--" + random.Random(0).randbytes(1 << 20) + b"-->", mtime=0)
    site.file("/", body, "text/html; charset=windows-1252", headers={"Content-Encoding": "gzip"})
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    root = (await run_crawl(site.url("/"), max_pages=1, sitemaps=False)).snapshot.root
    seed = manifest_rows(root)[site.url("/")]
    assert seed.warc_file is not None and seed.warc_offset is not None and seed.warc_length is not None
    edit_in_place(
        root / "warc" / seed.warc_file,
        seed.warc_offset,
        seed.warc_length,
        lambda record: record.replace(b"charset=windows-1252", b"charset=windows-1251", 1),
    )
    with caplog.at_level(logging.WARNING, logger="archiver"):
        await run_crawl(site.url("/"), output=root, resume=True, max_pages=10, sitemaps=False)
    unknown = [r.getMessage() for r in caplog.records if "cannot be read back" in r.getMessage()]
    assert len(unknown) == 1, unknown
    assert not [url for url in manifest_rows(root) if "%D0%B2" in url]  # é read as windows-1251's в


async def test_a_resumed_crawl_asks_for_each_url_as_the_crawl_that_met_it_would_have(
    site, run_crawl, tmp_path
):
    # A page's <meta name="referrer"> and its elements' destinations and CORS modes chose how its
    # links are asked for: a URL left by a page limit is asked for the same way after --resume
    # (a crossorigin image of another origin with no cookies: the resumed crawl sent them).
    seen: dict[str, list[tuple[str | None, ...]]] = {}

    async def record(request: web.Request) -> web.Response:
        seen.setdefault(request.path, []).append(
            (
                request.headers.get("Referer"),
                request.headers.get("Accept"),
                request.headers.get("Origin"),
                request.headers.get("Cookie"),
            )
        )
        return web.Response(text="x", content_type="text/plain")

    async def setup(request: web.Request) -> web.Response:
        response = web.Response(text="<title>set</title>", content_type="text/html")
        # For any site's requests (127.0.0.1 and localhost are two): loopback counts as secure.
        response.headers.add("Set-Cookie", "c=1; Path=/; SameSite=None; Secure")
        return response

    site.page("/", links=["/meta"])
    meta = '<meta name="referrer" content="no-referrer"><a href="/same">s</a><img src="/pic.png">'
    site.file("/meta", meta.encode(), "text/html")
    site.handler("/setup", setup)
    await site.start()
    other = f"http://localhost:{site.server.port}"
    site.file(
        "/open",
        b'<a href="/wide" referrerpolicy="unsafe-url">w</a><link rel=stylesheet href="/s.css">'
        + f'<img crossorigin src="{other}/anon.png"><img src="{other}/plain.png">'.encode(),
    )
    site.page("/more", links=["/open"])
    for path in ("/same", "/pic.png", "/wide", "/s.css", "/anon.png", "/plain.png"):
        site.handler(path, record)
    seeds = (f"{other}/setup", site.url("/"), site.url("/more"))
    await run_crawl(*seeds, output=tmp_path / "straight", concurrency=1)
    straight, seen = seen, {}
    assert straight["/same"][0][0] is None and (straight["/pic.png"][0][1] or "").startswith("image/")
    assert straight["/anon.png"][0][2:] == (site.url("/")[:-1], None)
    assert straight["/plain.png"][0][2:] == (None, "c=1")

    first = await run_crawl(*seeds, max_pages=5, concurrency=1)
    assert "page limit" in first.totals["skip_reasons"]
    assert not seen
    await run_crawl(site.url("/"), output=first.snapshot.root, resume=True, max_pages=100, concurrency=1)
    assert seen == straight


IMAGE = destination_negotiation("image")
REDIRECTED_HOP = {
    "found_by": "redirect",
    "requisite": True,
    "chain": ("http://h/a", "http://h/b"),
    "redirects_left": 3,
    "referrer": "http://h/page",
    "tries": 2,
    "referrer_policy": "unsafe-url",
}

GUESSED_REQUISITE = {
    "found_by": "requisite",
    "requisite": True,
    "site_for_cookies": "http://h/",
    "client": "http://h",
}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"referrer_policy": "no-referrer", "negotiation": IMAGE},
        {"negotiation": (("Accept", "application/json"), ("X-Requested-With", "XMLHttpRequest"))},
        REDIRECTED_HOP,
        {"found_by": "seed", "parent": None, "referrer": None},
        GUESSED_REQUISITE,
        # A stylesheet's font: CORS-mode, for its page's origin (not the stylesheet's).
        {**GUESSED_REQUISITE, "cors": "same-origin", "client": "http://site.test"},
        {**REDIRECTED_HOP, "cors": "include", "client": "null"},
    ],
)
def test_a_queued_rows_request_facts_give_back_its_queue_item(changes):
    item = QueueItem("http://h/x", 2, 5, found_by="link", parent="http://h/", referrer="http://h/")
    item = dataclasses.replace(item, **changes)
    facts = request_facts(item, 5)
    guessed: tuple[dict[str, object], ...] = (
        {},
        {"found_by": "seed", "parent": None, "referrer": None},
        GUESSED_REQUISITE,
    )
    assert (facts is None) == (changes in guessed)
    assert requeued(item.url, item.depth, item.found_by, item.parent, 5, facts) == item
    # A later --max-redirects counts the hops made already.
    assert (
        requeued(item.url, item.depth, item.found_by, item.parent, 7, facts).redirects_left
        == item.redirects_left + 2
    )


async def test_a_url_waiting_out_a_failed_try_keeps_its_tries_when_the_crawl_is_killed(
    site, run_crawl, tmp_path
):
    # Killed while it waits out a Retry-After, the crawl resumed tries it no more often than
    # --max-tries in all, as the crawl never interrupted would have.
    site.page("/", links=["/busy"])
    site.file("/busy", b"busy", "text/plain", status=503, headers={"Retry-After": "2"})
    await site.start()
    output = tmp_path / "snap"
    process = start_crawl(site.url("/"), output, "--max-tries", "2")
    waiting = ""
    for _ in range(1500):  # until the row of the URL waiting is committed (a hang guard: 30 s)
        await asyncio.sleep(0.02)
        if site.hits["/busy"] and (output / "manifest.sqlite3").exists():
            with Manifest.open(output / "manifest.sqlite3", readonly=True) as manifest:
                row = manifest.get(site.url("/busy"))
                waiting = (row.request or "") if row is not None else ""
            if '"tries":1' in waiting:
                break
    assert '"due":' in waiting and site.hits["/busy"] == 1
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.communicate, timeout=60)
    await run_crawl(site.url("/"), output=output, resume=True, max_tries=2)
    assert site.hits["/busy"] == 2
    row = manifest_rows(output)[site.url("/busy")]
    assert (row.outcome, row.status, row.tries, row.request) == ("failed", 503, 2, None)


async def test_a_resumed_crawl_sends_the_cookies_the_interrupted_one_held(site, run_crawl):
    # A session cookie a server set before the interruption goes with the requests after it, as
    # in the crawl never interrupted; a --cookie given with --resume replaces the one saved.
    sent: dict[str, str] = {}

    async def record(request: web.Request) -> web.Response:
        sent[request.path] = "; ".join(sorted(request.headers.get("Cookie", "").split("; ")))
        return web.Response(text="x", content_type="text/plain")

    site.file("/", b'<a href="/a">a</a><a href="/b">b</a>', headers={"Set-Cookie": "sid=s1; Path=/"})
    site.file("/b", b'<a href="/c">c</a>', headers={"Set-Cookie": "late=2; Max-Age=600"})
    site.handler("/a", record).handler("/c", record)
    await site.start()
    first = await run_crawl(site.url("/"), max_pages=3, concurrency=1, cookies=(("pref", "old"),))
    assert sent == {"/a": "pref=old; sid=s1"}
    await run_crawl(
        site.url("/"), output=first.snapshot.root, resume=True, max_pages=10, cookies=(("pref", "new"),)
    )
    assert sent == {"/a": "pref=old; sid=s1", "/c": "late=2; pref=new; sid=s1"}


async def test_a_resumed_crawl_keeps_what_trial_renders_taught_about_a_host(site, run_crawl):
    """--browser auto renders a host's first pages of a kind as trials; two that find nothing more
    settle it, and its other pages go unrendered. A resumed crawl forgot that verdict, and
    rendered trials on the host all over again."""
    from test_browser import CHROMIUM

    script = "<script>document.documentElement.className = 'js';</script>"
    pages = [f"/p{n}" for n in range(8)]
    for path in pages:
        site.page(path, body="<p>" + "Static text. " * 20 + "</p>" + script)
    site.page("/", links=pages, body="<p>" + "Words of a static page. " * 10 + "</p>" + script)
    await site.start()
    options = dict(browser="auto", chromium=CHROMIUM, concurrency=1, sitemaps=False)
    first = await run_crawl(site.url("/"), max_pages=4, **options)
    root = first.snapshot.root
    assert first.stats.rendered == 2  # the trials, which settled it
    resumed = await run_crawl(site.url("/"), output=root, resume=True, **options)
    assert resumed.stats.rendered == 0
    rows = manifest_rows(root)
    assert [url for url, row in rows.items() if row.render_reason] == [site.url("/"), site.url("/p0")]
    assert all(rows[site.url(path)].outcome == "fetched" for path in pages)


TREE = 24
"""Pages of the site test_a_crawl_killed_and_resumed_asks_what_the_straight_crawl_asks crawls."""
Asked = tuple[str, str, str | None, str | None, str | None, str | None]
"""A request as the server saw it: method, path and query, Referer, Accept, Cookie, Origin."""


async def tree_site(site, fonts) -> dict[str, set[Asked]]:
    """A tree of TREE pages (each URL found by one page alone, so each request is the same in
    every crawl): each page an image and a stylesheet of its own, the stylesheet a background
    and a font on ``fonts``'s origin (a CORS request); every fourth page asks for no Referer,
    the first sets a cookie. Returns the requests each server saw, by URL."""
    asked: dict[str, set[Asked]] = {}

    def note(request: web.Request) -> None:
        headers = request.headers
        seen = (
            request.method,
            request.path_qs,
            *(headers.get(h) for h in ("Referer", "Accept", "Cookie", "Origin")),
        )
        asked.setdefault(str(request.url), set()).add(seen)  # type: ignore[arg-type]

    async def serve(request: web.Request) -> web.Response:
        note(request)
        await asyncio.sleep(0.02)
        name = request.path.strip("/")
        if name.endswith(".css"):
            own = name[1:-4]
            font = fonts.url(f"/f{own}.woff")
            css = f".x{{background:url(/b{own}.png)}}@font-face{{font-family:f;src:url({font})}}"
            return web.Response(text=css, content_type="text/css")
        if name.endswith((".png", ".woff")):
            return web.Response(
                body=b"\x89PNG" if name.endswith(".png") else b"wOFF", content_type="image/png"
            )
        n = int(name[1:] or -1) if name else -1
        children = [k for k in (2 * n + 1, 2 * n + 2) if 0 <= k < TREE] if n >= 0 else [0]
        body = "".join(f'<a href="/p{k}">{k}</a>' for k in children)
        if n >= 0:
            body += f'<img src="/i{n}.png"><link rel=stylesheet href="/s{n}.css">'
        if n % 4 == 0:
            body = '<meta name="referrer" content="no-referrer">' + body
        headers = {"Set-Cookie": "sid=1; Path=/"} if n < 0 else {}
        return web.Response(text=body, content_type="text/html", headers=headers)

    async def font(request: web.Request) -> web.Response:
        note(request)
        return web.Response(
            body=b"wOFF", content_type="font/woff", headers={"Access-Control-Allow-Origin": "*"}
        )

    for n in range(-1, TREE):
        for path in (f"/p{n}", f"/i{n}.png", f"/s{n}.css", f"/b{n}.png") if n >= 0 else ("/",):
            site.handler(path, serve)
        fonts.handler(f"/f{n}.woff", font)
    await fonts.start()
    await site.start()
    return asked


async def test_a_crawl_killed_and_resumed_asks_what_the_straight_crawl_asks(
    site, other_site, run_crawl, tmp_path
):
    # Killed (SIGKILL) mid-crawl and resumed, the crawl sends each URL the requests the crawl
    # never interrupted sends (Referer, Accept, Cookie, Origin alike), and ends with the same rows.
    asked = await tree_site(site, other_site)
    straight = await run_crawl(site.url("/"), output=tmp_path / "straight", concurrency=CONCURRENCY)
    asked_straight = {url: set(requests) for url, requests in asked.items()}
    asked.clear()
    site.hits.clear()
    output = tmp_path / "killed"
    process = start_crawl(site.url("/"), output)
    await wait_for_hits(site, 40)
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.communicate, timeout=60)
    assert len(asked) < len(asked_straight), "the crawl finished before it was killed"
    await run_crawl(site.url("/"), output=output, resume=True, concurrency=CONCURRENCY)
    assert asked == asked_straight
    rows = {url: (row.outcome, row.status) for url, row in manifest_rows(output, for_crawlers=True).items()}
    expected = manifest_rows(straight.snapshot.root, for_crawlers=True)
    assert rows == {url: (row.outcome, row.status) for url, row in expected.items()}


def flipped(record: bytes) -> bytes:
    """An edit for edit_in_place(): a byte of the record's block changed (only its digests tell)."""
    return record.replace(b"<p>text</p>", b"<p>TEXT</p>", 1)


@pytest.mark.parametrize("damaged", ["response", "request", "original"])
async def test_a_capture_damaged_inside_a_warc_file_is_fetched_again_by_a_resume_that_repairs(
    site, run_crawl, damaged
):
    """A record of an earlier capture changed on disk, the file's last capture intact: a resume
    reads the end of each file alone and sees nothing, and verify names the damage with the
    command that repairs it. --resume --repair reads every record, sets the damaged capture aside
    (a metadata record of its length stands in for it, so the records after it stay where the
    manifest says), fetches that URL again and nothing else (but a revisit of it, ``original``,
    which would refer to a record that is gone), and verify passes."""
    site.page("/", links=["/a", "/b", "/c", *(["/copy"] if damaged == "original" else [])])
    for path in ("/a", "/b", "/c", "/copy"):  # /copy's bytes are /a's
        site.page(path, title="same" if path in ("/a", "/copy") else path, body="<p>text</p>" * 50)
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    row = manifest_rows(root)[site.url("/a")]
    assert row.warc_file and row.warc_offset is not None and row.warc_length
    warc = root / "warc" / row.warc_file
    offsets = members(warc)
    start = offsets.index(row.warc_offset)
    assert start + 2 < len(offsets) - 1, "captures must follow it"
    if damaged != "request":
        edit_in_place(warc, row.warc_offset, row.warc_length, flipped)
    else:  # a byte of its request's gzip data: it no longer inflates
        data = bytearray(warc.read_bytes())
        data[(offsets[start + 1] + offsets[start + 2]) // 2] ^= 0xFF
        warc.write_bytes(bytes(data))
    capture = warc.read_bytes()[row.warc_offset : offsets[start + 2]]
    hits = dict(site.hits)

    resumed = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--quiet")
    assert dict(site.hits) == hits
    if damaged != "request":  # the mirror's last pass read the page's record: it kept its file
        assert resumed.returncode == 1 and f"--resume {root} --repair fetches them again" in resumed.stderr
    else:
        assert resumed.returncode == 0, resumed.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 1
    assert f"{warc.name}@" in verified.stdout and "crawl --resume --repair" in verified.stdout

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stderr.splitlines()[0] == (
        f"archiver: warning: {warc.name}@{row.warc_offset}: the capture of {site.url('/a')} is damaged: "
        "set aside in damaged-records/, fetched again"
    )
    again = {path: count - hits.get(path, 0) for path, count in site.hits.items() if count != hits.get(path)}
    assert again == ({"/a": 1, "/copy": 1} if damaged == "original" else {"/a": 1})
    repair, *revisits = json.loads((root / "crawl.json").read_text())["repairs"]
    assert (root / repair["kept_in"]).read_bytes() == capture
    assert [revisit["url"] for revisit in revisits] == ([site.url("/copy")] if damaged == "original" else [])
    assert members(warc)[: start + 1] == offsets[: start + 1] and offsets[start + 2] in members(warc)
    responses = warc_responses(root)
    assert sorted(responses) == sorted(set(responses)) and site.url("/a") in responses
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout


def test_repair_goes_with_resume(tmp_path):
    """--repair alone names what it goes with, in one line."""
    refused = run_archiver("crawl", "http://127.0.0.1:1/", "-o", str(tmp_path / "snap"), "--repair")
    assert refused.returncode == 2
    assert (
        refused.stderr
        == "archiver: error: --repair goes with --resume: it repairs the crawl saved in the folder\n"
    )


async def test_a_repair_a_crash_cut_short_before_its_urls_were_queued_is_finished(site, run_crawl):
    """A repair noted in crawl.json, its capture set aside, and then killed before it queued its
    URL again (the row still names the capture, whose damaged bytes are still there): the next
    --repair writes the noted record over them and queues that URL too, so the row names no
    metadata record, and verify passes."""
    site.page("/", links=["/a", "/b"])
    for path in ("/a", "/b"):
        site.page(path, body="<p>text</p>" * 50)
    await site.start()
    root = (await run_crawl(site.url("/"))).snapshot.root
    row = manifest_rows(root)[site.url("/a")]
    assert row.warc_file and row.warc_offset is not None and row.warc_length
    warc = root / "warc" / row.warc_file
    offsets = members(warc)
    end = offsets[offsets.index(row.warc_offset) + 2]
    edit_in_place(warc, row.warc_offset, row.warc_length, flipped)
    kept = root / "damaged-records" / f"{warc.name}.{row.warc_offset}.damaged"
    kept.parent.mkdir()
    kept.write_bytes(warc.read_bytes()[row.warc_offset : end])
    crawl_json = json.loads((root / "crawl.json").read_text())
    crawl_json["repairs"] = [
        {
            "file": warc.name,
            "offset": row.warc_offset,
            "length": end - row.warc_offset,
            "url": row.url,
            "kept_in": str(kept.relative_to(root)),
            "record_id": "<urn:uuid:00000000-0000-4000-8000-000000000000>",
            "date": "2026-01-02T03:04:05.000000Z",
        }
    ]
    (root / "crawl.json").write_text(json.dumps(crawl_json))
    hits = dict(site.hits)
    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert repaired.returncode == 0, repaired.stderr
    assert site.hits["/a"] == hits["/a"] + 1 and site.hits["/b"] == hits["/b"]
    verified = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert verified.returncode == 0, verified.stdout
