"""Which pages to render in a browser: pure rules over a page's static parse and a host's experience.

``--browser always`` renders every HTML page; ``never`` none. ``auto`` decides
page by page, in two steps:

1. What the static parse tells (inspect()): a page without scripts is never
   rendered (nothing could change it); a page with a sign that scripts build
   it is *signalled*: an empty app root (``<div id="root"></div>``), a
   ``<noscript>`` asking for JavaScript, a body with almost no text, or a
   framework's marker (``data-reactroot``, ``ng-version``, ``__NEXT_DATA__``,
   ``id="__nuxt"``...). Any other page with scripts is merely *scripted*.
2. What rendering gave on the same host (RenderPolicy): the first TRIALS
   pages of each kind (signalled, scripted) on a host are rendered and
   compared with their static parse. If any of them found links or resources
   the static parse did not, that host keeps rendering pages of that kind;
   if none did, it stops. Pages met while trials are still running wait for
   their verdict, so none is missed and no worker waits.
3. Experience goes on after a yes: each later render is compared with its
   static parse too, and once DRY_RENDERS in a row found nothing more, the
   host stops rendering that kind of page. One page built by scripts (a home
   page's logos, a carousel) then costs a few dozen renders, not a render of
   every page of a documentation site that shares its template.

So a static site costs a few renders per host, and a site built by scripts
is rendered throughout, even where its pages carry no marker.

>>> policy = RenderPolicy("auto", trials=1)
>>> policy.decide("h", Inspection(scripted=True, signal=None)).reason
'trial 1 of 1: scripts'
>>> policy.decide("h", Inspection(scripted=True, signal=None)).wait
True
>>> policy.record("h", SCRIPTED, gained=False)   # the trial found nothing: the waiting page is dropped
[]
>>> policy.decide("h", Inspection(scripted=True, signal=None)).render
False
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import lxml.etree
import lxml.html

from archiver.config_rules import ALWAYS, NEVER
from archiver.config_rules import BROWSER_MODES as MODES
from archiver.content import DATA_SCRIPT_TYPES

TRIALS = 2
"""Pages of each kind a host renders before deciding whether rendering pays on it. Each costs a
render (and the first, the browser's start) on a static site: two tell as much as more would
on a site whose pages share one template."""
WAITING_LIMIT = 10_000
"""Pages kept waiting for a verdict, every host's and kind's together (beyond: not rendered).
Counted for each host alone, a crawl that met many hosts while their trials ran kept as many
pages for each."""
DRY_RENDERS = 20
"""Renders in a row, after a yes, that found nothing their static parse did not, after which a
host stops rendering that kind of page. A site built by scripts gains on nearly every page;
a site of static pages with one script-built corner gains on that one."""
SIGNALLED = "signalled"
SCRIPTED = "scripted"

NEAR_EMPTY_TEXT = 100
"""Characters of text below which a body with scripts counts as empty."""
APP_ROOT_IDS = frozenset(
    {"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app", "application"}
)
APP_ROOT_TAGS = frozenset({"app-root"})
MARKER_ATTRIBUTES = ("data-reactroot", "ng-version", "ng-app", "data-v-app", "data-server-rendered")
MARKER_IDS = ("__NEXT_DATA__", "__nuxt", "___gatsby", "__NUXT_DATA__")
_MARKER_NAMES = tuple(
    (attribute, attribute.encode(), attribute.encode()[: attribute.index("-") + 1])
    for attribute in MARKER_ATTRIBUTES
)
"""Each marker attribute, its bytes, and what it begins with (``data-``, ``ng-``)."""
_MARKER_BEGINNINGS = frozenset(beginning for _name, _bytes, beginning in _MARKER_NAMES)
_WITH_ID = lxml.etree.XPath("descendant-or-self::*[@id=$id]")
"""The elements whose id is the ``id`` given (lxml.html's get_element_by_id())."""
_INVISIBLE = frozenset({"script", "style", "noscript", "template", "title", "head"})


@dataclass(frozen=True)
class Inspection:
    """What a page's static parse says about its scripts."""

    scripted: bool
    """It holds code that a browser would run."""
    signal: str | None
    """Why scripts seem to build it (empty app root...), or None."""


def _runs_code(script: lxml.etree._Element) -> bool:
    kind = (script.get("type") or "").strip().lower()
    return kind not in DATA_SCRIPT_TYPES


def _has_text(element: lxml.etree._Element, limit: int) -> bool:
    """True if ``element`` holds at least ``limit`` characters of visible text (stops there).

    A plain walk (lxml iterates in C): text inside script, style and the like is left
    out; a tail is text after an element, in its parent, so it counts.
    """
    total = 0
    for node in element.iter():
        tag = node.tag
        if node.text and isinstance(tag, str) and tag not in _INVISIBLE:
            total += len(node.text.strip())
        if node.tail and node is not element:
            total += len(node.tail.strip())
        if total >= limit:
            return True
    return False


def _empty(element: lxml.etree._Element) -> bool:
    return len(element) == 0 and not (element.text or "").strip()


def _marker(root: lxml.etree._Element, raw: bytes) -> str | None:
    """A framework's marker in the page, looked for in the tree only when its bytes hold it.

    Each look in the tree costs a walk of the whole page. In the bytes, the markers are looked
    for by the beginnings they share (``__``, ``data-``, ``ng-``), each name only once its
    beginning is there: most pages have none of them, and three searches of the bytes cost a
    third of one for each name.
    """
    if b"__" in raw:
        for identifier in MARKER_IDS:
            if identifier.encode() in raw and _WITH_ID(root, id=identifier):
                return f'framework marker id="{identifier}"'
    beginnings = {beginning: beginning in raw for beginning in _MARKER_BEGINNINGS}
    for attribute, name, beginning in _MARKER_NAMES:
        if beginnings[beginning] and name in raw and root.find(f".//*[@{attribute}]") is not None:
            return f"framework marker {attribute}"
    return None


def _signal(root: lxml.etree._Element, body: lxml.etree._Element | None, raw: bytes) -> str | None:
    for element in root.iter("div", "main", "section", "body", *APP_ROOT_TAGS):
        if element.tag in APP_ROOT_TAGS and _empty(element):
            return f"empty app root <{element.tag}>"
        identifier = element.get("id")
        if identifier in APP_ROOT_IDS and _empty(element):
            return f'empty app root <{element.tag} id="{identifier}">'
    for noscript in root.iter("noscript"):
        if "javascript" in "".join(noscript.itertext()).lower():
            return "<noscript> asks for JavaScript"
    if body is None or not _has_text(body, NEAR_EMPTY_TEXT):
        return "near-empty body with scripts"
    return _marker(root, raw)


def inspect(root: lxml.etree._Element | None, raw: bytes) -> Inspection:
    """What the static parse of a page says about its scripts: ``root`` as findings.parse_page
    parsed it from ``raw``, its decoded bytes."""
    if root is None:
        return Inspection(False, None)
    scripted = any(_runs_code(script) for script in root.iter("script"))
    if not scripted:
        return Inspection(False, None)
    return Inspection(True, _signal(root, root.find("body"), raw))


@dataclass(frozen=True)
class Decision:
    """Whether to render one page now, and why."""

    render: bool
    reason: str | None = None
    kind: str | None = None
    """SIGNALLED or SCRIPTED: which of the host's experiences it adds to (auto only)."""
    trial: bool = False
    """Its render is compared with its static parse, and the host's verdict depends on it."""
    wait: bool = False
    """The host's verdict is pending: hand the page to wait() and render it if the verdict is yes."""


@dataclass
class _Experience:
    """One host's renders of one kind of page, so far."""

    started: int = 0
    finished: int = 0
    gained: int = 0
    dry: int = 0
    """Renders since the last that found more (after a yes), none of which did."""
    waiting: list[Any] = field(default_factory=list)


class RenderPolicy:
    """The --browser rule, with what renders taught about each host (auto).

    Pure bookkeeping, no I/O: the renderer tells it what each trial gave.
    """

    def __init__(
        self,
        mode: str,
        trials: int = TRIALS,
        waiting_limit: int = WAITING_LIMIT,
        dry_renders: int = DRY_RENDERS,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"browser mode must be one of {', '.join(MODES)}")
        self.mode = mode
        self.trials = trials
        self.waiting_limit = waiting_limit
        self.dry_renders = dry_renders
        self._hosts: dict[tuple[str, str], _Experience] = {}
        self._waiting = 0
        """Pages waiting for a verdict, on every host (at most ``waiting_limit``)."""

    def _experience(self, host: str, kind: str) -> _Experience:
        key = (host, kind)
        found = self._hosts.get(key)
        if found is None:
            found = self._hosts[key] = _Experience()
        return found

    def verdict(self, host: str, kind: str) -> bool | None:
        """True: rendering pays on this host for this kind of page; False: it does not; None: unknown."""
        experience = self._experience(host, kind)
        if experience.gained:
            return experience.dry < self.dry_renders
        if experience.finished >= self.trials:
            return False
        return None

    def decide(self, host: str, inspection: Inspection) -> Decision:
        """Whether to render a page of ``host`` whose static parse gave ``inspection``."""
        if self.mode == NEVER:
            return Decision(False)
        if self.mode == ALWAYS:
            return Decision(True, ALWAYS)  # the reason a row keeps: the mode asked it
        if not inspection.scripted:
            return Decision(False)
        kind = SIGNALLED if inspection.signal else SCRIPTED
        why = inspection.signal or "scripts"
        verdict = self.verdict(host, kind)
        if verdict:
            return Decision(True, host_reason(why), kind)
        if verdict is False:
            return Decision(False, kind=kind)
        experience = self._experience(host, kind)
        if experience.started < self.trials:
            experience.started += 1
            return Decision(True, f"trial {experience.started} of {self.trials}: {why}", kind, trial=True)
        return Decision(False, host_reason(why), kind, wait=True)

    def wait(self, host: str, kind: str, page: Any) -> bool:
        """Keep ``page`` until the host's verdict; False if too many wait already, on every host
        together (not rendered)."""
        if self._waiting >= self.waiting_limit:
            return False
        self._experience(host, kind).waiting.append(page)
        self._waiting += 1
        return True

    def experience(self) -> list[tuple[str, str, int, int, int, list[Any]]]:
        """What renders taught so far, to keep with the crawl: (host, kind, trials finished,
        trials that gained, renders in a row that found nothing more since, pages waiting for the
        verdict) of each host and kind met. Each list of waiting pages is the one kept here, to
        read, not change: it only grows until the verdict, which replaces it (render_state.py
        keeps what it encoded of it)."""
        return [
            (host, kind, found.finished, found.gained, found.dry, found.waiting)
            for (host, kind), found in self._hosts.items()
            if found.started or found.waiting
        ]

    def adopt(self, host: str, kind: str, finished: int, gained: int, running: int = 0, dry: int = 0) -> None:
        """Take in what an interrupted crawl's trials on ``host`` taught (experience()), with
        ``running`` of its trials begun again.

        >>> policy = RenderPolicy("auto", trials=1)
        >>> policy.adopt("h", SCRIPTED, 1, 0)
        >>> policy.decide("h", Inspection(scripted=True, signal=None)).render
        False
        """
        found = self._experience(host, kind)
        found.finished, found.gained, found.dry = finished, gained, dry
        found.started = finished + running

    def record(self, host: str, kind: str, gained: bool) -> list[Any]:
        """Note what a trial gave; returns the waiting pages to render now (the verdict is yes).

        Once the verdict is known, the pages that waited for it are handed back
        (yes) or dropped (no).
        """
        experience = self._experience(host, kind)
        experience.finished += 1
        experience.gained += int(gained)
        verdict = self.verdict(host, kind)
        if verdict is None:
            return []
        waiting, experience.waiting = experience.waiting, []
        self._waiting -= len(waiting)
        return waiting if verdict else []

    def compared(self, host: str, kind: str, gained: bool) -> bool:
        """Note what a render after the host's yes gave (it found more than its static parse, or
        not); True when this render turns the verdict to no (DRY_RENDERS in a row found nothing).

        >>> policy = RenderPolicy("auto", trials=1, dry_renders=2)
        >>> policy.record("h", SCRIPTED, gained=True)
        []
        >>> policy.compared("h", SCRIPTED, gained=False), policy.compared("h", SCRIPTED, gained=False)
        (False, True)
        >>> policy.decide("h", Inspection(scripted=True, signal=None)).render
        False
        """
        experience = self._experience(host, kind)
        if not experience.gained or experience.dry >= self.dry_renders:
            return False  # no yes to compare with, or one taken back already
        experience.dry = 0 if gained else experience.dry + 1
        return experience.dry >= self.dry_renders


def host_reason(why: str) -> str:
    """The reason recorded for a page rendered because rendering paid on its host."""
    return f"{why}; rendering found more on this host"


def gained(found: Iterable[str], expected: set[str]) -> list[str]:
    """URLs a render found (links in its DOM, requests its scripts made) that the static parse did not.

    >>> gained(["http://h/a", "http://h/b"], {"http://h/a"})
    ['http://h/b']
    """
    return sorted({url for url in found if url not in expected})
