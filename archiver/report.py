"""What verify finds: the kinds of problem, and the report that counts them with examples.

>>> report = Report()
>>> report.add(DIGEST_MISMATCH, "warc/a.warc.gz@349", "payload digest failed")
>>> report.ok, report.counts[DIGEST_MISMATCH]
(False, 1)
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass
from typing import Any

INTEGRITY = "integrity"
CONSISTENCY = "consistency"
COMPLETENESS = "completeness"
MIRROR = "mirror"


@dataclass(frozen=True)
class Kind:
    """One kind of problem verify can report."""

    name: str
    """Stable identifier, used as the key in --json output."""
    check: str
    """Which check finds it: integrity, consistency, completeness or mirror."""
    title: str
    """What it means, for people."""
    mend: str
    """What mends it: the command, ``{snapshot}`` standing for the snapshot's folder, after
    ``with: ``; or, where no command can (bytes lost from the only copy), what is lost and how a
    new crawl gets it back."""

    def mend_for(self, snapshot: str, resume_options: str = "") -> str:
        """``mend`` said of the snapshot at ``snapshot``, its path written as a shell reads it, a
        resume given ``resume_options`` (Report.resume_options).

        >>> KINDS[TORN_FILE].mend_for("my snap").endswith("with: archiver crawl --resume 'my snap' --repair")
        True
        >>> KINDS[TORN_FILE].mend_for("s", " --ca-bundle c").endswith("--resume s --ca-bundle c --repair")
        True
        """
        resume = resume_command(snapshot)
        return self.mend.replace(SNAPSHOT, shell_word(snapshot)).replace(resume, resume + resume_options)


SNAPSHOT = "{snapshot}"
"""Where a Kind's ``mend`` names the snapshot's folder."""


def shell_word(text: object) -> str:
    """``text`` (a path, as given) quoted as one word of a shell's command line, on one line, so
    that a command a message names runs as written: a path that holds a newline or another
    control character is written in bash's ``$'...'`` form.

    >>> shell_word("snap"), shell_word("my snap"), shell_word("new\\nline")
    ('snap', "'my snap'", "$'new\\\\nline'")
    """
    text = str(text)
    if text.isprintable():
        return shlex.quote(text)
    return "$'" + "".join(map(_bash_escaped, text)) + "'"


def resume_command(folder: object, given: str = "", *, repair: bool = False) -> str:
    """The command that continues the crawl in ``folder``, as a shell runs it written, with
    ``given``: the options its resume is to be given again, as a command line writes them
    (config_saved.given_again()).

    >>> resume_command("my snap", " --ca-bundle c", repair=True)
    "archiver crawl --resume 'my snap' --ca-bundle c --repair"
    """
    return f"archiver crawl --resume {shell_word(folder)}{given}" + (" --repair" if repair else "")


def _bash_escaped(char: str) -> str:
    """``char`` as it stands inside bash's ``$'...'``."""
    if char == "'":
        return "\\'"
    return char if char.isprintable() and char != "\\" else char.encode("unicode_escape").decode()


KINDS: dict[str, Kind] = {}


def _kind(name: str, check: str, title: str, mend: str) -> str:
    KINDS[name] = Kind(name, check, title, mend)
    return name


REPAIR = f"archiver crawl --resume {SNAPSHOT} --repair"
"""The command that mends the manifest, crawl.json and the WARC files' damaged captures."""
FETCH_AGAIN = f"fetch its capture again with: {REPAIR}"
"""Said of the damage a repairing resume sets aside (crawling/repair.py)."""
MANIFEST_AGAIN = f"write the manifest again from the WARC files with: {REPAIR}"
"""Said of a manifest that disagrees with the WARC files, the record of truth."""
MIRROR_AGAIN = f"build the mirror again from the WARC files with: archiver mirror {SNAPSHOT}"
"""Said of a mirror file lost or changed: the build writes every file again."""
RESUME = f"archiver crawl --resume {SNAPSHOT}"
"""The command that continues a crawl, and writes crawl.json's record of it again at its end."""

CORRUPT_GZIP = _kind("corrupt_gzip", INTEGRITY, "gzip data of a record does not decompress", FETCH_AGAIN)
TORN_FILE = _kind(
    "torn_file",
    INTEGRITY,
    "WARC file ends inside its last record (cut short)",
    f"the bytes cut off are lost: set the rest aside and fetch its URL again with: {REPAIR}",
)
UNREADABLE_RECORD = _kind("unreadable_record", INTEGRITY, "WARC record does not parse", FETCH_AGAIN)
MISSING_HEADER = _kind("missing_header", INTEGRITY, "WARC record lacks a mandatory header", FETCH_AGAIN)
LENGTH_MISMATCH = _kind("length_mismatch", INTEGRITY, "Content-Length does not match the block", FETCH_AGAIN)
DIGEST_MISMATCH = _kind("digest_mismatch", INTEGRITY, "block or payload digest does not match", FETCH_AGAIN)
DUPLICATE_RECORD_ID = _kind(
    "duplicate_record_id",
    INTEGRITY,
    "WARC-Record-ID used twice",
    "no command mends it: a WARC file copied into warc/ holds the same records twice; remove the copy",
)
UNPAIRED_RECORD = _kind(
    "unpaired_record",
    INTEGRITY,
    "request without its response, or response without its request",
    f"fetch its capture again with: {REPAIR}",
)
DANGLING_REVISIT = _kind(
    "dangling_revisit",
    INTEGRITY,
    "revisit whose original record is missing or has another digest",
    f"fetch its URL again, body whole, with: {REPAIR}",
)
UNREADABLE_FILE = _kind(
    "unreadable_file",
    INTEGRITY,
    "file or folder of the snapshot that cannot be read (its permissions, or the disk): what it "
    "holds is not checked",
    "no command reads it: make it readable (chmod -R u+rX on it, as its owner), then verify again",
)
MISSING_PREVIOUS = _kind(
    "missing_previous",
    INTEGRITY,
    "previous snapshot that revisits refer to is not there (the mirror stands alone; replay of the "
    "WARC files needs both)",
    "no command gives it back: put the previous snapshot back where crawl.json names it",
)

MISSING_MANIFEST = _kind(
    "missing_manifest",
    CONSISTENCY,
    "manifest.sqlite3 missing or unreadable",
    f"write it again from the WARC files with: {REPAIR}",
)
MISSING_WARC_FILE = _kind(
    "missing_warc_file",
    CONSISTENCY,
    "manifest names a WARC file that does not exist",
    f"its captures are lost with it: put the file back, or fetch their URLs again with: {REPAIR}",
)
WRONG_LOCATION = _kind(
    "wrong_location",
    CONSISTENCY,
    "manifest row's WARC location does not hold that URL's record",
    MANIFEST_AGAIN,
)
UNLISTED_RECORD = _kind(
    "unlisted_record", CONSISTENCY, "WARC response or revisit not in the manifest", MANIFEST_AGAIN
)
BAD_ROW = _kind(
    "bad_row",
    CONSISTENCY,
    "manifest row holds a value of the wrong type, text for a number",
    MANIFEST_AGAIN,
)
MISSING_CAPTURE = _kind(
    "missing_capture", CONSISTENCY, "fetched or redirected URL without a WARC location", MANIFEST_AGAIN
)
MISSING_REASON = _kind(
    "missing_reason", CONSISTENCY, "skipped or failed URL without a reason", MANIFEST_AGAIN
)
STRAY_REASON = _kind(
    "stray_reason",
    CONSISTENCY,
    "fetched or redirected URL given the reason of a URL not fetched (robots, out of scope...)",
    MANIFEST_AGAIN,
)
CDXJ_MISMATCH = _kind(
    "cdxj_mismatch",
    CONSISTENCY,
    "CDXJ index does not match the WARC files",
    f"write it again from them with: archiver mirror {SNAPSHOT}",
)
WRONG_DISCOVERY = _kind(
    "wrong_discovery",
    CONSISTENCY,
    "manifest row's title, parent or depth is not what the archived pages and redirects say",
    MANIFEST_AGAIN,
)
WRONG_REDIRECT = _kind(
    "wrong_redirect",
    CONSISTENCY,
    "manifest row's next URL is not its record's Location, or its final URL not where its chain ends",
    MANIFEST_AGAIN,
)
MISSING_MIRROR_FILE = _kind(
    "missing_mirror_file", CONSISTENCY, "mirrored file named in the manifest does not exist", MIRROR_AGAIN
)

CRAWL_JSON_MISMATCH = _kind(
    "crawl_json_mismatch",
    CONSISTENCY,
    "crawl.json's record of the crawl (status, runs, statistics) is damaged or not the manifest's",
    f"write it again from the manifest with: {RESUME}",
)

MISSING_SETTINGS = _kind(
    "missing_settings",
    COMPLETENESS,
    "crawl.json missing or unreadable, scope taken from the seeds",
    f"write it again from the WARC files with: {REPAIR}",
)
UNFINISHED_CRAWL = _kind(
    "unfinished_crawl",
    COMPLETENESS,
    "URL still queued: the crawl was interrupted",
    f"continue it with: {RESUME}",
)
CRASH_TAIL = _kind(
    "crash_tail",
    COMPLETENESS,
    "record a stopped crawl was writing, cut short past its last commit",
    f"set it aside and fetch its URL again with: {RESUME}",
)
UNMERGED_NODE = _kind(
    "unmerged_node",
    CONSISTENCY,
    "a crawl node's part is not in the snapshot's manifest, or changed since",
    f"join it with: archiver merge {SNAPSHOT}",
)
UNRECORDED_LINK = _kind(
    "unrecorded_link",
    COMPLETENESS,
    "link of an archived page neither archived nor recorded (as skipped)",
    MANIFEST_AGAIN,
)
CUT_BODY = _kind(
    "cut_body",
    COMPLETENESS,
    "response whose body the server cut short (WARC-Truncated other than length): a failed capture",
    "the rest of the body never came, and no command gives it back; a new crawl of the URL may get "
    "it whole: archiver crawl URL -o NEW",
)
NOTHING_ARCHIVED = _kind(
    "nothing_archived",
    COMPLETENESS,
    "no seed led to an archived page (each failed, was refused, answered an error or led nowhere)",
    "the site gave nothing to archive, and no command mends that; crawl it again once its seeds "
    "answer: archiver crawl URL -o NEW",
)
UNKNOWN_ENCODING = _kind(
    "unknown_encoding",
    COMPLETENESS,
    "stylesheet naming no encoding whose referring document's record cannot be read: what the "
    "crawl read it in is unknown, so its links are not checked",
    f"fetch that document again with: {REPAIR}",
)
DANGLING_REDIRECT = _kind(
    "dangling_redirect",
    COMPLETENESS,
    "redirect chain ends at no archived resource or recorded failure",
    MANIFEST_AGAIN,
)

BROKEN_MIRROR_LINK = _kind(
    "broken_mirror_link", MIRROR, "local link in the mirror resolves to no file", MIRROR_AGAIN
)
LIVE_MIRROR_LINK = _kind(
    "live_mirror_link",
    MIRROR,
    "link in the mirror left live, though the mirror holds its target",
    MIRROR_AGAIN,
)
CHANGED_MIRROR_FILE = _kind(
    "changed_mirror_file",
    MIRROR,
    "mirror file whose bytes are not those the mirror build wrote",
    MIRROR_AGAIN,
)
LOST_MIRROR_FILE = _kind("lost_mirror_file", MIRROR, "file the mirror build wrote is missing", MIRROR_AGAIN)
UNMIRRORED_CAPTURE = _kind(
    "unmirrored_capture", MIRROR, "archived capture the mirror holds no file of", MIRROR_AGAIN
)
UNPORTABLE_MIRROR_NAME = _kind(
    "unportable_mirror_name",
    MIRROR,
    "mirror path that macOS, Windows or a USB stick refuses, or takes for another file's",
    MIRROR_AGAIN,
)
SHARED_MIRROR_FILE = _kind(
    "shared_mirror_file",
    MIRROR,
    "mirror file the rows of URLs of different bodies name: the mirror shows one's page for another",
    MIRROR_AGAIN,
)
UNRECORDED_MIRROR_FILE = _kind(
    "unrecorded_mirror_file", MIRROR, "mirror file the manifest records no digest of", MIRROR_AGAIN
)

MENDED_BY_A_NEW_MANIFEST = frozenset(
    {name for name, kind in KINDS.items() if kind.mend == MANIFEST_AGAIN and name != BAD_ROW}
    | {MISSING_WARC_FILE}
)
"""The kinds a manifest written again from the WARC files mends, whose manifest crawl --resume
--repair sets aside for it (a row of the wrong type is damage it finds itself)."""

MENDED_AFTER = {CDXJ_MISMATCH: DUPLICATE_RECORD_ID}
"""A kind whose mend works only once another kind's is done, when both are found: with a WARC
file copied into warc/, the copy's records have no CDXJ line, and the index written again before
the copy is removed would send replay to the copy's records, then to nothing."""

EXAMPLES_PER_KIND = 5


@dataclass(frozen=True)
class Problem:
    """One problem found."""

    kind: str
    """A key of KINDS."""
    where: str
    """What it concerns: 'file@offset', a URL, or a path in the snapshot."""
    detail: str = ""


class Report:
    """Counts of each problem kind with their first few examples, and statistics."""

    def __init__(self, examples_per_kind: int = EXAMPLES_PER_KIND) -> None:
        self.examples_per_kind = examples_per_kind
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, list[Problem]] = {}
        self.stats: Counter[str] = Counter()
        self.checks: list[str] = []
        """The checks that ran (a bare WARC folder gets integrity only)."""
        self.resume_options = ""
        """Options a resume of the crawl is to be given again (crawling/resume_options.py), which
        the mends that name archiver crawl --resume name too."""

    def add(self, kind: str, where: str, detail: str = "") -> None:
        """Count a problem; keep it as an example if it is among the first of its kind."""
        if kind not in KINDS:
            raise ValueError(f"unknown problem kind {kind!r}")
        self.counts[kind] += 1
        examples = self.examples.setdefault(kind, [])
        if len(examples) < self.examples_per_kind:
            examples.append(Problem(kind, where, detail))

    def merge(self, other: Report) -> None:
        """Add what another report (of checks run elsewhere, in another process) found."""
        for kind, count in other.counts.items():
            self.counts[kind] += count
            examples = self.examples.setdefault(kind, [])
            examples.extend(other.examples.get(kind, [])[: self.examples_per_kind - len(examples)])
        self.stats.update(other.stats)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.counts

    @property
    def resumable(self) -> bool:
        """True when the crawl was stopped (or killed) with URLs still queued: incomplete, and
        crawl --resume continues it. Not while a crawl node's part is not merged: the URLs
        queued may be those its node fetched, and the merge comes first (UNMERGED_NODE says how)."""
        return UNFINISHED_CRAWL in self.counts and UNMERGED_NODE not in self.counts

    def to_json(self, snapshot: str = "DIR") -> dict[str, Any]:
        """The report as JSON-ready values; each kind's ``mend`` names the folder ``snapshot``."""
        return {
            "ok": self.ok,
            "resumable": self.resumable,
            "checks": list(self.checks),
            "problem_count": sum(self.counts.values()),
            "problems": {
                name: {
                    "check": KINDS[name].check,
                    "title": KINDS[name].title,
                    "mend": self.mend_of(name, snapshot),
                    "count": count,
                    "examples": [{"where": p.where, "detail": p.detail} for p in self.examples[name]],
                }
                for name, count in self._ordered_counts()
            },
            "stats": dict(sorted(self.stats.items())),
        }

    def mend_of(self, name: str, snapshot: str) -> str:
        """What mends the problems of kind ``name`` in the snapshot at ``snapshot``: its mend, after
        that of another kind found, whose mend must come first (MENDED_AFTER).

        >>> report = Report()
        >>> report.add(CDXJ_MISMATCH, "warc/a.warc.gz@0")
        >>> report.mend_of(CDXJ_MISMATCH, "snap")
        'write it again from them with: archiver mirror snap'
        >>> report.add(DUPLICATE_RECORD_ID, "warc/b.warc.gz@0")
        >>> print(report.mend_of(CDXJ_MISMATCH, "snap"))  # doctest: +NORMALIZE_WHITESPACE
        first what the duplicate_record_id line says (remove the copy); then write it again
        from them with: archiver mirror snap
        """
        mend = KINDS[name].mend_for(snapshot, self.resume_options)
        first = MENDED_AFTER.get(name)
        if first is None or not self.counts[first]:
            return mend
        return f"first what the {first} line says ({KINDS[first].mend.rpartition('; ')[2]}); then {mend}"

    def _ordered_counts(self) -> list[tuple[str, int]]:
        order = list(KINDS)
        return sorted(self.counts.items(), key=lambda item: order.index(item[0]))

    def render_text(self, snapshot: str) -> str:
        """The report for people: a verdict, then each problem kind with examples."""
        lines = []
        stats = ", ".join(f"{count} {name}" for name, count in sorted(self.stats.items()))
        checked = ", ".join(self.checks)
        if self.ok:
            lines.append(f"{snapshot}: OK, complete and intact ({checked} checked)")
        elif self.resumable:
            queued = self.counts[UNFINISHED_CRAWL]
            other = sum(self.counts.values()) - queued - self.counts[CRASH_TAIL]
            lines.append(
                f"{snapshot}: incomplete, resumable: {queued} URL{'s' if queued != 1 else ''} still queued "
                f"({KINDS[UNFINISHED_CRAWL].mend_for(snapshot, self.resume_options)})"
                + (f"; and {other} other problem{'s' if other != 1 else ''} found" if other else "")
                + f" ({checked} checked)"
            )
        else:
            total = sum(self.counts.values())
            lines.append(f"{snapshot}: {total} problem{'s' if total != 1 else ''} found ({checked} checked)")
        if stats:
            lines.append(f"  checked: {stats}")
        for name, count in self._ordered_counts():
            kind = KINDS[name]
            lines.append(f"{kind.check}: {name} ({count}): {kind.title} ({self.mend_of(name, snapshot)})")
            for problem in self.examples[name]:
                detail = f": {problem.detail}" if problem.detail else ""
                lines.append(f"    {problem.where}{detail}")
            if count > len(self.examples[name]):
                lines.append(f"    ... and {count - len(self.examples[name])} more")
        return "\n".join(lines)
