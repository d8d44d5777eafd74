// Tokens as two real tokenizers count them: Anthropic's published one (@anthropic-ai/tokenizer;
// exact for Claude's older models, an approximation for newer ones) and OpenAI's o200k encoding
// (gpt-tokenizer; exact for GPT-4o and later). Imported by peer.mjs; run on its own (the screen
// bench does), it reads one JSON string per stdin line and answers "ok <Claude> <o200k>" per line.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { countTokens as claudeTokens } from "@anthropic-ai/tokenizer";
import { countTokens as o200kTokens } from "gpt-tokenizer/encoding/o200k_base";

export const tokens = (text) => `ok ${claudeTokens(text)} ${o200kTokens(text)}`;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for await (const line of createInterface({ input: process.stdin })) {
    process.stdout.write(`${tokens(JSON.parse(line))}\n`);
  }
}
