// The window's first paint needs no script. `npm run build` renders the shell and the chat view
// (the first view of every launch) into dist/index.html with Svelte's server renderer
// (scripts/prerender.mjs runs this module after the client build), so WebKit paints the chat view
// as soon as it has parsed the page and its stylesheet. The app's script starts one frame later
// and hydrates that markup (main.ts) instead of building it again: the paint never waits on
// parsing and running the bundle, and nothing is drawn twice.
import { render } from "svelte/server";
import App from "./App.svelte";
import { paintRememberedTheme } from "./lib/theme";

/** The markup of the app as a launch first shows it: the chat view, before the core answers. */
export function renderApp(): string {
  return render(App).body;
}

/** The client build's entry script: `<script type="module" crossorigin src="...">` in the head. */
const ENTRY = /\s*<script type="module"[^>]*\ssrc="([^"]+)"[^>]*><\/script>/;
const MOUNT = '<div id="app"></div>';

/**
 * The client build's `html` with `body` (from `renderApp`) in its mount point, the remembered
 * theme applied before anything paints, and the entry script loaded after the first frame
 * (a module script in the head would run before WebKit's first paint). Throws when the page is
 * not the one Vite builds from index.html, so a changed template fails the build, not the start.
 */
export function prerenderedPage(html: string, body: string): string {
  const entry = ENTRY.exec(html);
  if (!entry) {
    throw new Error("prerender: no module entry script in the built index.html");
  }
  for (const needed of [MOUNT, "</title>"]) {
    if (!html.includes(needed)) {
      throw new Error(`prerender: no ${needed} in the built index.html`);
    }
  }
  const src = JSON.stringify(entry[1]);
  // Inline scripts: the Tauri build puts their hashes into the page's CSP (script-src).
  const theme = `<script>(${paintRememberedTheme.toString()})();</script>`;
  const start =
    "<script>globalThis.__OSPREY_PAINT_PROBE__?.();" +
    `requestAnimationFrame(() => { const s = document.createElement("script"); s.type = "module"; s.src = ${src}; document.head.append(s); });` +
    "</script>";
  // Replacer functions: a `$` in the markup or the scripts is not a replacement pattern.
  return html
    .replace(entry[0], () => "")
    // Before the stylesheet: an inline script after one waits for it to load.
    .replace("</title>", () => `</title>\n    ${theme}`)
    .replace(MOUNT, () => `<div id="app">${body}</div>\n    ${start}`);
}
