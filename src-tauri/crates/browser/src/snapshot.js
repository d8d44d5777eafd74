// Osprey's page script: the DOM snapshot with element refs and the element helpers the browser
// actions use. One file for every profile: the managed profile runs it in an isolated world (the
// page's own scripts cannot see or change it); the native profile injects it into its webview.
//
// The value of this file is an object with one entry point, `run(name, args)`, which returns a
// JSON string. Its state (the refs) lives on the global of the world it runs in, so it lasts
// exactly as long as the document: refs are stable until the page navigates.
(() => {
  'use strict';
  const state = { next: 1, byElement: new WeakMap(), byRef: new Map() };
  // Taken when the script is installed: in the native profile that is before the page's own
  // scripts run (an initialization script), so a page that replaces JSON.stringify later
  // cannot change what the answers look like.
  const stringify = JSON.stringify;

  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE', 'BASE']);
  const BLOCK = new Set([
    'ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'BR', 'DD', 'DETAILS', 'DIV', 'DL', 'DT', 'FIELDSET',
    'FIGCAPTION', 'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI',
    'MAIN', 'NAV', 'OL', 'P', 'PRE', 'SECTION', 'TABLE', 'TD', 'TH', 'TR', 'UL', 'CAPTION', 'LEGEND',
  ]);
  // Roles that get a line and whose content is summarized in their name.
  const LEAF = new Set([
    'button', 'link', 'checkbox', 'radio', 'switch', 'textbox', 'searchbox', 'combobox', 'slider',
    'spinbutton', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'option', 'treeitem',
    'heading', 'img', 'listbox',
  ]);
  // Roles that get a line and keep their children, indented under them.
  const CONTAINER = new Set([
    'form', 'dialog', 'alertdialog', 'navigation', 'main', 'list', 'listitem', 'table', 'row',
    'menu', 'menubar', 'tablist', 'tabpanel', 'tree', 'group', 'region', 'search', 'alert',
  ]);
  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', checkbox: 'checkbox',
    radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox', email: 'textbox',
    tel: 'textbox', text: 'textbox', url: 'textbox', password: 'textbox', date: 'textbox',
    'datetime-local': 'textbox', month: 'textbox', time: 'textbox', week: 'textbox', color: 'button',
    file: 'button',
  };
  const MAX_NAME = 100;
  const MAX_TEXT = 300;
  const MAX_OPTIONS = 25;
  const MAX_LINES = 20000;

  const squash = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  const quote = (s) => stringify(s);

  function refOf(el) {
    let ref = state.byElement.get(el);
    if (!ref) {
      ref = 'e' + state.next++;
      state.byElement.set(el, ref);
      state.byRef.set(ref, new WeakRef(el));
    }
    return ref;
  }

  function roleOf(el) {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit && explicit !== 'presentation' && explicit !== 'none' && explicit !== 'generic') {
      return explicit;
    }
    switch (el.tagName) {
      case 'A': case 'AREA': return el.hasAttribute('href') ? 'link' : null;
      case 'BUTTON': return 'button';
      case 'INPUT': {
        const type = (el.getAttribute('type') || 'text').toLowerCase();
        if (type === 'hidden') return null;
        if ((type === 'text' || type === 'search' || type === 'email' || type === 'tel' || type === 'url') &&
          el.hasAttribute('list')) return 'combobox';
        return INPUT_ROLES[type] || 'textbox';
      }
      case 'TEXTAREA': return 'textbox';
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'OPTION': return 'option';
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
      case 'IMG': return el.getAttribute('alt') ? 'img' : null;
      case 'SUMMARY': return 'button';
      case 'FORM': return 'form';
      case 'DIALOG': return 'dialog';
      case 'NAV': return 'navigation';
      case 'MAIN': return 'main';
      case 'UL': case 'OL': return 'list';
      case 'LI': return 'listitem';
      case 'TABLE': return 'table';
      case 'TR': return 'row';
      case 'FIELDSET': return 'group';
      case 'IFRAME': case 'FRAME': return 'iframe';
      default:
        if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'textbox';
        return null;
    }
  }

  function visible(el) {
    if (typeof el.checkVisibility === 'function') {
      if (!el.checkVisibility({ visibilityProperty: true })) return false;
    } else {
      const style = el.ownerDocument.defaultView.getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') return false;
    }
    if (el.getAttribute('aria-hidden') === 'true') return false;
    return true;
  }

  function textOfIds(el, ids) {
    const doc = el.ownerDocument;
    return squash(ids.split(/\s+/).map((id) => {
      const target = doc.getElementById(id);
      return target ? target.textContent : '';
    }).join(' '));
  }

  function nameOf(el, role) {
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) {
      const text = textOfIds(el, labelledBy);
      if (text) return text;
    }
    const aria = squash(el.getAttribute('aria-label'));
    if (aria) return aria;
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (tag === 'INPUT' && (type === 'submit' || type === 'reset' || type === 'button')) {
        return squash(el.value) || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (tag === 'INPUT' && type === 'image') return squash(el.getAttribute('alt')) || 'Submit';
      if (el.labels && el.labels.length) {
        const text = squash(Array.from(el.labels).map((l) => l.innerText || l.textContent).join(' '));
        if (text) return text;
      }
      return squash(el.getAttribute('placeholder')) || squash(el.getAttribute('title'));
    }
    if (tag === 'IMG' || tag === 'AREA') return squash(el.getAttribute('alt')) || squash(el.getAttribute('title'));
    if (tag === 'IFRAME' || tag === 'FRAME') return squash(el.getAttribute('title')) || squash(el.getAttribute('name'));
    if (tag === 'FIELDSET') {
      const legend = el.querySelector(':scope > legend');
      return legend ? squash(legend.textContent) : '';
    }
    if (tag === 'TABLE') {
      const caption = el.querySelector(':scope > caption');
      if (caption) return squash(caption.textContent);
    }
    if (LEAF.has(role) && role !== 'listbox' && role !== 'combobox') {
      let text = squash(el.innerText !== undefined ? el.innerText : el.textContent);
      if (!text) {
        const img = el.querySelector('img[alt]');
        if (img) text = squash(img.getAttribute('alt'));
      }
      return text || squash(el.getAttribute('title'));
    }
    if (role === 'form' || role === 'dialog' || role === 'region' || role === 'navigation' || role === 'group') {
      return squash(el.getAttribute('title'));
    }
    return '';
  }

  function valueOf(el, role) {
    const tag = el.tagName;
    if (tag === 'INPUT') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (['checkbox', 'radio', 'submit', 'reset', 'button', 'image', 'file'].includes(type)) {
        return type === 'file' && el.files && el.files.length ? Array.from(el.files).map((f) => f.name).join(', ') : null;
      }
      if (type === 'password') return el.value ? '•'.repeat(Math.min(el.value.length, 8)) : null;
      return el.value ? el.value : null;
    }
    if (tag === 'TEXTAREA') return el.value ? el.value : null;
    if (tag === 'SELECT') {
      const chosen = Array.from(el.selectedOptions).map((o) => squash(o.label || o.textContent));
      return chosen.length ? chosen.join(', ') : null;
    }
    if (role === 'textbox' && el.isContentEditable) return squash(el.innerText) || null;
    const now = el.getAttribute('aria-valuenow');
    return now !== null ? now : null;
  }

  function statesOf(el, role, doc) {
    const out = [];
    const aria = (name) => el.getAttribute(name);
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox' || role === 'menuitemradio') {
      const checked = el.tagName === 'INPUT' ? (el.indeterminate ? 'mixed' : el.checked) : aria('aria-checked');
      if (checked === true || checked === 'true') out.push('checked');
      else if (checked === 'mixed') out.push('mixed');
    }
    if (el.disabled === true || aria('aria-disabled') === 'true') out.push('disabled');
    const expanded = el.tagName === 'SUMMARY' && el.parentElement && el.parentElement.tagName === 'DETAILS'
      ? String(el.parentElement.open) : aria('aria-expanded');
    if (expanded === 'true') out.push('expanded');
    else if (expanded === 'false') out.push('collapsed');
    if (el.tagName === 'OPTION' ? el.selected : aria('aria-selected') === 'true') out.push('selected');
    if (aria('aria-pressed') === 'true') out.push('pressed');
    if (el.required === true || aria('aria-required') === 'true') out.push('required');
    if (el.readOnly === true && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA')) out.push('readonly');
    if (doc.activeElement === el && doc.hasFocus()) out.push('focused');
    if (role === 'heading') {
      const level = /^H([1-6])$/.exec(el.tagName);
      out.unshift('level=' + (level ? level[1] : aria('aria-level') || '2'));
    }
    return out;
  }

  function linkTarget(el) {
    const href = el.href;
    if (typeof href !== 'string' || !href) return null;
    try {
      const url = new URL(href);
      const here = new URL(el.ownerDocument.location.href);
      if (url.origin !== here.origin) return url.href;
      // A place on this very page is its fragment, as the page's own markup writes it.
      if (url.hash && url.pathname === here.pathname && url.search === here.search) return url.hash;
      return url.pathname + url.search + url.hash;
    } catch (_) {
      return href;
    }
  }

  // Walks the tree below `root` and returns lines { depth, text }.
  function collect(root, baseDepth) {
    const lines = [];
    let pending = '';
    let pendingDepth = baseDepth;
    let more = 0;
    const push = (depth, text) => {
      if (lines.length >= MAX_LINES) { more++; return; }
      lines.push({ depth, text });
    };
    const flush = () => {
      const text = squash(pending);
      if (text) push(pendingDepth, 'text: ' + cut(text, MAX_TEXT));
      pending = '';
    };
    const addText = (text, depth) => {
      if (!/\S/.test(text)) { if (pending) pending += ' '; return; }
      if (pending && pendingDepth !== depth) flush();
      pendingDepth = depth;
      pending += text;
    };

    function emit(el, role, depth) {
      const doc = el.ownerDocument;
      // The ref comes first, as in the desktop's element list (`B3 button "Save"`): a bare
      // `e12` costs a model two tokens fewer than a bracketed one, on every element of the page.
      let line = refOf(el) + ' ' + role;
      const name = cut(nameOf(el, role), MAX_NAME);
      if (name) line += ' ' + quote(name);
      const value = valueOf(el, role);
      if (value !== null && value !== name) line += ' = ' + quote(cut(value, MAX_TEXT));
      const states = statesOf(el, role, doc);
      if (states.length) line += ' (' + states.join(', ') + ')';
      if (role === 'link') {
        const target = linkTarget(el);
        if (target) line += ' -> ' + cut(target, 200);
      }
      return line;
    }

    function children(node) {
      if (node.shadowRoot) return node.shadowRoot.childNodes;
      if (node.tagName === 'SLOT') {
        const assigned = node.assignedNodes({ flatten: true });
        if (assigned.length) return assigned;
      }
      return node.childNodes;
    }

    function walk(node, depth) {
      for (const child of children(node)) {
        if (child.nodeType === 3) { addText(child.data, depth); continue; }
        if (child.nodeType !== 1) continue;
        const el = child;
        if (SKIP.has(el.tagName)) continue;
        if (!visible(el)) continue;
        const role = roleOf(el);
        if (role === 'iframe') {
          flush();
          frame(el, depth);
        } else if (role && (role === 'combobox' || role === 'listbox') && el.tagName === 'SELECT') {
          flush();
          push(depth, emit(el, role, depth));
          const options = Array.from(el.options);
          options.slice(0, MAX_OPTIONS).forEach((o) => push(depth + 1, emit(o, 'option', depth + 1)));
          if (options.length > MAX_OPTIONS) {
            push(depth + 1, '… ' + (options.length - MAX_OPTIONS) + ' more options (select takes a value or label)');
          }
        } else if (role && LEAF.has(role)) {
          flush();
          push(depth, emit(el, role, depth));
        } else if (role && CONTAINER.has(role)) {
          flush();
          const at = lines.length;
          push(depth, emit(el, role, depth));
          walk(el, depth + 1);
          flush();
          // An unnamed container with nothing in it says nothing.
          if (lines.length === at + 1 && !/ "/.test(lines[at].text)) lines.pop();
        } else {
          const block = BLOCK.has(el.tagName);
          if (block) flush();
          walk(el, depth);
          if (block) flush();
        }
      }
    }

    function frame(el, depth) {
      let inner = null;
      try { inner = el.contentDocument; } catch (_) { inner = null; }
      const line = emit(el, 'iframe', depth);
      if (inner && inner.body) {
        push(depth, line);
        walk(inner.body, depth + 1);
        flush();
      } else {
        let src = el.getAttribute('src') || '';
        try { src = new URL(src, el.ownerDocument.baseURI).href; } catch (_) { /* keep as written */ }
        push(depth, line + ' (cross-origin' + (src ? ' ' + cut(src, 200) : '') + ', not inlined)');
      }
    }

    const start = root.nodeType === 9 ? root.body || root.documentElement : root;
    if (start) {
      const role = start.nodeType === 1 && start !== start.ownerDocument.body ? roleOf(start) : null;
      if (role && (LEAF.has(role) || CONTAINER.has(role) || role === 'iframe')) {
        // Scoped to one element: show it and what is inside it.
        const wrapper = { childNodes: [start] };
        walk(wrapper, baseDepth);
      } else {
        walk(start, baseDepth);
      }
    }
    flush();
    return { lines, more };
  }

  function find(args) {
    if (args.ref) {
      const weak = state.byRef.get(args.ref);
      const el = weak && weak.deref();
      if (!el) {
        throw new Error('no element with ref ' + args.ref + ' on this page (refs are reset when the page navigates; take a new snapshot)');
      }
      if (!el.isConnected) {
        throw new Error('the element ' + args.ref + ' is no longer on the page; take a new snapshot');
      }
      return el;
    }
    if (args.selector) {
      let found;
      try {
        found = document.querySelectorAll(args.selector);
      } catch (e) {
        throw new Error('`' + args.selector + '` is not a valid CSS selector: ' + e.message);
      }
      if (found.length === 0) throw new Error('no element matches the selector `' + args.selector + '`');
      if (found.length > 1) {
        throw new Error('the selector `' + args.selector + '` matches ' + found.length + ' elements; use a more specific one or a ref from a snapshot');
      }
      return found[0];
    }
    throw new Error('give `ref` (from a snapshot) or `selector`');
  }

  function describe(el) {
    const role = roleOf(el) || el.tagName.toLowerCase();
    const name = cut(nameOf(el, role), 60);
    return role + (name ? ' ' + quote(name) : '');
  }

  // Scrolls the element into view and returns the point to act on, in the top page's viewport.
  function locate(args) {
    const el = find(args);
    if (!visible(el)) throw new Error(describe(el) + ' is hidden');
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const rects = el.getClientRects();
    const rect = rects.length ? rects[0] : el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) throw new Error(describe(el) + ' has no size on the page');
    let x = rect.left + rect.width / 2;
    let y = rect.top + rect.height / 2;
    const hit = el.ownerDocument.elementFromPoint(x, y);
    let covered = null;
    if (hit && hit !== el && !el.contains(hit) && !(hit.control === el) && !(el.labels && Array.from(el.labels).includes(hit))) {
      covered = describe(hit);
    }
    // Up through same-origin frames to the top viewport.
    let win = el.ownerDocument.defaultView;
    while (win && win.frameElement) {
      const box = win.frameElement.getBoundingClientRect();
      x += box.left + (win.frameElement.clientLeft || 0);
      y += box.top + (win.frameElement.clientTop || 0);
      win = win.parent;
    }
    const disabled = el.disabled === true || el.getAttribute('aria-disabled') === 'true';
    return { x, y, element: describe(el), covered, disabled };
  }

  function prepareFill(args) {
    const el = find(args);
    if (!visible(el)) throw new Error(describe(el) + ' is hidden');
    const tag = el.tagName;
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (el.disabled) throw new Error(describe(el) + ' is disabled');
    if (tag === 'INPUT' && ['checkbox', 'radio', 'submit', 'reset', 'button', 'image', 'file', 'hidden'].includes(type)) {
      throw new Error(describe(el) + ' cannot be filled (an input of type ' + type + '); use click or select');
    }
    if (tag !== 'INPUT' && tag !== 'TEXTAREA' && !el.isContentEditable) {
      throw new Error(describe(el) + ' is not a text field');
    }
    if (el.readOnly) throw new Error(describe(el) + ' is read-only');
    el.scrollIntoView({ block: 'center', behavior: 'instant' });
    el.focus();
    const direct = ['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'];
    if (tag === 'INPUT' && direct.includes(type)) {
      el.value = args.value;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
      if (el.value !== args.value) throw new Error('`' + args.value + '` is not a valid value for ' + describe(el));
      return { typed: false, element: describe(el) };
    }
    if (tag === 'INPUT' || tag === 'TEXTAREA') {
      el.select();
      if (args.value === '') {
        el.value = '';
        el.dispatchEvent(new Event('input', { bubbles: true }));
        return { typed: false, element: describe(el) };
      }
    } else {
      const range = el.ownerDocument.createRange();
      range.selectNodeContents(el);
      const selection = el.ownerDocument.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    return { typed: true, element: describe(el) };
  }

  function focus(args) {
    const el = find(args);
    el.scrollIntoView({ block: 'center', behavior: 'instant' });
    el.focus();
    return { element: describe(el), focused: el.ownerDocument.activeElement === el };
  }

  function select(args) {
    const el = find(args);
    if (el.tagName !== 'SELECT') throw new Error(describe(el) + ' is not a select element; click its options instead');
    if (el.disabled) throw new Error(describe(el) + ' is disabled');
    const wanted = args.values;
    if (!el.multiple && wanted.length > 1) throw new Error(describe(el) + ' takes one value, not ' + wanted.length);
    const options = Array.from(el.options);
    const pick = (w) => options.find((o) => o.value === w) ||
      options.find((o) => squash(o.label || o.textContent) === w) ||
      options.find((o) => squash(o.label || o.textContent).toLowerCase() === w.toLowerCase());
    const chosen = wanted.map((w) => {
      const o = pick(w);
      if (!o) {
        const names = options.slice(0, 30).map((x) => quote(squash(x.label || x.textContent))).join(', ');
        throw new Error('no option `' + w + '` in ' + describe(el) + '; options: ' + names + (options.length > 30 ? ', …' : ''));
      }
      if (o.disabled) throw new Error('option `' + w + '` is disabled');
      return o;
    });
    options.forEach((o) => { o.selected = chosen.includes(o); });
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { element: describe(el), selected: chosen.map((o) => squash(o.label || o.textContent)) };
  }

  function scroll(args) {
    const dx = args.dx || 0;
    const dy = args.dy || 0;
    if (args.ref || args.selector) {
      const el = find(args);
      el.scrollBy({ left: dx, top: dy, behavior: 'instant' });
      return { element: describe(el), x: Math.round(el.scrollLeft), y: Math.round(el.scrollTop),
        height: el.scrollHeight, width: el.scrollWidth };
    }
    window.scrollBy({ left: dx, top: dy, behavior: 'instant' });
    const doc = document.scrollingElement || document.documentElement;
    return { element: 'page', x: Math.round(window.scrollX), y: Math.round(window.scrollY),
      height: doc.scrollHeight, width: doc.scrollWidth, viewport: window.innerHeight };
  }

  function text(args) {
    const el = args.ref || args.selector ? find(args) : document.body || document.documentElement;
    const raw = el ? (el.innerText !== undefined ? el.innerText : el.textContent) : '';
    const clean = (raw || '').replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
    return { text: clean, element: el === document.body ? 'page' : describe(el) };
  }

  function snapshot(args) {
    const root = args.ref || args.selector ? find(args) : document;
    const { lines, more } = collect(root, 0);
    const offset = Math.max(0, args.offset || 0);
    const budget = Math.max(200, args.max_chars || 16000);
    const out = [];
    let used = 0;
    let index = offset;
    for (; index < lines.length; index++) {
      const line = '  '.repeat(lines[index].depth) + lines[index].text;
      if (used + line.length + 1 > budget && out.length > 0) break;
      out.push(line);
      used += line.length + 1;
    }
    return {
      text: out.join('\n'),
      total: lines.length + more,
      shown: out.length,
      offset,
      next: index < lines.length ? index : null,
      more: lines.length - index + more,
    };
  }

  // Conditions for `wait`: true when met.
  function check(args) {
    if (args.ref || args.selector) {
      let el = null;
      try { el = find(args); } catch (_) { el = null; }
      const shown = !!el && visible(el) && el.getClientRects().length > 0;
      switch (args.state || 'visible') {
        case 'attached': return !!el;
        case 'detached': return !el;
        case 'hidden': return !shown;
        default: return shown;
      }
    }
    if (typeof args.text === 'string') {
      const body = document.body;
      const found = !!body && (body.innerText || '').includes(args.text);
      return args.state === 'hidden' || args.state === 'detached' ? !found : found;
    }
    return true;
  }

  const actions = { snapshot, locate, prepareFill, focus, select, scroll, text, check };
  return {
    run(name, args) {
      const action = actions[name];
      if (!action) return stringify({ error: 'unknown page action ' + name });
      try {
        return stringify({ ok: action(args || {}) });
      } catch (e) {
        return stringify({ error: String(e && e.message ? e.message : e) });
      }
    },
  };
})()
