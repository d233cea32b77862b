"""A command that reads a snapshot, given a folder that holds none, one a later archiver wrote, a
file, a folder it may not read, or a path with a newline: one line saying what to do, exit 2."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from repairs import run_archiver

from archiver import __version__

GIVE_A_SNAPSHOT = "give the folder a crawl wrote (archiver crawl URL -o DIR)"


def empty_folder(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder, GIVE_A_SNAPSHOT


def written_by_a_later_version(tmp_path: Path) -> tuple[Path, str]:
    """A folder whose crawl.json says archiver 99.0.0 wrote it."""
    folder = tmp_path / "later"
    folder.mkdir()
    (folder / "crawl.json").write_text(json.dumps({"archiver_version": "99.0.0", "status": "finished"}))
    return folder, (
        f"{folder} was written by archiver 99.0.0, later than this one ({__version__}), which may "
        "misread it: use archiver 99.0.0 or later (pip install --upgrade archiver)"
    )


def a_file(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "snap.warc.gz"
    path.write_bytes(b"not a folder")
    return path, f"{path} is not a snapshot: a file, not a folder; {GIVE_A_SNAPSHOT}"


def unreadable_folder(tmp_path: Path) -> tuple[Path, str]:
    """A folder of mode 000: root reads it all the same (an empty folder, no snapshot); another
    user may not read it."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0)
    if os.geteuid() == 0:
        return folder, GIVE_A_SNAPSHOT
    return folder, f"cannot read the folder {folder}: permission denied; give this user read access to it"


def a_newline_in_its_path(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "new\nline"
    folder.mkdir()
    return folder, f"{tmp_path}/new\\nline is not a snapshot"


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "verify": lambda root, tmp: ["verify", str(root)],
    "mirror": lambda root, tmp: ["mirror", str(root)],
    "export": lambda root, tmp: ["export", str(root), "--wacz", str(tmp / "out.wacz")],
    "merge": lambda root, tmp: ["merge", str(root)],
}
FOLDERS = [empty_folder, written_by_a_later_version, a_file, unreadable_folder, a_newline_in_its_path]
MERGE_NEEDS_PARTS = "archiver merge joins the parts of a crawl that several processes shared"
"""What merge says of a folder that holds no crawl node parts: a snapshot of one process too."""


@pytest.mark.parametrize("given", FOLDERS, ids=[given.__name__ for given in FOLDERS])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_that_is_no_snapshot_is_refused_in_one_line_that_says_what_to_do(
    tmp_path: Path, command: str, given: Callable[[Path], tuple[Path, str]]
) -> None:
    root, said = given(tmp_path)
    try:
        refused = run_archiver(*COMMANDS[command](root, tmp_path))
    finally:
        if root.is_dir():
            root.chmod(0o755)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("archiver: error: "), refused.stderr
    no_parts = command == "merge" and (said == GIVE_A_SNAPSHOT or given is a_newline_in_its_path)
    assert (MERGE_NEEDS_PARTS if no_parts else said) in refused.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == [root.name]  # nothing written
