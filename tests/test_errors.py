"""One exception tree: every error archiver defines descends from ArchiverError, and the
tree drawn in errors.py's docstring names each of them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import archiver
from archiver import errors
from archiver.errors import ArchiverError


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Every public exception class defined in a module of the package, by qualified name."""
    found = {}
    for module_info in pkgutil.walk_packages(archiver.__path__, "archiver."):
        if module_info.name == "archiver.__main__":
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_exception_descends_from_archiver_error() -> None:
    """But a stop asked by a signal, raised as Ctrl-C's KeyboardInterrupt is: no error, and
    beyond the reach of ``except Exception``."""
    found = defined_exceptions()
    assert "archiver.errors.WarcDamage" in found
    stops = [name for name, cls in found.items() if not issubclass(cls, Exception)]
    assert stops == ["archiver.stop_signals.Terminated"]
    errors = {name: cls for name, cls in found.items() if name not in stops}
    assert [name for name, cls in errors.items() if not issubclass(cls, ArchiverError)] == []


def test_the_docstring_draws_every_exception() -> None:
    drawn = errors.__doc__ or ""
    for name, cls in vars(errors).items():
        if inspect.isclass(cls) and issubclass(cls, BaseException):
            assert re.search(rf"^[│├└─ ]*{name}\b", drawn, re.MULTILINE), name


def test_builtin_bases_that_callers_catch_are_kept() -> None:
    assert issubclass(errors.BadURL, ValueError)
    assert issubclass(errors.UnsafePathError, ValueError)
