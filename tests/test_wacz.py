"""archiver export --wacz: the package holds the snapshot's WARCs, its CDXJ in gzip blocks, its pages
and a datapackage whose hashes hold, written atomically; bad input gets one line."""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from demo_site import build_demo_site
from rearchive_site import rearchived, revisits
from warcio.archiveiterator import ArchiveIterator

from archiver.errors import ExportError, SnapshotError
from archiver.export.wacz import export_wacz
from archiver.export.zipnum import write_blocks
from archiver.warc.members import member_ends
from archiver.warc.records import NOT_MODIFIED_PROFILE, REVISIT_PROFILE
from tests.conftest import manifest_rows


@pytest.fixture
async def snapshot(site, run_crawl) -> Path:
    await build_demo_site(site).start()
    result = await run_crawl(site.url("/"))
    return result.snapshot.root


def entries(path: Path) -> dict[str, zipfile.ZipInfo]:
    with zipfile.ZipFile(path) as wacz:
        return {info.filename: info for info in wacz.infolist()}


def read(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as wacz:
        return wacz.read(name)


async def test_the_package_holds_the_snapshot_and_its_hashes_hold(snapshot, site, tmp_path):
    target = tmp_path / "demo.wacz"
    summary = export_wacz(snapshot, target)
    names = entries(target)
    warcs = sorted(p.name for p in (snapshot / "warc").glob("*.warc.gz"))
    assert sorted(names) == sorted(
        [f"archive/{w}" for w in warcs]
        + [
            "indexes/index.cdx.gz",
            "indexes/index.idx",
            "pages/pages.jsonl",
            "datapackage.json",
            "datapackage-digest.json",
        ]
    )
    # WARCs and the gzip index are stored as they are, so a reader seeks into them.
    for name in [f"archive/{w}" for w in warcs] + ["indexes/index.cdx.gz"]:
        assert names[name].compress_type == zipfile.ZIP_STORED, name
    for w in warcs:
        assert read(target, f"archive/{w}") == (snapshot / "warc" / w).read_bytes()
    package = json.loads(read(target, "datapackage.json"))
    assert package["wacz_version"] == "1.1.1" and package["profile"] == "data-package"
    assert package["mainPageURL"] == site.url("/")
    listed = {resource["path"]: resource for resource in package["resources"]}
    assert set(listed) == set(names) - {"datapackage.json", "datapackage-digest.json"}
    for path, resource in listed.items():
        data = read(target, path)
        assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest(), path
        assert resource["bytes"] == len(data) and resource["name"] == Path(path).name.lower()
    digest = json.loads(read(target, "datapackage-digest.json"))
    assert digest == {
        "path": "datapackage.json",
        "hash": "sha256:" + hashlib.sha256(read(target, "datapackage.json")).hexdigest(),
    }
    assert (summary.warc_files, summary.bytes) == (len(warcs), target.stat().st_size)
    # Readable by others as any file the user writes (umask), not private as a temporary file is.
    mask = os.umask(0o022)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


async def test_the_index_is_the_snapshots_cdxj_in_blocks(snapshot, tmp_path):
    target = tmp_path / "demo.wacz"
    export_wacz(snapshot, target)
    ours = (snapshot / "indexes" / "index.cdxj").read_text().splitlines()
    blocks = read(target, "indexes/index.cdx.gz")
    assert gzip.decompress(blocks).decode().splitlines() == ours
    idx = read(target, "indexes/index.idx").decode().splitlines()
    assert json.loads(idx[0].split(" ", 2)[2]) == {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}
    for line in idx[1:]:
        key, entry = line.split(" {", 1)
        entry = json.loads("{" + entry)
        block = blocks[entry["offset"] : entry["offset"] + entry["length"]]
        assert entry["digest"] == "sha256:" + hashlib.sha256(block).hexdigest()
        assert gzip.decompress(block).decode().startswith(key + " ")


def test_blocks_of_a_large_index_each_start_at_the_key_the_idx_names(tmp_path):
    lines = [f"com,h)/p{n:05d} 20260101000000 {{}}" for n in range(2500)]
    with open(tmp_path / "blocks", "wb") as out:
        idx = write_blocks(lines, out)
    data = (tmp_path / "blocks").read_bytes()
    assert len(idx) == 1 + 3  # the meta line, then 1024 + 1024 + 452 lines
    assert gzip.decompress(data).decode().splitlines() == lines
    starts = [json.loads("{" + line.split(" {", 1)[1])["offset"] for line in idx[1:]]
    assert [line.split(" {")[0] for line in idx[1:]] == [lines[i].split(" {")[0] for i in (0, 1024, 2048)]
    assert starts[0] == 0 and starts == sorted(starts)


async def test_pages_are_the_archived_html_pages_seeds_first_with_their_titles(snapshot, site, tmp_path):
    target = tmp_path / "demo.wacz"
    summary = export_wacz(snapshot, target)
    header, *pages = [json.loads(line) for line in read(target, "pages/pages.jsonl").splitlines()]
    assert header["format"] == "json-pages-1.0"
    assert pages[0] == {**pages[0], "url": site.url("/"), "title": "Demo home", "seed": True}
    titles = {page["url"]: page.get("title") for page in pages}
    assert titles == {
        site.url("/"): "Demo home",
        site.url("/about"): "About",
        site.url("/docs/"): "Docs",
        site.url("/docs/page2.html"): "Docs 2",
        site.url("/frame.html"): "Frame",
        site.url("/new"): "New",  # where /old's redirects land; the redirects are no pages
        site.url("/search?q=a%20b&page=2"): "Search",
    }
    assert summary.pages == len(pages) == len({page["id"] for page in pages})
    cdxj = (snapshot / "indexes" / "index.cdxj").read_text()
    for page in pages:  # each page's ts is the 14 digits of a capture in the index
        stamp = "".join(ch for ch in page["ts"] if ch.isdigit())[:14]
        assert f' {stamp} {{"url": "{page["url"]}"' in cdxj
    # The same export twice gives each page the same id.
    export_wacz(snapshot, target, force=True)
    again = [json.loads(line) for line in read(target, "pages/pages.jsonl").splitlines()[1:]]
    assert [p["id"] for p in again] == [p["id"] for p in pages]


async def test_lines_a_killed_crawl_left_unmerged_are_in_the_index(snapshot, tmp_path):
    index = snapshot / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines()
    index.write_text("\n".join(lines[::2]) + "\n")
    (snapshot / "indexes" / "index.cdxj.pending").write_text("\n".join(reversed(lines[1::2])) + "\n")
    export_wacz(snapshot, tmp_path / "x.wacz")
    assert gzip.decompress(read(tmp_path / "x.wacz", "indexes/index.cdx.gz")).decode().splitlines() == lines


async def test_bad_input_is_refused_and_leaves_nothing_behind(snapshot, tmp_path):
    target = tmp_path / "out.wacz"
    with pytest.raises(SnapshotError, match="not a snapshot"):
        export_wacz(tmp_path / "nothing", target)
    target.write_bytes(b"old")
    with pytest.raises(ExportError, match="exists; give --force"):
        export_wacz(snapshot, target)
    assert target.read_bytes() == b"old"
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ExportError, match="cannot write"):
        export_wacz(snapshot, tmp_path / "a-file" / "x.wacz")
    with pytest.raises(ExportError, match="is a folder"):
        export_wacz(snapshot, tmp_path, force=True)
    # A pipe (or a device) is not replaced by a file of the package, --force or not (as root, a
    # WACZ written to /dev/null took the device's place; a pipe stands for it here).
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ExportError, match="is not a regular file"):
        export_wacz(snapshot, tmp_path / "pipe", force=True)
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)
    (tmp_path / "pipe").unlink()
    # A FILE inside the snapshot could replace a WARC file or the manifest, or be packed next time.
    warc = next((snapshot / "warc").glob("*.warc.gz"))
    kept = {path: path.read_bytes() for path in (warc, snapshot / "manifest.sqlite3")}
    for inside in (warc, snapshot / "manifest.sqlite3", snapshot / "warc" / "new.wacz"):
        with pytest.raises(ExportError, match="is inside the snapshot"):
            export_wacz(snapshot, inside, force=True)
    assert {path: path.read_bytes() for path in kept} == kept
    assert not (snapshot / "warc" / "new.wacz").exists()
    # A package that would not replay is refused: a WARC file its index names is gone, or the
    # index itself (FILE stays as it was).
    warc.rename(tmp_path / warc.name)
    with pytest.raises(
        SnapshotError, match=f"names WARC files that are not in .*: {warc.name}; the snapshot is damaged"
    ):
        export_wacz(snapshot, target, force=True)
    warc.with_name("x").parent.joinpath(warc.name).write_bytes((tmp_path / warc.name).read_bytes())
    index = snapshot / "indexes" / "index.cdxj"
    index.rename(tmp_path / "index.cdxj")
    with pytest.raises(SnapshotError, match="index.cdxj is missing or empty, yet the manifest names"):
        export_wacz(snapshot, target, force=True)
    (tmp_path / "index.cdxj").rename(index)
    assert target.read_bytes() == b"old"
    # A snapshot file that cannot be read stops the export; FILE stays as it was.
    (snapshot / "warc" / "zz-gone.warc.gz").symlink_to(tmp_path / "missing")
    with pytest.raises(SnapshotError, match="cannot read"):
        export_wacz(snapshot, target, force=True)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


async def test_the_command_line_says_what_it_wrote_or_why_not_in_one_line(snapshot, tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "archiver", "export", *args], capture_output=True, text=True, timeout=120
        )

    target = tmp_path / "demo.wacz"
    done = run(str(snapshot), "--wacz", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {target}: 7 pages")
    for args, message in (
        ((str(snapshot), "--wacz", str(target)), "exists; give --force to replace it"),
        ((str(tmp_path / "none"), "--wacz", str(target)), "is not a snapshot"),
        ((str(snapshot), "--wacz", "/proc/x.wacz"), "cannot write /proc/x.wacz"),
    ):
        refused = run(*args)
        assert refused.returncode == 2, refused
        assert refused.stderr.count("\n") == 1 and message in refused.stderr, refused.stderr
    assert run(str(snapshot), "--wacz", str(target), "--force").returncode == 0


@pytest.mark.parametrize(
    "settings", [[1], {"seeds": 5}, {"seeds": ["http://h/"], "exclude": "(", "delay": "x"}]
)
async def test_a_crawl_json_of_the_wrong_shape_is_refused_in_one_line(snapshot, tmp_path, settings):
    data = json.loads((snapshot / "crawl.json").read_text())
    (snapshot / "crawl.json").write_text(json.dumps({**data, "settings": settings, "finished": 5}))
    with pytest.raises(SnapshotError, match="cannot read .*crawl.json: crawl.json: "):
        export_wacz(snapshot, tmp_path / "out.wacz")
    # The mirror's index.html does without the settings it cannot read.
    built = subprocess.run(
        [sys.executable, "-m", "archiver", "mirror", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0 and built.stderr == "", built.stderr
    assert (snapshot / "index.html").is_file()


def copied_records(target: Path, tmp_path: Path) -> tuple[str, list[tuple[int, bytes, Any]]]:
    """The package's WARC file that no snapshot's warc/ holds (the copies of earlier records): its
    name, and each record's offset, bytes and warcio record, the warcinfo first."""
    names = [name for name in entries(target) if name.startswith("archive/")]
    extra = [name for name in names if name.startswith("archive/originals-")]
    assert len(extra) == 1, names
    data = read(target, extra[0])
    (tmp_path / "copied.warc.gz").write_bytes(data)
    starts = [0, *member_ends(tmp_path / "copied.warc.gz")]
    assert starts[-1] == len(data)
    found = []
    for start, end in itertools.pairwise(starts):
        member = data[start:end]
        found.append((start, member, next(iter(ArchiveIterator(io.BytesIO(member))))))
    return extra[0].removeprefix("archive/"), found


def cdxj_entry(line: str) -> tuple[str, dict[str, str]]:
    """A CDXJ line's key and timestamp, and its JSON block."""
    key, stamp, block = line.split(" ", 2)
    return f"{key} {stamp}", json.loads(block)


def assert_holds_each_original_once(
    target: Path, new: Path, earlier: list[Path], tmp_path: Path
) -> set[Path]:
    """The package of ``new`` holds, once each and byte for byte, the records of the ``earlier``
    snapshots that its revisits refer to, each indexed as its own snapshot indexes it, in a
    sorted index that keeps every line of NEW's; returns the snapshots they came from."""
    own = manifest_rows(new, for_crawlers=True)
    wanted = {
        (url, date)
        for _, url, date in revisits(new).values()
        if url not in own or own[url].fetched_at != date
    }
    name, records = copied_records(target, tmp_path)
    assert records[0][2].rec_type == "warcinfo"
    copies = [
        (r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Date"))
        for *_, r in records[1:]
    ]
    assert sorted(copies) == sorted(wanted) and len(copies) == len(set(copies))
    lines = gzip.decompress(read(target, "indexes/index.cdx.gz")).decode().splitlines()
    ours = (new / "indexes" / "index.cdxj").read_text().splitlines()
    assert lines == sorted(lines) and set(ours) <= set(lines) and len(lines) == len(ours) + len(copies)
    indexed = dict(cdxj_entry(line) for line in lines if cdxj_entry(line)[1]["filename"] == name)
    rows = {snapshot: manifest_rows(snapshot, for_crawlers=True) for snapshot in earlier}
    sources = set()
    for (offset, member, record), (url, date) in zip(records[1:], copies, strict=True):
        assert record.rec_type == "response"
        holder = next(s for s in earlier if url in rows[s] and rows[s][url].fetched_at == date)
        sources.add(holder)
        row = rows[holder][url]
        assert row.record_type == "response" and row.warc_file is not None and row.warc_offset is not None
        stored = (holder / "warc" / row.warc_file).read_bytes()
        assert len(member) == row.warc_length
        assert member == stored[row.warc_offset : row.warc_offset + len(member)]
        # Its line is the one its own snapshot has, pointing at its place in the package.
        theirs = (cdxj_entry(line) for line in (holder / "indexes" / "index.cdxj").read_text().splitlines())
        key, entry = next(
            (key, entry)
            for key, entry in theirs
            if (entry["filename"], entry["offset"]) == (row.warc_file, str(row.warc_offset))
        )
        assert indexed[key] == {**entry, "filename": name, "offset": str(offset)}
    return sources


async def test_the_package_of_a_rearchive_holds_the_originals_of_its_revisits(site, run_crawl, tmp_path):
    """NEW's revisits of both profiles refer to OLD's records: the package takes each along once
    (the two revisits of /style.css's payload share one), so it replays without OLD."""
    _, (old, new) = await rearchived(site, run_crawl, tmp_path)
    profiles = {profile for profile, _, _ in revisits(new).values()}
    assert profiles == {NOT_MODIFIED_PROFILE, REVISIT_PROFILE}
    target = tmp_path / "new.wacz"
    summary = export_wacz(new, target)
    assert assert_holds_each_original_once(target, new, [old], tmp_path) == {old}
    # /same (a 304), /style.css and /copy.css (one original), /logo.png, robots.txt (a 404).
    assert summary.originals == 4 and summary.warc_files == len(list((new / "warc").glob("*.warc.gz"))) + 1
    assert "(4 of them copied from earlier snapshots)" in summary.summary()


async def test_the_package_of_a_rearchive_of_a_rearchive_takes_originals_from_each(site, run_crawl, tmp_path):
    """NEW against MID against OLD: what changed before MID refers to MID's records, the rest to
    OLD's; the package holds both."""
    _, (old, mid, new) = await rearchived(site, run_crawl, tmp_path, chain=True)
    target = tmp_path / "new.wacz"
    export_wacz(new, target)
    assert assert_holds_each_original_once(target, new, [old, mid], tmp_path) == {old, mid}


async def test_a_rearchive_whose_originals_are_out_of_reach_is_refused_in_one_line(site, run_crawl, tmp_path):
    """An earlier snapshot that holds originals is gone (the one NEW names, or one behind it), or
    an original is damaged: the export says which in one line, exits 2 and leaves nothing."""
    _, (old, mid, new) = await rearchived(site, run_crawl, tmp_path, chain=True)
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()

    def export() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "archiver", "export", str(new), "--wacz", str(out / "new.wacz")],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TMPDIR": str(scratch)},
        )

    def refused(message: str) -> None:
        done = export()
        assert done.returncode == 2 and done.stdout == "", done
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
        assert f"archiver verify {new}" in done.stderr, done.stderr
        assert list(out.iterdir()) == [] and list(scratch.iterdir()) == []

    for gone in (old, mid):
        gone.rename(tmp_path / "away")
        refused(f"refer to records of the earlier snapshot {gone}, which is gone")
        (tmp_path / "away").rename(gone)
    # OLD's record of /same, damaged in the middle of its gzip member.
    row = manifest_rows(old)[site.url("/same")]
    assert row.warc_file is not None and row.warc_offset is not None and row.warc_length
    warc = old / "warc" / row.warc_file
    kept = warc.read_bytes()
    middle = row.warc_offset + row.warc_length // 2
    warc.write_bytes(kept[:middle] + bytes([kept[middle] ^ 0xFF]) + kept[middle + 1 :])
    refused(f"the record of {site.url('/same')} in {old}/warc/{row.warc_file} (offset {row.warc_offset})")
    warc.write_bytes(kept)
    done = export()
    assert done.returncode == 0, done.stderr
    assert "copied from earlier snapshots" in done.stdout
