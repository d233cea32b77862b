({depth, marker, limit, inlineLimit, keeper}) => {
  const inert = document.implementation.createHTMLDocument('');
  // What PAGE_INIT_SCRIPT noted in the document's window (nothing in a frame it did not run in).
  const notes = (doc) => (doc.defaultView && doc.defaultView[keeper]) || null;
  const shadowOf = (element, noted) => element.shadowRoot || (noted ? noted.shadowRoot(element) : null);
  const cssString = (text) => `"${text.replace(/[\\"]/g, '\\$&').replace(/\n/g, '\\a ')}"`;
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
      const url = /url\(\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^)"'\s]*))\s*\)/g;
      return source.replace(url, (whole, double, single, bare) => {
        const written = (double ?? single ?? bare).replace(/\\(.)/g, '$1');
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
    return rules.join('\n');
  };
  const startTag = (element) => element.outerHTML.slice(0, element.outerHTML.lastIndexOf('</'));
  const rulesText = (sheet) => {
    try { return Array.from(sheet.cssRules, (rule) => rule.cssText).join('\n'); } catch (e) { return null; }
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
          const states = noted ? noted.customStates(element).filter((state) => !/\s/.test(state)) : [];
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
        style.textContent = live.replace(/url\("((?:[^"\\]|\\.)*)"\)/g, (whole, written) => {
          try {
            return `url(${cssString(new URL(written.replace(/\\(.)/g, '$1'), sheet.href).href)})`;
          } catch (e) { return whole; }
        });
        if (link.hasAttribute('media')) style.setAttribute('media', link.getAttribute('media'));
        link.after(style);
        link.setAttribute('media', 'not all');
      }
      // A stylesheet a script turned off (sheet.disabled) has no markup that says so: it is
      // given a media no screen matches (an alternate one is off until its reader picks it).
      for (const owner of scope.querySelectorAll('style, link[rel~="stylesheet" i]')) {
        if (owner.sheet && owner.sheet.disabled && !/\balternate\b/i.test(owner.rel || '')) {
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
      ].filter(Boolean).join('\n');
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
          frames.push([frame, serialize(inner, level + 1), inner.characterSet]);
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
      for (const [frame, inner, charset] of frames) marked.push([inert.importNode(frame, false), inner, charset]);
    } finally {
      for (const [frame] of frames) frame.removeAttribute(marker);
    }
    // Its start tag as serialised (the mark makes it unique) becomes one whose srcdoc holds
    // the frame's document; setting srcdoc on the frame itself would load it again. A blob:
    // URL's document keeps the charset it was read in (its type's, else its page's), which a
    // stylesheet it links is read in too, unlike a srcdoc document's, always UTF-8.
    for (const [copy, inner, charset] of marked) {
      const before = startTag(copy);
      copy.removeAttribute(marker);
      copy.setAttribute('srcdoc', inner);
      if (/^\s*blob:/i.test(copy.getAttribute('src') || '')) copy.setAttribute('data-archived-charset', charset);
      html = html.replace(before, () => startTag(copy));
    }
    return html;
  };
  const html = serialize(document, 0);
  return html.length > limit ? html.length : html;
}
