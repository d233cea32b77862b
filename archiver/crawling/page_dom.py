"""The DOM of a rendered page as its reader saw it: the scripts that take it from the browser.

page.content() serialises the document's markup, which says less than the
page shows: a custom element's shadow root (open, or closed: only the script
that attached it holds it), a frame whose document scripts wrote, the rules
a CSS-in-JS library added through the CSSOM (its <style> stays empty), the
stylesheets a document or shadow root adopted or a script changed or turned
off, the fonts a script made with the FontFace API, the custom properties it
registered, the last frame an animation it ran holds, the values scripts gave
form fields, what a script drew on a canvas, an image a script made of a
blob: URL (which dies with the page). DOM_SCRIPT writes each into the markup
a browser builds the page from again with no script: declarative shadow
roots, frames' srcdoc, <style> text and media, @font-face and @property
rules, style attributes (the animation's frame), value/checked/selected
attributes, a canvas's drawing as its background image, a blob: image as a
data: URL. State no markup can say (custom elements defined and their custom
states, a popover shown, a dialog opened modal, a checkbox indeterminate, a
box scrolled) it notes in data-archived-* attributes, which the mirror's own
script reads to set it again (mirror/scripts.py). What it writes into the
live page changes nothing the reader sees, and the page is left once its DOM
is taken.

What no property of the page shows (a closed shadow root, the source a FontFace
was made from, a registered property, a stylesheet a script changed)
PAGE_INIT_SCRIPT notes as the page's scripts make it: it runs in every
document of a tab before the page's own scripts. A closed shadow root the
HTML declared, which no script reaches, is handed to it through DevTools
(NOTE_ROOT_SCRIPT, crawling/browser.py).
"""

from __future__ import annotations

import json
import secrets
from importlib import resources

from archiver.links import MAX_SRCDOC_DEPTH

SCRIPTS = resources.files(__package__) / "page_scripts"
"""The scripts' sources, one JavaScript function expression per file."""


def _source(name: str) -> str:
    return (SCRIPTS / name).read_text(encoding="utf-8").strip()


INLINE_LIMIT = 2 * 1024**2
"""A canvas or blob: image whose pixels, or a font a script gave as bytes, that take more than
this as a data: URL (characters) is not written into the markup."""

KEEPER = f"__archiver_{secrets.token_hex(8)}"
"""The name of the global through which PAGE_INIT_SCRIPT hands DOM_SCRIPT what it noted: a name
no page uses (one per process), and a property no page enumerates."""

# Wrapped, each noting what it made or changed: Element.attachShadow each root (a closed one is
# nowhere else to be found); the FontFace constructor each face's source and the base URL it was
# resolved against then (a FontFace does not say where its font came from); CSS.registerProperty
# each custom property it registers (no stylesheet says them); the CSSOM's insertRule and
# deleteRule the stylesheets they change (a linked one then holds other rules than its file);
# attachInternals the ElementInternals it gives (their custom states, :state(), are nowhere else).
# A WebGL context is made keeping its drawing buffer. The page sees the same API.
PAGE_INIT_SCRIPT = _source("page_init.js")
"""Run in every document of a tab before its scripts (BrowserPool adds it to each tab's context),
called with KEEPER by init_script()."""

NOTE_ROOT_SCRIPT = _source("note_root.js")
"""Called on a closed shadow root found through DevTools (which reaches what no script can),
with KEEPER: it is noted as PAGE_INIT_SCRIPT notes the roots scripts attach."""

# The DOM is stored as UTF-8: a page that declared another charset must say UTF-8 now.
# A page whose scripts moved it to another URL (history.pushState) keeps that URL as its
# base, so the relative links its scripts wrote resolve as they did in the browser. It gives
# the document's readyState ("loading" when its parser still waits, on a script that never
# came) and the encoding the browser read it in.
PREPARE_DOM_SCRIPT = _source("prepare_dom.js")

DOM_SCRIPT = _source("dom.js")
"""The page's DOM as HTML (see the module docstring), or its length if longer than ``limit``
(what is not kept is not carried through the driver). Shadow roots are written as
declarative ones (``<template shadowrootmode>``, open or closed as the page made them); a
frame whose document scripts wrote (an ``<iframe>`` of about:blank, srcdoc or a blob: URL) is
kept in the srcdoc of its ``<iframe>``, ``depth`` frames deep at most. ``marker`` is an
attribute name no page uses; ``keeper`` the name of what PAGE_INIT_SCRIPT noted."""


def dom_arguments(limit: int) -> dict[str, object]:
    """DOM_SCRIPT's argument, for a DOM of at most ``limit`` characters."""
    return {
        "depth": MAX_SRCDOC_DEPTH,
        "marker": f"data-archiver-frame-{secrets.token_hex(8)}",
        "limit": limit,
        "inlineLimit": INLINE_LIMIT,
        "keeper": KEEPER,
    }


def init_script() -> str:
    """PAGE_INIT_SCRIPT, ready to add to a browser context."""
    return f"({PAGE_INIT_SCRIPT})({json.dumps(KEEPER)})"
