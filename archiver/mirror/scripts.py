"""A rendered page's scripts, made inert for the offline mirror.

A page rendered in a browser is mirrored as the DOM its scripts built. Run
again from ``file://``, those scripts would build it a second time on top of
the first (lists twice over), or fail halfway (``fetch()`` of a ``file://``
URL is refused) and tear down what is there. So in the mirror they do not
run: each ``<script>`` that holds code gets a type no browser executes (its
own type kept as ``data-archived-type``), event handler attributes
(``onclick``...) are renamed ``data-archived-on...``, module preloads are
renamed so nothing fetches the modules, and ``<noscript>`` blocks, written
for readers whose browser would not build the page, are dropped: the page is
built already. The documents its frames hold in their srcdoc (those scripts
wrote, as the render keeps them: crawling/browser.py) are made inert alike,
as deep as the crawl reads them. Nothing else changes, and the scripts stay
in the file, and their files in the mirror, for whoever wants to read them.

What the page's scripts left the page in that no markup can say (a custom
element defined, its custom states, a popover shown, a dialog opened modal,
a checkbox indeterminate, a carousel scrolled) the render notes in
``data-archived-*`` attributes (crawling/page_dom.py); a document that holds
any gets STATE_SCRIPT, the archiver's own, which sets that state again and
runs nothing of the page: it defines each such element with an empty class
(so ``:defined`` and ``:state()`` match as they did), shows the popovers and
dialogs in the top layer, and scrolls the boxes back.
The WARC keeps the page as served, so replay tools still run the live scripts.

>>> neutralise_scripts(b'<script src="a.js"></script><p onclick="go()">x</p><noscript>JS!</noscript>')
b'<script type="text/x-archived-script" src="a.js"></script><p data-archived-onclick="go()">x</p>'
"""

from __future__ import annotations

import html
import re

from archiver.content import DATA_SCRIPT_TYPES
from archiver.links import MAX_SRCDOC_DEPTH
from archiver.markup import attributes, iter_tags, scan, unescape_attribute

INERT_TYPE = "text/x-archived-script"
RENAMED_PREFIX = "data-archived-"
_NOSCRIPT = frozenset({"noscript"})
_NOSCRIPT_END = re.compile(r"</noscript\s*>", re.IGNORECASE)
EVENT_HANDLERS = frozenset(
    "on" + name
    for name in (  # noqa: SIM905 - a word list reads better than a hundred quoted names
        "abort afterprint animationend animationiteration animationstart auxclick beforeinput "
        "beforeprint beforetoggle beforeunload blur cancel canplay canplaythrough change click close "
        "contextlost contextmenu contextrestored copy cuechange cut dblclick drag dragend dragenter "
        "dragleave dragover dragstart drop durationchange emptied ended error focus focusin focusout "
        "formdata gotpointercapture hashchange input invalid keydown keypress keyup languagechange load "
        "loadeddata loadedmetadata loadstart lostpointercapture message messageerror mousedown mouseenter "
        "mouseleave mousemove mouseout mouseover mouseup offline online pagehide pagereveal pageshow "
        "pageswap paste pause play playing pointercancel pointerdown pointerenter pointerleave "
        "pointermove pointerout pointerover pointerup popstate progress ratechange rejectionhandled reset "
        "resize scroll scrollend securitypolicyviolation seeked seeking select selectionchange "
        "selectstart slotchange stalled storage submit suspend timeupdate toggle touchcancel touchend "
        "touchmove touchstart transitioncancel transitionend transitionrun transitionstart "
        "unhandledrejection unload volumechange waiting webkitanimationend webkitanimationiteration "
        "webkitanimationstart webkittransitionend wheel"
    ).split()
)
"""The event handler content attributes of the HTML standard (and the prefixed ones browsers keep)."""


STATE_SCRIPT = """<script>(() => {
  const restore = () => {
    for (const name of (document.documentElement.getAttribute('data-archived-defined') || '').split(' ')) {
      if (!name || customElements.get(name)) continue;
      try {
        customElements.define(name, class extends HTMLElement {
          constructor() {
            super();
            const states = (this.getAttribute('data-archived-states') || '').split(' ').filter(Boolean);
            if (!states.length) return;
            const internals = this.attachInternals();
            for (const state of states) {
              try { internals.states.add(state); } catch (e) { /* a name this browser refuses */ }
            }
          }
        });
      } catch (e) { /* not a valid custom element name */ }
    }
    const scrolled = [], modals = [], popovers = [];
    const visit = (root) => {
      for (const element of root.querySelectorAll('*')) {
        if (element.shadowRoot) visit(element.shadowRoot);
        if (element.hasAttribute('data-archived-indeterminate')) element.indeterminate = true;
        const open = element.getAttribute('data-archived-open');
        if (open === 'modal') modals.push(element);
        if (open === 'popover') popovers.push(element);
        if (element.hasAttribute('data-archived-scroll')) scrolled.push(element);
      }
    };
    visit(document);
    // Dialogs first: opening one modal closes the popovers shown before it, so those still
    // shown were shown after it.
    for (const dialog of modals) {
      try {
        if (dialog.open) dialog.close();
        dialog.showModal();
      } catch (e) { /* not a dialog in this browser */ }
    }
    for (const popover of popovers) {
      try { popover.showPopover(); } catch (e) { /* not a popover in this browser */ }
    }
    const scroll = () => {
      for (const element of scrolled) {
        const [x, y] = element.getAttribute('data-archived-scroll').split(' ').map(Number);
        element.scrollTo(x || 0, y || 0);
      }
    };
    scroll();
    addEventListener('load', scroll);  // again once images have given the boxes their size
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', restore);
  else restore();
})();</script>"""
"""Appended to a rendered document whose DOM notes state (STATE_MARK): sets it again (see above)."""
STATE_MARK = re.compile(r'\sdata-archived-(?:defined|states|open|indeterminate|scroll)="')
"""An attribute the render writes to note state no markup says (one in a srcdoc is escaped)."""


def _tag_edits(tag: str, raw: str) -> list[tuple[int, int, str]]:
    found = attributes(raw)
    edits = []
    values = {name: raw[start:end].strip("\"'").strip().lower() for name, _ns, _ne, start, end in found}
    if tag == "script":
        if values.get("type", "") in DATA_SCRIPT_TYPES or values.get("type") == INERT_TYPE:
            return []  # data (JSON) is inert already, and scripts may read it; or made inert already
        edits.append((len(tag) + 1, len(tag) + 1, f' type="{INERT_TYPE}"'))
    rels = set(values.get("rel", "").split())
    preloads_code = "modulepreload" in rels or ("preload" in rels and values.get("as") == "script")
    for name, name_start, name_end, _vs, _ve in found:
        if (
            (tag == "script" and name == "type")
            or name in EVENT_HANDLERS
            or (tag == "link" and name == "rel" and preloads_code)
        ):
            edits.append((name_start, name_end, RENAMED_PREFIX + name))
    return edits


def _without_noscripts(text: str) -> str:
    """``text`` without its <noscript> elements (start tags found as scan() finds them, so not in a
    comment or a script). One never closed is kept, and so are the rest: none of them closes."""
    pieces = []
    position = 0
    for offset, tag, raw in iter_tags(text, [], _NOSCRIPT):
        if tag != "noscript" or offset < position:
            continue  # a raw-text element, or a tag inside a noscript dropped already
        end = _NOSCRIPT_END.search(text, offset + len(raw))
        if end is None:
            break
        pieces.append(text[position:offset])
        position = end.end()
    pieces.append(text[position:])
    return "".join(pieces)


def _srcdoc_edits(raw: str, depth: int) -> list[tuple[int, int, str]]:
    """The edit of an <iframe> start tag whose srcdoc document (at ``depth``) holds scripts."""
    for name, _ns, _ne, start, end in attributes(raw):
        if name != "srcdoc" or start == end:
            continue
        value = raw[start:end]
        if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) >= 2:
            value = value[1:-1]
        document = unescape_attribute(value)
        inert = _neutralised(document, depth)
        return [] if inert == document else [(start, end, '"' + html.escape(inert, quote=True) + '"')]
    return []


def _neutralised(text: str, depth: int) -> str:
    text = _without_noscripts(text)
    spans: list[tuple[int, int, str]] = []
    for offset, tag, raw in scan(text).tags:
        if tag == "iframe" and depth < MAX_SRCDOC_DEPTH:
            spans.extend(
                (offset + start, offset + end, new) for start, end, new in _srcdoc_edits(raw, depth + 1)
            )
        if tag != "script" and tag != "link" and "on" not in raw.lower():
            continue
        for start, end, new in _tag_edits(tag, raw):
            spans.append((offset + start, offset + end, new))
    pieces = []
    position = 0
    for start, end, new in sorted(spans):
        pieces.append(text[position:start])
        pieces.append(new)
        position = end
    pieces.append(text[position:])
    if STATE_MARK.search(text):
        pieces.append(STATE_SCRIPT)
    return "".join(pieces)


def neutralise_scripts(body: bytes) -> bytes:
    """A rendered page (UTF-8 HTML) whose scripts, handlers and module preloads no longer run,
    its srcdoc documents' with them."""
    text = body.decode("utf-8", errors="surrogateescape")
    return _neutralised(text, 0).encode("utf-8", errors="surrogateescape")
