"""A compressed CDXJ index (ZipNum, as pywb, py-wacz and ReplayWeb.page read it): sorted lines in
gzip blocks, and a small index of the blocks.

``index.cdx.gz`` is gzip members of about BLOCK_LINES lines each, one after the
other; ``index.idx`` names each block by its first line's key and timestamp,
with its offset, length and SHA-256, after a ``!meta`` line saying the format.
A reader loads the small .idx and fetches only the blocks a lookup needs:
what ReplayWeb.page wants of a large archive (a plain index.cdxj is loaded
whole before the first page shows). Memory stays at a line, and a key for
each line ReplayWeb.page orders before pywb does (``_CutRule``: a URL holding
``%7E`` or ``//``; most snapshots have none).

pywb finds a block by the key of our lines (its SURT), ReplayWeb.page by a key
of its own (``replay_lookup_key``): it keeps a folder's final slash, and
escapes pywb undoes. So a block is cut only where both find every line
(``_CutRule``): else a page of the package, at the end of a block, is
"not in this archive" for ReplayWeb.page.

>>> import io
>>> out = io.BytesIO()
>>> idx = write_blocks(["a 1 {}", "b 2 {}", "c 3 {}"], out, lines_per_block=2)
>>> idx[0]
'!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}'
>>> idx[1].split(" {")[0], idx[2].split(" {")[0]
('a 1', 'c 3')
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import tempfile
import zlib
from collections.abc import Iterable
from typing import IO

import ada_url

BLOCK_LINES = 1024
"""Lines a block, at least (py-wacz's, and so Browsertrix's, choice)."""
DATA_NAME = "index.cdx.gz"
_WWW = re.compile(r"^(https?://)www\d*\.")
_PAST_ANY_TIMESTAMP = " 9999"
"""What ReplayWeb.page adds to a key to find the last block that may hold it."""


def replay_lookup_key(url: str) -> str:
    """The key ReplayWeb.page looks ``url`` up by in a WACZ's .idx (``getSurt`` of warcio.js):
    the URL lowercased, its host reversed, its path as the URL standard writes it (a folder
    keeps its final slash, an escape stays an escape), its query's arguments sorted.

    >>> replay_lookup_key("http://www.Example.com:8080/Docs/?b=2&a=1")
    'com,example:8080)/docs/?a=1&b=2'
    >>> replay_lookup_key("http://h/%7Euser//x"), replay_lookup_key("urn:dom:http://h/")
    ('h)/%7euser//x', 'urn:dom:http://h/')
    """
    if not url.startswith(("http:", "https:")):
        return url
    try:
        parsed = ada_url.URL(_WWW.sub(r"\1", url).lower())
    except ValueError:
        return url
    key = ",".join(reversed(parsed.hostname.split(".")))
    if parsed.port:
        key += ":" + parsed.port
    key += ")" + parsed.pathname
    if parsed.search:
        key += "?" + "&".join(sorted(parsed.search[1:].split("&")))
    return key


def _line_keys(line: str) -> tuple[str, str]:
    """The line's label in the .idx (key and timestamp) and ReplayWeb.page's key of its URL."""
    label = line.split(" {", 1)[0].strip()
    try:
        url = json.loads(line[line.index(" {") + 1 :])["url"]
    except (ValueError, KeyError, TypeError):
        return label, label.split(" ", 1)[0]
    return label, replay_lookup_key(str(url))


class _CutRule:
    """Where a new block may start, so that ReplayWeb.page finds every line where it looks.

    ReplayWeb.page loads the last block whose label sorts before ``its key + " 9999"``, and the
    first one whose label sorts at or after its key. A new block may start at a line when

    - its label sorts after that bound of every line before it (else a line before, such as a
      folder ``/a/`` whose pywb key ``/a`` precedes the line ``/a-b``, is looked for in the
      new block alone); and
    - the label of the block it closes sorts before ReplayWeb.page's key of every line after
      (else a line after whose key sorts early, such as ``/%7Euser``, which pywb keys as
      ``/~user``, is looked for in an earlier block alone).

    The second needs the lines ahead: the first pass notes the lines whose key sorts before
    their label's key (those alone can break it; most indexes have none), the second cuts.
    """

    def __init__(self) -> None:
        self._early_at: list[int] = []
        self._early_keys: list[str] = []
        self._highest_bound = ""

    def note(self, number: int, label: str, key: str) -> None:
        """First pass: line ``number`` of the index."""
        if key < label.split(" ", 1)[0]:
            self._early_at.append(number)
            self._early_keys.append(key)

    def seal(self) -> None:
        """After the first pass: each noted key becomes the lowest key from there on."""
        for i in range(len(self._early_keys) - 2, -1, -1):
            self._early_keys[i] = min(self._early_keys[i], self._early_keys[i + 1])

    def may_start(self, number: int, label: str, closed_label: str) -> bool:
        """Second pass: may line ``number``, labelled ``label``, start a block after the one
        labelled ``closed_label``?"""
        if label < self._highest_bound:
            return False
        ahead = bisect.bisect_left(self._early_at, number)
        return ahead == len(self._early_at) or closed_label < self._early_keys[ahead]

    def passed(self, key: str) -> None:
        """Second pass: a line with ReplayWeb.page's ``key`` went into a block."""
        self._highest_bound = max(self._highest_bound, key + _PAST_ANY_TIMESTAMP)


class _Block:
    """One gzip member being written: its label, lines and compressor."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.lines = 0
        self._compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self._hash = hashlib.sha256()
        self._length = 0

    def add(self, line: str, out: IO[bytes]) -> None:
        self._write(self._compressor.compress((line + "\n").encode("utf-8")), out)
        self.lines += 1

    def close(self, offset: int, out: IO[bytes]) -> str:
        """Finish the member; returns its .idx line."""
        self._write(self._compressor.flush(), out)
        entry = {"offset": offset, "length": self._length, "digest": "sha256:" + self._hash.hexdigest()}
        return f"{self.label} {json.dumps(entry)}"

    @property
    def length(self) -> int:
        return self._length

    def _write(self, data: bytes, out: IO[bytes]) -> None:
        out.write(data)
        self._hash.update(data)
        self._length += len(data)


def write_blocks(lines: Iterable[str], out: IO[bytes], *, lines_per_block: int | None = None) -> list[str]:
    """Write sorted CDXJ ``lines`` (no newlines) to ``out`` as gzip blocks of about
    ``lines_per_block`` (BLOCK_LINES) lines, each cut where ReplayWeb.page and pywb both find
    every line; returns the .idx lines."""
    size = lines_per_block or BLOCK_LINES
    idx = ["!meta 0 " + json.dumps({"format": "cdxj-gzip-1.0", "filename": DATA_NAME})]
    rule = _CutRule()
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogateescape") as spooled:
        for number, line in enumerate(lines):
            rule.note(number, *_line_keys(line))
            spooled.write(line + "\n")
        rule.seal()
        spooled.seek(0)
        block: _Block | None = None
        offset = 0
        for number, line in enumerate(spooled):
            line = line.rstrip("\n")
            label, key = _line_keys(line)
            if block is not None and block.lines >= size and rule.may_start(number, label, block.label):
                idx.append(block.close(offset, out))
                offset += block.length
                block = None
            if block is None:
                block = _Block(label)
            block.add(line, out)
            rule.passed(key)
        if block is not None:
            idx.append(block.close(offset, out))
    return idx
