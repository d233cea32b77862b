"""The snapshot folder: where each part of an archive lives, and crawl.json."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver import __version__
from archiver.config_saved import given_again
from archiver.errors import ConfigError, SnapshotError, WriteError
from archiver.report import resume_command, shell_word

LOCK_NAME = ".lock"
"""The writer lock's file (see store/lock.py)."""
_PROBE = ".write-test"

CRASH_TAILS = "crash_tails"
"""crawl.json key: [{file, offset, length, kept_in}] of the bytes a crash left past the last
commit of a WARC file, which a resumed crawl cut off and kept aside (see crawling/resume.py)."""
REPAIRS = "repairs"
"""crawl.json's list of the damaged captures crawl --resume --repair set aside (crawling/repair.py)."""


NOT_A_SNAPSHOT = "give the folder a crawl wrote (archiver crawl URL -o DIR)"
"""What a command given a folder that holds no snapshot says to do."""


def require_folder(root: Path) -> None:
    """Raise SnapshotError unless ``root`` is a folder this process may read, written by this
    version of archiver or an earlier one, saying what it is instead: a command given a file
    names it as one, not as missing, and one given a folder it may not read says so rather
    than find nothing in it.

    >>> require_folder(Path("no-such-snapshot"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    archiver.errors.SnapshotError: no-such-snapshot is not a snapshot: no such folder; give the folder ...
    """
    if not root.is_dir():
        what = "a file, not a folder" if root.exists() else "no such folder"
        raise SnapshotError(f"{root} is not a snapshot: {what}; {NOT_A_SNAPSHOT}")
    if not os.access(root, os.R_OK | os.X_OK):
        raise SnapshotError(
            f"cannot read the folder {root}: permission denied; give this user read access to it"
        )
    _require_known_version(Snapshot(root))


def _require_known_version(snapshot: Snapshot) -> None:
    """Raise SnapshotError if the crawl.json of ``snapshot`` says a later version of archiver
    wrote it: what this one reads there may not be what that one meant (a crawl.json that
    cannot be read is for the commands to name)."""
    try:
        written_by = json.loads(snapshot.crawl_json_path.read_bytes()).get("archiver_version")
    except (OSError, ValueError, AttributeError):
        return
    if isinstance(written_by, str) and version_key(written_by) > version_key(__version__):
        raise SnapshotError(
            f"{snapshot.root} was written by archiver {written_by}, later than this one ({__version__}), "
            f"which may misread it: use archiver {written_by} or later (pip install --upgrade archiver)"
        )


def version_key(version: str) -> tuple[int, ...]:
    """The numbers of a version string, to compare versions by (a part that is no number ends it).

    >>> version_key("0.10.1") > version_key("0.9"), version_key("1.2.0rc1")
    (True, (1, 2))
    """
    numbers = []
    for part in version.split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)


def mend_part(root: Path) -> str:
    """What to do about a crawl node's part of the shared crawl in ``root`` whose manifest is
    lost or damaged: its node's WARC files, the record of truth, give it back.

    >>> mend_part(Path("snap"))
    'write it again from its WARC files with: archiver merge snap --repair'
    """
    return f"write it again from its WARC files with: archiver merge {shell_word(root)} --repair"


@dataclass(frozen=True)
class Snapshot:
    """Paths inside one snapshot folder.

    >>> Snapshot(Path("snap")).manifest_path.name
    'manifest.sqlite3'
    """

    root: Path
    warc_root: Path | None = None
    """Where the WARC files are, when not in ``root/warc``: a crawl node's part of a shared
    crawl (``DIR/nodes/NODE``) writes into the crawl's ``DIR/warc`` with the other nodes."""

    @property
    def warc_dir(self) -> Path:
        return self.warc_root if self.warc_root is not None else self.root / "warc"

    @property
    def nodes_dir(self) -> Path:
        """The parts of a crawl shared by crawl nodes, one folder each (crawling/nodes.py)."""
        return self.root / "nodes"

    def node_part(self, node: str) -> Snapshot:
        """The part crawl node ``node`` writes: its own manifest, index, log and crawl.json, its
        WARC files among the crawl's.

        >>> Snapshot(Path("snap")).node_part("n1").warc_dir
        PosixPath('snap/warc')
        """
        return Snapshot(self.nodes_dir / node, self.warc_dir)

    def node_names(self) -> list[str]:
        """The names of the crawl nodes that wrote a part here, sorted."""
        if not self.nodes_dir.is_dir():
            return []
        return sorted(p.name for p in self.nodes_dir.iterdir() if (p / "crawl.json").is_file())

    @property
    def mirror_dir(self) -> Path:
        return self.root / "mirror"

    @property
    def index_dir(self) -> Path:
        return self.root / "indexes"

    @property
    def cdxj_path(self) -> Path:
        return self.index_dir / "index.cdxj"

    @property
    def cdxj_pending_path(self) -> Path:
        """CDXJ lines of the captures written since the index was last merged (unsorted)."""
        return self.index_dir / "index.cdxj.pending"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.sqlite3"

    @property
    def frontier_path(self) -> Path:
        """The crawl's queue while it runs (removed at the end; the manifest is what resumes)."""
        return self.root / "frontier.sqlite3"

    @property
    def crash_tails_dir(self) -> Path:
        """What a resumed crawl cut off the WARC files: out of warc/, so no tool indexes it."""
        return self.root / "crash-tails"

    @property
    def damaged_records_dir(self) -> Path:
        """Captures found damaged that crawl --resume --repair set aside: out of warc/ too."""
        return self.root / "damaged-records"

    @property
    def control_path(self) -> Path:
        """Where ``archiver control`` leaves commands for the crawl running here."""
        return self.root / "control.sqlite3"

    @property
    def crawl_json_path(self) -> Path:
        return self.root / "crawl.json"

    @property
    def log_path(self) -> Path:
        return self.root / "logs" / "crawl.log"

    @property
    def index_html(self) -> Path:
        return self.root / "index.html"

    @property
    def _crawl_json_temporary(self) -> Path:
        return self.crawl_json_path.with_suffix(".json.tmp")

    def is_snapshot(self) -> bool:
        """True if the folder holds a crawl's manifest and settings."""
        return self.manifest_path.is_file() and self.crawl_json_path.is_file()

    @property
    def repair_advice(self) -> str:
        """What to do about a manifest lost or damaged: the WARC files, the record of truth, give it
        back (a crawl node's part of a shared crawl: the merge writes it again, mend_part())."""
        if self.warc_root is not None:
            return mend_part(self.root.parent.parent)
        try:  # the options its resume is to be given again, with the Chromium it ran (on PATH or not)
            given = given_again(self.read_crawl_json().get("settings"))
        except SnapshotError:  # lost too: the repair gives crawl.json back, and asks for none
            given = ""
        return f"write it again from its WARC files with: {resume_command(self.root, given, repair=True)}"

    def check_manifest(self) -> None:
        """Raise SnapshotError if the folder's manifest is lost or damaged, naming the command that
        writes it again when the crawl's WARC files are there, and what the folder is not if not.
        Reads the whole manifest once (SQLite's check): a command that reads it all anyway (a
        mirror build, an export, a diff) would otherwise stop halfway with SQLite's words alone."""
        from archiver.store.manifest import Manifest  # here: the folder's paths need no SQLite

        if not self.manifest_path.is_file():
            if self.crawl_json_path.is_file() and any(self.warc_dir.glob("*.warc*")):
                raise SnapshotError(
                    f"{self.root} has lost its manifest ({self.manifest_path.name}); {self.repair_advice}"
                )
            raise SnapshotError(
                f"{self.root} is not a snapshot (no {self.manifest_path.name}); {NOT_A_SNAPSHOT}"
            )
        damage = Manifest.damage_in(self.manifest_path)
        if damage is not None:
            raise SnapshotError(f"{self.root}: {damage}; {self.repair_advice}")

    def check_resumable(self) -> None:
        """Raise SnapshotError unless the folder holds a crawl to resume (its crawl.json, at least:
        a crawl killed before its manifest was made starts again from its seeds)."""
        if not self.crawl_json_path.is_file():
            raise SnapshotError(f"{self.root} holds no crawl to resume (no crawl.json)")

    def check_new(self) -> None:
        """Raise SnapshotError unless the folder is new or empty.

        What a crawl killed before it wrote crawl.json leaves (its lock file, empty
        folders, a shared crawl's empty nodes/) counts as empty: that crawl cannot be
        resumed, so it may start again.
        """
        if self.root.exists():
            if not self.root.is_dir():
                raise SnapshotError(f"output {self.root} exists and is not a folder")
            try:
                held = [path for path in self.root.iterdir() if not self._left_by_a_start(path)]
            except OSError as exc:
                raise SnapshotError(f"cannot read output folder {self.root}: {exc.strerror}") from None
            if held:
                hint = "; use --resume to continue that crawl" if self.crawl_json_path.is_file() else ""
                raise SnapshotError(f"output folder {self.root} is not empty{hint}")

    def _left_by_a_start(self, path: Path) -> bool:
        if path.name in (LOCK_NAME, _PROBE, self._crawl_json_temporary.name):
            return True
        skeleton = (self.warc_dir, self.index_dir, self.log_path.parent, self.nodes_dir)
        return path in skeleton and path.is_dir() and not any(path.iterdir())

    def create(self) -> None:
        """Make a new snapshot's folders; the folder must be new or empty."""
        self.check_new()
        self.make_folders()

    def make_folders(self) -> None:
        """Make the snapshot's folders that are missing (a resumed crawl needs them too)."""
        try:
            for folder in (self.root, self.warc_dir, self.index_dir, self.log_path.parent):
                folder.mkdir(parents=True, exist_ok=True)
            probe = self.root / _PROBE
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise SnapshotError(f"cannot write to output folder {self.root}: {exc.strerror}") from None

    def read_crawl_json(self) -> dict[str, Any]:
        """The saved settings and statistics of the crawl."""
        try:
            data = json.loads(self.crawl_json_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            if self._crawled_alone():
                raise SnapshotError(f"{self.root} lost its crawl.json{self._mended_by}") from None
            raise SnapshotError(f"{self.root} is not a snapshot (no crawl.json); {NOT_A_SNAPSHOT}") from None
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"cannot read {self.crawl_json_path}: {exc}{self._mended_by}") from None
        if not isinstance(data, dict):
            raise SnapshotError(f"{self.crawl_json_path} does not hold a JSON object{self._mended_by}")
        if "settings" in data:
            from archiver.config import CrawlConfig  # here: archiver.config is no light import

            try:
                CrawlConfig.check_saved(data["settings"])
            except ConfigError as exc:
                raise SnapshotError(f"cannot read {self.crawl_json_path}: {exc}{self._mended_by}") from None
        return data

    def _crawled_alone(self) -> bool:
        """Whether this is the folder of a crawl of one process that began (it holds WARC files),
        not a shared crawl's (or a node's part): --repair mends the crawl.json of such a one."""
        shared = self.warc_root is not None or self.nodes_dir.is_dir()
        return not shared and any(self.warc_dir.glob("*.warc.gz"))

    @property
    def _mended_by(self) -> str:
        """What the error about crawl.json of such a crawl ends with: the command that mends it."""
        if not self._crawled_alone():
            return ""
        return f"; {resume_command(self.root, repair=True)} gives it back from the WARC files"

    def write_crawl_json(self, data: dict[str, Any]) -> None:
        """Replace crawl.json atomically."""
        temporary = self._crawl_json_temporary
        try:
            temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(temporary, self.crawl_json_path)
        except OSError as exc:  # a full disk: the crawl.json before stays whole
            raise WriteError(f"cannot write {self.crawl_json_path}: {exc.strerror or exc}") from None
