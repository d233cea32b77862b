"""The render stage: pages chosen for a browser are rendered in a few tabs, and what they give goes back.

The HTTP workers never wait for a browser. A page is captured over HTTP as
always (its row written, its static links queued); if --browser chooses it
(render_policy.py), it is offered here and rendered later, in one of
--browser-tabs tabs, once its capture is committed. Its document is then read
back from the snapshot, like every URL it asks for (crawling/browser.py), each
captured first through the crawler (``Pages.ensure``) if it was not yet.

What a render gives goes back to the crawler (``Pages.rendered``): the links
of the rendered DOM, the URLs its main frame navigated to, and the DOM itself,
stored as a resource record that becomes the page's file in the mirror. A
trial render (auto) is also compared with its static parse, and the host's
verdict decides the pages that wait for it.

A page whose scripts keep its tab busy past its time limit (a loop) is given
up at once: its tab is closed, the other tabs' renders go on, and it keeps its
HTTP capture, the error in its manifest row. A tab whose renderer crashed is
closed and its page tried once more in a new one; a browser that crashed, or
no longer answers, is replaced, and its page tried once more. A page that
fails twice keeps its HTTP capture, with the error in its manifest row.
Offers wait while the queue of pages to render is full, so with --browser
always the crawl goes at the browser's pace and memory stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from archiver.config_rules import AUTO
from archiver.crawling.browser_pool import BrowserPool
from archiver.crawling.frontier import QueueItem
from archiver.crawling.page_network import Asked
from archiver.crawling.preparing import Prepared
from archiver.crawling.render_attempts import attempt_render
from archiver.crawling.render_jobs import RenderJob, RenderQueue
from archiver.crawling.render_pages import Pages, answer_for
from archiver.crawling.render_policy import Decision, Inspection, RenderPolicy, gained
from archiver.crawling.render_state import KeptRenders, kept_experience
from archiver.crawling.stats import CrawlStats
from archiver.crawling.stopping import BROWSER_STOP
from archiver.crawling.stored_answers import Answer, StoredAnswers
from archiver.crawling.writer import RenderNote
from archiver.errors import BrowserUnusable
from archiver.findings import findings
from archiver.link_requests import Hint
from archiver.links import LINK
from archiver.media_types import content_type_field
from archiver.store.snapshot import Snapshot
from archiver.urls import host_of
from archiver.warc.dom import DOM_CONTENT_TYPE, RenderedDom

if TYPE_CHECKING:
    from archiver.crawling.cookies import SiteCookieJar

log = logging.getLogger("archiver.crawl")


class Rendering(Protocol):
    """What the crawler needs of the render stage (Renderer provides it)."""

    inspects: bool
    """True if pages must be inspected (render_policy.inspect) for decide()."""

    def decide(self, item: QueueItem, prepared: Prepared) -> Decision:
        """Whether to render a captured HTML page, and why (recorded in its row)."""

    async def offer(
        self, item: QueueItem, links: dict[str, str], decision: Decision, nofollow: bool = False
    ) -> None:
        """Hand over a page after its row is written; waits while the render queue is full.

        ``nofollow``: the page's robots directives say not to follow its links.
        """

    def resume(self, item: QueueItem, reason: str) -> None:
        """Queue the render an interrupted crawl chose but never finished."""

    async def run(self) -> None:
        """Render pages until cancelled."""

    def idle(self) -> bool:
        """True if no page is queued for or in a render."""

    async def join(self) -> None:
        """Wait until idle()."""


class Renderer:
    """Renders the pages offered to it; see the module docstring. Call attach() before run()."""

    def __init__(
        self,
        policy: RenderPolicy,
        pool: BrowserPool,
        answers: StoredAnswers,
        stats: CrawlStats,
        *,
        timeout: float,
        cookies: SiteCookieJar | None = None,
    ) -> None:
        self.policy = policy
        self.cookies = cookies
        """The crawl's cookie jar, which the browser shares: a render starts with its cookies, and
        the cookies the browser sends join it."""
        self.pool = pool
        self.answers = answers
        self.stats = stats
        self.timeout = timeout
        self.inspects = policy.mode == AUTO
        self._pages: Pages | None = None
        self._jobs = RenderQueue(max(4, 2 * pool.tabs))
        self._trials: dict[str, RenderJob] = {}
        """The trial renders not finished, by URL: kept with the crawl (state())."""
        self._restored: set[str] = set()
        """Pages whose render restore() queued already (resume() leaves them)."""
        self._kept = KeptRenders()

    def attach(self, pages: Pages) -> None:
        """Give the renderer the crawler it captures through."""
        self._pages = pages

    def decide(self, item: QueueItem, prepared: Prepared) -> Decision:
        """Whether to render a captured HTML page (see render_policy)."""
        return self.policy.decide(host_of(item.url), prepared.inspection or Inspection(False, None))

    async def offer(
        self, item: QueueItem, links: dict[str, str], decision: Decision, nofollow: bool = False
    ) -> None:
        """Queue the page's render if decided, or keep it until its host's verdict."""
        if decision.render:
            # A trial's render, and any later one in auto (the host's yes is kept under review),
            # is compared with its static parse: a trial's links are kept, the others' read
            # again from the stored page when it renders.
            static = frozenset(links) if decision.trial else frozenset()
            job = RenderJob(
                item,
                decision.reason or "",
                decision.kind,
                decision.trial,
                static,
                nofollow=nofollow,
                compared=decision.kind is not None,
            )
            if job.trial:
                self._trials[item.url] = job
            await self._jobs.put(job)
        elif decision.wait and decision.kind is not None:
            job = RenderJob(
                item, decision.reason or "", decision.kind, late=True, nofollow=nofollow, compared=True
            )
            if not self.policy.wait(host_of(item.url), decision.kind, job):
                log.info("not rendered (too many pages wait for their hosts' verdicts): %s", item.url)

    def resume(self, item: QueueItem, reason: str) -> None:
        """Queue the render an interrupted crawl chose but never finished."""
        if item.url not in self._restored:
            self._jobs.push(RenderJob(item, reason, resumed=True))

    def state(self) -> dict[str, str]:
        """What renders taught about each host (render_policy.RenderPolicy.experience), its trials
        not finished and the pages waiting for its verdict, as crawl-state entries restore() takes
        back (render_state.py): kept with the crawl, so a resumed crawl renders what the crawl
        never interrupted would."""
        return self._kept.entries(self.policy.experience(), self._trials.values())

    def restore(self, entries: Mapping[str, str]) -> None:
        """Take back what state() kept: the hosts' experience, and the renders it leaves to do
        (trials begun again, pages waiting for a verdict rendered once it says so)."""
        try:
            for host, kind, finished, gains, dry, restored in kept_experience(entries):
                trials = [job for job in restored if job.trial]
                self.policy.adopt(host, kind, finished, gains, len(trials), dry)
                verdict = self.policy.verdict(host, kind)
                for job in restored:
                    self._restored.add(job.page.url)
                    if job.trial:
                        self._trials[job.page.url] = job
                    if job.trial or verdict:
                        self._jobs.push(job)
                    elif verdict is None:
                        self.policy.wait(host, kind, job)
        except (ValueError, TypeError, KeyError) as exc:  # a state from another version
            log.warning("the renders' state kept with the crawl cannot be read (%s): trials start again", exc)

    def idle(self) -> bool:
        return self._jobs.idle()

    async def join(self) -> None:
        await self._jobs.join()

    async def run(self) -> None:
        """Render pages in --browser-tabs tabs until cancelled (then the browser is left to close())."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self.pool.tabs):
                group.create_task(self._tab())

    async def _tab(self) -> None:
        while True:
            job = await self._jobs.take()
            try:
                await self._render(job)
            except BrowserUnusable as exc:
                # No page can be rendered: the crawl stops, resumable, and this page's row keeps
                # the render it was chosen for (a resume with a browser that starts renders it).
                self._unusable(exc)
            except Exception as exc:  # one bad page must not stop the renders
                log.exception("error rendering %s", job.page.url)
                await self._failed(job, exc)
            finally:
                self._trials.pop(job.page.url, None)
                self._jobs.done()

    def _unusable(self, error: BrowserUnusable) -> None:
        pages = self._pages
        assert pages is not None, "attach() the crawler first"
        if not pages.stopped:
            log.error("%s: %s", BROWSER_STOP, error)
            pages.stop(f"{BROWSER_STOP}: {error}")

    async def _failed(self, job: RenderJob, error: Exception) -> None:
        """Store the error of a render that failed before it stored anything (its row says so, and
        the writer lets go of the frames it noted of it)."""
        pages = self._pages
        assert pages is not None, "attach() the crawler first"
        if not pages.render_ended(job.page.url):
            return
        self.stats.render_failed += 1
        # One line, as render_attempts keeps a browser's error: Playwright's carry its logs after.
        said = (str(error).strip().splitlines() or [type(error).__name__])[0]
        note = RenderNote(job.page.url, job.reason if job.late else None, f"the render failed: {said}"[:300])
        try:
            await pages.rendered(job.page, {}, note, job.nofollow)
        except Exception:  # noqa: BLE001 - the writer failed: the crawl stops on its error
            log.exception("cannot store the failed render of %s", job.page.url)

    async def _render(self, job: RenderJob) -> None:
        pages = self._pages
        assert pages is not None, "attach() the crawler first"
        url = job.page.url
        if job.late and job.kind is not None and self.policy.verdict(host_of(url), job.kind) is False:
            return  # it waited for a yes that renders since have taken back: its row says nothing
        await pages.settled(url)
        pages.begin_render(url)
        expected = {*job.static_links, url}
        response_id: list[str | None] = [None]
        served: list[Answer] = []  # the page's own stored answer, once the browser asked for it

        held: dict[tuple[str, str, str], dict[str, Any]] = {}

        async def answer(asked: str, how: Asked) -> Answer | None:
            if how.held is not None and self.cookies is not None:
                # One the browser held and holds no more, its page's script deleted (or it
                # expired): the crawl's requests for the page send it no more either.
                now = {(str(c.get("domain")), str(c.get("path")), str(c.get("name"))): c for c in how.held}
                gone = [cookie for key, cookie in held.items() if key not in now]
                if gone:
                    self.cookies.forget(gone)
                held.clear()
                held.update(now)
            if how.cookies and self.cookies is not None:
                self.cookies.adopt(how.cookies)
            found = await answer_for(pages, self.answers, asked, job.page, how)
            if found is not None and asked == url:
                response_id[0] = found.record_id
                served[:] = [found]
                if job.compared and not job.trial:  # its static parse, as the crawl made it
                    static = await asyncio.to_thread(
                        findings, found.body, url, found.mime, content_type_field(found.headers)
                    )
                    expected.update(static[2])
            if found is not None and job.compared and found.mime == "text/css":
                # What the page's stylesheets link to is static too: not a gain of rendering. Each
                # is read as the crawl read it (in its own charset, else in its referrer's: the
                # page's, a frame's, the stylesheet's that @imports it).
                content_type = content_type_field(found.headers)
                read_in = await pages.encoding_of(asked)
                css_links = findings(found.body, asked, "text/css", content_type, referrer_encoding=read_in)[
                    2
                ]
                expected.update(css_links)
            return found

        cookies = self.cookies.for_browser if self.cookies is not None else None
        rendered, error = await attempt_render(self.pool, url, answer, self.timeout, cookies)
        if rendered is not None and rendered.cookies is not None and self.cookies is not None:
            # What its scripts set or deleted after its last request, which no request showed:
            # the pages after it are asked with the cookies the browser holds.
            now = {(str(c.get("domain")), str(c.get("path")), str(c.get("name"))) for c in rendered.cookies}
            gone = [cookie for key, cookie in held.items() if key not in now]
            if gone:
                self.cookies.forget(gone)
            self.cookies.adopt(rendered.cookies)
        links: dict[str, str] = {}
        hints: dict[str, Hint] = {}
        metas: frozenset[str] = frozenset()  # the names of its robots metas saying nofollow
        title = None
        if job.resumed and served:  # what its page as served said of its links, kept nowhere
            page = served[0]
            static = await asyncio.to_thread(
                findings, page.body, url, page.mime, content_type_field(page.headers)
            )
            metas = static[3]
        if rendered is not None and rendered.html is not None:
            # The DOM is UTF-8; its queries are in the page's encoding, as the browser wrote them.
            title, _base, links, dom_metas, hints = await asyncio.to_thread(
                findings, rendered.html, url, "text/html", DOM_CONTENT_TYPE, rendered.charset
            )
            metas |= dom_metas
        if rendered is not None:
            for navigation in sorted(rendered.navigations):
                links.setdefault(navigation, LINK)
            error = error or rendered.error
        if job.compared and job.kind is not None and not job.trial:
            if rendered is not None and rendered.html is not None:  # a failed render tells nothing
                found = set(links) | rendered.requested
                if self.policy.compared(host_of(url), job.kind, bool(gained(found, expected))):
                    log.info(
                        "%s pages of %s: %d renders in a row found nothing more, the rest are not rendered",
                        job.kind,
                        host_of(url),
                        self.policy.dry_renders,
                    )
        elif job.trial and job.kind is not None:
            found = set(links) | (rendered.requested if rendered is not None else frozenset())
            more = gained(found, expected)
            if more:
                log.info("rendering %s found %d URLs its static parse did not: %s", url, len(more), more[:5])
            host = host_of(url)
            known = self.policy.verdict(host, job.kind) is not None
            self._trials.pop(url, None)
            waiting = self.policy.record(host, job.kind, bool(more))
            verdict = self.policy.verdict(host, job.kind)
            if not known and verdict is not None:
                log.info(
                    "%s pages of %s: %s",
                    job.kind,
                    host,
                    "rendering finds more there, they are all rendered"
                    if verdict
                    else f"{self.policy.trials} trial renders found nothing more, the rest are not rendered",
                )
            for page in waiting:
                self._jobs.push(page)
        dom = None
        if rendered is not None and rendered.html is not None:
            dom = RenderedDom(url, datetime.now(UTC), rendered.html, response_id[0], rendered.charset)
        if dom is not None:
            self.stats.rendered += 1
        else:
            self.stats.render_failed += 1
        note = RenderNote(url, job.reason if job.late else None, error, dom, title if dom else None)
        headers = served[0].headers if served else ()
        await pages.rendered(job.page, links, note, job.nofollow, hints, headers, metas)


@contextlib.asynccontextmanager
async def open_renderer(
    mode: str,
    chromium: str,
    snapshot: Snapshot,
    stats: CrawlStats,
    *,
    tabs: int,
    timeout: float,
    user_agent: str,
    cookies: SiteCookieJar | None = None,
    ending: contextlib.AsyncExitStack | None = None,
) -> AsyncIterator[Renderer]:
    """A Renderer over a browser pool and the snapshot's stored answers; closes both on the way out,
    or, given ``ending``, begins to and leaves ``ending`` to wait for it: the browser and
    Playwright's driver take a second or two to shut down, mostly waiting for each other, which
    the crawl spends finishing its mirror meanwhile.

    The browser starts with the first render, so a crawl that renders nothing never launches it.
    """
    answers = StoredAnswers(snapshot)
    pool = BrowserPool(chromium, tabs, user_agent)
    try:
        yield Renderer(
            RenderPolicy(mode),
            pool,
            answers,
            stats,
            timeout=timeout,
            cookies=cookies,
        )
    finally:
        closing = asyncio.ensure_future(_closed(pool, answers))
        if ending is None:
            await closing
        else:  # shielded: a stop asked while it is waited for does not cut the close short
            ending.push_async_callback(asyncio.shield, closing)


async def _closed(pool: BrowserPool, answers: StoredAnswers) -> None:
    """Close the browser, then the answers its last requests were read from."""
    try:
        await pool.close()
    finally:
        answers.close()
