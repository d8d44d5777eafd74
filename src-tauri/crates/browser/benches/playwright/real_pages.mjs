// The snapshot's size on real pages, beside Playwright's: Osprey's page script (`snapshot.js`,
// the same file every profile runs) and Playwright's `ariaSnapshot` (its agent mode with refs,
// and its default one) on each page, in the same headless Chromium, counted in tokens by
// Anthropic's published tokenizer; and how much of the page's words (its `innerText`) each
// snapshot keeps, since ours cuts a text line at 300 characters (the `text` action reads a page
// in full); and ours with no line cut, to compare like with like.
//
// Usage: node real_pages.mjs <chromium> <folder> <page under it>...
// e.g. node real_pages.mjs /usr/bin/chromium /usr/share/doc nodejs/api/url.html python3/python-policy.html
// The folder is served on a loopback port for the run.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { countTokens } from "@anthropic-ai/tokenizer";
import { chromium } from "playwright-core";

const [executablePath, folder, ...pages] = process.argv.slice(2);
if (!folder || pages.length === 0) {
  console.error("usage: node real_pages.mjs <chromium> <folder> <page under it>...");
  process.exit(2);
}
const script = readFileSync(new URL("../../src/snapshot.js", import.meta.url), "utf8");
const uncut = script.replace("const MAX_TEXT = 300;", "const MAX_TEXT = 1e9;");
if (uncut === script) throw new Error("snapshot.js no longer sets MAX_TEXT = 300; update this script");
const types = { ".html": "text/html", ".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml", ".png": "image/png" };
const server = createServer((request, response) => {
  const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname));
  try {
    const body = readFileSync(join(folder, path));
    response.writeHead(200, { "content-type": types[extname(path)] || "application/octet-stream" });
    response.end(body);
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((ready) => server.listen(0, "127.0.0.1", ready));
const base = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
const page = await browser.newPage();
const words = (text) => {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[a-z0-9_]{4,}/g) || []) counts.set(word, (counts.get(word) || 0) + 1);
  return counts;
};
const kept = (snapshot, all) => {
  const have = words(snapshot);
  let total = 0;
  let found = 0;
  for (const [word, n] of all) {
    total += n;
    found += Math.min(n, have.get(word) || 0);
  }
  return `${((100 * found) / Math.max(total, 1)).toFixed(0)}%`;
};
const sums = [0, 0, 0, 0];
console.log("page | ours (tokens, words kept) | Playwright ai | Playwright default | ours, no line cut");
for (const path of pages) {
  await page.goto(base + path);
  const snapshot = (source) =>
    page.evaluate(
      (source) => JSON.parse((0, eval)(source).run("snapshot", { max_chars: 10_000_000 })).ok.text,
      source,
    );
  const ours = await snapshot(script);
  const whole = await snapshot(uncut);
  const ai = await page.ariaSnapshot({ mode: "ai" });
  const plain = await page.ariaSnapshot();
  const all = words(await page.evaluate(() => document.body.innerText));
  const tokens = [ours, ai, plain, whole].map((text) => countTokens(text));
  tokens.forEach((n, i) => (sums[i] += n));
  const ratio = (n) => `${n} (ours ${(tokens[0] / n).toFixed(2)}x)`;
  console.log(
    `${path} | ${tokens[0]}, ${kept(ours, all)} | ${ratio(tokens[1])}, ${kept(ai, all)} | ` +
      `${ratio(tokens[2])}, ${kept(plain, all)} | ${tokens[3]} (${(tokens[3] / tokens[2]).toFixed(2)}x the default), ${kept(whole, all)}`,
  );
}
console.log(
  `all ${pages.length} | ${sums[0]} | ${sums[1]} (ours ${(sums[0] / sums[1]).toFixed(2)}x) | ` +
    `${sums[2]} (ours ${(sums[0] / sums[2]).toFixed(2)}x) | ${sums[3]} (${(sums[3] / sums[2]).toFixed(2)}x the default)`,
);
await browser.close();
server.close();
