"""Count what a crawl fetched: from archiver's manifest, or from wget's WARC file and saved files."""

from __future__ import annotations

import gzip
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

WGET_WARC_NAME = "site"
"""wget's --warc-file prefix; wget adds .warc.gz."""


@dataclass(frozen=True)
class CrawlCounts:
    """Responses a crawler got, and how many distinct pages and files it kept."""

    responses: int
    """HTTP responses received, any status (a crawler that refetches a URL counts it again)."""
    ok: int
    """200 responses."""
    distinct_ok: int
    """Distinct URLs answered 200: compare with SiteInfo.ok_responses."""
    pages: int
    """Distinct URLs answered 200 with text/html: compare with SiteInfo.pages."""
    files: int
    """Files written to the mirror."""


def _count_files(folder: Path, skip_suffix: str = "") -> int:
    if not folder.is_dir():
        return 0
    return sum(
        1
        for path in folder.rglob("*")
        if path.is_file() and not (skip_suffix and path.name.endswith(skip_suffix))
    )


def archiver_counts(snapshot: Path) -> CrawlCounts:
    """Counts from a snapshot's manifest.sqlite3 (table ``urls``, one row per URL met) and its mirror."""
    connection = sqlite3.connect(snapshot / "manifest.sqlite3")
    try:
        responses, ok, pages = connection.execute(
            "SELECT count(status), "
            "       coalesce(sum(status = 200), 0), "
            "       coalesce(sum(status = 200 AND content_type = 'text/html'), 0) "
            "FROM urls"
        ).fetchone()
    finally:
        connection.close()
    # One row per URL: each URL answered 200 counts once, so ok is also the distinct count.
    return CrawlCounts(
        responses=responses, ok=ok, distinct_ok=ok, pages=pages, files=_count_files(snapshot / "mirror")
    )


def warc_responses(path: Path) -> Iterator[tuple[str, int, str]]:
    """(target URI, HTTP status, content type) of every response record of a gzipped WARC file."""
    with gzip.open(path, "rb") as stream:
        while line := stream.readline():
            if not line.startswith(b"WARC/"):
                continue  # the blank lines that end each record
            headers: dict[bytes, bytes] = {}
            while (line := stream.readline()).strip():
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            block = stream.read(int(headers.get(b"content-length", b"0")))
            if headers.get(b"warc-type") != b"response" or not block.startswith(b"HTTP/"):
                continue
            head = block.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
            content_type = next(
                (
                    value.split(b";")[0].strip()
                    for name, _, value in (field.partition(b":") for field in head[1:])
                    if name.strip().lower() == b"content-type"
                ),
                b"",
            )
            yield (
                headers.get(b"warc-target-uri", b"").decode("utf-8", "replace").strip("<>"),
                int(head[0].split()[1]),
                content_type.decode("ascii", "replace").lower(),
            )


def wget_counts(output: Path) -> CrawlCounts:
    """Counts from the WARC wget wrote with --warc-file=OUT/site, and the files it saved under OUT."""
    responses = ok = 0
    ok_urls: set[str] = set()
    page_urls: set[str] = set()
    for uri, status, content_type in warc_responses(output / f"{WGET_WARC_NAME}.warc.gz"):
        responses += 1
        if status == 200:
            ok += 1
            ok_urls.add(uri)
            if content_type == "text/html":
                page_urls.add(uri)
    return CrawlCounts(
        responses=responses,
        ok=ok,
        distinct_ok=len(ok_urls),
        pages=len(page_urls),
        files=_count_files(output, skip_suffix=".warc.gz"),
    )


def mirror_counts(output: Path) -> CrawlCounts:
    """Counts from the files a crawler without a WARC file saved (wget2): each one a 200."""
    files = _count_files(output)
    pages = sum(1 for path in output.rglob("*.html") if path.is_file())
    return CrawlCounts(responses=files, ok=files, distinct_ok=files, pages=pages, files=files)
