// markdown-it and highlight.js load after the window's first paint, in their own chunk: the
// chat view a launch shows first has no reply to format yet, and they are about half of the
// UI's script. `startLoading` is called once the first view is on screen; a session's history
// waits for `loadMarkdown` before it is shown, so a reply never flashes as plain text first. A
// reply that arrives before the chunk (a very fast first turn) shows as plain text until then
// and is formatted the moment it lands.

type Markdown = typeof import("./markdown");

let loaded = $state<Markdown | null>(null);
let pending: Promise<Markdown> | null = null;

/** The renderer, loading it on the first call; every call shares the one import. */
export function loadMarkdown(): Promise<Markdown> {
  pending ??= import("./markdown").then(
    (module) => (loaded = module),
    (reason: unknown) => {
      // A failed import (the app's files changed under it) may be tried again by the next call.
      pending = null;
      throw reason;
    },
  );
  return pending;
}

/** The renderer once loaded, or null; reading it in a template re-renders when it arrives. */
export function markdown(): Markdown | null {
  return loaded;
}

/** Starts the import after the next frame, so it never delays the frame that shows the view. */
export function startLoadingAfterPaint(): void {
  requestAnimationFrame(() => setTimeout(() => void loadMarkdown().catch(() => undefined), 0));
}
