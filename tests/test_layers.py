"""Each package of archiver imports only the packages below it, so that what a lower one does
never waits on what a higher one decides.

The layers, from the bottom (README, "How it works"; DESIGN.md, "The pipeline"):

- the pure rules, archiver's own modules (urls, scope, links, content, config, errors...);
- warc/, the record of truth: WARC files written and read back, their records checked;
- store/, the snapshot folder: the manifest and what it is rebuilt from, the WARC files;
- mirror/, the offline copy built from the store (the crawl's writer places each capture in it);
- crawling/ and verify/, side by side: the crawl writes a snapshot, verify reads one cold, and
  neither may lean on the other (verify proves what any crawl left, and a crawl that repairs a
  snapshot reads it with the lower layers' scan, not with verify);
- export/, packages of a snapshot (a WACZ checks its records as verify does);
- cli/, the command line;
- the package's public surface (archiver/__init__.py) and ``python -m archiver`` (__main__.py).

A module may import any module of its own package or of a layer below, never one of its own
layer's other package nor of a layer above: an import inside a function, or under
TYPE_CHECKING, counts as much as one at the top of the module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import archiver

PACKAGE_ROOT = Path(archiver.__file__).resolve().parent

RULES = "the pure rules"
SURFACE = "the public surface"
LAYERS: tuple[tuple[str, ...], ...] = (
    (RULES,),
    ("warc",),
    ("store",),
    ("mirror",),
    ("crawling", "verify"),
    ("export",),
    ("cli",),
    (SURFACE,),
)
RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}
ENTRY_POINTS = frozenset({"archiver", "archiver.__main__"})
"""Modules above every package: the public surface, which names what each package offers,
and ``python -m archiver``."""


@dataclass(frozen=True)
class Crossing:
    """An import of a module of one package (or layer) by a module of another."""

    importer: str
    """The module that imports, as ``archiver.store.rebuild``."""
    line: int
    imported: str
    """The module imported, as ``archiver.verify.verifier``."""

    def __str__(self) -> str:
        source = self.importer.replace(".", "/")
        path = f"{source}/__init__.py" if is_package(self.importer) else f"{source}.py"
        return (
            f"{path}:{self.line} imports {self.imported}: "
            f"{package_of(self.importer)} may not import {package_of(self.imported)}"
        )


def describe_layers() -> str:
    """The layers from the bottom, as a message says them."""
    return "layers from the bottom: " + " < ".join(" = ".join(layer) for layer in LAYERS)


def is_package(module: str) -> bool:
    """Whether ``module`` (``archiver.x.y``) is a folder of archiver rather than a file."""
    parts = module.split(".")[1:]
    return PACKAGE_ROOT.joinpath(*parts).is_dir()


def package_of(module: str) -> str:
    """The package (or layer) an archiver module belongs to: a folder of archiver, the pure
    rules (a module directly in archiver), or the public surface."""
    if module in ENTRY_POINTS:
        return SURFACE
    parts = module.split(".")
    if PACKAGE_ROOT.joinpath(parts[1]).is_dir():
        return parts[1]
    return RULES


def may_import(importer: str, imported: str) -> bool:
    """Whether archiver module ``importer`` may import archiver module ``imported``."""
    own, other = package_of(importer), package_of(imported)
    return own == other or RANK[other] < RANK[own]


def resolve_root_name(name: str) -> str | None:
    """The module ``from archiver import name`` reads: a module of archiver, the home of a public
    name (the surface imports it when first asked for it), or None for what the surface holds
    itself (``__version__``), which imports nothing."""
    if (PACKAGE_ROOT / f"{name}.py").is_file() or (PACKAGE_ROOT / name).is_dir():
        return f"archiver.{name}"
    home = archiver._HOMES.get(name)
    return f"archiver.{home}" if home is not None else None


def imported_modules(module: str, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for each archiver module that ``module``'s source ``tree`` imports."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("archiver.")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                if not is_package(module):
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "archiver":
                for alias in node.names:
                    target = resolve_root_name(alias.name)
                    if target is not None:
                        found.append((node.lineno, target))
            elif base.startswith("archiver."):
                found.append((node.lineno, base))
    return found


def crossings(module: str, source: str) -> list[Crossing]:
    """The imports of ``module``'s ``source`` that go up a layer or across to a sibling."""
    tree = ast.parse(source)
    return [
        Crossing(module, line, imported)
        for line, imported in imported_modules(module, tree)
        if not may_import(module, imported)
    ]


def module_name(path: Path) -> str:
    """``archiver.store.rebuild`` for archiver/store/rebuild.py (``archiver.store`` for its
    __init__.py)."""
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def archiver_modules() -> list[Path]:
    """Every Python module of the package."""
    return sorted(PACKAGE_ROOT.rglob("*.py"))


def test_no_package_imports_a_higher_or_sibling_one():
    found = [
        str(crossing)
        for path in archiver_modules()
        for crossing in crossings(module_name(path), path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join([*found, describe_layers()])


def test_every_package_has_its_layer():
    folders = {path.parent.name for path in PACKAGE_ROOT.glob("*/__init__.py")}
    assert folders, PACKAGE_ROOT
    assert folders - RANK.keys() == set(), f"give each new package its layer in LAYERS: {describe_layers()}"


@pytest.mark.parametrize(
    ("module", "source", "imported"),
    [
        (
            "archiver.store.rebuild",
            "from archiver.verify.verifier import verify_snapshot",
            ["archiver.verify.verifier"],
        ),
        ("archiver.warc.reader", "import archiver.store.manifest", ["archiver.store.manifest"]),
        (
            "archiver.verify.verifier",
            "from archiver.crawling.merge import merge_nodes",
            ["archiver.crawling.merge"],
        ),
        ("archiver.crawling.repair", "from archiver.verify import verifier", ["archiver.verify"]),
        (
            "archiver.store.rebuild",
            "def f():\n    from archiver.mirror.build import build_mirror\n",
            ["archiver.mirror.build"],
        ),
        (
            "archiver.store.rebuild",
            "from ..verify.verifier import verify_snapshot",
            ["archiver.verify.verifier"],
        ),
        ("archiver.store", "from .. import verify", ["archiver.verify"]),
        ("archiver.urls", "from . import scope, cli", ["archiver.cli"]),
        ("archiver.warc.files", "from archiver import build_mirror", ["archiver.mirror.build"]),
        ("archiver.warc.files", "from archiver import __version__", []),
        ("archiver.store.rebuild", "from archiver.warc.reader import WarcReader\nimport archiver.urls", []),
        ("archiver.store.rebuild", "from archiver.store.manifest import Manifest\nfrom . import rows", []),
        (
            "archiver.mirror.build",
            "from archiver.crawling.render_policy import NEVER",
            ["archiver.crawling.render_policy"],
        ),
        ("archiver.cli.options", "from archiver.verify.verifier import verify_snapshot", []),
        ("archiver.export.wacz", "from archiver.verify.record_damage import record_damage", []),
        ("archiver.__main__", "from archiver.cli import main", []),
        ("archiver", "from archiver.cli import main", []),
    ],
)
def test_what_counts_as_a_crossing(module, source, imported):
    assert [crossing.imported for crossing in crossings(module, source)] == imported


def test_a_crossing_names_its_module_line_and_packages():
    (crossing,) = crossings("archiver.store.rebuild", "import json\nfrom archiver.verify import verifier\n")
    assert str(crossing) == "archiver/store/rebuild.py:2 imports archiver.verify: store may not import verify"
    (crossing,) = crossings("archiver.store", "from archiver.verify.verifier import verify_snapshot\n")
    assert str(crossing).startswith("archiver/store/__init__.py:1 imports")
