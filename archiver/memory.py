"""Giving memory the process has freed back to the system.

glibc's allocator keeps what Python frees (page bodies of a few hundred KiB, a parsed
page's nodes) for reuse, and a process forked from this one starts with its share of
it. Elsewhere than glibc, these do nothing.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def _libc() -> Any:
    """The C library this process runs on, if it is glibc: the symbols the process has loaded
    (``CDLL(None)``), not found by name, which ctypes.util does by running ldconfig, a process
    of its own at every start."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's malloc_trim)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


_M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 128 * 1024


def map_large_blocks() -> None:
    """Have every block of LARGE_BLOCK bytes or more mapped on its own, so it goes back to
    the system as soon as it is freed. glibc otherwise raises that threshold as the process
    frees such blocks, and a crawl's page bodies, freed by the thousand, stay in its heap."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK)
