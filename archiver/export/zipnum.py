"""A compressed CDXJ index (ZipNum, as pywb, py-wacz and ReplayWeb.page read it): sorted lines in
gzip blocks, and a small index of the blocks.

``index.cdx.gz`` is gzip members of BLOCK_LINES lines each, one after the
other; ``index.idx`` names each block by its first line's key and timestamp,
with its offset, length and SHA-256, after a ``!meta`` line saying the format.
A reader loads the small .idx and fetches only the blocks a lookup needs:
what ReplayWeb.page wants of a large archive (a plain index.cdxj is loaded
whole before the first page shows). Memory stays at one block.

>>> import io
>>> out = io.BytesIO()
>>> idx = write_blocks(["a 1 {}", "b 2 {}", "c 3 {}"], out, lines_per_block=2)
>>> idx[0]
'!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}'
>>> idx[1].split(" {")[0], idx[2].split(" {")[0]
('a 1', 'c 3')
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable
from typing import IO

BLOCK_LINES = 1024
"""Lines a block: py-wacz's (and so Browsertrix's) choice."""
DATA_NAME = "index.cdx.gz"


def _compress(lines: list[str]) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress("".join(line + "\n" for line in lines).encode("utf-8")) + compressor.flush()


def _idx_line(first: str, offset: int, block: bytes) -> str:
    key = first.split(" {", 1)[0].strip()
    entry = {"offset": offset, "length": len(block), "digest": "sha256:" + hashlib.sha256(block).hexdigest()}
    return f"{key} {json.dumps(entry)}"


def write_blocks(lines: Iterable[str], out: IO[bytes], *, lines_per_block: int = BLOCK_LINES) -> list[str]:
    """Write sorted CDXJ ``lines`` (no newlines) to ``out`` as gzip blocks; returns the .idx lines."""
    size = lines_per_block
    idx = ["!meta 0 " + json.dumps({"format": "cdxj-gzip-1.0", "filename": DATA_NAME})]
    block: list[str] = []
    offset = 0
    for line in lines:
        block.append(line)
        if len(block) == size:
            data = _compress(block)
            out.write(data)
            idx.append(_idx_line(block[0], offset, data))
            offset += len(data)
            block = []
    if block:
        data = _compress(block)
        out.write(data)
        idx.append(_idx_line(block[0], offset, data))
    return idx
