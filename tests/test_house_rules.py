"""Rules of the code a test can keep: the pure core (the modules flat at the top of the package,
but the CLI) does no I/O and imports no asyncio, and no doctest is skipped or commented out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "archiver"
EDGES = ("__init__", "__main__", "cli")
"""The modules at the top of the package that are not pure rules: the CLI is an edge."""
PURE_CORE = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem not in EDGES)
IO_MODULES = {"asyncio", "os", "io", "socket", "sqlite3", "subprocess", "shutil", "tempfile", "aiohttp"}
IO_CALLS = {
    "open",
    "exists",
    "is_file",
    "is_dir",
    "is_symlink",
    "stat",
    "lstat",
    "iterdir",
    "glob",
    "mkdir",
    "unlink",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
}


@pytest.mark.parametrize("name", PURE_CORE)
def test_the_pure_core_does_no_io(name: str) -> None:
    assert {"urls", "scope", "links", "paths", "content", "config", "errors"} <= set(PURE_CORE)
    tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
    imported = set()
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call):
            function = node.func
            called.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    assert imported & IO_MODULES == set()
    assert called & IO_CALLS == set()


def test_no_doctest_is_skipped_or_commented_out() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r">>> #|doctest: *\+SKIP", line)
    ]
    assert found == []
