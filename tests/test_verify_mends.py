"""Each line verify prints names what mends it: a snapshot damaged as a disk, a user or a killed
process damages one, the command the line names (read from the line, run as written), and
verify passing after; where no command can mend it, the line says what is lost and how a new
crawl gets it back."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from conftest import Site, crawled_into, manifest_rows
from repairs import run_archiver
from test_repair_named import problem_lines
from test_verify_tamper import edit_record_of, leave_what_a_kill_leaves

from archiver.verify.verifier import verify_snapshot

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAMED_COMMAND = re.compile(r"with: (archiver [^()]*)\)$")
"""The command a verify line names, at its end: ``(... with: archiver mirror DIR)``."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site() -> Any:
    """A site of a home page linking a page, a page in a folder, a redirect to the first, a 404,
    a link out of scope and a stylesheet; served while the module's tests run, so a command that
    fetches again finds it."""
    served = Site()
    served.page(
        "/",
        links=["/a", "/old", "/missing", "/sub/b", "http://elsewhere.invalid/x"],
        head='<link rel="stylesheet" href="/style.css">',
    )
    served.page("/a", links=["/sub/b"], body="<p>" + "a" * 1500 + "</p>")
    served.page("/sub/b", body="<p>" + "b" * 1500 + "</p>")
    served.redirect("/old", "/a")
    served.file("/style.css", "body { color: navy }", "text/css")
    await served.start()
    yield served
    await served.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def original(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One crawl of the site, in WARC files of about 2 KB (so a capture or two a file), which
    verify finds complete; each test damages a copy of it."""
    output = tmp_path_factory.mktemp("original") / "snap"
    await crawled_into(output, site.url("/"), max_tries=1, warc_max_size=2048)
    report = await asyncio.to_thread(verify_snapshot, output)
    assert report.ok, report.render_text(str(output))
    return output


@pytest.fixture
def snapshot(original: Path, tmp_path: Path) -> Path:
    """A copy of the crawl, this test's to damage."""
    return Path(shutil.copytree(original, tmp_path / "snap"))


def edit_manifest(root: Path, statement: str, *values: object) -> None:
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        assert db.execute(statement, values).rowcount == 1
    db.close()


def warc_of(root: Path, url: str) -> Path:
    """The WARC file that holds the capture of ``url``."""
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        (name,) = db.execute("SELECT warc_file FROM urls WHERE url = ?", (url,)).fetchone()
    db.close()
    return root / "warc" / name


def move_a_record(root: Path, site: Site) -> None:
    """A row's WARC offset edited: no record of its URL starts there."""
    edit_manifest(root, "UPDATE urls SET warc_offset = warc_offset + 10 WHERE url = ?", site.url("/a"))


def drop_a_row(root: Path, site: Site) -> None:
    """A fetched page's row deleted: its record is in the WARC files, named by no row."""
    edit_manifest(root, "DELETE FROM urls WHERE url = ?", site.url("/a"))


def drop_a_location(root: Path, site: Site) -> None:
    """A fetched page's row keeps its outcome but loses where its record is."""
    edit_manifest(
        root,
        "UPDATE urls SET warc_file = NULL, warc_offset = NULL, warc_length = NULL WHERE url = ?",
        site.url("/sub/b"),
    )


def drop_a_reason(root: Path, site: Site) -> None:
    """The link out of scope is skipped with no reason."""
    edit_manifest(root, "UPDATE urls SET reason = NULL WHERE url = 'http://elsewhere.invalid/x'")


def drop_a_skipped_row(root: Path, site: Site) -> None:
    """The link out of scope, which has no record, is no longer in the manifest."""
    edit_manifest(root, "DELETE FROM urls WHERE url = 'http://elsewhere.invalid/x'")


def deepen_a_row(root: Path, site: Site) -> None:
    """A row's depth edited: the page that links to it is of depth 0."""
    edit_manifest(root, "UPDATE urls SET depth = 5 WHERE url = ?", site.url("/sub/b"))


def redirect_nowhere(root: Path, site: Site) -> None:
    """The redirect's row names a next URL the manifest does not hold."""
    edit_manifest(
        root,
        "UPDATE urls SET redirect_to = ?, final_url = ? WHERE url = ?",
        *[site.url("/gone")] * 2,
        site.url("/old"),
    )


def edit_the_statistics(root: Path, site: Site) -> None:
    """crawl.json's statistics edited: they are no longer the manifest's counts."""
    path = root / "crawl.json"
    data = json.loads(path.read_text())
    data["stats"]["urls"] += 7
    path.write_text(json.dumps(data))


def cut_the_last_file(root: Path, site: Site) -> None:
    """The last WARC file cut short inside its last record, as a full disk or a copy that stopped
    leaves it."""
    last = max((root / "warc").glob("*.warc.gz"))
    last.write_bytes(last.read_bytes()[:-100])


def lose_a_warc_file(root: Path, site: Site) -> None:
    """The WARC file of one page deleted: its capture is gone from the only copy."""
    warc_of(root, site.url("/sub/b")).unlink()


def flip_a_byte(root: Path, site: Site) -> None:
    """A byte in the middle of a page's record flipped, as a failing disk flips one."""
    row = manifest_rows(root)[site.url("/sub/b")]
    path = root / "warc" / str(row.warc_file)
    data = bytearray(path.read_bytes())
    data[int(row.warc_offset or 0) + int(row.warc_length or 0) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def unmirror_a_page(root: Path, site: Site) -> None:
    """A page's mirror file deleted and its row's local path emptied, as an earlier mirror build
    that stopped half way leaves them."""
    row = manifest_rows(root)[site.url("/sub/b")]
    (root / "mirror" / str(row.local_path)).unlink()
    edit_manifest(root, "UPDATE urls SET local_path = NULL WHERE url = ?", site.url("/sub/b"))


def link_live(root: Path, site: Site) -> None:
    """A mirror page edited to link an archived page by its URL on the web."""
    page = root / "mirror" / str(manifest_rows(root)[site.url("/")].local_path)
    page.write_text(page.read_text().replace("</body>", f'<a href="{site.url("/a")}">a</a></body>'))


def link_to_nothing(root: Path, site: Site) -> None:
    """A mirror page edited to link a file the mirror does not hold."""
    page = root / "mirror" / str(manifest_rows(root)[site.url("/a")].local_path)
    page.write_text(page.read_text().replace("</body>", '<a href="nothing.html">x</a></body>'))


def edit_a_record(edit: Callable[[bytes], bytes]) -> Callable[[Path, Site], None]:
    """A damage: ``edit`` of the inflated bytes of a page's record, in place (edit_record_of()),
    its gzip member of the same length, so only the record itself tells."""

    def damage(root: Path, site: Site) -> None:
        edit_record_of(root, site.url("/sub/b"), edit)

    damage.__name__ = edit.__name__
    return damage


def change_a_letter(record: bytes) -> bytes:
    """A letter of the page changed, as a bit a disk flips: its digests no longer hold."""
    return record.replace(b"bbbb", b"bbbc", 1)


def drop_a_mandatory_header(record: bytes) -> bytes:
    """The record's WARC-Date header renamed: a header WARC requires is missing."""
    return record.replace(b"WARC-Date:", b"WARC-Xate:", 1)


def misstate_the_length(record: bytes) -> bytes:
    """The record's Content-Length one byte short of its block."""
    head, sep, rest = record.partition(b"Content-Length: ")
    digits = rest[: rest.index(b"\r\n")]
    shorter = str(int(digits) - 1).encode().rjust(len(digits), b"0")
    return head + sep + shorter + rest[len(digits) :]


def break_the_version_line(record: bytes) -> bytes:
    """The record's first line no WARC version: it does not parse."""
    return record.replace(b"WARC/1.1", b"XARC/1.1", 1)


def lose_the_manifest(root: Path, site: Site) -> None:
    """manifest.sqlite3 deleted."""
    (root / "manifest.sqlite3").unlink()


def lose_the_settings(root: Path, site: Site) -> None:
    """crawl.json deleted."""
    (root / "crawl.json").unlink()


def edit_the_index(root: Path, site: Site) -> None:
    """A line of index.cdxj deleted."""
    index = root / "indexes" / "index.cdxj"
    lines = index.read_text().splitlines(keepends=True)
    index.write_text("".join(lines[1:]))


def lose_a_mirror_image(root: Path, site: Site) -> None:
    """The stylesheet's mirror file deleted."""
    (root / "mirror" / str(manifest_rows(root)[site.url("/style.css")].local_path)).unlink()


def unrecord_a_mirror_file(root: Path, site: Site) -> None:
    """The manifest's note of what the mirror build wrote of a page deleted."""
    path = manifest_rows(root)[site.url("/a")].local_path
    with sqlite3.connect(root / "manifest.sqlite3") as db:
        assert db.execute("DELETE FROM mirror_files WHERE path = ?", (path,)).rowcount == 1
    db.close()


def unfinish_the_crawl(root: Path, site: Site) -> None:
    """A page's row set back to queued, as a crawl stopped before it fetched it leaves it."""
    edit_manifest(
        root,
        "UPDATE urls SET outcome = 'queued', status = NULL, content_type = NULL, length = NULL, "
        "payload_digest = NULL, fetched_at = NULL, warc_file = NULL, warc_offset = NULL, "
        "warc_length = NULL, record_type = NULL, local_path = NULL WHERE url = ?",
        site.url("/missing"),
    )


def rename_unportably(root: Path, site: Site) -> None:
    """A page's mirror file renamed, with its notes, to a name Windows refuses (a ``?`` in it),
    as a mirror built by hand, or before the mirror planned its paths, may hold."""
    path = str(manifest_rows(root)[site.url("/sub/b")].local_path)
    renamed = path.replace(".html", "?.html")
    (root / "mirror" / path).rename(root / "mirror" / renamed)
    edit_manifest(root, "UPDATE urls SET local_path = ? WHERE url = ?", renamed, site.url("/sub/b"))
    edit_manifest(root, "UPDATE mirror_files SET path = ? WHERE path = ?", renamed, path)


def kill_the_crawl(root: Path, site: Site) -> None:
    """What a kill as the crawl wrote leaves (leave_what_a_kill_leaves())."""
    leave_what_a_kill_leaves(root)


MENDED: list[tuple[Callable[[Path, Site], None], tuple[str, ...], str]] = [
    (move_a_record, ("wrong_location",), "crawl --resume {} --repair"),
    (drop_a_row, ("unlisted_record",), "crawl --resume {} --repair"),
    (drop_a_location, ("missing_capture", "unlisted_record"), "crawl --resume {} --repair"),
    (drop_a_reason, ("missing_reason",), "crawl --resume {} --repair"),
    (drop_a_skipped_row, ("unrecorded_link",), "crawl --resume {} --repair"),
    (deepen_a_row, ("wrong_discovery",), "crawl --resume {} --repair"),
    (redirect_nowhere, ("dangling_redirect",), "crawl --resume {} --repair"),
    (edit_the_statistics, ("crawl_json_mismatch",), "crawl --resume {}"),
    (cut_the_last_file, ("torn_file", "unpaired_record"), "crawl --resume {} --repair"),
    (lose_a_warc_file, ("missing_warc_file",), "crawl --resume {} --repair"),
    (flip_a_byte, ("corrupt_gzip",), "crawl --resume {} --repair"),
    (link_to_nothing, ("broken_mirror_link", "changed_mirror_file"), "mirror {}"),
    (unmirror_a_page, ("unmirrored_capture",), "mirror {}"),
    (link_live, ("live_mirror_link",), "mirror {}"),
    (edit_a_record(change_a_letter), ("digest_mismatch",), "crawl --resume {} --repair"),
    (edit_a_record(drop_a_mandatory_header), ("missing_header",), "crawl --resume {} --repair"),
    (edit_a_record(misstate_the_length), ("length_mismatch",), "crawl --resume {} --repair"),
    (edit_a_record(break_the_version_line), ("unreadable_record",), "crawl --resume {} --repair"),
    (lose_the_manifest, ("missing_manifest",), "crawl --resume {} --repair"),
    (lose_the_settings, ("missing_settings",), "crawl --resume {} --repair"),
    (edit_the_index, ("cdxj_mismatch",), "mirror {}"),
    (lose_a_mirror_image, ("missing_mirror_file", "lost_mirror_file"), "mirror {}"),
    (unrecord_a_mirror_file, ("unrecorded_mirror_file",), "mirror {}"),
    (unfinish_the_crawl, ("unfinished_crawl",), "crawl --resume {}"),
    (kill_the_crawl, ("crash_tail", "unfinished_crawl"), "crawl --resume {}"),
    (rename_unportably, ("unportable_mirror_name",), "mirror {}"),
]
"""Each damage, the kinds of problem verify finds in it, and the command their lines name."""


def named_command(line: str) -> list[str]:
    """The command a verify line names (after ``with: ``), as a shell splits it, without
    ``archiver``."""
    found = NAMED_COMMAND.search(line)
    assert found is not None, f"the line names no command: {line}"
    archiver, *args = shlex.split(found.group(1))
    assert archiver == "archiver"
    return args


@pytest.mark.parametrize(
    ("damage", "kinds", "command"), MENDED, ids=[damage.__name__ for damage, _kinds, _command in MENDED]
)
async def test_each_line_names_the_command_that_mends_it(
    snapshot: Path, site: Site, damage: Callable[[Path, Site], None], kinds: tuple[str, ...], command: str
) -> None:
    """verify's line of each kind the damage makes names one command; run as the line writes it,
    it mends the snapshot, and verify passes."""
    await found_and_mended(snapshot, site, damage, kinds, command)


async def found_and_mended(
    snapshot: Path,
    site: Site,
    damage: Callable[[Path, Site], None],
    kinds: tuple[str, ...],
    command: str,
    only: bool = False,
) -> None:
    """Damage ``snapshot``: verify exits 1 with a line of each of ``kinds`` (of those alone, with
    ``only``), each naming ``command`` (``{}``: the snapshot); run as written, it mends the
    snapshot, and verify passes."""
    damage(snapshot, site)
    verified = await asyncio.to_thread(run_archiver, "verify", str(snapshot))
    assert verified.returncode == 1, verified.stdout
    lines = problem_lines(verified.stdout)
    assert set(kinds) == set(lines) if only else set(kinds) <= set(lines), verified.stdout
    named = {tuple(named_command(lines[kind])) for kind in kinds}
    assert named == {tuple(command.format(snapshot).split())}, verified.stdout

    (args,) = named
    mended = await asyncio.to_thread(run_archiver, *args)
    assert mended.returncode in (0, 4), mended.stderr  # 4: as the crawl, /missing answers 404
    verified = await asyncio.to_thread(run_archiver, "verify", str(snapshot))
    assert verified.returncode == 0, verified.stdout


async def cut_short(request: web.Request) -> web.StreamResponse:
    """An answer that promises 4000 bytes and closes the connection after 100."""
    answer = web.StreamResponse(headers={"Content-Type": "text/plain", "Content-Length": "4000"})
    await answer.prepare(request)
    await answer.write(b"x" * 100)
    assert request.transport is not None
    request.transport.close()
    return answer


async def not_found(request: web.Request) -> web.StreamResponse:
    return web.Response(status=404, text="not here")


@pytest.mark.parametrize(
    ("path", "handler", "kind"),
    [("/cut", cut_short, "cut_body"), ("/", not_found, "nothing_archived")],
    ids=["cut body", "nothing archived"],
)
async def test_what_no_command_mends_is_said_lost_with_its_url(
    tmp_path: Path, path: str, handler: Callable[[web.Request], Any], kind: str
) -> None:
    """A body the server cut short on every try, a seed that answered 404: what the snapshot lacks
    never came, and no command gives it back. The line says so, names no command to run on the
    snapshot, says a new crawl is the way, and its example names the URL."""
    served = Site()
    served.page("/", links=["/cut"]).handler(path, handler)
    await served.start()
    lost = served.url(path)
    try:
        await crawled_into(tmp_path / "snap", served.url("/"), max_tries=1)
    finally:
        await served.close()
    verified = await asyncio.to_thread(run_archiver, "verify", str(tmp_path / "snap"))
    assert verified.returncode == 1
    line = problem_lines(verified.stdout)[kind]
    assert (
        NAMED_COMMAND.search(line) is None
        and "no command" in line
        and line.endswith(": archiver crawl URL -o NEW)")
    )
    example = verified.stdout.splitlines()[verified.stdout.splitlines().index(line) + 1]
    assert example.strip().startswith(f"{lost}: "), verified.stdout


async def test_a_warc_file_copied_twice_is_said_to_need_its_copy_removed(snapshot: Path) -> None:
    """A WARC file copied into warc/ under another name (as a careless backup restores it): every
    record is there twice. No command can tell the copy from the original for the user: the
    line says so and names the copy's records; with the copy removed, verify passes. The index's
    line named archiver mirror alone, which run first indexed the copy too: it now says the copy
    is removed first."""
    first = min((snapshot / "warc").glob("*.warc.gz"))
    copy = first.with_name(first.name.replace("-00001", "-00099"))
    shutil.copyfile(first, copy)
    verified = await asyncio.to_thread(run_archiver, "verify", str(snapshot))
    assert verified.returncode == 1
    line = problem_lines(verified.stdout)["duplicate_record_id"]
    assert NAMED_COMMAND.search(line) is None and "no command" in line and "remove the copy" in line
    example = verified.stdout.splitlines()[verified.stdout.splitlines().index(line) + 1]
    assert example.strip().startswith(f"{copy.name}@0: <urn:uuid:"), verified.stdout
    # The copy's records have no CDXJ line: the index's line says the copy goes first, then what
    # writes the index again (written again with the copy there, it would index the copy too).
    index_line = problem_lines(verified.stdout)["cdxj_mismatch"]
    assert "first what the duplicate_record_id line says (remove the copy); then " in index_line, index_line

    copy.unlink()
    mended = await asyncio.to_thread(run_archiver, *named_command(index_line))
    assert mended.returncode == 0, mended.stderr
    verified = await asyncio.to_thread(run_archiver, "verify", str(snapshot))
    assert verified.returncode == 0, verified.stdout
