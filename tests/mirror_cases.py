"""What the mirror tests share: a PNG's bytes, the site's origin, the file a mirror link names."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urljoin

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64

S = "http://site.test"


def target_of(mirror_file: Path, link: str) -> Path:
    return Path(unquote(urljoin(mirror_file.as_uri(), link).split("#")[0]).removeprefix("file://"))
