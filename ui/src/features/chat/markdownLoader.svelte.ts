// markdown-it and highlight.js load in their own chunk, once the chat view has something to
// format or is about to: they are about half of the UI's script and hold about 4 MiB of the
// page's memory once loaded, which a window idle in the tray with an empty chat does not need.
// `preloadMarkdown` is called when the person starts writing a message (the reply is seconds
// away; the chunk loads in tens of milliseconds) or the transcript holds anything (a turn
// started elsewhere); a session's history waits for `loadMarkdown` before it is shown, so a
// reply never flashes as plain text first. A reply that arrives before the chunk shows as plain
// text until then and is formatted the moment it lands.

import { LazyImport } from "../../lib/lazyImport.svelte";

type Markdown = typeof import("./markdown");

const renderer = new LazyImport<Markdown>(() => import("./markdown"));

/** The renderer, loading it on the first call; every call shares the one import. */
export function loadMarkdown(): Promise<Markdown> {
  return renderer.load();
}

/** The renderer once loaded, or null; reading it in a template re-renders when it arrives. */
export function markdown(): Markdown | null {
  return renderer.value;
}

let requested = false;

/** Starts the import one frame after the first call, so it never delays the frame that shows
 * what asked for it; later calls do nothing (a failed import may be asked for again). */
export function preloadMarkdown(): void {
  if (requested) return;
  requested = true;
  requestAnimationFrame(() =>
    setTimeout(
      () =>
        void loadMarkdown().catch(() => {
          requested = false;
        }),
      0,
    ),
  );
}

/** Whether the chat view has text to format now or soon: a message being written, or a
 * transcript with anything in it. */
export function markdownWanted(draft: string, entries: number): boolean {
  return draft.length > 0 || entries > 0;
}
