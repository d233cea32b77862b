"""A snapshot's own files name other files (crawl.json its repairs under way, the manifest each
URL's WARC file and mirror file): names that lead out of the snapshot, in a snapshot edited by
hand or received from someone else, reach nothing outside it."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sqlite3

import pytest
from repairs import run_archiver

from archiver.crawling.chromium import find_chromium
from archiver.store.snapshot import REPAIRS

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


async def test_a_repair_noted_in_crawl_json_writes_nothing_outside_the_snapshot(
    site, run_crawl, tmp_path
) -> None:
    """crawl.json notes the repairs under way, finished by the next repair (a crash may have
    come between); a note naming a file out of warc/ is refused in one line, and that file
    is left as it was."""
    site.page("/", links=["/a"])
    site.page("/a", title="a")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"x" * 5000)
    record = json.loads((root / "crawl.json").read_text())
    record[REPAIRS] = [
        {
            "file": "../../victim.bin",
            "offset": 0,
            "length": 3000,
            "url": site.url("/a"),
            "kept_in": "damaged-records/x.damaged",
            "record_id": "<urn:uuid:00000000-0000-0000-0000-000000000001>",
            "date": "2026-01-02T03:04:05.000000Z",
        }
    ]
    (root / "crawl.json").write_text(json.dumps(record))

    repaired = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--repair", "--quiet")
    assert victim.read_bytes() == b"x" * 5000
    assert repaired.returncode != 0
    lines = repaired.stderr.strip().splitlines()
    assert len(lines) == 1 and "unsafe path '../../victim.bin'" in lines[0], repaired.stderr


async def test_a_rearchive_takes_no_file_from_outside_the_previous_snapshot(
    site, run_crawl, tmp_path
) -> None:
    """A re-archive links its previous snapshot's unchanged mirror files; a previous manifest
    naming a file out of its mirror (of the very bytes the image has) gives nothing: the new
    mirror's file is its own, not a link to a file outside either snapshot."""
    site.page("/", body='<img src="/i.png">')
    site.file("/i.png", PNG, "image/png")
    await site.start()
    old = (await run_crawl(site.url("/"), output=tmp_path / "old", sitemaps=False)).snapshot.root
    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG)
    with sqlite3.connect(old / "manifest.sqlite3") as db:
        (kept,) = db.execute("SELECT local_path FROM urls WHERE url = ?", (site.url("/i.png"),)).fetchone()
        db.execute("UPDATE urls SET local_path = '../../outside.png' WHERE url = ?", (site.url("/i.png"),))
        db.execute("UPDATE mirror_files SET path = '../../outside.png' WHERE path = ?", (kept,))
    db.close()

    new = (
        await run_crawl(site.url("/"), output=tmp_path / "new", sitemaps=False, previous=str(old))
    ).snapshot.root
    with sqlite3.connect(new / "manifest.sqlite3") as db:
        (path,) = db.execute("SELECT local_path FROM urls WHERE url = ?", (site.url("/i.png"),)).fetchone()
    db.close()
    made = new / "mirror" / path
    assert made.read_bytes() == PNG
    assert not os.path.samefile(made, outside)
    assert os.stat(outside).st_nlink == 1


@pytest.mark.parametrize("setting", ["chromium", "cookies_file", "ca_bundle"])
async def test_a_resume_runs_and_reads_nothing_only_crawl_json_names(
    site, run_crawl, tmp_path, setting
) -> None:
    """crawl.json keeps the program a crawl drove and the files it read; a resume took them from
    there, so a snapshot from elsewhere could have archiver run any program (its crawl.json
    saying --browser always --chromium PROGRAM) or send the cookies of any file of the user to
    the sites it names. Now such a setting is taken only from the resume's command line:
    without it, refused in one line, the program not run; given again, the crawl resumes."""
    site.page("/", links=["/a"])
    site.page("/a", title="a")
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    ran = tmp_path / "ran"
    named = tmp_path / "named"
    if setting == "chromium":
        named.write_text(f"#!/bin/sh\ntouch {ran}\n")
        named.chmod(0o755)
    else:  # a Netscape cookies file: for the crawled host
        named.write_text(f"# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsecret\t{setting}\n")
    record = json.loads((root / "crawl.json").read_text())
    record["settings"][setting] = str(named)
    if setting == "chromium":
        record["settings"]["browser"] = "always"
    (root / "crawl.json").write_text(json.dumps(record))
    flag = "--" + setting.replace("_", "-")

    refused = await asyncio.to_thread(run_archiver, "crawl", "--resume", str(root), "--quiet")
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{flag} {named}" in lines[0] and "give" in lines[0], refused.stderr
    assert not ran.exists()
    if setting == "chromium":  # the one on PATH, which a resume drives unnamed, is no refusal
        record["settings"]["chromium"] = find_chromium()
        (root / "crawl.json").write_text(json.dumps(record))
        command = ["crawl", "--resume", str(root), "--quiet"]
    else:
        command = ["crawl", "--resume", str(root), flag, str(named), "--quiet"]
    if setting != "ca_bundle":  # (not a PEM file)
        again = await asyncio.to_thread(run_archiver, *command)
        assert again.returncode == 0, again.stderr


async def test_the_mend_verify_names_gives_the_options_a_resume_takes_only_from_its_command_line(
    site, run_crawl, tmp_path
) -> None:
    """A crawl given --cookies-file is resumed only with it given again: verify's mend line for a
    torn WARC file names it, and that line, run as written, mends the snapshot."""
    site.page("/", links=["/a"])
    site.page("/a", title="a")
    await site.start()
    cookies = tmp_path / "my cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t1\n")
    root = (await run_crawl(site.url("/"), sitemaps=False, cookies_file=str(cookies))).snapshot.root
    with open(sorted((root / "warc").glob("*.warc.gz"))[-1], "ab") as warc:
        warc.write(b"\x1f\x8b\x08\x00torn")  # a record cut short, as a kill leaves it
    verified = await asyncio.to_thread(run_archiver, "verify", str(root), "--no-mirror")
    line = next(line for line in verified.stdout.splitlines() if "torn_file" in line)
    command = line.partition("with: ")[2].rstrip(")")
    assert f"--cookies-file {shlex.quote(str(cookies))}" in command, line
    words = shlex.split(command)
    assert words[:3] == ["archiver", "crawl", "--resume"], command
    mended = await asyncio.to_thread(run_archiver, *words[1:], "--quiet")
    assert mended.returncode == 0, mended.stderr
    again = await asyncio.to_thread(run_archiver, "verify", str(root), "--no-mirror")
    assert again.returncode == 0, again.stdout


async def test_the_commands_messages_name_run_as_written_in_a_folder_with_a_space(
    site, run_crawl, tmp_path
) -> None:
    """A message naming a command gave the folder unquoted, and the store's, for a manifest lost,
    without the options a resume takes only from its command line: run as written, a shell split
    the folder in two, and the resume refused. Each command named here runs as written."""
    site.page("/", links=["/a"])
    site.page("/a", title="a")
    await site.start()
    cookies = tmp_path / "my cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t1\n")
    root = tmp_path / "my snap"
    await run_crawl(site.url("/"), output=root, sitemaps=False, cookies_file=str(cookies))
    for path in root.glob("manifest.sqlite3*"):
        path.unlink()
    mirrored = await asyncio.to_thread(run_archiver, "mirror", str(root))
    assert mirrored.returncode != 0
    command = mirrored.stderr.partition("with: ")[2].strip().rstrip(")")
    given = f"--cookies-file {shlex.quote(str(cookies))}"
    assert command == f"archiver crawl --resume {shlex.quote(str(root))} {given} --repair", mirrored.stderr
    mended = await asyncio.to_thread(run_archiver, *shlex.split(command)[1:], "--quiet")
    assert mended.returncode == 0, mended.stderr
    (root / "indexes" / "index.cdxj").unlink()
    verified = await asyncio.to_thread(run_archiver, "verify", str(root), "--no-mirror")
    assert verified.returncode != 0
    line = next(line for line in verified.stdout.splitlines() if "index is missing" in line)
    rebuild = line.partition("(")[2].partition(" writes it again")[0]
    assert rebuild == f"archiver mirror {shlex.quote(str(root))}", line
    rebuilt = await asyncio.to_thread(run_archiver, *shlex.split(rebuild)[1:])
    assert rebuilt.returncode == 0, rebuilt.stderr
    again = await asyncio.to_thread(run_archiver, "verify", str(root))
    assert again.returncode == 0, again.stdout


async def test_the_resume_a_stop_names_gives_again_the_headers_crawl_json_does_not_keep(
    site, tmp_path
) -> None:
    """A crawl given an Authorization --header and --cookies-file, stopped by --max-time, named a
    resume with --cookies-file alone: run as written, it was refused for the header it lacked. It
    names every --header (given with --resume, they replace the saved ones), the withheld value
    as [withheld]: run as written, the resume says to give it; with it given, the crawl goes on."""
    seen: list[tuple[str | None, str | None]] = []

    async def slow(request):
        from aiohttp import web

        seen.append((request.headers.get("Authorization"), request.headers.get("X-K")))
        await asyncio.sleep(0.5)
        links = "".join(f"<a href='/p{n}'>p</a>" for n in range(8))
        return web.Response(text=links, content_type="text/html")

    site.handler("/", slow)
    for n in range(8):
        site.handler(f"/p{n}", slow)
    await site.start()
    cookies = tmp_path / "my cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\t1\n")
    root = tmp_path / "snap"
    given = ["--header", "Authorization: Bearer T0KEN", "--header", "X-K: v", "--cookies-file", str(cookies)]
    stopped = await asyncio.to_thread(
        run_archiver,
        "crawl",
        site.url("/"),
        "-o",
        str(root),
        *given,
        "--max-time",
        "1s",
        "--concurrency",
        "1",
    )
    assert stopped.returncode == 15, stopped.stderr
    command = stopped.stderr.partition("continue it with: ")[2].partition(" (or browse")[0]
    words = shlex.split(command)
    assert words[:4] == ["archiver", "crawl", "--resume", str(root)], command
    assert words[4:] == [
        "--cookies-file",
        str(cookies),
        "--header",
        "Authorization: [withheld]",
        "--header",
        "X-K: v",
    ], command
    as_written = await asyncio.to_thread(run_archiver, *words[1:], "--quiet")
    assert as_written.returncode == 2, as_written.stderr
    assert "Authorization header" in as_written.stderr and "in place of [withheld]" in as_written.stderr
    assert "Traceback" not in as_written.stderr
    filled = [word.replace("[withheld]", "Bearer T0KEN") for word in words[1:]]
    resumed = await asyncio.to_thread(run_archiver, *filled, "--quiet", "--max-time", "60s")
    assert resumed.returncode == 0, resumed.stderr
    assert set(seen) == {("Bearer T0KEN", "v")}
