import { describe, expect, it } from "vitest";
import { prerenderedPage, renderApp } from "./prerender";

// What `vite build` writes from index.html.
const BUILT = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <title>Osprey</title>
    <script type="module" crossorigin src="/assets/index-AbC123.js"></script>
    <link rel="stylesheet" crossorigin href="/assets/index-XyZ.css">
  </head>
  <body>
    <div id="app"></div>
  </body>
</html>
`;

describe("prerender", () => {
  it("renders the shell and the chat view with hydration markers", () => {
    const body = renderApp();
    expect(body).toContain('aria-label="Main"');
    expect(body).toContain('id="chat-heading"');
    expect(body).toContain('data-testid="chat-input"');
    // Svelte's markers are what lets main.ts hydrate this markup instead of building it again.
    expect(body.startsWith("<!--[-->")).toBe(true);
  });

  it("puts the markup in the mount point and starts the app after the first frame", () => {
    const page = prerenderedPage(BUILT, "<p>chat $& view</p>");
    const head = page.slice(0, page.indexOf("</head>"));
    // The entry no longer runs before the first paint...
    expect(page).not.toContain('<script type="module" crossorigin src="/assets/index-AbC123.js">');
    // ...the theme is on the root before it, and the stylesheet stays where it was.
    const theme = head.indexOf("<script>(function paintRememberedTheme()");
    const stylesheet = head.indexOf('<link rel="stylesheet" crossorigin href="/assets/index-XyZ.css">');
    expect(theme).toBeGreaterThan(head.indexOf("</title>"));
    // Before the stylesheet, which an inline script after it would wait for.
    expect(stylesheet).toBeGreaterThan(theme);
    // `$&` is text, not a replacement pattern.
    expect(page).toContain('<div id="app"><p>chat $& view</p></div>');
    const start = page.slice(page.indexOf('<div id="app">'));
    expect(start).toMatch(/<\/div>\s*<script>globalThis\.__OSPREY_PAINT_PROBE__\?\.\(\);requestAnimationFrame\(/);
    expect(start).toContain('s.src = "/assets/index-AbC123.js"');
  });

  it("fails the build when the page is not the one it knows", () => {
    expect(() => prerenderedPage(BUILT.replace(/<script type="module"[^\n]*\n/, ""), "x")).toThrow(
      /no module entry script/,
    );
    expect(() => prerenderedPage(BUILT.replace('<div id="app"></div>', "<main></main>"), "x")).toThrow(
      /no <div id="app"><\/div>/,
    );
  });
});
