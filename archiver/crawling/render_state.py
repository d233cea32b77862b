"""What --browser auto's renders taught, kept with the crawl for --resume (Renderer.state()).

It is kept as entries of the manifest's crawl state, committed with each batch of
rows where they changed. One entry, RENDERS, holds each host's experience (trials
finished, trials that found more, renders in a row that found nothing more since)
and its trials under way. The pages waiting for
a host's verdict may be thousands (a site's pages pile up while its first trials
render), so they are kept apart, WAITING_CHUNK pages to an entry: a host's waiting
pages only grow until its verdict, so a full entry is encoded once and never
written again, and a batch encodes and writes only the entry that grew.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from archiver.crawling.render_jobs import RenderJob, job_of, job_state
from archiver.urls import host_of

RENDERS = "renders"
"""The name of the hosts' entry in the manifest's crawl state; the waiting pages' entries
begin with it too (Manifest.states(RENDERS) gives them all)."""
WAITING_CHUNK = 100
"""Pages waiting for a verdict kept in one entry."""

Experience = tuple[str, str, int, int, int, list[RenderJob]]
"""(host, kind of page, trials finished, trials that found more, renders in a row since that found
nothing more, its renders to do: trials under way, then the pages waiting for its verdict, in
the order they came)."""


class KeptRenders:
    """Encodes the renders' state for the manifest, keeping each full entry of waiting pages."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[list[Any], int, str]] = {}
        """Each waiting entry last given: (the host's list of waiting pages it was taken from,
        how many of them it holds, its text)."""

    def entries(
        self, experience: Iterable[tuple[str, str, int, int, int, list[Any]]], trials: Iterable[RenderJob]
    ) -> dict[str, str]:
        """The crawl-state entries of ``experience`` (RenderPolicy.experience(): each host's
        waiting list as it is, not a copy) and the ``trials`` under way."""
        running: dict[tuple[str, str], list[RenderJob]] = {}
        for job in trials:
            running.setdefault((host_of(job.page.url), job.kind or ""), []).append(job)
        hosts = []
        entries: dict[str, str] = {}
        waiting_kept: dict[str, tuple[list[Any], int, str]] = {}
        for host, kind, finished, gains, dry, waiting in experience:
            jobs = [job_state(job) for job in running.get((host, kind), ())]
            hosts.append([host, kind, finished, gains, jobs, dry])
            for index, start in enumerate(range(0, len(waiting), WAITING_CHUNK)):
                name = f"{RENDERS} waiting {host} {kind} {index}"
                size = min(WAITING_CHUNK, len(waiting) - start)
                known = self._waiting.get(name)
                if known is None or known[0] is not waiting or known[1] != size:
                    jobs = [job_state(job) for job in waiting[start : start + size]]
                    known = (waiting, size, _text([host, kind, index, jobs]))
                waiting_kept[name] = known
                entries[name] = known[2]
        self._waiting = waiting_kept
        entries[RENDERS] = _text(hosts)
        return entries


def kept_experience(entries: Mapping[str, str]) -> list[Experience]:
    """What entries() kept (or, from a crawl of an earlier version, the one entry that held it
    all, and no count of renders that found nothing); raises ValueError, TypeError or KeyError
    for another shape."""
    hosts: dict[tuple[str, str], Experience] = {}
    for host, kind, finished, gains, jobs, *dry in json.loads(entries[RENDERS]):
        if len(dry) > 1:
            raise ValueError(f"a host's renders kept with {len(dry) + 5} fields")
        kept = [job_of(kind, job) for job in jobs]
        hosts[(host, kind)] = (host, kind, int(finished), int(gains), int(dry[0]) if dry else 0, kept)
    waiting = [json.loads(text) for name, text in entries.items() if name != RENDERS]
    for host, kind, _index, jobs in sorted(waiting, key=lambda entry: (entry[0], entry[1], int(entry[2]))):
        hosts[(host, kind)][5].extend(job_of(kind, kept) for kept in jobs)
    return list(hosts.values())


def _text(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))
