"""A file or folder of a snapshot that cannot be read is a problem verify names, not bad input:
what it holds is unchecked, and the snapshot is not called intact."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Site, manifest_rows
from test_repair_named import problem_lines
from test_verify_mends import original, site, snapshot

__all__ = ["original", "site", "snapshot"]  # the fixtures, shared with test_verify_mends

pytestmark = pytest.mark.asyncio(loop_scope="module")

UNPRIVILEGED = (
    [
        "setpriv",
        "--bounding-set",
        "-dac_override,-dac_read_search",
        "--inh-caps",
        "-dac_override,-dac_read_search",
    ]
    if os.geteuid() == 0
    else []
)
"""What runs a command without root's leave to read any file (none is needed by another user)."""


def unreadable(path: Path) -> bool:
    """Make ``path`` unreadable; whether it is, to a command run UNPRIVILEGED."""
    path.chmod(0)
    if UNPRIVILEGED and shutil.which("setpriv") is None:
        return False
    probe = [*UNPRIVILEGED, "ls" if path.is_dir() else "cat", str(path)]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode != 0


def a_warc_file(root: Path, site: Site) -> Path:
    return root / "warc" / str(manifest_rows(root)[site.url("/a")].warc_file)


def the_index(root: Path, site: Site) -> Path:
    return root / "indexes" / "index.cdxj"


def a_mirror_folder(root: Path, site: Site) -> Path:
    return (root / "mirror" / str(manifest_rows(root)[site.url("/sub/b")].local_path)).parent


@pytest.mark.parametrize("which", [a_warc_file, the_index, a_mirror_folder])
async def test_what_cannot_be_read_is_a_problem_not_bad_input(snapshot: Path, site: Site, which) -> None:
    """Before, an unreadable WARC file, CDXJ index or mirror folder stopped verify with exit 2,
    the code of bad input, as if it were no snapshot. Now it is an unreadable_file problem,
    named where it is with what mends it, and verify exits 1."""
    path = which(snapshot, site)
    try:
        if not unreadable(path):
            pytest.skip("files cannot be made unreadable here")
        verified = await asyncio.to_thread(
            subprocess.run,
            [*UNPRIVILEGED, sys.executable, "-m", "archiver", "verify", str(snapshot)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    line = problem_lines(verified.stdout)["unreadable_file"]
    assert line.endswith("then verify again)"), line
    assert str(path.relative_to(snapshot)).split("/")[-1] in verified.stdout, verified.stdout
