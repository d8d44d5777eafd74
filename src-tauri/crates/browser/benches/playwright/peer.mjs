// The Playwright baseline for osprey-browser's snapshot bench: playwright-core drives the same
// system Chromium on the same page. The snapshot is `page.ariaSnapshot({mode: "ai"})`, the one
// Playwright makes for agents (element refs to act on, as ours has). One command per stdin line,
// one answer per stdout line, so the bench times each step from Rust in the same run:
//   navigate      -> goto the page, then its snapshot    -> "ok <characters>"
//   snapshot      -> the snapshot of the loaded page      -> "ok <characters>"
//   text          -> the snapshot itself, on one line (a JSON string)
//   text-default  -> the default aria snapshot (no refs), the same way
//   tokens <JSON string> -> "ok <Claude tokens> <o200k tokens>": the string's length in tokens by
//                    Anthropic's and OpenAI's tokenizers (tokens.mjs)
// Usage: node peer.mjs <chromium executable> <page url>
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";
import { tokens } from "./tokens.mjs";

const [executablePath, url] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu"],
});
const page = await browser.newPage();
await page.goto(url);

const snapshot = () => page.ariaSnapshot({ mode: "ai" });
const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
for await (const line of lines) {
  try {
    if (line === "navigate") {
      await page.goto(url);
      process.stdout.write(`ok ${(await snapshot()).length}\n`);
    } else if (line === "snapshot") {
      process.stdout.write(`ok ${(await snapshot()).length}\n`);
    } else if (line === "text") {
      process.stdout.write(`${JSON.stringify(await snapshot())}\n`);
    } else if (line === "text-default") {
      process.stdout.write(`${JSON.stringify(await page.ariaSnapshot())}\n`);
    } else if (line.startsWith("tokens ")) {
      process.stdout.write(`${tokens(JSON.parse(line.slice("tokens ".length)))}\n`);
    } else {
      process.stdout.write(`error unknown command ${line}\n`);
    }
  } catch (error) {
    process.stdout.write(`error ${String(error).replace(/\n/g, " ")}\n`);
  }
}
await browser.close();
