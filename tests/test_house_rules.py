"""Rules of the code a test can keep: the pure core (the modules flat at the top of the package,
but the CLI) does no I/O and imports no asyncio, and no doctest is skipped or commented out."""

from __future__ import annotations

import ast
import importlib
import inspect
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


PINNED_AIOHTTP_HOOKS = {"archiver.crawling.connections.WatchedConnector._release"}
"""Private methods of aiohttp the crawl overrides: the connection pool's release alone, which
no public method replaces; test_aiohttp_private_parts.py fails when its shape changes."""


def _aiohttp_subclasses() -> list[type]:
    """The classes of the package that subclass one of aiohttp's."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "aiohttp" not in path.read_text(encoding="utf-8"):
            continue
        name = ".".join(("archiver", *path.relative_to(PACKAGE).with_suffix("").parts))
        module = importlib.import_module(name.removesuffix(".__init__"))
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and value.__module__ == module.__name__
                and any(base.__module__.startswith("aiohttp") for base in value.__mro__[1:])
            ):
                found.append(value)
    return found


def test_aiohttp_is_used_through_its_public_api():
    """A private module of aiohttp, or a private method a subclass overrides, may change in any
    release of it: the crawl would then fail, or worse, quietly do otherwise."""
    subclasses = _aiohttp_subclasses()
    assert {cls.__name__ for cls in subclasses} >= {"SiteCookieJar", "CookiesInOrder", "WatchedConnector"}
    overridden = {
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in subclasses
        for name, value in vars(cls).items()
        if inspect.isfunction(value)
        and name.startswith("_")
        and not name.startswith("__")
        and any(hasattr(base, name) for base in cls.__mro__[1:] if base.__module__.startswith("aiohttp"))
    }
    assert overridden == PINNED_AIOHTTP_HOOKS
    private_imports = [
        f"{path.relative_to(PACKAGE)}: {node.module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("aiohttp.")
        and any(part.startswith("_") for part in node.module.split("."))
    ]
    assert private_imports == []


def test_a_browser_mode_is_compared_by_its_constant() -> None:
    """The --browser modes are named once (config.BROWSER_MODES): a mode written out where it is
    compared ("never") is a test that quietly never holds once the names change, a check gone."""
    from archiver.config_rules import BROWSER_MODES

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            literal = any(isinstance(side, ast.Constant) and side.value in BROWSER_MODES for side in sides)
            moded = any("browser" in ast.unparse(side) or "mode" in ast.unparse(side) for side in sides)
            if literal and moded:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
