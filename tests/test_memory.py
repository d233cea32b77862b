"""The C library's allocator settings the crawl relies on (archiver/memory.py)."""

from __future__ import annotations

import platform
import subprocess
from typing import Any

from archiver import memory


def test_the_c_library_is_found_without_starting_a_process(monkeypatch: Any) -> None:
    # ctypes.util.find_library("c") runs ldconfig: a process at every start of the crawl.
    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    memory._libc.cache_clear()
    try:
        libc = memory._libc()
        memory.map_large_blocks()
        memory.release_free_memory()
    finally:
        memory._libc.cache_clear()
    if platform.libc_ver()[0] == "glibc":
        assert libc is not None and libc.malloc_trim(0) in (0, 1)
