"""Re-archiving a site against its previous snapshot (crawl --previous OLD), with a local server.

The site changes between the two crawls: a page changes, one is removed, one
is added, the rest stays. Served with validators (ETag, Last-Modified) the
unchanged URLs come back as 304s; served without, as 200s whose payloads OLD
holds. Either way they are revisits in NEW referring to OLD's records, the
change report is exact, both snapshots verify, and NEW's mirror stands alone
once OLD is deleted.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import shutil
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest
from rearchive_site import PNG, built_site, change_site, host, rearchived, revisits, warc_record
from test_browser import CHROMIUM
from test_verify_tamper import edit_record_of

from archiver.cli import main
from archiver.crawling import mirror_choice
from archiver.export.wacz import export_wacz
from archiver.report import DANGLING_REVISIT, MISSING_PREVIOUS
from archiver.store.changes import Changes
from archiver.verify.verifier import verify_snapshot
from archiver.warc.records import NOT_MODIFIED_PROFILE, REVISIT_PROFILE
from tests.conftest import manifest_rows


@pytest.mark.parametrize("validators", [True, False], ids=["304", "digest"])
async def test_rearchive_stores_revisits_of_the_unchanged_and_reports_changes(
    site, run_crawl, tmp_path, validators, capsys
):
    pages = await built_site(site, validators)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    change_site(pages)
    result = await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    assert not result.interrupted

    unchanged = {site.url(p) for p in ("/same", "/style.css", "/logo.png")}
    old_rows, new_rows = manifest_rows(old), manifest_rows(new)
    for url in unchanged:
        assert new_rows[url].record_type == "revisit", url
        assert new_rows[url].status == 200 and new_rows[url].payload_digest == old_rows[url].payload_digest
        headers, status = warc_record(new, url)
        # Each refers to OLD's response record: its URL and date.
        assert headers["WARC-Refers-To-Target-URI"] == url
        assert headers["WARC-Refers-To-Date"] == old_rows[url].fetched_at
        assert headers["WARC-Payload-Digest"] == old_rows[url].payload_digest
        if validators:
            assert headers["WARC-Profile"] == NOT_MODIFIED_PROFILE
            assert status.startswith("304")
        else:
            assert headers["WARC-Profile"] == REVISIT_PROFILE
            assert status.startswith("200")
    for path in ("/", "/changed", "/new"):
        assert new_rows[site.url(path)].record_type == "response", path
    if validators:
        # Every URL OLD archived was asked for conditionally; those unchanged answered 304.
        assert sorted(set(pages.conditional)) == ["/", "/changed", "/logo.png", "/same", "/style.css"]
        assert sorted(pages.not_modified) == ["/logo.png", "/same", "/style.css"]
    else:
        assert pages.conditional == []

    with Changes(old / "manifest.sqlite3", new / "manifest.sqlite3") as changes:
        # robots.txt is archived too (a 404 here, the same both times).
        assert changes.counts() == {"new": 1, "changed": 2, "unchanged": 4, "gone": 1}
        assert list(changes.urls("new")) == [site.url("/new")]
        assert list(changes.urls("changed")) == [site.url("/"), site.url("/changed")]
        assert set(changes.urls("unchanged")) == unchanged | {site.url("/robots.txt")}
        assert list(changes.urls("gone")) == [site.url("/gone")]

    for snapshot in (old, new):
        report = verify_snapshot(snapshot)
        assert report.ok, report.render_text(str(new))
    assert verify_snapshot(new).stats["revisits of the previous snapshot"] == 4  # robots.txt too

    # NEW's mirror holds every page and file, unchanged ones linked from OLD's where possible.
    mirror = new / "mirror" / host(site)
    assert (mirror / "logo.png").read_bytes() == PNG
    assert (mirror / "same.html").read_text().count("always the same") == 1
    old_mirror = old / "mirror" / host(site)
    # An unchanged file is OLD's, linked; so is an unchanged page whose rewritten bytes are OLD's.
    assert (mirror / "logo.png").stat().st_ino == (old_mirror / "logo.png").stat().st_ino
    assert (mirror / "same.html").stat().st_ino == (old_mirror / "same.html").stat().st_ino
    assert (mirror / "index.html").stat().st_ino != (old_mirror / "index.html").stat().st_ino
    assert "second version" in (mirror / "changed.html").read_text()
    index = (new / "index.html").read_text()
    assert "Changes since the previous snapshot" in index and site.url("/gone") in index

    # OLD deleted: NEW's mirror stands alone, its WARC side says plainly what it lacks.
    shutil.rmtree(old)
    report = verify_snapshot(new)
    assert set(report.counts) == {MISSING_PREVIOUS}, report.render_text(str(new))
    assert DANGLING_REVISIT not in report.counts
    assert "4 revisits refer to records of this snapshot" in report.render_text(str(new))
    assert (mirror / "logo.png").read_bytes() == PNG
    assert (mirror / "same.html").is_file()
    # crawl.json kept the counts: a rebuilt index still shows them.
    assert json.loads((new / "crawl.json").read_text())["stats"]["changes"]["gone"] == 1
    # A rebuild could not write the files whose payloads only OLD held: it is refused, and the
    # mirror stays whole.
    files = sorted(p.relative_to(new) for p in (new / "mirror").rglob("*"))
    assert main(["mirror", str(new)]) == 2
    assert f"re-archive against {old}, which is not there" in capsys.readouterr().err
    assert sorted(p.relative_to(new) for p in (new / "mirror").rglob("*")) == files
    assert verify_snapshot(new, check_mirror=True).counts.keys() == {MISSING_PREVIOUS}


async def test_mirror_rebuild_of_a_rearchive_reads_old_payloads(site, run_crawl, tmp_path):
    """archiver mirror NEW rebuilds the unchanged pages from OLD's records (a 304 keeps no body)."""
    pages = await built_site(site, validators=True)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    change_site(pages)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    before = (new / "mirror" / host(site) / "same.html").read_bytes()
    assert main(["mirror", str(new)]) == 0
    assert (new / "mirror" / host(site) / "same.html").read_bytes() == before
    assert (new / "mirror" / host(site) / "logo.png").read_bytes() == PNG
    # The rebuild replaced NEW's linked file: OLD's is untouched.
    assert (old / "mirror" / host(site) / "logo.png").read_bytes() == PNG
    # Unchanged files are linked from OLD's mirror again, not written: the image, and the page
    # whose rewritten bytes are OLD's.
    for name in ("logo.png", "same.html"):
        assert (new / "mirror" / host(site) / name).samefile(old / "mirror" / host(site) / name), name
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))
    report = verify_snapshot(old)
    assert report.ok, report.render_text(str(new))


async def test_rearchive_whose_mirror_is_built_after_the_crawl_links_the_unchanged(
    site, run_crawl, tmp_path, monkeypatch
):
    """A re-archive bound by CPU builds its mirror at the end (mirror_choice): unchanged files are
    still linked from the previous snapshot's, not written again."""
    pages = await built_site(site, validators=False)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    change_site(pages)
    monkeypatch.setattr(mirror_choice, "BUSY_SHARE", 0.0)  # bound by CPU from the second capture
    monkeypatch.setattr(mirror_choice, "WINDOW_SECONDS", 0.0)
    monkeypatch.setattr(mirror_choice, "WINDOW_CAPTURES", 1)
    result = await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    assert "the mirror is built after the crawl" in (new / "logs" / "crawl.log").read_text()
    assert result.mirror is not None and not result.mirror.errors
    mirror, old_mirror = new / "mirror" / host(site), old / "mirror" / host(site)
    for name in ("logo.png", "same.html"):
        assert (mirror / name).samefile(old_mirror / name), name
    assert not (mirror / "index.html").samefile(old_mirror / "index.html")
    assert "second version" in (mirror / "changed.html").read_text()
    assert "Changes since the previous snapshot" in (new / "index.html").read_text()
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))


def one_each(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys are each given once (RFC 8259: a reader keeps one of them)."""
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), keys
    return dict(pairs)


async def test_diff_command_text_and_json(site, run_crawl, tmp_path, capsys):
    pages = await built_site(site, validators=False)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    change_site(pages)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    capsys.readouterr()
    assert main(["diff", str(old), str(new)]) == 0
    text = capsys.readouterr().out
    assert "1 new, 2 changed, 4 unchanged, 1 gone" in text
    assert f"new  {site.url('/new')}" in text and f"gone  {site.url('/gone')}" in text
    assert main(["diff", str(old), str(new), "--json"]) == 0
    text = capsys.readouterr().out
    report = json.loads(text, object_pairs_hook=one_each)
    assert report["snapshots"] == {"old": str(old), "new": str(new)}
    assert report["counts"] == {"new": 1, "changed": 2, "unchanged": 4, "gone": 1}
    assert report["new"] == [site.url("/new")]
    assert report["gone"] == [site.url("/gone")]
    unchanged = ("/logo.png", "/robots.txt", "/same", "/style.css")
    assert sorted(report["unchanged"]) == sorted(site.url(p) for p in unchanged)


def test_previous_that_is_not_a_snapshot_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    new, empty = str(tmp_path / "new"), str(tmp_path / "empty")
    code = main(["crawl", "http://127.0.0.1:9/", "-o", new, "--previous", empty])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a snapshot" in err
    assert not (tmp_path / "new").exists()
    assert main(["diff", str(tmp_path / "nothing"), empty]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.interop
@pytest.mark.parametrize("validators", [True, False], ids=["304", "digest"])
async def test_pywb_replays_the_unchanged_from_both_snapshots(site, run_crawl, tmp_path, validators):
    """One pywb collection holding both snapshots' WARC files and CDXJ lines replays NEW's capture
    of an unchanged URL with OLD's payload: an identical-payload revisit found by its URL, date
    and digest; for a 304's revisit (server-not-modified), which has no line, the capture of
    OLD that the 304 confirmed (pywb plays a revisit whose own status is 3xx as an empty 3xx,
    whatever its line says)."""
    from tests.test_interop import _get, _wait_for, free_port, interop_venv

    pages = await built_site(site, validators)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    change_site(pages)
    # NEW's captures a second later than OLD's: asked at NEW's time, pywb must choose between them.
    await asyncio.sleep(1.05 - time.time() % 1)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False, warc_prefix="new")
    rows = manifest_rows(new)
    urls = {path: site.url(path) for path in ("/logo.png", "/style.css")}
    await site.close()  # replay must come from the archives alone
    root = tmp_path / "pywb"
    collection = root / "collections" / "both"
    (collection / "archive").mkdir(parents=True)
    (collection / "indexes").mkdir()
    lines: list[str] = []
    for snapshot in (old, new):
        for warc in (snapshot / "warc").glob("*.warc.gz"):
            shutil.copy(warc, collection / "archive")
        lines += (snapshot / "indexes" / "index.cdxj").read_text().splitlines()
    (collection / "indexes" / "index.cdxj").write_text("\n".join(sorted(lines)) + "\n")
    port = free_port()
    log = open(root / "wayback.log", "w")  # noqa: SIM115
    wayback = subprocess.Popen(
        [str(interop_venv() / "bin" / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}/both"
        await asyncio.to_thread(_wait_for, f"{base}/", wayback)
        for path, body in (("/logo.png", gzip.compress(PNG, mtime=0)), ("/style.css", None)):
            url = urls[path]
            stamp = "".join(ch for ch in rows[url].fetched_at or "" if ch.isdigit())[:14]
            status, data, _ = await asyncio.to_thread(_get, f"{base}/{stamp}id_/{url}")
            assert status == 200, (path, status, data[:200])
            if body is not None:
                assert data in (body, PNG), path
            else:
                assert b"background" in data
    finally:
        wayback.terminate()
        wayback.wait(timeout=10)
        log.close()


def stamp(warc_date: str) -> str:
    """The 14-digit timestamp of a WARC-Date, as replay URLs and CDXJ lines have it."""
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]


@pytest.mark.interop
async def test_the_wacz_of_a_rearchive_replays_its_unchanged_urls_on_its_own(site, run_crawl, tmp_path):
    """The WACZ of NEW holds the originals of its revisits, which OLD held: py-wacz validates it,
    and pywb, given the package alone (OLD deleted, the site stopped), replays each unchanged URL
    with its whole body. A payload sent again (identical-payload-digest) is replayed at NEW's
    capture, through the revisit; a 304 (server-not-modified), which has no line (pywb would play
    it as the empty 304 it was), with the capture it refers to, which the package now holds."""
    from tests.test_interop import _get, interop_venv
    from tests.test_wacz_interop import pywb_replaying, validated

    pages, (old, new) = await rearchived(site, run_crawl, tmp_path)
    rows = manifest_rows(new, for_crawlers=True)
    unchanged = revisits(new)
    assert {profile for profile, _, _ in unchanged.values()} == {NOT_MODIFIED_PROFILE, REVISIT_PROFILE}
    target = tmp_path / "new.wacz"
    export_wacz(new, target)
    await site.close()
    shutil.rmtree(old)
    tools = interop_venv() / "bin"
    await validated(tools, target)
    async with pywb_replaying(tools, tmp_path / "pywb", target) as base:
        for url, (profile, _, _) in unchanged.items():
            path = urlsplit(url).path
            # At NEW's time: a 304's revisit has no line, so pywb plays the original it refers to.
            status, data, _ = await asyncio.to_thread(
                _get, f"{base}/{stamp(rows[url].fetched_at or '')}id_/{url}"
            )
            if path == "/robots.txt":  # the site's 404, the same both times
                assert (status, data) == (404, b"no robots.txt"), (path, status, data[:200])
                continue
            body = pages.pages[path][0]
            assert status == 200, (path, profile, status, data[:200])
            assert data == body or (path == "/logo.png" and data == PNG), (path, data[:200])


@pytest.mark.parametrize("validators", [True, False], ids=["304", "digest"])
async def test_rearchive_of_a_rearchive_refers_to_the_first_records(site, run_crawl, tmp_path, validators):
    """MID was re-archived against OLD, NEW against MID: NEW's revisits name OLD's records, found
    through MID's own previous snapshot, and verify follows them there."""
    await built_site(site, validators)
    old, mid, new = tmp_path / "old", tmp_path / "mid", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    await run_crawl(site.url("/"), output=mid, previous=str(old), sitemaps=False)
    await run_crawl(site.url("/"), output=new, previous=str(mid), sitemaps=False)
    old_rows, new_rows = manifest_rows(old), manifest_rows(new)
    for path in ("/", "/same", "/logo.png"):
        url = site.url(path)
        assert new_rows[url].record_type == "revisit", path
        headers, _ = warc_record(new, url)
        assert headers["WARC-Refers-To-Date"] == old_rows[url].fetched_at, path
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))
    # Every capture of NEW (the site is unchanged) is a revisit of a record of OLD.
    assert report.stats["revisits of the previous snapshot"] == report.stats["revisits"] >= 6
    assert (new / "mirror" / host(site) / "logo.png").read_bytes() == PNG

    # OLD gone, MID there: the snapshot missing is named once, no revisit is called dangling.
    shutil.rmtree(old)
    report = verify_snapshot(new)
    assert set(report.counts) == {MISSING_PREVIOUS}, report.render_text(str(new))
    assert [problem.where for problem in report.examples[MISSING_PREVIOUS]] == [str(old)]
    assert main(["mirror", str(new)]) == 2  # refused: the mirror stays as it was
    assert (new / "mirror" / host(site) / "logo.png").read_bytes() == PNG


@pytest.mark.parametrize("validators", [True, False], ids=["304", "digest"])
async def test_a_damaged_record_of_the_previous_snapshot_is_not_referred_to(
    site, run_crawl, tmp_path, validators
):
    """The crawl has the body in hand: it stores it whole rather than refer to a record that
    cannot be read (verify found the revisit dangling right after the crawl)."""
    await built_site(site, validators)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    logo = manifest_rows(old)[site.url("/logo.png")]
    assert logo.warc_file and logo.warc_offset is not None and logo.warc_length
    with open(old / "warc" / logo.warc_file, "r+b") as warc:
        warc.seek(logo.warc_offset + logo.warc_length // 2)
        byte = warc.read(1)
        warc.seek(-1, 1)
        warc.write(bytes([byte[0] ^ 0xFF]))
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    rows = manifest_rows(new)
    assert rows[site.url("/logo.png")].record_type == "response"
    assert rows[site.url("/same")].record_type == "revisit"  # the others still refer to OLD
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))
    assert (new / "mirror" / host(site) / "logo.png").read_bytes() == PNG


async def test_snapshot_folders_named_with_url_characters_open(site, run_crawl, tmp_path, capsys):
    """'#', '?' and '%' end or escape a path in the SQLite URI that opens a manifest read-only:
    'old#1' opened (and created) a file 'old' beside it."""
    await built_site(site, validators=True)
    old, new = tmp_path / "old#1 ?50%41", tmp_path / "new#2"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    result = await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    assert not result.interrupted and manifest_rows(new)[site.url("/same")].record_type == "revisit"
    for snapshot in (old, new):
        report = verify_snapshot(snapshot)
        assert report.ok, report.render_text(str(snapshot))
    capsys.readouterr()
    assert main(["diff", str(old), str(new)]) == 0
    assert "0 new, 0 changed, 7 unchanged, 0 gone" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([old.name, new.name])


async def test_a_resumed_rearchive_reads_a_stylesheet_in_its_revisited_pages_encoding(
    site, run_crawl, tmp_path, caplog
):
    """NEW's page is a revisit of OLD's record (unchanged), and NEW was cut short before its
    stylesheet: the resumed crawl reads the page's encoding back through the revisit, from OLD,
    and fetches the image the stylesheet names as the crawl that read the page would have."""
    site.file("/", b'<link rel=stylesheet href="l.css"><p>caf\xe9</p>', "text/html; charset=windows-1252")
    site.file("/l.css", b"a{background:url(caf\xe9.png)}", "text/css")
    site.file("/caf\u00e9.png", b"\x89PNG cafe", "image/png")
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    await run_crawl(site.url("/"), output=new, previous=str(old), max_pages=1, sitemaps=False)
    rows = manifest_rows(new)
    assert rows[site.url("/")].record_type == "revisit" and rows[site.url("/l.css")].reason == "page limit"
    with caplog.at_level(logging.WARNING, logger="archiver"):
        await run_crawl(
            site.url("/"), output=new, previous=str(old), resume=True, max_pages=10, sitemaps=False
        )
    assert not [r.getMessage() for r in caplog.records if "cannot be read back" in r.getMessage()]
    assert manifest_rows(new)[site.url("/caf%C3%A9.png")].status == 200
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))


async def test_a_resumed_rearchive_keeps_the_robots_txt_it_revisited(site, run_crawl, tmp_path):
    """NEW's robots.txt is a revisit of OLD's (unchanged), and NEW was cut short: the resumed
    crawl reads its rules back through the revisit, from OLD, as it reads an answer stored
    whole, and does not ask for robots.txt again."""
    site.file("/robots.txt", "User-agent: *\nDisallow: /private\n", "text/plain")
    site.page("/", links=["/a", "/private"])
    site.page("/a")
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    await run_crawl(site.url("/"), output=new, previous=str(old), max_pages=1, sitemaps=False)
    assert manifest_rows(new, for_crawlers=True)[site.url("/robots.txt")].record_type == "revisit"
    assert site.hits["/robots.txt"] == 2
    await run_crawl(site.url("/"), output=new, previous=str(old), resume=True, sitemaps=False)
    assert site.hits["/robots.txt"] == 2
    assert site.hits["/private"] == 0 and manifest_rows(new)[site.url("/a")].status == 200


async def test_a_rearchive_renders_a_revisited_page_from_the_previous_snapshot(
    site, run_crawl, tmp_path, caplog
):
    """NEW's page is a revisit of OLD's record (unchanged): the browser rendering it in NEW is
    answered with its payload read from OLD, and its script's request is made and kept."""
    site.file(
        "/",
        "<p id=f></p><script>fetch('/frag' + 'ment').then(r => r.text())"
        ".then(t => { document.getElementById('f').textContent = t; });</script>",
    )
    site.file("/fragment", "a fragment", "text/plain")
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False, browser="always", chromium=CHROMIUM)
    with caplog.at_level(logging.WARNING, logger="archiver"):
        await run_crawl(
            site.url("/"), output=new, previous=str(old), sitemaps=False, browser="always", chromium=CHROMIUM
        )
    assert not [r.getMessage() for r in caplog.records if "for a browser" in r.getMessage()]
    rows = manifest_rows(new)
    assert rows[site.url("/")].record_type == "revisit" and rows[site.url("/")].dom_warc_file
    assert rows[site.url("/fragment")].status == 200
    assert site.hits["/fragment"] == 2
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))


async def test_a_rearchive_does_not_take_an_old_file_decoded_under_another_coding(site, run_crawl, tmp_path):
    """OLD stored a file's bytes sent gzip-encoded, and mirrored them decoded; NEW stores the
    same bytes sent as they are (the same payload digest, a revisit): its mirror file is those
    bytes, not OLD's file decoded under a coding NEW's answer does not have."""
    stored = gzip.compress(b"decoded text " * 50, mtime=0)
    encoded = {"Content-Encoding": "gzip"}
    site.file("/data.bin", stored, "application/octet-stream", headers=encoded)
    await site.start()
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/data.bin"), output=old, sitemaps=False)
    assert (old / "mirror" / host(site) / "data.bin").read_bytes() == b"decoded text " * 50
    encoded.clear()
    await run_crawl(site.url("/data.bin"), output=new, previous=str(old), sitemaps=False)
    assert manifest_rows(new)[site.url("/data.bin")].record_type == "revisit"
    assert (new / "mirror" / host(site) / "data.bin").read_bytes() == stored
    assert main(["mirror", str(new)]) == 0
    assert (new / "mirror" / host(site) / "data.bin").read_bytes() == stored


async def test_a_revisit_whose_original_was_damaged_since_is_fetched_again_by_a_repairing_resume(
    site, run_crawl, tmp_path
):
    """NEW's page is a 304 of OLD's record, damaged since: verify NEW names the revisit dangling,
    and crawl --resume NEW --repair fetches that page again (whole: OLD's record gives no
    validators now), stores its body, fetches nothing else, and NEW verifies."""
    await built_site(site, validators=True)
    old, new = tmp_path / "old", tmp_path / "new"
    await run_crawl(site.url("/"), output=old, sitemaps=False)
    await run_crawl(site.url("/"), output=new, previous=str(old), sitemaps=False)
    assert manifest_rows(new)[site.url("/same")].record_type == "revisit"
    edit_record_of(old, site.url("/same"), lambda record: record.replace(b"always", b"ALWAYS", 1))
    assert set(verify_snapshot(new).counts) == {DANGLING_REVISIT}
    hits = dict(site.hits)
    repaired = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "archiver", "crawl", "--resume", str(new), "--repair", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert repaired.returncode == 0, repaired.stderr
    assert f"the capture of {site.url('/same')} refers to a damaged record" in repaired.stderr
    again = {path: count - hits.get(path, 0) for path, count in site.hits.items() if count != hits.get(path)}
    assert again == {"/same": 1}
    assert manifest_rows(new)[site.url("/same")].record_type == "response"
    report = verify_snapshot(new)
    assert report.ok, report.render_text(str(new))
