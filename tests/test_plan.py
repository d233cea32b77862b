"""The mirror's path plan (mirror/plan.py): collision-free, deterministic local paths."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from archiver.mirror.plan import PathPlan, payload_key
from archiver.paths import folded as fold
from archiver.store.manifest import Manifest
from archiver.warc.safe_join import safe_join


def assign_paths(items: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """The paths PathPlan gives (url, content_type) captures placed in this order."""
    with Manifest.open(":memory:") as manifest:
        plan = PathPlan(manifest.connection)
        return {url: plan.place(url, content_type).path for url, content_type in items}


CLASHING = [
    ("http://h/a", "text/html"),
    ("http://h/a.html", "text/html"),
    ("http://h/a/", "text/html"),
    ("http://h/a/index.html", "text/html"),
    ("http://h/a/b", "text/html"),
    ("http://h/blob", None),
    ("http://h/blob/child.png", "image/png"),
    ("http://h/x", "text/html"),
    ("http://h/X", "text/html"),
    ("https://h/x", "text/html"),
    ("http://h/q?x=1", "text/html"),
    ("http://h/q@x=1", "text/html"),
    ("http://h/q%40x=1", "text/html"),
    ("http://h/search?q=%2F", "text/html"),
    ("http://h/search?q=/", "text/html"),
    ("http://h/" + "a" * 300, "text/html"),
    ("http://h/" + "a" * 301, "text/html"),
    ("http://h/%C3%A9", "text/html"),  # é as one code point, and as e and a combining accent:
    ("http://h/e%CC%81", "text/html"),  # one name on macOS
    ("http://h/%C3%89/x", "text/html"),
    ("http://h/q", "text/html"),
    ("http://h/q?", "text/html"),
]


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_assign_paths_is_collision_free(order: str) -> None:
    assigned = assign_paths(CLASHING if order == "forward" else list(reversed(CLASHING)))
    paths = list(assigned.values())
    folded = [fold(p) for p in paths]
    assert len(set(folded)) == len(paths)
    folders = {"/".join(p.split("/")[:n]) for p in folded for n in range(1, p.count("/") + 1)}
    assert not folders & set(folded), "a file path is also a folder of another"


def test_paths_are_given_first_come_first_served() -> None:
    # The crawl places captures as it stores them and a rebuild replays them in that order:
    # one order, one plan; the first of two that meet keeps its natural path.
    assert assign_paths(CLASHING) == assign_paths(CLASHING)
    assert (
        assign_paths([("http://h/X", "text/html"), ("http://h/x", "text/html")])["http://h/X"] == "h/X.html"
    )
    assert (
        assign_paths([("http://h/x", "text/html"), ("http://h/X", "text/html")])["http://h/x"] == "h/x.html"
    )


def test_a_file_in_the_way_of_a_folder_moves_the_later_capture_to_a_folder_of_its_own() -> None:
    file_first = assign_paths([("http://h/blob", None), ("http://h/blob/child.png", "image/png")])
    assert file_first["http://h/blob"] == "h/blob"
    assert file_first["http://h/blob/child.png"].startswith("h/blob@")
    assert file_first["http://h/blob/child.png"].endswith("/child.png")
    folder_first = assign_paths([("http://h/blob/child.png", "image/png"), ("http://h/blob", None)])
    assert folder_first["http://h/blob/child.png"] == "h/blob/child.png"
    assert folder_first["http://h/blob"].startswith("h/blob@")


def test_one_payload_shares_the_file_of_its_first_capture() -> None:
    with Manifest.open(":memory:") as manifest:
        plan = PathPlan(manifest.connection)
        key = payload_key("http://h/dir/", "text/html", "sha1:X", 10, False)
        first = plan.place("http://h/dir/", "text/html", key, "")
        same = plan.place(
            "http://h/dir/index.html",
            "text/html",
            payload_key("http://h/dir/index.html", "text/html", "sha1:X", 10, False),
            "",
        )
        gzipped = plan.place("http://h/dir/?gz", "text/html", key, "gzip")
        elsewhere = plan.place(
            "http://h/c/index.html", "text/html", payload_key("http://h/c/", "text/html", "sha1:X", 10, False)
        )
    assert (first.path, first.shared) == ("h/dir/index.html", False)
    assert (same.path, same.shared) == ("h/dir/index.html", True)
    assert not gzipped.shared and not elsewhere.shared
    assert payload_key("http://h/a", "text/html", "sha1:X", 10, True) is None  # truncated
    assert payload_key("http://h/a", "text/html", "sha1:X", 0, False) is None  # empty
    assert payload_key("http://h/a", "text/html", "sha1:X", 10, False, status=404) is None  # an error
    assert payload_key("http://h/a", "text/html", "sha1:X", 10, False, status=200) is not None


def test_assign_paths_keeps_natural_names_when_free() -> None:
    assigned = assign_paths(
        [("http://h/a", "text/html"), ("http://h/a/b", "text/html"), ("http://h/a/", "text/html")]
    )
    assert assigned == {
        "http://h/a": "h/a.html",
        "http://h/a/b": "h/a/b.html",
        "http://h/a/": "h/a/index.html",
    }


def test_file_and_folder_clash_is_resolved_on_disk(tmp_path: Path) -> None:
    assigned = assign_paths(CLASHING)
    for path in sorted(assigned.values(), key=len):
        target = safe_join(tmp_path, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.encode("utf-8", "surrogatepass"))
    for path in assigned.values():
        assert safe_join(tmp_path, path).read_bytes() == path.encode("utf-8", "surrogatepass")
