"""What the frame of a rendered page's request tells of the document that made it.

A request the crawl's browser routes (page_network.py) is asked for as the document that made
it asked: its origin, its encoding when it was fetched from no URL of its own (a srcdoc, a blob:
or data: URL), whether its sandbox leaves it none. Each is asked of the frame in the browser,
bounded by FRAME_ORIGIN_WAIT: a frame gone or navigating meanwhile tells nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from archiver.encodings import web_codec

FRAME_ORIGIN_WAIT = 2.0
"""Seconds a frame is given to answer what is asked of it."""


@dataclass
class FrameFacts:
    """What the frame of one request tells of the document that made it, each asked once."""

    request: Any
    main: bool
    """Whether the request is the main frame's (whose document is the page's: nothing to ask)."""
    navigation: bool
    """Whether it navigates its frame (its document is then the parent's, which asks for it)."""

    @classmethod
    def of(cls, request: Any) -> FrameFacts:
        main = main_frame(request)
        return cls(request, main, not main and request.is_navigation_request())

    async def asking_origin(self) -> str | None:
        """The origin of the frame's document that made the request: the frame's own, or for the
        frame's navigation, its parent's (``null`` for one of no origin); None for the main
        frame's, or when it cannot tell (the frame gone or navigating)."""
        if self.main:
            return None
        try:
            frame = self.request.frame.parent_frame if self.navigation else self.request.frame
            origin = await asyncio.wait_for(frame.evaluate("self.origin"), FRAME_ORIGIN_WAIT)
        except Exception:  # noqa: BLE001 - the frame gone or navigating: not known
            return None
        return origin if isinstance(origin, str) else None

    def document_url(self) -> str:
        """The URL of the frame's document that made the request ('' for the main frame's, a
        frame's navigation, or a frame gone meanwhile): about:srcdoc or about:blank for one that
        was fetched from no URL of its own (an iframe's srcdoc, a frame a script wrote), which
        Chromium makes UTF-8, whatever its page's encoding."""
        if self.main or self.navigation:
            return ""
        try:
            return str(self.request.frame.url)
        except Exception:  # noqa: BLE001 - the frame gone meanwhile: not known
            return ""

    async def built_in(self, document_url: str) -> str | None:
        """The encoding (a codec) the frame's document (at ``document_url``: document_url()'s),
        fetched from no http(s) URL of its own, was read in, as a stylesheet it links then is:
        UTF-8 for one of about:srcdoc or an about:blank a script wrote; for one of a blob: or
        data: URL, the charset its type names, else its page's (document.characterSet tells).
        None for a document fetched from its own URL (the crawl read it), and for a frame gone
        meanwhile, but one of about: (UTF-8)."""
        if not document_url or document_url.startswith(("http:", "https:")):
            return None
        try:
            charset = await asyncio.wait_for(
                self.request.frame.evaluate("document.characterSet"), FRAME_ORIGIN_WAIT
            )
        except Exception:  # noqa: BLE001 - the frame gone or navigating: not known
            return "utf-8" if document_url.startswith("about:") else None
        return web_codec(charset) if isinstance(charset, str) else None

    async def leaves_no_origin(self, parent_origin: str | None) -> bool:
        """Whether the request navigates a frame to a document of no origin: its iframe's sandbox
        attribute does not allow-same-origin, or the document holding it (of the origin
        ``parent_origin``: asking_origin()'s) has none (a sandboxed frame's, a srcdoc's, one its
        Content-Security-Policy sandboxes), whose frames have none."""
        if not self.navigation:
            return False
        if parent_origin == "null":
            return True
        try:
            element = await asyncio.wait_for(self.request.frame.frame_element(), FRAME_ORIGIN_WAIT)
            box = await asyncio.wait_for(element.get_attribute("sandbox"), FRAME_ORIGIN_WAIT)
        except Exception:  # noqa: BLE001 - the frame gone meanwhile: not known to be sandboxed
            return False
        return box is not None and "allow-same-origin" not in box.lower().split()


def main_frame(request: Any) -> bool:
    """Whether ``request`` (Playwright's) is its page's main frame's."""
    try:
        return request.frame.parent_frame is None
    except Exception:  # noqa: BLE001 - a request made before its frame exists is not the main frame's
        return False
