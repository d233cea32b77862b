() => {
  // Each <script type="speculationrules"> is taken out of Chromium's reach as soon as the
  // document holds it: one the parser inserts is seen before the parser prepares it (a
  // microtask checkpoint comes first), and is prepared while its type is another, so its rules
  // are never read; one a script inserts, prepared at once, is taken out and put back, which
  // drops its rules (a script element is never prepared twice). Its type is given back after,
  // so the DOM is the page's as it was written.
  const seen = new WeakSet();
  const disarm = node => {
    if (seen.has(node) || !(node instanceof HTMLScriptElement)) return;
    const type = node.getAttribute('type');
    if (type === null || type.trim().toLowerCase() !== 'speculationrules') return;
    seen.add(node);
    node.setAttribute('type', 'x-archiver-inert');
    const parent = node.parentNode;
    const next = node.nextSibling;
    node.remove();
    if (parent) parent.insertBefore(node, next);
    setTimeout(() => node.setAttribute('type', type), 0);
  };
  new MutationObserver(records => {
    for (const record of records) {
      disarm(record.target);  // its text given after it was inserted
      for (const node of record.addedNodes) {
        disarm(node);
        if (node.querySelectorAll) node.querySelectorAll('script').forEach(disarm);
      }
    }
  }).observe(document, {childList: true, subtree: true});
}
