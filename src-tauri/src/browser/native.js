// The native profile's evaluation helper: runs an expression for the driver and returns its
// value as JSON text (see `encode`). WebKitGTK's script evaluation (wry's eval_with_callback) hands back a
// value, but does not wait for a promise; a promise's settled value is kept here under the
// call's id (random, from Rust) and fetched by a second evaluation.
//
// Installed by an initialization script before the page's own scripts run, as a non-writable,
// non-configurable property of the page's global, so the builtins it uses are the page's
// originals even if the page replaces them later. There is no isolated world in this profile
// (wry does not expose WebKit's script worlds): a page can still read this object; it cannot
// replace it. See docs/security.md.
(() => {
  'use strict';
  const stringify = JSON.stringify;
  const resolve = Promise.resolve.bind(Promise);
  const then = Promise.prototype.then;
  const settled = new Map();
  const describe = (e) => {
    try {
      return String(e && e.message ? e.message : e);
    } catch (_) {
      return 'an exception that cannot be shown';
    }
  };
  // Answers are one string: `v` and the value's JSON, `e` and an error message, or `p` for a
  // promise still pending (one layer of JSON less than an object would need).
  const encode = (v) => {
    try {
      const text = stringify(v === undefined ? null : v);
      return text === undefined ? 'vnull' : 'v' + text;
    } catch (e) {
      return 'ethe value cannot be turned into JSON: ' + describe(e);
    }
  };
  // Trusted input events this document has seen, by type: input the driver hands to GTK
  // arrives as these, and it waits on the count before its next step.
  const seen = { keyup: 0, mouseup: 0, mousemove: 0 };
  for (const type of Object.keys(seen)) {
    globalThis.addEventListener(type, (e) => {
      if (e.isTrusted) seen[type] += 1;
    }, true);
  }
  return Object.freeze({
    seen(type) {
      return Object.prototype.hasOwnProperty.call(seen, type) ? seen[type] : -1;
    },
    run(id, f) {
      let v;
      try {
        v = f();
      } catch (e) {
        return 'e' + describe(e);
      }
      if (v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function') {
        settled.set(id, null);
        then.call(
          resolve(v),
          (x) => settled.set(id, encode(x)),
          (e) => settled.set(id, 'e' + describe(e)),
        );
        return 'p';
      }
      return encode(v);
    },
    take(id) {
      if (!settled.has(id)) return 'ethe page changed before the promise settled';
      const got = settled.get(id);
      if (got === null) return 'p';
      settled.delete(id);
      return got;
    },
  });
})()
