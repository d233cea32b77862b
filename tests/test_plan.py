"""The mirror's path plan (mirror/plan.py): collision-free, deterministic local paths."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from archiver.mirror.plan import PathPlan
from archiver.store.manifest import Manifest, ManifestRow
from archiver.store.safe_join import safe_join


def assign_paths(items: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """The paths PathPlan gives (url, content_type) captures listed in a manifest."""
    items = list(items)
    with Manifest.open(":memory:") as manifest:
        for offset, (url, content_type) in enumerate(items):
            manifest.upsert(
                ManifestRow(
                    url,
                    "link",
                    0,
                    "fetched",
                    content_type=content_type,
                    warc_file="w.warc.gz",
                    warc_offset=offset,
                    record_type="response",
                )
            )
        plan = PathPlan(manifest.connection)
        plan.make(lambda *_: True)
        paths = {url: plan.path_of(url) for url, _ in items}
    assert None not in paths.values()
    return paths  # type: ignore[return-value]


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
]


def test_assign_paths_is_collision_free() -> None:
    assigned = assign_paths(CLASHING)
    paths = list(assigned.values())
    folded = [p.casefold() for p in paths]
    assert len(set(folded)) == len(paths)
    folders = {"/".join(p.split("/")[:n]) for p in folded for n in range(1, p.count("/") + 1)}
    assert not folders & set(folded), "a file path is also a folder of another"


def test_assign_paths_is_deterministic_and_order_free() -> None:
    forward = assign_paths(CLASHING)
    backward = assign_paths(list(reversed(CLASHING)))
    assert forward == backward


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
