"""What verify finds: the kinds of problem, and the report that counts them with examples.

>>> report = Report()
>>> report.add(DIGEST_MISMATCH, "warc/a.warc.gz@349", "payload digest failed")
>>> report.ok, report.counts[DIGEST_MISMATCH]
(False, 1)
"""

from __future__ import annotations

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


KINDS: dict[str, Kind] = {}


def _kind(name: str, check: str, title: str) -> str:
    KINDS[name] = Kind(name, check, title)
    return name


REPAIR = " (crawl --resume --repair fetches its capture again)"
"""Said of the damage a repairing resume sets aside (crawling/repair.py)."""
CORRUPT_GZIP = _kind("corrupt_gzip", INTEGRITY, "gzip data of a record does not decompress" + REPAIR)
TORN_FILE = _kind("torn_file", INTEGRITY, "WARC file ends inside its last record (cut short)")
UNREADABLE_RECORD = _kind("unreadable_record", INTEGRITY, "WARC record does not parse" + REPAIR)
MISSING_HEADER = _kind("missing_header", INTEGRITY, "WARC record lacks a mandatory header" + REPAIR)
LENGTH_MISMATCH = _kind("length_mismatch", INTEGRITY, "Content-Length does not match the block" + REPAIR)
DIGEST_MISMATCH = _kind("digest_mismatch", INTEGRITY, "block or payload digest does not match" + REPAIR)
DUPLICATE_RECORD_ID = _kind("duplicate_record_id", INTEGRITY, "WARC-Record-ID used twice")
UNPAIRED_RECORD = _kind(
    "unpaired_record", INTEGRITY, "request without its response, or response without its request"
)
DANGLING_REVISIT = _kind(
    "dangling_revisit", INTEGRITY, "revisit whose original record is missing or has another digest"
)
MISSING_PREVIOUS = _kind(
    "missing_previous",
    INTEGRITY,
    "previous snapshot that revisits refer to is not there (the mirror stands alone; replay of the "
    "WARC files needs both)",
)

MISSING_MANIFEST = _kind(
    "missing_manifest",
    CONSISTENCY,
    "manifest.sqlite3 missing or unreadable (crawl --resume --repair writes it again from the WARC files)",
)
MISSING_WARC_FILE = _kind("missing_warc_file", CONSISTENCY, "manifest names a WARC file that does not exist")
WRONG_LOCATION = _kind(
    "wrong_location", CONSISTENCY, "manifest row's WARC location does not hold that URL's record"
)
UNLISTED_RECORD = _kind("unlisted_record", CONSISTENCY, "WARC response or revisit not in the manifest")
BAD_ROW = _kind(
    "bad_row",
    CONSISTENCY,
    "manifest row holds a value of the wrong type, text for a number (crawl --resume --repair writes "
    "the manifest again from the WARC files)",
)
MISSING_CAPTURE = _kind("missing_capture", CONSISTENCY, "fetched or redirected URL without a WARC location")
MISSING_REASON = _kind("missing_reason", CONSISTENCY, "skipped or failed URL without a reason")
CDXJ_MISMATCH = _kind(
    "cdxj_mismatch",
    CONSISTENCY,
    "CDXJ index does not match the WARC files (archiver mirror writes it again from them)",
)
WRONG_DISCOVERY = _kind(
    "wrong_discovery",
    CONSISTENCY,
    "manifest row's title, parent or depth is not what the archived pages and redirects say",
)
MIRROR_BUILD = " (archiver mirror builds the mirror again from the WARC files)"
"""Said of a mirror file lost or changed: the build writes every file again."""
MISSING_MIRROR_FILE = _kind(
    "missing_mirror_file", CONSISTENCY, "mirrored file named in the manifest does not exist" + MIRROR_BUILD
)

CRAWL_JSON_MISMATCH = _kind(
    "crawl_json_mismatch",
    CONSISTENCY,
    "crawl.json's record of the crawl (status, runs, statistics) is damaged or not the manifest's",
)

MISSING_SETTINGS = _kind(
    "missing_settings",
    COMPLETENESS,
    "crawl.json missing or unreadable, scope taken from the seeds (crawl --resume --repair writes it "
    "again from the WARC files)",
)
UNFINISHED_CRAWL = _kind(
    "unfinished_crawl", COMPLETENESS, "URL still queued: the crawl was interrupted (use crawl --resume)"
)
CRASH_TAIL = _kind(
    "crash_tail",
    COMPLETENESS,
    "record a stopped crawl was writing, cut short past its last commit (crawl --resume sets it aside)",
)
UNMERGED_NODE = _kind(
    "unmerged_node",
    CONSISTENCY,
    "a crawl node's part is not in the snapshot's manifest, or changed since (run archiver merge)",
)
UNRECORDED_LINK = _kind(
    "unrecorded_link", COMPLETENESS, "link of an archived page neither archived nor recorded (as skipped)"
)
CUT_BODY = _kind(
    "cut_body",
    COMPLETENESS,
    "response whose body the server cut short (WARC-Truncated other than length): a failed capture",
)
NOTHING_ARCHIVED = _kind(
    "nothing_archived",
    COMPLETENESS,
    "no seed led to an archived page (each failed, was refused, answered an error or led nowhere)",
)
UNKNOWN_ENCODING = _kind(
    "unknown_encoding",
    COMPLETENESS,
    "stylesheet naming no encoding whose referring document's record cannot be read: what the "
    "crawl read it in is unknown, so its links are not checked",
)
DANGLING_REDIRECT = _kind(
    "dangling_redirect", COMPLETENESS, "redirect chain ends at no archived resource or recorded failure"
)

BROKEN_MIRROR_LINK = _kind("broken_mirror_link", MIRROR, "local link in the mirror resolves to no file")
LIVE_MIRROR_LINK = _kind(
    "live_mirror_link",
    MIRROR,
    "link in the mirror left live, though the mirror holds its target",
)
CHANGED_MIRROR_FILE = _kind(
    "changed_mirror_file",
    MIRROR,
    "mirror file whose bytes are not those the mirror build wrote" + MIRROR_BUILD,
)
LOST_MIRROR_FILE = _kind("lost_mirror_file", MIRROR, "file the mirror build wrote is missing" + MIRROR_BUILD)
UNMIRRORED_CAPTURE = _kind(
    "unmirrored_capture", MIRROR, "archived capture the mirror holds no file of (run archiver mirror)"
)
UNRECORDED_MIRROR_FILE = _kind(
    "unrecorded_mirror_file", MIRROR, "mirror file the manifest records no digest of (run archiver mirror)"
)

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

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return {
            "ok": self.ok,
            "resumable": self.resumable,
            "checks": list(self.checks),
            "problem_count": sum(self.counts.values()),
            "problems": {
                name: {
                    "check": KINDS[name].check,
                    "title": KINDS[name].title,
                    "count": count,
                    "examples": [{"where": p.where, "detail": p.detail} for p in self.examples[name]],
                }
                for name, count in self._ordered_counts()
            },
            "stats": dict(sorted(self.stats.items())),
        }

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
                f"(continue it with: archiver crawl --resume {snapshot})"
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
            lines.append(f"{kind.check}: {name} ({count}): {kind.title}")
            for problem in self.examples[name]:
                detail = f": {problem.detail}" if problem.detail else ""
                lines.append(f"    {problem.where}{detail}")
            if count > len(self.examples[name]):
                lines.append(f"    ... and {count - len(self.examples[name])} more")
        return "\n".join(lines)
