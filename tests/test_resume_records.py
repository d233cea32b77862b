"""A resume that finds its WARC files changed since the crawl: records cut, moved or damaged are
found before anything is written, and either fetched again (set aside, or with --repair) or the
resume refused in one line."""

from __future__ import annotations

import asyncio
import gzip
import json
import os

import pytest
from conftest import manifest_rows
from crawl_processes import run_archiver, warc_responses
from test_verify_tamper import edit_in_place, files, gunzip_the_warcs, members

from archiver.crawling.resume import check_records_in_place, records_out_of_place
from archiver.errors import SnapshotError
from archiver.store.manifest import Manifest
from archiver.store.snapshot import Snapshot


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
    assert f"{warc.name}@" in verified.stdout
    assert f"fetch its capture again with: archiver crawl --resume {root} --repair" in verified.stdout

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
