"""safe_join: a path inside a folder of the snapshot, never outside it nor through a symbolic link."""

from __future__ import annotations

import os
from pathlib import Path

from archiver.errors import UnsafePathError


def safe_join(root: Path, relative: str) -> Path:
    """``root / relative``, refusing paths that leave ``root`` or pass a symbolic link.

    Raises UnsafePathError. Existing components are checked with lstat, so a
    symlink planted in the folder (to /etc, say) is never followed.
    """
    if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
        raise UnsafePathError(f"unsafe path {relative!r}")
    current = root
    for component in relative.split("/"):
        if component in ("", ".", ".."):
            raise UnsafePathError(f"unsafe path {relative!r}")
        current = current / component
        if os.path.islink(current):
            raise UnsafePathError(f"{current} is a symbolic link")
    return current
