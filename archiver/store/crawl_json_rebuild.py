"""crawl.json given back from the WARC files, when it is lost or unreadable (``crawl --resume --repair``).

crawl.json keeps the crawl's settings (seeds, scope, limits, options): what a resume, a
repair, the mirror, an export and verify read the crawl by. Each WARC file's warcinfo record
names them too (files.SETTINGS_FIELD), as they were when the file was begun, so the newest
file's are the crawl's last; the snapshot's folder and a shared crawl's Redis URL are not in
them (files.NOT_IN_WARCINFO), and the folder is where the WARC files are now. A crawl.json
given back holds those settings and the crawl noted as interrupted: the resume that follows
notes its run and, at its end, the totals. An unreadable crawl.json is set aside (renamed),
never deleted. WARC files an older version wrote name no settings: nothing gives them back.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archiver.config import CrawlConfig
from archiver.errors import SnapshotError
from archiver.store.crawl_record import INTERRUPTED
from archiver.store.snapshot import Snapshot
from archiver.warc.files import SETTINGS_FIELD, SUFFIX
from archiver.warc.reader import WarcReader

WARCINFO_READ_LIMIT = 1024 * 1024
"""Bytes of a warcinfo record read for the settings it names."""


def crawl_json_lost(snapshot: Snapshot) -> bool:
    """Whether the crawl.json of ``snapshot`` is missing or unreadable while its WARC files hold
    the crawl (a snapshot begun, not an empty folder)."""
    if not any(snapshot.warc_dir.glob(f"*{SUFFIX}")):
        return False
    try:
        snapshot.read_crawl_json()
    except SnapshotError:
        return True
    return False


def check_crawl_json(snapshot: Snapshot) -> None:
    """SnapshotError, naming crawl --resume --repair, if the crawl.json of a crawl whose WARC
    files are there is lost or unreadable: what needs the crawl's settings (an export's package
    names its seeds) then says what gives them back."""
    if crawl_json_lost(snapshot):
        snapshot.read_crawl_json()  # raises, saying what mends it


def restore_crawl_json(snapshot: Snapshot) -> str:
    """Write the crawl.json of ``snapshot`` again from the settings its newest WARC file's
    warcinfo names, an unreadable one set aside first; returns a warning saying so.
    SnapshotError if no WARC file names them."""
    settings = _newest_settings(snapshot)
    kept = None
    if snapshot.crawl_json_path.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        kept = snapshot.crawl_json_path.with_name(f"{snapshot.crawl_json_path.name}.damaged-{stamp}")
        os.replace(snapshot.crawl_json_path, kept)
    settings["output"] = str(snapshot.root)
    snapshot.write_crawl_json({"settings": settings, "status": INTERRUPTED, "runs": []})
    was = f"crawl.json could not be read (set aside as {kept.name})" if kept else "crawl.json was lost"
    return f"{was}: its settings are given back from the WARC files' warcinfo records"


def _newest_settings(snapshot: Snapshot) -> dict[str, Any]:
    """The settings the warcinfo record of the newest WARC file names (checked as crawl.json's
    are); SnapshotError if none does."""
    with WarcReader(snapshot.warc_dir) as reader:
        for path in sorted(snapshot.warc_dir.glob(f"*{SUFFIX}"), key=_begun, reverse=True):
            named = _settings_named(reader, path.name)
            if named is not None:
                return named
    raise SnapshotError(
        f"{snapshot.crawl_json_path} is lost and no warcinfo record of {snapshot.warc_dir} names the "
        "crawl's settings (WARC files of an older archiver): crawl the site again into a new folder"
    )


def _begun(path: Path) -> tuple[str, str]:
    """When the WARC file at ``path`` was begun, from its name (PREFIX-YYYYmmddHHMMSS-SERIAL.warc.gz),
    as text that sorts in time order."""
    parts = path.name.removesuffix(SUFFIX).rsplit("-", 2)
    stamp, serial = (parts + ["", ""])[1:3]
    return stamp, serial.rjust(12, "0")


def _settings_named(reader: WarcReader, name: str) -> dict[str, Any] | None:
    """The settings the warcinfo record that begins the WARC file ``name`` names, or None if it
    names none (or cannot be read, or they are no settings)."""
    try:
        record = reader.read(name, 0, WARCINFO_READ_LIMIT)
        if record.rec_headers.get_header("WARC-Type") != "warcinfo":
            return None
        for line in record.payload.decode("utf-8").splitlines():
            field, _, value = line.partition(":")
            if field == SETTINGS_FIELD:
                settings = json.loads(value)
                CrawlConfig.check_saved(settings)
                return settings if isinstance(settings, dict) else None
    except Exception:  # noqa: BLE001 - damaged, or no settings: the next file may name them
        return None
    return None
