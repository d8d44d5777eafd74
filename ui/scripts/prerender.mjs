// After `vite build`: renders the first view into dist/index.html (src/prerender.ts says why).
// Builds src/prerender.ts for Node with Vite's SSR build into node_modules/.osprey-prerender
// (where its imports resolve), renders, and rewrites the built page.
import { readFile, rm, writeFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "vite";

const ui = fileURLToPath(new URL("..", import.meta.url));
const outDir = `${ui}node_modules/.osprey-prerender`;
const page = `${ui}dist/index.html`;

await build({
  root: ui,
  logLevel: "warn",
  build: { ssr: "src/prerender.ts", outDir, emptyOutDir: true },
});
try {
  const { prerenderedPage, renderApp } = await import(pathToFileURL(`${outDir}/prerender.js`).href);
  await writeFile(page, prerenderedPage(await readFile(page, "utf8"), renderApp()));
  console.log(`prerender: the chat view is in ${page}`);
} finally {
  await rm(outDir, { recursive: true, force: true });
}
