"""safe_join: a path inside a folder of the snapshot, never outside it nor through a symbolic link."""

from __future__ import annotations

import os
from pathlib import Path

from archiver.errors import UnsafePathError
from archiver.paths import reserved_on_windows

WINDOWS = os.name == "nt"


def safe_join(root: Path, relative: str, windows: bool = WINDOWS) -> Path:
    """``root / relative``, refusing paths that leave ``root`` or pass a symbolic link.

    Raises UnsafePathError. Existing components are checked with lstat, so a
    symlink planted in the folder (to /etc, say) is never followed. On Windows
    (``windows``), a component that Windows reads as something else than a name
    in its folder is refused too (windows_misread()).

    >>> safe_join(Path("m"), "h/C:", windows=True)
    Traceback (most recent call last):
    ...
    archiver.errors.UnsafePathError: unsafe path 'h/C:'
    """
    if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
        raise UnsafePathError(f"unsafe path {relative!r}")
    current = root
    for component in relative.split("/"):
        if component in ("", ".", "..") or (windows and windows_misread(component)):
            raise UnsafePathError(f"unsafe path {relative!r}")
        current = current / component
        if os.path.islink(current):
            raise UnsafePathError(f"{current} is a symbolic link")
    return current


def windows_misread(name: str) -> bool:
    """Whether Windows reads the path component ``name`` as something else than a file or folder
    of that name in its folder: a drive (``C:``, and ``C:x``, relative to that drive's own
    folder: out of the snapshot), a stream of another file (``a.html:x``), a device (``CON``,
    ``nul.html``), or a name it trims (``a.html.``, ``.. ``: trailing dots and spaces go).
    The mirror writes none of them (paths.escape_name()); a request or a manifest naming one
    is refused.

    >>> [windows_misread(n) for n in ("C:", "a.html:x", "NUL.html", ".. ", "a.", "a.html", "CONTENT")]
    [True, True, True, True, True, False, False]
    """
    return ":" in name or name[-1:] in (".", " ") or reserved_on_windows(name)
