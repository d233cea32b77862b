"""Facts verify compares: a row's with its WARC record and the other rows, a record's with the
record beside it. Each one edited is found, named where it is, and the command its line names
mends it (the manifest written again from the WARC files, or the capture fetched again), after
which verify passes."""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Site
from test_verify_mends import edit_manifest, found_and_mended, original, site, snapshot, warc_of
from test_verify_tamper import edit_in_place, edit_record_of, members

__all__ = ["original", "site", "snapshot"]  # the fixtures, shared with test_verify_mends

pytestmark = pytest.mark.asyncio(loop_scope="module")


def redirect_elsewhere(root: Path, site: Site) -> None:
    """The redirect's row names another archived page as its next URL (and final one) than its
    record's Location: the mirror would link the redirect to that page."""
    edit_manifest(
        root,
        "UPDATE urls SET redirect_to = ?, final_url = ? WHERE url = ?",
        *[site.url("/sub/b")] * 2,
        site.url("/old"),
    )


def end_the_chain_elsewhere(root: Path, site: Site) -> None:
    """The redirect's final URL names another archived page than its chain ends at."""
    edit_manifest(root, "UPDATE urls SET final_url = ? WHERE url = ?", site.url("/sub/b"), site.url("/old"))


def lose_the_chain_end(root: Path, site: Site) -> None:
    """The redirect's final URL emptied: index.html would say it leads nowhere."""
    edit_manifest(root, "UPDATE urls SET final_url = NULL WHERE url = ?", site.url("/old"))


def redirect_a_page(root: Path, site: Site) -> None:
    """A page answered 200 is said to redirect, and to end at another page."""
    edit_manifest(
        root,
        "UPDATE urls SET redirect_to = ?, final_url = ? WHERE url = ?",
        *[site.url("/sub/b")] * 2,
        site.url("/a"),
    )


def end_a_page_elsewhere(root: Path, site: Site) -> None:
    """A page that is no redirect is given a final URL."""
    edit_manifest(root, "UPDATE urls SET final_url = ? WHERE url = ?", site.url("/sub/b"), site.url("/a"))


def edit_request_of(root: Path, url: str, edit: Callable[[bytes], bytes]) -> None:
    """edit_in_place() of the request record the crawl wrote for ``url``."""
    warc = warc_of(root, url)
    data = warc.read_bytes()
    offsets = members(warc)
    for start, end in zip(offsets, offsets[1:], strict=False):
        record = gzip.decompress(data[start:end])
        if b"WARC-Type: request\r\n" in record and f"WARC-Target-URI: {url}\r\n".encode() in record:
            edit_in_place(warc, start, end - start, edit)
            return
    raise AssertionError(f"no request record of {url}")


def unguard(record: bytes) -> bytes:
    """The record's WARC-Block-Digest header renamed, its value blanked (so the record compresses
    no longer than it did): nothing guards its HTTP head."""
    return re.sub(rb"WARC-Block-Digest:[^\r]*", lambda m: b"X-Unguarded:".ljust(len(m[0])), record, count=1)


def unguard_a_response(root: Path, site: Site) -> None:
    """The redirect's response record loses its WARC-Block-Digest: its Location could be edited
    unseen."""
    edit_record_of(root, site.url("/old"), unguard)


def unguard_a_request(root: Path, site: Site) -> None:
    """A page's request record loses its WARC-Block-Digest."""
    edit_request_of(root, site.url("/a"), unguard)


def redate_a_request(root: Path, site: Site) -> None:
    """A page's request record dated a year before its response (the crawl dates both alike)."""

    def a_year_before(record: bytes) -> bytes:
        return re.sub(rb"WARC-Date: (\d{4})", lambda m: b"WARC-Date: %d" % (int(m[1]) - 1), record, count=1)

    edit_request_of(root, site.url("/a"), a_year_before)


def edit_the_index(edit: Callable[[str], str]) -> Callable[[Path, Site], None]:
    """A damage: ``edit`` of the first line of index.cdxj it changes."""

    def damage(root: Path, site: Site) -> None:
        index = root / "indexes" / "index.cdxj"
        lines = index.read_text().splitlines(keepends=True)
        changed = next(n for n, line in enumerate(lines) if edit(line) != line)
        lines[changed] = edit(lines[changed])
        index.write_text("".join(lines))

    damage.__name__ = edit.__name__
    return damage


def retype_a_page(line: str) -> str:
    """A page's line says it is an image: a search by type finds it as one."""
    return line.replace('"mime": "text/html"', '"mime": "image/png"')


def drop_a_status(line: str) -> str:
    """A page's line loses its status: replay has no status to answer with."""
    return line.replace('"status": "200", ', "")


def share_a_mirror_file(root: Path, site: Site) -> None:
    """A page's row names another page's mirror file: the mirror would show that page for it."""
    edit_manifest(
        root,
        "UPDATE urls SET local_path = (SELECT local_path FROM urls WHERE url = ?) WHERE url = ?",
        site.url("/a"),
        site.url("/sub/b"),
    )


def cut_a_whole_page(root: Path, site: Site) -> None:
    """A page's row says its body was cut short, though its record holds it whole."""
    edit_manifest(root, "UPDATE urls SET truncated = 1 WHERE url = ?", site.url("/a"))


def fetch_a_page_robots_refused(root: Path, site: Site) -> None:
    """A page fetched is given the reason of a URL robots.txt kept the crawl from."""
    edit_manifest(root, "UPDATE urls SET reason = 'robots' WHERE url = ?", site.url("/a"))


REPAIR = "crawl --resume {} --repair"

MENDED: list[tuple[Callable[[Path, Site], None], tuple[str, ...], str]] = [
    (redirect_elsewhere, ("wrong_redirect",), REPAIR),
    (end_the_chain_elsewhere, ("wrong_redirect",), REPAIR),
    (lose_the_chain_end, ("wrong_redirect",), REPAIR),
    (redirect_a_page, ("wrong_redirect",), REPAIR),
    (end_a_page_elsewhere, ("wrong_redirect",), REPAIR),
    (unguard_a_response, ("missing_header",), REPAIR),
    (unguard_a_request, ("missing_header",), REPAIR),
    (redate_a_request, ("unpaired_record",), REPAIR),
    (edit_the_index(retype_a_page), ("cdxj_mismatch",), "mirror {}"),
    (edit_the_index(drop_a_status), ("cdxj_mismatch",), "mirror {}"),
    (share_a_mirror_file, ("shared_mirror_file",), "mirror {}"),
    (cut_a_whole_page, ("wrong_location",), REPAIR),
    (fetch_a_page_robots_refused, ("stray_reason",), REPAIR),
]
"""Each damage, the kinds of problem verify finds in it, and the command their lines name."""


@pytest.mark.parametrize(
    ("damage", "kinds", "command"), MENDED, ids=[damage.__name__ for damage, _kinds, _command in MENDED]
)
async def test_a_fact_that_is_not_so_is_found_and_mended(
    snapshot: Path, site: Site, damage: Callable[[Path, Site], None], kinds: tuple[str, ...], command: str
) -> None:
    """Before, verify passed these (a redirect's next or final URL not its record's, a page said
    to redirect, a response or request without the digest that guards its HTTP head, a request
    dated otherwise than its response, an index line of another type or of no status, another
    page's mirror file, a cut on a whole record, a skip's reason on a page fetched), and the
    mirror built from such rows linked the wrong page. Now each is a problem of its kind, whose
    line names the command that mends it; run as written, it does, and verify passes."""
    await found_and_mended(snapshot, site, damage, kinds, command, only=True)
