(pageUrl) => {
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
}
