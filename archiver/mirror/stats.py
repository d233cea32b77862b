"""What a mirror build, or a crawl's mirror, wrote: counts by kind, the captures that got no
file or kept an older one, and the one-line summary the terminal shows. Its own module as
every writer of mirror files (the build's processes, the crawl's live mirror) adds to it."""

from __future__ import annotations

from dataclasses import dataclass, field

from archiver.content import CSS_TYPE, HTML_TYPES
from archiver.sizes import human_bytes


@dataclass
class MirrorStats:
    """What a mirror build (or a crawl's mirror) wrote."""

    pages: int = 0
    stylesheets: int = 0
    other: int = 0
    bytes: int = 0
    redirects: int = 0
    """Redirecting URLs whose links lead to a local file."""
    shared: int = 0
    """Captures that share the file of an identical one (/dir/ and /dir/index.html)."""
    rewritten: int = 0
    """Pages a crawl wrote again at its end, as links on them changed state after they were written."""
    errors: list[str] = field(default_factory=list)
    """One line per capture that could not be written (URL: why)."""
    kept: list[str] = field(default_factory=list)
    """One line per capture whose record could not be read, its file before kept (URL: why)."""
    rekeyed: int = 0
    """CDXJ lines keyed again: an earlier version keyed them where pywb does not look."""
    reindexed: int | None = None
    """Lines of the CDXJ index written again from the WARC files (it was lost or damaged)."""
    seconds: float = 0.0

    def add(self, other: MirrorStats) -> None:
        """Count what another process of the same build wrote."""
        self.pages += other.pages
        self.stylesheets += other.stylesheets
        self.other += other.other
        self.bytes += other.bytes
        self.errors.extend(other.errors)
        self.kept.extend(other.kept)

    def count(self, mime: str | None, size: int) -> None:
        """Count one file written."""
        if mime == CSS_TYPE:
            self.stylesheets += 1
        elif mime in HTML_TYPES:
            self.pages += 1
        else:
            self.other += 1
        self.bytes += size

    @property
    def files(self) -> int:
        return self.pages + self.stylesheets + self.other

    @property
    def unfaithful(self) -> bool:
        """True if some capture has no file, or a file kept from before that its record can no
        longer vouch for: a script must see it (archiver mirror and a crawl's last pass exit 1)."""
        return bool(self.errors or self.kept)

    def summary(self) -> str:
        """One line for the terminal."""
        rewritten = f", {self.rewritten} pages written again at the end" if self.rewritten else ""
        kept = f"; {len(self.kept)} kept as the crawl wrote them" if self.kept else ""
        kept += f"; {self.rekeyed} index lines keyed again as pywb looks them up" if self.rekeyed else ""
        kept += (
            f"; index written again from the WARC files ({self.reindexed} lines)"
            if self.reindexed is not None
            else ""
        )
        line = (
            f"mirror: {self.files} files ({self.pages} pages, {self.stylesheets} stylesheets, "
            f"{self.other} other), {human_bytes(self.bytes)}, {self.redirects} redirects, "
            f"{self.shared} shared{rewritten}; "
            f"{len(self.errors)} errors{kept}; {self.seconds:.1f} s"
        )
        lines = [*_first(self.errors, "errors"), *_first(self.kept, "files kept")]
        return "\n".join([line, *(f"  {problem}" for problem in lines)])


SHOWN = 20
"""Errors, and files kept, the summary names at most each (a damaged WARC file may hold thousands)."""


def _first(said: list[str], what: str) -> list[str]:
    """The first SHOWN lines of ``said``, and how many more there are (verify names each record).

    >>> _first([f"u{n}" for n in range(22)], "errors")[-2:]
    ['u19', '... and 2 more errors (archiver verify names each record)']
    """
    more = len(said) - SHOWN
    if more <= 0:
        return said
    return [*said[:SHOWN], f"... and {more} more {what} (archiver verify names each record)"]
