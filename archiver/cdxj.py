"""CDXJ index lines (the pywb / WACZ convention) for response and revisit records."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from .urls import surt


def cdxj_line(
    url: str,
    warc_date: str,
    *,
    mime: str,
    status: int | None,
    digest: str,
    length: int,
    offset: int,
    filename: str,
) -> str:
    """One CDXJ line: SURT key, 14-digit timestamp, JSON block.

    >>> cdxj_line("http://h/", "2026-01-02T03:04:05.000001Z", mime="text/html", status=200,
    ...           digest="sha1:AAAA", length=10, offset=0, filename="a.warc.gz")[:30]
    'h)/ 20260102030405 {"url": "ht'
    """
    timestamp = "".join(ch for ch in warc_date if ch.isdigit())[:14]
    block = {"url": url}
    if mime:  # cdxj-indexer leaves the key out when the response had no Content-Type
        block["mime"] = mime
    block.update({
        "status": str(status) if status is not None else "-",
        "digest": digest,
        "length": str(length),
        "offset": str(offset),
        "filename": filename,
    })
    return f"{surt(url)} {timestamp} {json.dumps(block)}"


def write_sorted(lines: Iterable[str], path: Path) -> int:
    """Write ``lines`` sorted and de-duplicated to ``path`` atomically; returns the count."""
    unique = sorted(set(lines))
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        for line in unique:
            out.write(line + "\n")
    os.replace(temporary, path)
    return len(unique)


def merge_into_index(pending: Path, index: Path) -> int:
    """Fold the unsorted lines of ``pending`` into the sorted ``index``; returns lines in it."""
    lines: list[str] = []
    for source in (index, pending):
        if source.exists():
            with open(source, encoding="utf-8") as f:
                lines.extend(line.rstrip("\n") for line in f if line.strip())
    count = write_sorted(lines, index)
    pending.unlink(missing_ok=True)
    return count
