// Keeps the keyboard inside a modal: Tab from the last control goes to the first, Shift+Tab from
// the first to the last, and Escape runs the dialog's own way out. A plain overlay needs this
// (a native <dialog> would do it, but the dialogs are overlays so they render the same in every
// webview); without it Tab walks into the page behind the backdrop, which a screen reader user
// cannot see is covered.

/** What can take the focus inside a dialog, in document order. */
export const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

/**
 * Where Tab should go from `current` (an index into `count` focusable elements, -1 when the focus
 * is outside them): the next one, or the previous one with Shift, wrapping at both ends; `null`
 * when there is nothing to focus. The dialog moves the focus itself rather than leaving the
 * middle steps to the browser, whose Tab order may skip an element this list holds and so step
 * out of the dialog.
 */
export function wrappedFocus(count: number, current: number, backwards: boolean): number | null {
  if (count === 0) return null;
  if (current < 0) return backwards ? count - 1 : 0;
  return (current + (backwards ? count - 1 : 1)) % count;
}

/** A Svelte action: `use:trapFocus={{ onEscape }}` on the dialog's panel. */
export function trapFocus(node: HTMLElement, options: { onEscape?: () => void } = {}) {
  let current = options;
  function onKeydown(event: KeyboardEvent) {
    if (event.key === "Escape" && current.onEscape) {
      event.preventDefault();
      event.stopPropagation();
      current.onEscape();
      return;
    }
    // Shift+Tab arrives on GTK as ISO_Left_Tab, which WebKitGTK may report as key
    // "Unidentified": the key code still says Tab.
    if (event.key !== "Tab" && event.code !== "Tab" && event.keyCode !== 9) return;
    const elements = [...node.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((e) => e.getClientRects().length > 0);
    const active = document.activeElement instanceof HTMLElement ? elements.indexOf(document.activeElement) : -1;
    event.preventDefault();
    const next = wrappedFocus(elements.length, active, event.shiftKey);
    if (next !== null) elements[next].focus();
  }
  // On the document, in the capture phase: the focus may have left the panel (a click on the
  // backdrop), and Tab must still come back into it.
  document.addEventListener("keydown", onKeydown, true);
  return {
    update(next: { onEscape?: () => void }) {
      current = next;
    },
    destroy() {
      document.removeEventListener("keydown", onKeydown, true);
    },
  };
}
