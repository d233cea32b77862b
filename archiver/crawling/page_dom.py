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

from archiver.links import MAX_SRCDOC_DEPTH

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
PAGE_INIT_SCRIPT = """((keeper) => {
  if (Object.prototype.hasOwnProperty.call(window, keeper)) return;
  const roots = new WeakMap();
  const sources = new WeakMap();
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = {
    attachShadow(init) {
      const root = attach.call(this, init);
      roots.set(this, root);
      return root;
    },
  }.attachShadow;
  const Face = window.FontFace;
  if (Face) {
    window.FontFace = new Proxy(Face, {
      construct(target, args, newTarget) {
        const face = Reflect.construct(target, args, newTarget);
        sources.set(face, {source: args[1], base: document.baseURI});
        return face;
      },
    });
    Face.prototype.constructor = window.FontFace;  // face.constructor === FontFace, as before
  }
  const properties = [];
  if (window.CSS && CSS.registerProperty) {
    const register = CSS.registerProperty;
    CSS.registerProperty = {
      registerProperty(definition) {
        const result = register.call(CSS, definition);  // one it refuses is not noted
        const {name, syntax, inherits, initialValue} = definition;
        properties.push({name, syntax, inherits, initialValue});
        return result;
      },
    }.registerProperty;
  }
  // ElementInternals, whose custom states (internals.states) no property of the element shows.
  const internals = new WeakMap();
  const attachInternals = window.HTMLElement && HTMLElement.prototype.attachInternals;
  if (attachInternals) {
    HTMLElement.prototype.attachInternals = {
      attachInternals() {
        const made = attachInternals.call(this);
        internals.set(this, made);
        return made;
      },
    }.attachInternals;
  }
  // A WebGL canvas's drawing is cleared once shown unless it asked to keep it: kept, it can be
  // read when the DOM is taken (a drawing the page did not clear stays under the next one).
  const getContext = window.HTMLCanvasElement && HTMLCanvasElement.prototype.getContext;
  if (getContext) {
    HTMLCanvasElement.prototype.getContext = {
      getContext(type, attributes, ...rest) {
        if (typeof type === 'string' && /^(?:experimental-)?webgl2?$/.test(type)) {
          const asked = attributes && typeof attributes === 'object' ? attributes : {};
          attributes = {...asked, preserveDrawingBuffer: true};
        }
        return getContext.call(this, type, attributes, ...rest);
      },
    }.getContext;
  }
  const changed = new WeakSet();
  const noteChanges = (prototype, names) => {
    for (const name of names) {
      const original = prototype && prototype[name];
      if (!original) continue;
      prototype[name] = {
        [name](...args) {
          const result = original.apply(this, args);
          const sheet = this instanceof CSSStyleSheet ? this : this.parentStyleSheet;
          if (sheet) changed.add(sheet);
          return result;
        },
      }[name];
    }
  };
  const edits = ['insertRule', 'deleteRule', 'addRule', 'removeRule'];
  noteChanges(window.CSSStyleSheet && CSSStyleSheet.prototype, edits);
  noteChanges(window.CSSGroupingRule && CSSGroupingRule.prototype, ['insertRule', 'deleteRule']);
  Object.defineProperty(window, keeper, {
    value: Object.freeze({
      shadowRoot: (element) => roots.get(element) || null,
      fontSource: (face) => sources.get(face) || null,
      registeredProperties: () => properties.slice(),
      changedSheet: (sheet) => changed.has(sheet),
      customStates: (element) => {
        const made = internals.get(element);
        return made && made.states ? Array.from(made.states) : [];
      },
      noteRoot: (root) => {
        if (root instanceof ShadowRoot) roots.set(root.host, root);
      },
    }),
  });
})(%s)"""
"""Run in every document of a tab before its scripts (BrowserPool adds it to each tab's context):
init_script() fills in KEEPER."""

NOTE_ROOT_SCRIPT = """function (keeper) {
  const view = this.ownerDocument && this.ownerDocument.defaultView;
  if (view && view[keeper]) view[keeper].noteRoot(this);
}"""
"""Called on a closed shadow root found through DevTools (which reaches what no script can),
with KEEPER: it is noted as PAGE_INIT_SCRIPT notes the roots scripts attach."""

# The DOM is stored as UTF-8: a page that declared another charset must say UTF-8 now.
# A page whose scripts moved it to another URL (history.pushState) keeps that URL as its
# base, so the relative links its scripts wrote resolve as they did in the browser. It gives
# the document's readyState ("loading" when its parser still waits, on a script that never
# came) and the encoding the browser read it in.
PREPARE_DOM_SCRIPT = """(pageUrl) => {
  let declared = false;
  for (const meta of document.querySelectorAll('meta[charset]')) {
    meta.setAttribute('charset', 'utf-8');
    declared = true;
  }
  for (const meta of document.querySelectorAll('meta[http-equiv]')) {
    if (meta.httpEquiv.toLowerCase() === 'content-type') {
      meta.setAttribute('content', 'text/html; charset=utf-8');
      declared = true;
    }
  }
  const head = document.head || document.documentElement;
  if (!declared && head) {
    const meta = document.createElement('meta');
    meta.setAttribute('charset', 'utf-8');
    head.prepend(meta);
  }
  if (location.href.split('#')[0] !== pageUrl && !document.querySelector('base[href]') && head) {
    const base = document.createElement('base');
    base.setAttribute('href', location.href);
    head.prepend(base);
  }
  // A document still loading after its DOMContentLoaded is one a script opened again
  // (document.open()) and wrote: what it wrote is the page, not a parse cut short.
  const navigation = performance.getEntriesByType('navigation')[0];
  const opened = document.readyState === 'loading' && navigation && navigation.domContentLoadedEventStart > 0;
  return [opened ? 'written' : document.readyState, document.characterSet];
}"""

DOM_SCRIPT = """({depth, marker, limit, inlineLimit, keeper}) => {
  const inert = document.implementation.createHTMLDocument('');
  // What PAGE_INIT_SCRIPT noted in the document's window (nothing in a frame it did not run in).
  const notes = (doc) => (doc.defaultView && doc.defaultView[keeper]) || null;
  const shadowOf = (element, noted) => element.shadowRoot || (noted ? noted.shadowRoot(element) : null);
  const cssString = (text) => `"${text.replace(/[\\\\"]/g, '\\\\$&').replace(/\\n/g, '\\\\a ')}"`;
  const base64 = (bytes) => {
    let binary = '';
    for (let start = 0; start < bytes.length; start += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(start, start + 0x8000));
    }
    return btoa(binary);
  };
  const fontType = (bytes) => {
    const magic = String.fromCharCode(...bytes.subarray(0, 4));
    if (magic === 'wOF2') return 'font/woff2';
    if (magic === 'wOFF') return 'font/woff';
    return magic === 'OTTO' ? 'font/otf' : 'font/ttf';
  };
  // A FontFace's source as a @font-face src: its url()s made absolute against the base URL
  // they were resolved against when it was made; bytes as a data: URL. Null if not to be kept.
  const fontSrc = ({source, base}) => {
    if (typeof source === 'string') {
      const url = /url\\(\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|'((?:[^'\\\\]|\\\\.)*)'|([^)"'\\s]*))\\s*\\)/g;
      return source.replace(url, (whole, double, single, bare) => {
        const written = (double ?? single ?? bare).replace(/\\\\(.)/g, '$1');
        try { return `url(${cssString(new URL(written, base).href)})`; } catch (e) { return whole; }
      });
    }
    let bytes = null;
    if (source instanceof ArrayBuffer) bytes = new Uint8Array(source);
    else if (ArrayBuffer.isView(source)) {
      bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    }
    if (!bytes || !bytes.length || bytes.length * 4 / 3 > inlineLimit) return null;
    return `url("data:${fontType(bytes)};base64,${base64(bytes)}")`;
  };
  const descriptors = [
    ['style', 'font-style'], ['weight', 'font-weight'], ['stretch', 'font-stretch'],
    ['unicodeRange', 'unicode-range'], ['featureSettings', 'font-feature-settings'],
    ['variationSettings', 'font-variation-settings'], ['display', 'font-display'],
    ['ascentOverride', 'ascent-override'], ['descentOverride', 'descent-override'],
    ['lineGapOverride', 'line-gap-override'], ['sizeAdjust', 'size-adjust'],
  ];
  // What scripts added to the document's styles outside any stylesheet: fonts (FontFace,
  // document.fonts.add) as @font-face rules, registered custom properties as @property rules.
  const scriptRules = (doc, noted) => {
    if (!noted || !doc.fonts) return '';
    const check = new CSSStyleSheet();
    const rules = [];
    for (const face of doc.fonts) {
      const made = noted.fontSource(face);
      if (!made || face.status === 'error') continue;
      const src = fontSrc(made);
      if (!src) continue;
      const said = descriptors.filter(([name]) => typeof face[name] === 'string' && face[name]);
      const body = said.map(([name, descriptor]) => `${descriptor}: ${face[name]};`).join(' ');
      const rule = `@font-face { font-family: ${cssString(face.family)}; src: ${src}; ${body} }`;
      try { check.insertRule(rule); } catch (e) { continue; }  // a descriptor the page got wrong
      rules.push(rule);
    }
    // Custom properties registered by script (CSS.registerProperty), whose initial values and
    // inheritance the page's styles rely on, as @property rules.
    for (const {name, syntax, inherits, initialValue} of noted.registeredProperties()) {
      const type = `syntax: ${cssString(syntax === undefined ? '*' : String(syntax))};`;
      const initial = initialValue === undefined ? '' : ` initial-value: ${initialValue};`;
      const rule = `@property ${CSS.escape(name)} { ${type} inherits: ${Boolean(inherits)};${initial} }`;
      try { check.insertRule(rule); } catch (e) { continue; }
      rules.push(rule);
    }
    return rules.join('\\n');
  };
  const startTag = (element) => element.outerHTML.slice(0, element.outerHTML.lastIndexOf('</'));
  const rulesText = (sheet) => {
    try { return Array.from(sheet.cssRules, (rule) => rule.cssText).join('\\n'); } catch (e) { return null; }
  };
  // What scripts set that the markup does not say, written into it (the page looks the same).
  const keepState = (doc, scopes, noted) => {
    const defined = new Set();
    const registry = doc.defaultView && doc.defaultView.customElements;  // a frame has its own
    for (const scope of scopes) {
      // State no attribute can say, noted in attributes the mirror's own script (mirror/scripts.py)
      // reads to set it again: which custom elements were defined (:defined) and their custom
      // states (:state()), a popover shown and a dialog opened modal (the top layer: a dialog's
      // open attribute shows it in place, a popover's not at all), a checkbox's indeterminate
      // state, how far a scrolled element (a carousel) was scrolled.
      for (const element of scope.querySelectorAll('*')) {
        if (element.localName.includes('-') && registry && registry.get(element.localName)) {
          defined.add(element.localName);
          const states = noted ? noted.customStates(element).filter((state) => !/\\s/.test(state)) : [];
          if (states.length) element.setAttribute('data-archived-states', states.join(' '));
        }
        try {
          if (element.matches(':popover-open')) element.setAttribute('data-archived-open', 'popover');
          else if (element.localName === 'dialog' && element.matches(':modal')) {
            element.setAttribute('data-archived-open', 'modal');
          }
        } catch (e) { /* a browser without popovers */ }
        if (element.localName === 'input' && element.indeterminate) {
          element.setAttribute('data-archived-indeterminate', '');
        }
        // Not the page itself: the render scrolled it to its end, its reader saw its top.
        const page = element === doc.scrollingElement || element === doc.body;
        if ((element.scrollLeft || element.scrollTop) && !page) {
          element.setAttribute('data-archived-scroll', `${element.scrollLeft} ${element.scrollTop}`);
        }
      }
      for (const field of scope.querySelectorAll('input')) {
        if (field.type === 'checkbox' || field.type === 'radio') {
          if (field.checked !== field.defaultChecked) field.defaultChecked = field.checked;
        } else if (!['password', 'file', 'hidden'].includes(field.type)) {
          if (field.value !== field.defaultValue) field.defaultValue = field.value;
        }
      }
      for (const field of scope.querySelectorAll('textarea')) {
        if (field.value !== field.defaultValue) field.defaultValue = field.value;
      }
      for (const select of scope.querySelectorAll('select')) {
        const options = Array.from(select.options);
        // A single choice left on its first option is what the markup says already.
        if (select.multiple || select.selectedIndex > 0 || options.some((o) => o.defaultSelected)) {
          for (const option of options) {
            if (option.selected !== option.defaultSelected) option.defaultSelected = option.selected;
          }
        }
      }
      for (const style of scope.querySelectorAll('style')) {
        const live = style.sheet ? rulesText(style.sheet) : null;
        if (live === null) continue;
        const served = new CSSStyleSheet();
        try { served.replaceSync(style.textContent); } catch (e) { continue; }
        if (rulesText(served) !== live) style.textContent = live;  // rules added through the CSSOM
      }
      // A linked stylesheet a script changed (insertRule, deleteRule) holds other rules than its
      // file: they go, as they stand, in a <style> after it (for its media), their URLs made
      // absolute against the file's (the mirror links them as any), and the link, kept, is
      // given a media no screen matches.
      for (const link of noted ? scope.querySelectorAll('link[rel~="stylesheet" i]') : []) {
        const sheet = link.sheet;
        if (!sheet || sheet.disabled || !noted.changedSheet(sheet)) continue;
        const live = rulesText(sheet);
        if (live === null) continue;
        const style = doc.createElement('style');
        style.textContent = live.replace(/url\\("((?:[^"\\\\]|\\\\.)*)"\\)/g, (whole, written) => {
          try {
            return `url(${cssString(new URL(written.replace(/\\\\(.)/g, '$1'), sheet.href).href)})`;
          } catch (e) { return whole; }
        });
        if (link.hasAttribute('media')) style.setAttribute('media', link.getAttribute('media'));
        link.after(style);
        link.setAttribute('media', 'not all');
      }
      // A stylesheet a script turned off (sheet.disabled) has no markup that says so: it is
      // given a media no screen matches (an alternate one is off until its reader picks it).
      for (const owner of scope.querySelectorAll('style, link[rel~="stylesheet" i]')) {
        if (owner.sheet && owner.sheet.disabled && !/\\balternate\\b/i.test(owner.rel || '')) {
          owner.setAttribute('media', 'not all');
        }
      }
      // A script's animation that ended holding its last frame (element.animate with fill
      // forwards: a fade-in from opacity 0, say) styles its element from no markup: that frame
      // goes into its style attribute. Animations of the page's CSS start again from the CSS.
      if (scope === doc && doc.getAnimations) {
        for (const animation of doc.getAnimations()) {
          if (animation instanceof CSSAnimation || animation instanceof CSSTransition) continue;
          const timing = animation.effect ? animation.effect.getComputedTiming() : null;
          if (animation.playState !== 'finished' || !timing || !['forwards', 'both'].includes(timing.fill)) {
            continue;
          }
          try { animation.commitStyles(); } catch (e) { continue; }  // its element is not rendered
        }
      }
      const adopted = [
        ...(scope.adoptedStyleSheets || []).map(rulesText),
        scope === doc ? scriptRules(doc, noted) : '',
      ].filter(Boolean).join('\\n');
      if (adopted) {
        const style = doc.createElement('style');
        style.textContent = adopted;
        (scope === doc ? doc.head || doc.documentElement : scope).append(style);
      }
      for (const canvas of scope.querySelectorAll('canvas')) {
        let drawn = '';
        try { drawn = canvas.width && canvas.height ? canvas.toDataURL() : ''; } catch (e) { continue; }
        if (!drawn || drawn.length > inlineLimit) continue;  // tainted, empty or too large
        canvas.style.setProperty('background-image', `url("${drawn}")`);
        canvas.style.setProperty('background-size', '100% 100%');
        canvas.style.setProperty('background-repeat', 'no-repeat');
      }
      // An image of a blob: URL (data a script made an image of) has no file the mirror could
      // point at once the page is gone: its pixels go into the markup, as a data: URL.
      for (const image of scope.querySelectorAll('img')) {
        if (!image.currentSrc.startsWith('blob:') || !image.complete || !image.naturalWidth) continue;
        if (image.parentElement && image.parentElement.localName === 'picture') continue;
        const canvas = doc.createElement('canvas');
        canvas.width = image.naturalWidth;
        canvas.height = image.naturalHeight;
        let drawn = '';
        try {
          canvas.getContext('2d').drawImage(image, 0, 0);
          drawn = canvas.toDataURL();
        } catch (e) { continue; }
        if (drawn.length > inlineLimit) continue;
        image.setAttribute('src', drawn);
        image.removeAttribute('srcset');
      }
    }
    if (defined.size && doc.documentElement) {
      doc.documentElement.setAttribute('data-archived-defined', Array.from(defined).sort().join(' '));
    }
  };
  // A frame whose document the crawl never fetched: about:blank or srcdoc (written or built by
  // scripts, its own or its page's), or a blob: URL. One loaded from its http(s) URL is a page
  // of the crawl, rendered on its own.
  const builtFrame = (frame) => {
    let doc = null;
    try { doc = frame.contentDocument; } catch (e) { return null; }
    if (!doc || !doc.documentElement) return null;
    const src = (frame.getAttribute('src') || '').trim();
    if (!frame.hasAttribute('srcdoc') && src && /^https?:/i.test(frame.src)) return null;
    return doc;
  };
  const serialize = (doc, level) => {
    const noted = notes(doc);
    const roots = [];
    const gather = (node) => {
      for (const element of node.querySelectorAll('*')) {
        const shadow = shadowOf(element, noted);
        if (shadow) {
          roots.push(shadow);
          gather(shadow);
        }
      }
    };
    gather(doc);
    const root = doc.documentElement;
    if (!root) return '';
    keepState(doc, [doc, ...roots], noted);
    const frames = [];
    if (level < depth) {
      for (const scope of [doc, ...roots]) {
        for (const frame of scope.querySelectorAll('iframe')) {
          const inner = builtFrame(frame);
          if (inner === null) continue;
          frames.push([frame, serialize(inner, level + 1)]);
          frame.setAttribute(marker, String(frames.length));
        }
      }
    }
    const doctype = doc.doctype ? new XMLSerializer().serializeToString(doc.doctype) : '';
    let html;
    const marked = [];
    try {
      if (!root.getHTML) {
        html = doctype + root.outerHTML;
      } else {
        const quoted = (value) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
        const attributes = Array.from(root.attributes, (a) => ` ${a.name}="${quoted(a.value)}"`).join('');
        const tag = root.localName;
        html = `${doctype}<${tag}${attributes}>${root.getHTML({shadowRoots: roots})}</${tag}>`;
      }
      for (const [frame, inner] of frames) marked.push([inert.importNode(frame, false), inner]);
    } finally {
      for (const [frame] of frames) frame.removeAttribute(marker);
    }
    // Its start tag as serialised (the mark makes it unique) becomes one whose srcdoc holds
    // the frame's document; setting srcdoc on the frame itself would load it again.
    for (const [copy, inner] of marked) {
      const before = startTag(copy);
      copy.removeAttribute(marker);
      copy.setAttribute('srcdoc', inner);
      html = html.replace(before, () => startTag(copy));
    }
    return html;
  };
  const html = serialize(document, 0);
  return html.length > limit ? html.length : html;
}"""
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
    return PAGE_INIT_SCRIPT % json.dumps(KEEPER)
