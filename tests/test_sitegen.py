"""The benchmark site generator: deterministic, fully linked, 15 KB pages, redirects and dead links."""

from __future__ import annotations

import hashlib
import re
import sys
from collections import deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

# benchmarks/ is a folder of scripts, not a package: import from it, then leave sys.path as it was
# so its generic module names (server, measure...) shadow nothing for other tests.
BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
sys.path.insert(0, BENCHMARKS)
try:
    import sitegen
finally:
    sys.path.remove(BENCHMARKS)

PAGES = 300
BASE = "http://site.test"
HREF = re.compile(r'<a href="([^"#]+)"')
REDIRECT_RULE = re.compile(r"^location = (/go/\d+) \{ return 301 (/\S+); \}$")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, sitegen.SiteInfo]:
    """A 300-page site, generated once for the module."""
    root = tmp_path_factory.mktemp("site")
    return root, sitegen.generate_site(root, PAGES, seed=7)


def _links(www: Path, path: str) -> list[str]:
    """Root-relative paths of the <a href> links of the page at ``path``."""
    html = (www / path.lstrip("/")).read_text()
    return [urlsplit(urljoin(BASE + path, href)).path for href in HREF.findall(html)]


def _redirects(root: Path) -> dict[str, str]:
    """Redirect path -> target path, from the generated nginx include."""
    rules = {}
    for line in (root / sitegen.REDIRECTS_CONF).read_text().splitlines():
        match = REDIRECT_RULE.match(line)
        assert match, line
        rules[match.group(1)] = match.group(2)
    return rules


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != sitegen.STAMP:
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_same_seed_same_site(site: tuple[Path, sitegen.SiteInfo], tmp_path: Path) -> None:
    root, info = site
    again = sitegen.generate_site(tmp_path / "again", PAGES, seed=7)
    assert again == info
    assert _digest(tmp_path / "again") == _digest(root)


def test_generated_site_is_reused(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, info = site
    index = root / sitegen.DOCROOT / "index.html"
    before = index.stat().st_mtime_ns
    assert sitegen.generate_site(root, PAGES, seed=7) == info
    assert index.stat().st_mtime_ns == before


def test_every_page_is_reachable_from_the_index(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, info = site
    www = root / sitegen.DOCROOT
    redirects = _redirects(root)
    seen, queue = {"/index.html"}, deque(["/index.html"])
    while queue:
        for target in _links(www, queue.popleft()):
            target = redirects.get(target, target)
            if target not in seen and (www / target.lstrip("/")).is_file():
                seen.add(target)
                queue.append(target)
    assert seen == {sitegen.page_path(index) for index in range(PAGES)}
    assert info.pages == PAGES


def test_pages_are_about_15_kb_with_about_40_links(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, info = site
    www = root / sitegen.DOCROOT
    for index in (0, 1, 99, 100, 150, PAGES - 1):
        path = sitegen.page_path(index)
        assert 13_000 < (www / path.lstrip("/")).stat().st_size < 17_000
        assert 35 <= len(_links(www, path)) <= 45
        assert "<p>" in (www / path.lstrip("/")).read_text()
    assert 35 <= info.links / info.pages <= 45
    assert 13_000 < info.page_bytes / info.pages < 17_000


def test_links_mix_relative_and_root_relative(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, _ = site
    hrefs = HREF.findall((root / sitegen.DOCROOT / sitegen.page_path(150).lstrip("/")).read_text())
    assert any(href.startswith("/") for href in hrefs)
    assert any(not href.startswith("/") for href in hrefs)


def test_about_one_percent_redirects_and_dead_links(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, info = site
    www = root / sitegen.DOCROOT
    links = [target for index in range(PAGES) for target in _links(www, sitegen.page_path(index))]
    redirect_links = [target for target in links if target.startswith("/go/")]
    dead_links = [
        target
        for target in links
        if not target.startswith("/go/") and not (www / target.lstrip("/")).is_file()
    ]
    assert 0.005 < len(redirect_links) / len(links) < 0.02
    assert 0.005 < len(dead_links) / len(links) < 0.02
    assert info.redirects == len(set(redirect_links))
    assert info.missing == len(set(dead_links))


def test_redirects_map_to_existing_pages(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, _ = site
    redirects = _redirects(root)
    assert redirects
    for target in redirects.values():
        assert (root / sitegen.DOCROOT / target.lstrip("/")).is_file()


def test_requisites_exist_and_are_counted(site: tuple[Path, sitegen.SiteInfo]) -> None:
    root, info = site
    static = root / sitegen.DOCROOT / "static"
    files = [path for path in static.rglob("*") if path.is_file()]
    assert len(files) == info.assets
    magic = {".png": b"\x89PNG\r\n\x1a\n", ".gif": b"GIF89a", ".jpg": b"\xff\xd8\xff", ".woff2": b"wOF2"}
    for path in files:
        if path.suffix in magic:
            assert path.read_bytes().startswith(magic[path.suffix]), path
    stylesheet = (static / "css" / "base.css").read_text()
    assert "url(" in stylesheet and ".woff2" in stylesheet
    assert info.total_bytes == sum(
        path.stat().st_size for path in (root / sitegen.DOCROOT).rglob("*") if path.is_file()
    )
