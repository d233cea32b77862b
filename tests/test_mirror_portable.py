"""The mirror copied to other file systems: macOS' (case-insensitive, Unicode-normalising),
Windows' (case-insensitive, reserved names, forbidden characters, names ending in a dot or a
space, MAX_PATH), FAT32 and exFAT (255 UTF-16 units a name), or a zip. Mirrors of a local site
served over HTTP, whose URLs differ only where those file systems see no difference."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from archiver.mirror.build import build_mirror
from archiver.report import KINDS, UNPORTABLE_MIRROR_NAME
from archiver.verify.verifier import verify_snapshot
from archiver.warc.safe_join import safe_join

WINDOWS_FORBIDDEN = set('<>:"/\\|?*') | {chr(code) for code in range(32)}
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL"} | {
    f"{port}{n}" for port in ("COM", "LPT") for n in "123456789"
}
SNAPSHOT_FOLDER = r"C:\Users\Someone.Somewhere\Documents\Web archives\www.example.org-2024-snapshots"
"""Where a user keeps the snapshot on Windows: 80 characters, what the README promises."""
WINDOWS_MAX_PATH = 260
"""Windows' longest path, its terminating NUL counted."""
WINDOWS_MAX_FOLDER = 248
"""Windows' longest folder path (room left for an 8.3 file name)."""

LONG_SEGMENT = "\u00e9" * 10 + "x" * 240
"""A 250-character name, some of it two bytes a character."""
DEEP = "/".join(["chapter-" + "d" * 32] * 8)
URLS = [
    "/About.html",
    "/about.html",
    "/caf%C3%A9",  # é as one character (NFC)
    "/cafe%CC%81",  # é as e and a combining accent (NFD): macOS takes both for one name
    "/CON/x",
    "/aux.html",
    "/nul",
    "/Com1.txt",
    "/name.",
    "/dir./x",
    "/trailing%20",
    "/" + LONG_SEGMENT,
    "/" + "%CE%90" * 97,  # ΐ: three UTF-16 units a character once decomposed (HFS+)
    f"/{DEEP}/page",
    "/" + "N" * 139,  # a path of 160 characters, which the next one meets: the plan tells it
    "/" + "n" * 139,  # apart with a token, which must fit within MAX_PATH too
    "/q?x=1:2",
    "/a:b",
    "/what?",
    "/%C4%B1",  # ı, dotless: Windows upper-cases it to I
    "/i",
    "/I.html",
    "/%E2%84%AA",  # the Kelvin sign, K to every case-insensitive file system
    "/k",
    "/Docs/a",  # two folders one name on macOS and Windows: the second is the first's
    "/docs/b",
]


def _mac_key(name: str) -> str:
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def _windows_key(name: str) -> str:
    return name.upper()


def _why_not_portable(name: str) -> str | None:
    if set(name) & WINDOWS_FORBIDDEN:
        return "a character Windows refuses"
    if name.endswith((".", " ")):
        return "ends with a dot or a space"
    if name.split(".", 1)[0].rstrip(" ").upper() in WINDOWS_DEVICES:
        return "a Windows device name"
    if len(name.encode("utf-16-le")) // 2 > 255:
        return "past 255 UTF-16 units (FAT32, exFAT, NTFS)"
    if len(unicodedata.normalize("NFD", name).encode("utf-16-le")) // 2 > 255:
        return "past 255 UTF-16 units once decomposed (HFS+)"
    return None


def _entries(mirror: Path) -> list[str]:
    return sorted(path.relative_to(mirror).as_posix() for path in mirror.rglob("*"))


async def test_a_mirror_of_names_other_file_systems_confuse_copies_whole_to_them(site, run_crawl) -> None:
    for url in URLS:
        site.page(url, title=url)
    site.page("/", links=URLS)
    await site.start()
    root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    mirror = root / "mirror"
    entries = _entries(mirror)
    assert len([entry for entry in entries if (mirror / entry).is_file()]) >= len(URLS) + 1
    for fold in (_mac_key, _windows_key):
        folded: dict[str, str] = {}
        for entry in entries:
            met = folded.setdefault(fold(entry), entry)
            assert met == entry, f"{entry!r} and {met!r} are one name to {fold.__name__}"
    for entry in entries:
        for name in entry.split("/"):
            assert _why_not_portable(name) is None, (entry, _why_not_portable(name))
        safe_join(mirror, entry, windows=True)  # archiver serve on Windows serves it
        windows_path = f"{SNAPSHOT_FOLDER}\\mirror\\{entry}".replace("/", "\\")
        longest = WINDOWS_MAX_FOLDER if (mirror / entry).is_dir() else WINDOWS_MAX_PATH
        assert len(windows_path.encode("utf-16-le")) // 2 < longest, windows_path
    # Every link leads to its file by the name as written (verify reads the mirror on a file
    # system that tells case apart), and every page was mirrored.
    report = verify_snapshot(root)
    assert report.ok, report.render_text(str(root))
    assert report.stats["mirror links"] >= len(URLS)


async def test_a_mirror_whose_names_collide_on_other_file_systems_fails_verify_until_built_again(
    site, run_crawl, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror written by a build that kept apart only names a case-sensitive file system
    tells apart (as earlier versions did): on a Mac or Windows, one of /About.html and
    /about.html overwrites the other, and links to it show the other page."""
    urls = ["/About.html", "/about.html", "/caf%C3%A9", "/cafe%CC%81", "/Docs/a", "/docs/b"]
    site.page("/", links=urls)
    for url in urls:
        site.page(url, title=url)
    await site.start()
    with monkeypatch.context() as earlier:
        earlier.setattr("archiver.mirror.plan.folded", lambda path: path)
        earlier.setattr("archiver.mirror.plan.folders_of", _case_sensitive_folders)
        earlier.setattr("archiver.mirror.plan.PathPlan._as_placed", lambda _plan, path: path)
        root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    names = {path.name for path in (root / "mirror").rglob("*.html")}
    assert {"About.html", "about.html"} <= names
    report = verify_snapshot(root)
    assert not report.ok
    said = report.render_text(str(root))
    found = {problem.where: problem.detail for problem in report.examples[UNPORTABLE_MIRROR_NAME]}
    assert any(where.endswith("/about.html") and "About.html" in detail for where, detail in found.items()), (
        found
    )
    merged = [detail for where, detail in found.items() if where.endswith("/docs/b.html")]
    assert merged and "one with mirror/" in merged[0], found
    assert report.counts[UNPORTABLE_MIRROR_NAME] == 3  # about.html, café in one of its forms, docs/
    assert f"archiver mirror {root}" in said and KINDS[UNPORTABLE_MIRROR_NAME].title in said
    build_mirror(root)
    mended = verify_snapshot(root)
    assert mended.ok, mended.render_text(str(root))


def _case_sensitive_folders(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:depth]) for depth in range(1, len(parts))]


async def test_a_mirror_name_windows_reserves_fails_verify(site, run_crawl, monkeypatch) -> None:
    """A file named CON.html (by a build that did not know Windows' device names) cannot be
    copied to Windows at all: verify says so, and a new build mends it."""
    site.page("/", links=["/CON", "/x./y"])
    site.page("/CON")
    site.page("/x./y")
    await site.start()
    with monkeypatch.context() as earlier:
        earlier.setattr("archiver.paths._WINDOWS_RESERVED", frozenset())
        earlier.setattr("archiver.paths._PLAIN_NAME", _PERMISSIVE)
        root = (await run_crawl(site.url("/"), sitemaps=False)).snapshot.root
    assert {"CON.html", "x."} <= {path.name for path in (root / "mirror").rglob("*")}
    report = verify_snapshot(root)
    details = " ".join(problem.detail for problem in report.examples.get(UNPORTABLE_MIRROR_NAME, []))
    assert report.counts[UNPORTABLE_MIRROR_NAME] == 2, report.render_text(str(root))
    assert "reserves" in details and "dot" in details
    build_mirror(root)
    mended = verify_snapshot(root)
    assert mended.ok, mended.render_text(str(root))


class _Permissive:
    """A name pattern that takes every name for plain (a build that escaped nothing)."""

    @staticmethod
    def fullmatch(_text: str) -> bool:
        return True


_PERMISSIVE = _Permissive()
