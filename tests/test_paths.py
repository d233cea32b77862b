"""URL-to-path mapping: readable, deterministic, collision-free, never outside mirror/."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from archiver.errors import UnsafePathError
from archiver.paths import (
    escape_name,
    relative_url,
    url_to_path,
)
from archiver.urls import normalize_url
from archiver.warc.safe_join import safe_join


@pytest.mark.parametrize(
    ("url", "content_type", "expected"),
    [
        ("http://h/", "text/html", "h/index.html"),
        ("http://h/dir/", "text/html", "h/dir/index.html"),
        ("http://h/dir/", None, "h/dir/index.html"),
        ("http://h/dir/index.html", "text/html", "h/dir/index.html"),
        ("http://h/about", "text/html", "h/about.html"),
        ("http://h/about", "text/html; charset=utf-8", "h/about.html"),
        ("http://h/page.php", "text/html", "h/page.php.html"),
        ("http://h/page.htm", "text/html", "h/page.htm"),
        ("http://h/style", "text/css", "h/style.css"),
        ("http://h/style.css?v=2", "text/css", "h/style.css@v=2.css"),
        ("http://h/app.js", "application/javascript", "h/app.js"),
        ("http://h/logo", "image/svg+xml", "h/logo.svg"),
        ("http://h/img.png?w=100", "image/png", "h/img.png@w=100.png"),
        ("http://h/photo.php", "image/jpeg", "h/photo.php"),
        # A name a browser reading from disk renders as a document (a page, an SVG image) keeps
        # that name only for that type.
        ("http://h/img.html", "image/png", "h/img.html.png"),
        ("http://h/img.html?v=2", "image/png", "h/img.html@v=2.png"),
        ("http://h/notes.xhtml", "text/plain", "h/notes.xhtml.txt"),
        ("http://h/icon.svg", "image/png", "h/icon.svg.png"),
        ("http://h/icon.ico", "image/png", "h/icon.ico"),
        ("http://h/s.css", "text/plain", "h/s.css"),
        ("http://h/photo", "image/jpeg", "h/photo.jpg"),
        ("http://h/data.bin", "application/octet-stream", "h/data.bin"),
        ("http://h/blob", None, "h/blob"),
        ("http://h/list?page=2", "text/html", "h/list@page=2.html"),
        # An empty query is a query: /list? is another URL than /list.
        ("http://h/list?", "text/html", "h/list@.html"),
        ("http://h/?", "text/html", "h/index@.html"),
        ("http://h/img.png?", "image/png", "h/img.png@.png"),
        ("http://h/blob?", None, "h/blob@"),
        ("http://h/?p=1&q=2", "text/html", "h/index@p=1&q=2.html"),
        ("http://h/search?q=a/b", "text/html", "h/search@q=a%2Fb.html"),
        ("http://h/search?q=..%2F..%2Fetc", "text/html", "h/search@q=..%2F..%2Fetc.html"),
        ("http://h:8080/", "text/html", "h+8080/index.html"),
        ("https://h:443/x.png", "image/png", "h/x.png"),
        ("http://[::1]:8000/", "text/html", "%3A%3A1+8000/index.html"),
        ("http://h/caf%C3%A9.png", "image/png", "h/café.png"),
        ("http://h/a%20b.png", "image/png", "h/a b.png"),
        ("http://h/user@x.png", "image/png", "h/user%40x.png"),
        ("http://h/100%25.png", "image/png", "h/100%25.png"),
    ],
)
def test_url_to_path(url: str, content_type: str | None, expected: str) -> None:
    assert url_to_path(url, content_type) == expected


HOSTILE = [
    "http://h/../../etc/passwd",
    "http://h/%2e%2e/%2E%2E/etc/passwd",
    "http://h/a/%2e%2e%2f%2e%2e%2fescape",
    "http://h/..%2f..%2fescape",
    "http://h/..%5c..%5cescape",
    "http://h/a\\..\\..\\escape",
    "http://h/nul%00byte",
    "http://h/%00",
    "http://h//etc/passwd",
    "http://h///",
    "http://h/C:/Windows/system32",
    "http://h/CON",
    "http://h/con.txt",
    "http://h/aux/x",
    "http://h/trailing.",
    "http://h/trailing%20",
    "http://h/%E2%80%AEgpj.exe",
    "http://h/%ff%fe",
    "http://../x",
    "http://%2e%2e/x",
    "http:///x",
    "http://h/" + "a" * 5000,
    "http://h/" + "é" * 300 + "?q=" + "z" * 300,
    "http://h/" + "/".join(["d"] * 800),
    "http://h/x?" + "%2F.." * 200,
    "http://" + ".".join(["a" * 63] * 4)[:253] + ":8080/x",
    "http://" + "b" * 400 + ".test/x",
]


@pytest.mark.parametrize("url", HOSTILE)
@pytest.mark.parametrize("content_type", ["text/html", None, "image/png"])
def test_hostile_urls_stay_inside(url: str, content_type: str | None, tmp_path: Path) -> None:
    path = url_to_path(url, content_type)
    components = path.split("/")
    assert not path.startswith("/")
    assert "\\" not in path and "\x00" not in path and ":" not in path
    assert all(c not in ("", ".", "..") for c in components)
    assert all(len(c.encode("utf-8", "surrogatepass")) <= 255 for c in components)
    assert len(path.encode("utf-8", "surrogatepass")) <= 1100
    assert all(c.isprintable() for c in path)
    root = tmp_path / "mirror"
    target = safe_join(root, path)
    assert root in target.parents
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"x")
    assert target.resolve().is_relative_to(root.resolve())


@pytest.mark.parametrize("name", ["CON", "nul", "Com1.txt", "LPT9", "aux.tar.gz", "conin$", "prn "])
def test_windows_reserved_names_are_escaped(name: str) -> None:
    escaped = escape_name(name)
    assert escaped != name and escaped.startswith("%")


def test_deterministic() -> None:
    url = "http://h/a/b?c=d"
    assert url_to_path(url, "text/html") == url_to_path(url, "text/html")


def test_long_names_are_shortened_with_distinct_hashes() -> None:
    first = url_to_path("http://h/" + "a" * 300, "text/html")
    second = url_to_path("http://h/" + "a" * 301, "text/html")
    assert first != second
    assert first.endswith(".html") and "@" in first
    assert len(first.split("/")[-1]) < 200


@pytest.mark.parametrize(
    ("url", "content_type", "extension"),
    [
        ("http://h/" + "a" * 280 + ".html", "text/html", ".html"),
        ("http://h/" + "a" * 280 + ".htm", "text/html", ".htm"),
        ("http://h/" + "é" * 150 + ".html", "text/html", ".html"),
        ("http://h/" + "a" * 280 + ".css?v=1", "text/css", ".css"),
        ("http://h/" + "a" * 280 + ".png", "image/png", ".png"),
        ("http://h/" + "a" * 280 + ".pdf", None, ".pdf"),
        ("http://h/a.html?" + "q" * 280, "text/html", ".html"),
        ("http://h/" + "a" * 280, "text/html", ".html"),
        # A path past MAX_PATH_BYTES becomes <host>/@long/<hash>, with the extension.
        ("http://h/" + "d/" * 600 + "page.html", "text/html", ".html"),
        ("http://h/" + "d/" * 600 + "x.png", "image/png", ".png"),
    ],
)
def test_shortened_names_keep_their_extension(url: str, content_type: str | None, extension: str) -> None:
    path = url_to_path(url, content_type)
    name = path.rsplit("/", 1)[-1]
    assert "@" in path
    assert name.endswith(extension)
    assert len(name.encode()) <= 200 and len(path.encode()) <= 1000


def test_normalised_urls_of_a_site_map_injectively() -> None:
    raw = [
        "/",
        "/a",
        "/a/",
        "/a/b",
        "/a/b/",
        "/a?x",
        "/a?y",
        "/a?",
        "/?",
        "/a/?",
        "/b.css?",
        "/" + "l" * 300,
        "/" + "l" * 300 + "?",
        "/a/?x",
        "/b.css",
        "/b.css?1",
        "/%7Euser/",
        "/~user/x",
        "/é",
        "/e%CC%81",
    ]
    urls = {normalize_url("http://site.test" + path) for path in raw}
    paths = [url_to_path(url, "text/html") for url in urls]
    assert len(set(paths)) == len(paths)


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        ("h/index.html", "h/index.html", "index.html"),
        ("h/index.html", "h/a.html", "a.html"),
        ("h/a/b.html", "h/a/c.html", "c.html"),
        ("h/a/b.html", "h/c.html", "../c.html"),
        ("h/a/b/c.html", "h/a/x/y.css", "../x/y.css"),
        ("h/index.html", "h/a/b/c.png", "a/b/c.png"),
        ("h/index.html", "cdn.test/x.js", "../cdn.test/x.js"),
        ("h/a/index.html", "h/a", "../a"),
        ("h/x.html", "h/a b#c?.png", "a%20b%23c%3F.png"),
        ("h/x.html", "h/c:d.html", "c%3Ad.html"),
        ("h/x.html", "h/100%25.png", "100%2525.png"),
        ("h/x.html", "h/it's (1).png", "it%27s%20%281%29.png"),
    ],
)
def test_relative_url(source: str, target: str, expected: str) -> None:
    assert relative_url(source, target) == expected


def test_relative_url_resolves_back() -> None:
    from urllib.parse import unquote, urljoin

    paths = [
        "h/index.html",
        "h/a/b/c.html",
        "cdn/x y.png",
        "h/a/index@q=1.html",
        "h/a.html",
        "h/a b/c:d%.html",
        "h/a b/e/f.html",
        "top.html",
    ]
    for source, target in itertools.product(paths, repeat=2):
        joined = urljoin("file:///m/" + source, relative_url(source, target))
        assert unquote(joined) == "file:///m/" + target


@pytest.mark.parametrize("relative", ["", "/etc/passwd", "a/../../b", "a//b", "./a", "a\\b", "a\x00"])
def test_safe_join_refuses_escapes(relative: str, tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError):
        safe_join(tmp_path, relative)


@pytest.mark.parametrize(
    "relative",
    ["C:", "h/C:", "C:Windows/win.ini", "h/a.html:stream", "h/CON", "h/nul.html", "Com1 .html"]
    + ["h/.. /x", "a."],
)
def test_safe_join_refuses_on_windows_what_windows_reads_as_no_name_in_the_folder(
    relative: str, tmp_path: Path
) -> None:
    """A drive (C:, C:x: out of the snapshot), a stream, a device, a name Windows trims."""
    with pytest.raises(UnsafePathError):
        safe_join(tmp_path, relative, windows=True)
    # Elsewhere each is a name in the folder (an older build may have written one).
    assert safe_join(tmp_path, relative, windows=False) == tmp_path.joinpath(*relative.split("/"))


def test_safe_join_refuses_symlinks_in_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "mirror"
    (root / "h").mkdir(parents=True)
    os.symlink(outside, root / "h" / "evil")
    os.symlink(outside / "file", root / "h" / "link.html")
    with pytest.raises(UnsafePathError):
        safe_join(root, "h/evil/x.html")
    with pytest.raises(UnsafePathError):
        safe_join(root, "h/link.html")
    assert safe_join(root, "h/ok.html") == root / "h" / "ok.html"
