"""CDXJ index lines (the pywb / WACZ convention) for response, revisit and resource records."""

from __future__ import annotations

import heapq
import itertools
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from archiver.surt import surt


def cdxj_timestamp(warc_date: str) -> str:
    """The 14-digit timestamp of a WARC-Date: '2026-01-02T03:04:05.1Z' -> '20260102030405'."""
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]


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

    ``status`` None (a resource record, which has no HTTP status) leaves the key
    out, as cdxj-indexer does. ``mime`` is the type the answer was taken as: its body's
    sniffed type where its Content-Type named none (cdxj-indexer, which reads the header
    alone, gives ``unknown/unknown`` or nothing). Replay does not rewrite by it (pywb and
    ReplayWeb.page read the record's own Content-Type); it is what their searches and
    filters by type (``filter=mime:text/html``) find a capture by, as pages.jsonl lists it.

    >>> cdxj_line("http://h/", "2026-01-02T03:04:05.000001Z", mime="text/html", status=200,
    ...           digest="sha1:AAAA", length=10, offset=0, filename="a.warc.gz")[:30]
    'h)/ 20260102030405 {"url": "ht'
    """
    timestamp = cdxj_timestamp(warc_date)
    block = {"url": url}
    if mime:  # cdxj-indexer leaves the key out when the response had no Content-Type
        block["mime"] = mime
    if status is not None:
        block["status"] = str(status)
    block.update(
        {
            "digest": digest,
            "length": str(length),
            "offset": str(offset),
            "filename": filename,
        }
    )
    return f"{surt(url)} {timestamp} {json.dumps(block)}"


KEEP_BYTES = "surrogateescape"
"""How CDXJ files are decoded and encoded: bytes that are not UTF-8 (an index damaged) go through
a merge unchanged, for verify to name, instead of stopping the crawl that merges."""

SORT_RUN_LINES = 5_000
"""Lines sorted in memory at a time; longer inputs are merged from sorted runs on disk."""


def _sorted_runs(lines: Iterable[str], scratch: Path) -> list[Path]:
    runs: list[Path] = []
    iterator = iter(lines)
    while chunk := sorted(set(itertools.islice(iterator, SORT_RUN_LINES))):
        run = scratch / f"run-{len(runs)}"
        with open(run, "w", encoding="utf-8", errors=KEEP_BYTES) as out:
            out.writelines(line + "\n" for line in chunk)
        runs.append(run)
    return runs


def _write_merged(sources: list[Path], path: Path) -> int:
    """Merge sorted files into ``path`` (atomically), dropping duplicate lines; returns the count."""
    files = [open(source, encoding="utf-8", errors=KEEP_BYTES) for source in sources]  # noqa: SIM115
    count = 0
    temporary = path.with_suffix(".tmp")
    try:
        with open(temporary, "w", encoding="utf-8", errors=KEEP_BYTES) as out:
            last = None
            for line in heapq.merge(*files):
                if line != last and line.strip():
                    out.write(line)
                    count += 1
                    last = line
    finally:
        for f in files:
            f.close()
    os.replace(temporary, path)
    return count


def write_sorted(lines: Iterable[str], path: Path) -> int:
    """Write ``lines`` sorted and de-duplicated to ``path`` atomically; returns the count.

    An external merge sort: memory stays bounded however many lines there are.
    """
    with tempfile.TemporaryDirectory(prefix=".sort-", dir=path.parent) as scratch:
        return _write_merged(_sorted_runs(lines, Path(scratch)), path)


def rekeyed(line: str) -> str:
    """``line`` keyed by the SURT of its URL as this version makes it (an earlier version kept a
    trailing slash, sorted arguments as text, kept escapes and a URN's path as written: pywb did
    not find those); a line that is not CDXJ comes back as it was, for verify to name.

    >>> rekeyed('1,0,0,127:8172)/dir/ 20260102030405 {"url": "http://127.0.0.1:8172/dir/"}')[:34]
    '1,0,0,127:8172)/dir 20260102030405'
    """
    key, _, rest = line.partition(" ")
    try:
        url = json.loads(rest.partition(" ")[2])["url"]
        now = surt(url) if isinstance(url, str) else key
    except (ValueError, KeyError, TypeError):
        return line
    return line if now == key else f"{now} {rest}"


KEYS = "surt-2"
"""The keying rekeyed() gives, as a mark names it: a version that keys otherwise names another."""


def keyed_otherwise(index: Path) -> int:
    """How many lines of ``index`` an earlier version keyed otherwise than rekeyed() keys them
    (0 if there is no index, or if its mark says every line was keyed so: marked_keyed())."""
    if not index.is_file() or marked_keyed(index):
        return 0
    with open(index, encoding="utf-8", errors=KEEP_BYTES) as lines:
        return sum(1 for line in lines if line.strip() and rekeyed(line.rstrip("\n")) != line.rstrip("\n"))


def rekey_index(index: Path) -> int:
    """Key again the lines of the sorted ``index`` an earlier version keyed otherwise (rekeyed());
    returns how many were; the index is rewritten (sorted, atomically) only if any was. Then it
    is marked keyed (mark_keyed()), so the next call reads no line of it."""
    changed = keyed_otherwise(index)
    if changed:
        with open(index, encoding="utf-8", errors=KEEP_BYTES) as lines:
            write_sorted((rekeyed(line.rstrip("\n")) for line in lines if line.strip()), index)
    if index.is_file() and not marked_keyed(index):
        mark_keyed(index)
    return changed


def _mark_path(index: Path) -> Path:
    return index.with_name(index.name + ".keyed")


def _standing(index: Path) -> dict[str, object]:
    """What the mark of ``index`` says of it: the keying, and how the file stands on disk (its
    size, modification time and inode change with any write, a copy or a move)."""
    found = index.stat()
    return {"keys": KEYS, "size": found.st_size, "mtime_ns": found.st_mtime_ns, "inode": found.st_ino}


def mark_keyed(index: Path) -> None:
    """Note beside ``index`` (``index.cdxj.keyed``) that every line of it, as it stands now, is
    keyed as rekeyed() keys it: a mirror build then need not read it all to find an earlier
    version's lines. Any later change to the file leaves the mark naming another file."""
    mark = _mark_path(index)
    temporary = mark.with_name(mark.name + ".tmp")
    temporary.write_text(json.dumps(_standing(index)))
    os.replace(temporary, mark)


def marked_keyed(index: Path) -> bool:
    """True if the mark beside ``index`` (mark_keyed()) names the file as it stands now."""
    try:
        return bool(json.loads(_mark_path(index).read_text()) == _standing(index))
    except (OSError, ValueError):  # no mark, or one cut short
        return False


def merge_into_index(pending: Path, index: Path) -> int:
    """Fold the unsorted lines of ``pending`` into the sorted ``index``; returns lines in it.
    Lines an earlier version keyed otherwise (a crawl it left unfinished) are keyed again. An
    index marked keyed before (mark_keyed()) is marked again after: the lines added are keyed."""
    keyed = not index.exists() or marked_keyed(index)
    with tempfile.TemporaryDirectory(prefix=".sort-", dir=index.parent) as scratch:
        runs = []
        if pending.exists():
            with open(pending, encoding="utf-8", errors=KEEP_BYTES) as f:
                pending_lines = (rekeyed(line.rstrip("\n")) for line in f if line.strip())
                runs = _sorted_runs(pending_lines, Path(scratch))
        count = _write_merged(([index] if index.exists() else []) + runs, index)
    if keyed:
        mark_keyed(index)
    pending.unlink(missing_ok=True)
    return count
