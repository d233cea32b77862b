"""A ManifestRow as a row of the manifest's urls table: its columns (FIELDS), the SQL that writes
one (what a later row of the same URL keeps of the earlier: how it was found; a skipped URL met
again as queued), and the reading of one back, checked for its values' types. The database
that holds them is store/manifest.py.

>>> read_row(("http://h/", "seed", 0, "queued") + (None,) * (len(FIELDS) - 4)).outcome
'queued'
>>> read_row(("http://h/", "seed", "0", "queued") + (None,) * (len(FIELDS) - 4))
Traceback (most recent call last):
...
archiver.errors.SnapshotError: the manifest is damaged: in the row of 'http://h/', depth '0' is not ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from archiver.errors import SnapshotError
from archiver.store.rows import QUEUED, SKIPPED, ManifestRow

FIELDS = tuple(f.name for f in dataclasses.fields(ManifestRow))
DISCOVERY = ("found_by", "parent", "depth")
"""How a URL was found: kept from its row when a later one replaces it, but a skipped one's."""
_COLUMNS = f"({', '.join(FIELDS)}) VALUES ({', '.join('?' for _ in FIELDS)})"
# A row's discovery facts stay: a URL fetched for a browser before the worker that queued
# it got to it, or a robots.txt a page linked and the crawl asked again (recorded again),
# still says how the crawl first found it. A skipped URL is found anew where it is taken.
# So does the rendered page it was first loaded as a frame of, noted apart (Manifest.framed()).
UPSERT = f"INSERT INTO urls {_COLUMNS} ON CONFLICT(url) DO UPDATE SET " + ", ".join(
    f"{name} = CASE WHEN urls.outcome = '{SKIPPED}' THEN excluded.{name} ELSE urls.{name} END"
    if name in DISCOVERY
    else f"{name} = COALESCE(urls.{name}, excluded.{name})"
    if name == "framed_by"
    else f"{name} = excluded.{name}"
    for name in FIELDS
    if name != "url"
)
# A URL skipped where it was first met (a nofollow page, past --max-depth) and queued where
# it is met again must read queued, or a resume would never fetch it. A queued URL queued
# again is one waiting out a failed try: its request facts (its tries) are new.
INSERT_NEW = (
    f"INSERT INTO urls {_COLUMNS} ON CONFLICT(url) DO UPDATE SET outcome = excluded.outcome, "
    "reason = NULL, found_by = excluded.found_by, parent = excluded.parent, depth = excluded.depth, "
    "request = excluded.request "
    f"WHERE urls.outcome IN ('{SKIPPED}', '{QUEUED}') AND excluded.outcome = '{QUEUED}'"
)
_TRUNCATED = FIELDS.index("truncated")


_NUMBERS = tuple(i for i, f in enumerate(dataclasses.fields(ManifestRow)) if str(f.type).startswith("int"))
_TEXTS = tuple(i for i, f in enumerate(dataclasses.fields(ManifestRow)) if str(f.type).startswith("str"))
WRONG_TYPE = " OR ".join(
    [f"typeof({FIELDS[i]}) NOT IN ('integer', 'null')" for i in _NUMBERS]
    + [f"typeof({FIELDS[i]}) NOT IN ('text', 'null')" for i in _TEXTS]
)
"""SQL condition of a row with a value not of its field's type (SQLite keeps what a column is given)."""


def read_row(values: Sequence[Any], checked: bool = True) -> ManifestRow:
    """The ManifestRow of ``values``, the columns of FIELDS in order.

    ``checked``: SnapshotError if a value is not of its field's type (SQLite keeps what a
    column is given: a manifest edited by hand may hold text for an offset), rather than a
    row that fails far from here; verify reads them unchecked, to report each.
    """
    fields = list(values)
    fields[_TRUNCATED] = bool(fields[_TRUNCATED])  # SQLite keeps the flag as 0 or 1
    row = ManifestRow(*fields)
    if checked and (
        any(fields[i] is not None and type(fields[i]) is not int for i in _NUMBERS)
        or any(fields[i] is not None and type(fields[i]) is not str for i in _TEXTS)
    ):
        raise SnapshotError(
            f"the manifest is damaged: in the row of {row.url!r}, {'; '.join(row.wrong_types())} "
            "(archiver verify lists what else is)"
        )
    return row


def checked_offset(found: Any, what: str) -> int | None:
    """``found`` (a WARC offset read from the manifest), or SnapshotError if it is no number."""
    if found is not None and type(found) is not int:
        raise SnapshotError(f"the manifest is damaged: a {what} is {found!r}, not a whole number")
    return found


def selected_columns(present: set[str]) -> str:
    """The column list of FIELDS, NULL for those an older manifest opened read-only lacks."""
    return ", ".join(f"urls.{name}" if name in present else f"NULL AS {name}" for name in FIELDS)
