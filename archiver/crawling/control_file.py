"""The control file of a crawl made by one process: ``DIR/control.sqlite3``.

``archiver control DIR ...`` adds a row to its ``commands`` table; the crawl
reads the rows added since it started, every second (FileControlSource), and
writes its counts into ``status`` for ``archiver control DIR status``. SQLite
lets the two processes write it in turn, each write a short transaction.

>>> import tempfile, asyncio
>>> from pathlib import Path
>>> path = Path(tempfile.mkdtemp()) / "control.sqlite3"
>>> source = FileControlSource(path)
>>> ControlFile(path).issue("pause", None)
>>> [command.name for command in asyncio.run(source.new_commands())]
['pause']
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from archiver.crawling.control import Command
from archiver.errors import SnapshotError, WriteError
from archiver.store.crawl_record import now
from archiver.store.manifest import write_failed

SCHEMA = """
CREATE TABLE IF NOT EXISTS commands (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    argument TEXT,
    issued TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS status (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    counts TEXT NOT NULL
);
"""


class ControlFile:
    """The commands and the published counts of one snapshot's crawl."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _open(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(str(self.path), timeout=10, isolation_level=None)
            db.executescript(SCHEMA)
        except sqlite3.Error as exc:
            if write_failed(exc):  # a full disk: the crawl stops as for any write error
                raise WriteError(f"cannot write {self.path}: {exc}") from None
            raise SnapshotError(f"cannot open {self.path}: {exc}") from None
        return db

    def issue(self, name: str, argument: str | None) -> None:
        """Add a command for the crawl to apply."""
        db = self._open()
        try:
            db.execute(
                "INSERT INTO commands (name, argument, issued) VALUES (?, ?, ?)", (name, argument, now())
            )
        finally:
            db.close()

    def last_id(self) -> int:
        """The number of the last command given (0 if none)."""
        db = self._open()
        try:
            return int(db.execute("SELECT COALESCE(MAX(id), 0) FROM commands").fetchone()[0])
        finally:
            db.close()

    def commands_after(self, last: int) -> list[tuple[int, str, str | None, str]]:
        """(id, name, argument, issued) of the commands given after command ``last``."""
        db = self._open()
        try:
            found = db.execute(
                "SELECT id, name, argument, issued FROM commands WHERE id > ? ORDER BY id", (last,)
            )
            return list(found)
        finally:
            db.close()

    def publish(self, counts: dict[str, Any]) -> None:
        """Replace the counts ``status`` reads."""
        db = self._open()
        try:
            db.execute("INSERT OR REPLACE INTO status (id, counts) VALUES (1, ?)", (json.dumps(counts),))
        finally:
            db.close()

    def status(self) -> dict[str, Any] | None:
        """The counts the crawl published last, or None if it never did."""
        if not self.path.is_file():
            return None
        db = self._open()
        try:
            found = db.execute("SELECT counts FROM status WHERE id = 1").fetchone()
        finally:
            db.close()
        return json.loads(found[0]) if found else None


class FileControlSource:
    """The ControlSource of a crawl made by one process: the commands given after it started."""

    def __init__(self, path: Path) -> None:
        self._file = ControlFile(path)
        self._last = self._file.last_id()  # commands for an earlier run are not this run's

    async def new_commands(self) -> list[Command]:
        found = await asyncio.to_thread(self._file.commands_after, self._last)
        if found:
            self._last = found[-1][0]
        return [Command(name, argument, issued) for _, name, argument, issued in found]

    async def publish(self, status: dict[str, Any]) -> None:
        await asyncio.to_thread(self._file.publish, status)
