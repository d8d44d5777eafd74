// The native profile's pointer and keyboard input: DOM events synthesized in the page (the
// events a real click or key press dispatches, in the same order), not input through the window
// system. Reasons: it works while the window is covered, minimized or on another workspace, and
// it never moves the person's own pointer or types into whatever window they are using. The
// cost: the events are untrusted (`isTrusted` is false), so a page that checks it, or a browser
// feature that needs a user gesture (pop-ups, clipboard, full screen, file pickers), does not
// respond; use the managed profile for those (docs/architecture.md). On Linux, input is GTK
// events of the page's window instead (browser/webkit.rs): trusted, with a user activation; it
// comes here only where WebKit cannot take it (a hidden window) and for `fill`.
//
// The value of this file is a function (op, args) run in the page; it returns true or throws.
((op, a) => {
  'use strict';
  const doc = document;
  const view = doc.defaultView;
  const mods = (a && a.modifiers) || {};
  const mouse = (el, type, x, y, detail, buttons) =>
    el.dispatchEvent(new MouseEvent(type, {
      bubbles: true, cancelable: true, composed: true, view, clientX: x, clientY: y,
      screenX: x, screenY: y, detail, button: 0, buttons,
      ctrlKey: !!mods.ctrl, shiftKey: !!mods.shift, altKey: !!mods.alt, metaKey: !!mods.meta,
    }));
  const pointer = (el, type, x, y, buttons) => {
    if (typeof PointerEvent !== 'function') return true;
    return el.dispatchEvent(new PointerEvent(type, {
      bubbles: true, cancelable: true, composed: true, view, clientX: x, clientY: y,
      pointerId: 1, pointerType: 'mouse', isPrimary: true,
      button: type === 'pointermove' || type === 'pointerover' ? -1 : 0, buttons,
    }));
  };
  const focusable = 'input,textarea,select,button,a[href],[tabindex],[contenteditable]:not([contenteditable="false"])';
  const textField = (el) => !!el && (el.tagName === 'TEXTAREA' ||
    (el.tagName === 'INPUT' && !['checkbox', 'radio', 'submit', 'reset', 'button', 'image', 'file', 'hidden', 'range', 'color'].includes((el.type || '').toLowerCase())));
  const active = () => {
    let el = doc.activeElement;
    // Into same-origin frames, as focus goes.
    while (el && el.tagName === 'IFRAME') {
      try {
        const inner = el.contentDocument && el.contentDocument.activeElement;
        if (!inner) break;
        el = inner;
      } catch (_) {
        break;
      }
    }
    return el || doc.body;
  };
  const key = (el, type, k) => el.dispatchEvent(new KeyboardEvent(type, {
    bubbles: true, cancelable: true, composed: true, view, key: k.key, code: k.code || '',
    keyCode: k.keyCode || 0, which: k.keyCode || 0, charCode: type === 'keypress' ? (k.keyCode || 0) : 0,
    ctrlKey: !!mods.ctrl, shiftKey: !!mods.shift, altKey: !!mods.alt, metaKey: !!mods.meta,
  }));
  const insert = (el, text) => {
    const owner = (el && el.ownerDocument) || doc;
    if (textField(el)) {
      const before = el.value;
      let done = false;
      try {
        done = owner.execCommand('insertText', false, text) && el.value !== before;
      } catch (_) {
        done = false;
      }
      if (!done && text) {
        el.dispatchEvent(new InputEvent('beforeinput', { bubbles: true, cancelable: true, inputType: 'insertText', data: text }));
        try {
          const start = el.selectionStart ?? el.value.length;
          const end = el.selectionEnd ?? start;
          el.setRangeText(text, start, end, 'end');
        } catch (_) {
          el.value = before + text;
        }
        el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: text }));
      }
      return;
    }
    if (el && el.isContentEditable) {
      owner.execCommand('insertText', false, text);
      return;
    }
    throw new Error('the focused element does not take text; fill or click a text field first');
  };
  const charKey = (ch) => ({ key: ch, keyCode: ch.toUpperCase().charCodeAt(0) });
  const typeOne = (ch) => {
    const el = active();
    const k = charKey(ch);
    if (key(el, 'keydown', k) && key(el, 'keypress', k)) insert(el, ch);
    key(el, 'keyup', k);
  };
  const moveFocus = (back) => {
    const all = Array.from(doc.querySelectorAll(focusable)).filter((e) =>
      !e.disabled && e.tabIndex >= 0 && e.getClientRects().length > 0);
    if (!all.length) return;
    const i = all.indexOf(doc.activeElement);
    const next = back ? (i <= 0 ? all.length - 1 : i - 1) : (i + 1) % all.length;
    all[next].focus();
  };
  const NAMED = {
    Enter: 13, Tab: 9, Escape: 27, Backspace: 8, Delete: 46, ArrowLeft: 37, ArrowUp: 38,
    ArrowRight: 39, ArrowDown: 40, Home: 36, End: 35, PageUp: 33, PageDown: 34, ' ': 32,
  };

  if (op === 'click' || op === 'move') {
    const el = doc.elementFromPoint(a.x, a.y);
    if (!el) throw new Error('there is nothing at ' + a.x + ', ' + a.y + ' in the viewport');
    pointer(el, 'pointerover', a.x, a.y, 0);
    mouse(el, 'mouseover', a.x, a.y, 0, 0);
    pointer(el, 'pointermove', a.x, a.y, 0);
    mouse(el, 'mousemove', a.x, a.y, 0, 0);
    if (op === 'move') return true;
    for (let i = 1; i <= (a.count || 1); i++) {
      pointer(el, 'pointerdown', a.x, a.y, 1);
      if (mouse(el, 'mousedown', a.x, a.y, i, 1)) {
        const target = el.closest(focusable);
        if (target && typeof target.focus === 'function') target.focus();
      }
      pointer(el, 'pointerup', a.x, a.y, 0);
      mouse(el, 'mouseup', a.x, a.y, i, 0);
      // A dispatched click runs the element's activation (links follow, boxes toggle, submit
      // buttons submit) as a real one does.
      mouse(el, 'click', a.x, a.y, i, 0);
    }
    if ((a.count || 1) >= 2) mouse(el, 'dblclick', a.x, a.y, 2, 0);
    return true;
  }
  if (op === 'insert') {
    insert(active(), a.text);
    return true;
  }
  if (op === 'type') {
    for (const ch of a.text) {
      if (ch === '\n') {
        const el = active();
        const k = { key: 'Enter', code: 'Enter', keyCode: 13 };
        if (key(el, 'keydown', k) && el.tagName === 'TEXTAREA') insert(el, '\n');
        key(el, 'keyup', k);
      } else {
        typeOne(ch);
      }
    }
    return true;
  }
  if (op === 'press') {
    const name = a.key;
    const el = active();
    const code = NAMED[name] || (name.length === 1 ? name.toUpperCase().charCodeAt(0) : 0);
    const k = { key: name, code: name.length === 1 ? 'Key' + name.toUpperCase() : name, keyCode: code };
    const proceed = key(el, 'keydown', k);
    const command = mods.ctrl || mods.meta;
    if (proceed) {
      if (command && name.toLowerCase() === 'a') {
        if (textField(el)) el.select(); else doc.execCommand('selectAll');
      } else if (name === 'Enter') {
        key(el, 'keypress', k);
        if (el.tagName === 'TEXTAREA' || el.isContentEditable) {
          insert(el, '\n');
        } else if (el.tagName === 'INPUT' && el.form) {
          // Implicit submission, as Enter in a text field does.
          if (typeof el.form.requestSubmit === 'function') el.form.requestSubmit(); else el.form.submit();
        } else if (el.tagName === 'A' || el.tagName === 'BUTTON') {
          el.click();
        }
      } else if (name === 'Tab') {
        moveFocus(!!mods.shift);
      } else if (name === 'Backspace' || name === 'Delete') {
        const owner = el.ownerDocument || doc;
        owner.execCommand(name === 'Backspace' ? 'delete' : 'forwardDelete');
      } else if (name === ' ' && (el.tagName === 'BUTTON' || (el.tagName === 'INPUT' && !textField(el)))) {
        el.click();
      } else if (name.length === 1 && !command && !mods.alt) {
        if (key(el, 'keypress', k)) insert(el, mods.shift ? name.toUpperCase() : name);
      }
    }
    key(el, 'keyup', k);
    return true;
  }
  throw new Error('unknown input ' + op);
})
