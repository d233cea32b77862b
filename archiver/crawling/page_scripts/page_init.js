(keeper) => {
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
}
