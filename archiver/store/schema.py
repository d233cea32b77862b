"""The manifest's tables and indexes, and the columns added to them since the first release."""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    url TEXT PRIMARY KEY,
    found_by TEXT NOT NULL,
    parent TEXT,
    depth INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    tries INTEGER NOT NULL DEFAULT 0,
    status INTEGER,
    content_type TEXT,
    length INTEGER,
    payload_digest TEXT,
    fetched_at TEXT,
    title TEXT,
    redirect_to TEXT,
    final_url TEXT,
    warc_file TEXT,
    warc_offset INTEGER,
    warc_length INTEGER,
    record_type TEXT,
    truncated INTEGER NOT NULL DEFAULT 0,
    local_path TEXT,
    render_reason TEXT,
    render_error TEXT,
    dom_warc_file TEXT,
    dom_warc_offset INTEGER,
    dom_warc_length INTEGER
);
DROP INDEX IF EXISTS urls_outcome;
CREATE INDEX IF NOT EXISTS urls_outcome_url ON urls (outcome, url);
CREATE INDEX IF NOT EXISTS urls_payload ON urls (payload_digest) WHERE record_type = 'response';
CREATE INDEX IF NOT EXISTS urls_location ON urls (warc_file, warc_offset) WHERE warc_file IS NOT NULL;
CREATE TABLE IF NOT EXISTS crawl_state (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mirror_files (
    path TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    note TEXT
) WITHOUT ROWID;
"""


LATER_COLUMNS = {
    "render_reason": "TEXT",
    "render_error": "TEXT",
    "dom_warc_file": "TEXT",
    "dom_warc_offset": "INTEGER",
    "dom_warc_length": "INTEGER",
    "redirect_fragment": "TEXT",
    "request": "TEXT",
    "framed_by": "TEXT",
}
"""Columns added after the first release: a manifest written before gets them when opened."""


def create_tables(db: sqlite3.Connection) -> None:
    """Create what is missing: the tables and indexes, and the later columns of an older manifest."""
    db.executescript(SCHEMA)
    present = {info[1] for info in db.execute("PRAGMA table_info(urls)")}
    for name, kind in LATER_COLUMNS.items():
        if name not in present:
            db.execute(f"ALTER TABLE urls ADD COLUMN {name} {kind}")
    db.execute(
        "CREATE INDEX IF NOT EXISTS urls_dom_location ON urls (dom_warc_file, dom_warc_offset) "
        "WHERE dom_warc_file IS NOT NULL"
    )


def read_as_current(db: sqlite3.Connection) -> None:
    """Let a read-only connection read a manifest written before the later columns as a current
    one: a temporary view named urls (found before the file's own table) adds each missing
    column as NULL, so every query reads it unchanged. The file is not written."""
    present = {info[1] for info in db.execute("PRAGMA table_info(urls)")}
    missing = [name for name in LATER_COLUMNS if name not in present]
    if present and missing:
        added = ", ".join(f"NULL AS {name}" for name in missing)
        db.execute(f"CREATE TEMP VIEW urls AS SELECT *, {added} FROM main.urls")


def has_table(db: sqlite3.Connection, name: str) -> bool:
    """Whether ``db`` holds a table called ``name``."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


def has_urls_table(db: sqlite3.Connection) -> bool:
    """Whether ``db`` holds the urls table (a damaged file raises sqlite3.Error at once)."""
    found = has_table(db, "urls")
    if found:
        db.execute("SELECT url FROM urls LIMIT 1").fetchall()  # a damaged file fails here, at once
    return found
