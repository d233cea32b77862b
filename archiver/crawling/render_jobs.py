"""The pages waiting for a browser: RenderJob, the bounded RenderQueue the tabs take them
from, and the JSON form a job is kept in with the crawl's state (job_state(), job_of())."""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass
from typing import Any

from archiver.crawling.frontier import QueueItem


@dataclass(frozen=True)
class RenderJob:
    """A page to render, and what its render is measured against."""

    page: QueueItem
    reason: str
    kind: str | None = None
    trial: bool = False
    static_links: frozenset[str] = frozenset()
    """For a render compared with its static parse: the links that parse found."""
    late: bool = False
    """Its row does not say why yet (it waited for its host's verdict)."""
    nofollow: bool = False
    """Its static capture's robots directives say not to follow its links."""
    compared: bool = False
    """Its render is compared with its static parse: a trial, or a render after the host's yes
    (render_policy: the yes is taken back once renders in a row find nothing more), whose
    static links are read again from its stored page (a trial's are kept: its verdict is kept
    with the crawl). A render an interrupted crawl left (its kind unknown) is not."""
    resumed: bool = False
    """An interrupted crawl left it to do, and kept nothing of what its page's capture said: its
    robots meta is read again from the page as served (its headers are, for every render)."""


class RenderQueue:
    """Jobs in the order they came, for the tabs to take; ``bound`` of them at most wait, as far
    as put() is used (push() never waits: a job a verdict lets go, or one resumed)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._jobs: collections.deque[RenderJob] = collections.deque()
        self._ready = asyncio.Event()
        self._space = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._unfinished = 0

    async def put(self, job: RenderJob) -> None:
        """Queue ``job`` once fewer than ``bound`` wait."""
        while len(self._jobs) >= self.bound:
            self._space.clear()
            await self._space.wait()
        self.push(job)

    def push(self, job: RenderJob) -> None:
        """Queue ``job`` now."""
        self._unfinished += 1
        self._idle.clear()
        self._jobs.append(job)
        self._ready.set()

    async def take(self) -> RenderJob:
        """The next job, once there is one; call done() when it is rendered (or given up)."""
        while not self._jobs:
            self._ready.clear()
            await self._ready.wait()
        job = self._jobs.popleft()
        self._space.set()
        return job

    def done(self) -> None:
        """One job taken is finished."""
        self._unfinished -= 1
        if self._unfinished == 0:
            self._idle.set()

    def __len__(self) -> int:
        """Jobs waiting (not taken yet)."""
        return len(self._jobs)

    def idle(self) -> bool:
        """True if no job waits or is being rendered."""
        return self._unfinished == 0

    async def join(self) -> None:
        """Return once idle()."""
        await self._idle.wait()


def job_state(job: RenderJob) -> list[Any]:
    """What a resumed crawl needs of a render to do: its page, why, whether a trial (and its
    static links)."""
    page = job.page
    static = sorted(job.static_links) if job.trial else []
    return [page.url, page.depth, page.found_by, page.parent, job.reason, job.nofollow, job.trial, static]


def job_of(kind: str, kept: list[Any]) -> RenderJob:
    """The job of ``kind`` job_state() kept (raises ValueError or TypeError for another shape)."""
    url, depth, found_by, parent, reason, nofollow, trial, static = kept
    page = QueueItem(str(url), int(depth), 0, found_by=str(found_by), parent=parent)
    if trial:
        return RenderJob(
            page, str(reason), kind, True, frozenset(static), nofollow=bool(nofollow), compared=True
        )
    return RenderJob(page, str(reason), kind, late=True, nofollow=bool(nofollow), compared=True)
