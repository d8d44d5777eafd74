// Assistant messages as markdown, rendered to HTML that is safe to insert: markdown-it with raw
// HTML off (a `<script>` in the model's text is shown as text) and its link validation (no
// `javascript:`, `vbscript:`, `file:` or non-image `data:` links). Code blocks get a header with
// the language and a Copy button; ChatView handles the button and the links by delegation
// (links open in the system browser, never in the app's window).
//
// Syntax colours: highlight.js's core with the languages people paste most (about 60 kB
// minified for core and these, against 900 kB+ for the full set). hljs escapes the code it
// wraps in <span class="hljs-…"> itself; a language it does not know, or a block with none, is
// escaped by markdown-it and shown plain. The colours (app.css, `--hl-*`) pass WCAG AA on the
// code block's background in both themes (contrast.test.ts).
//
// Streaming: the text is rendered again as it grows, and markdown-it renders unfinished input
// (an unclosed fence is a code block to the end, an unclosed `**` stays literal), so a half
// message always shows sensibly.
//
// This module is about half of the UI's script, so the window does not load it before its first
// paint: ChatView reaches it through markdownLoader.svelte.ts.

import MarkdownIt from "markdown-it";
import { OPENABLE } from "./links";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

// `ini` also answers to `toml`; `xml` to `html` and `svg`; `bash` to `sh` and `zsh`.
for (const [name, language] of Object.entries({
  bash, c, cpp, css, diff, go, ini, javascript, json, python, rust, shell, sql, typescript, xml, yaml,
})) {
  hljs.registerLanguage(name, language);
}

/** The code as highlighted HTML (escaped by hljs), or null when the language is not one we know. */
export function highlightCode(code: string, lang: string): string | null {
  const name = lang.toLowerCase();
  if (!name || !hljs.getLanguage(name)) {
    return null;
  }
  try {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  } catch {
    return null;
  }
}

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
// No images from a reply: a remote one would be fetched unasked (the page's CSP refuses it, so it
// would show broken), and a prompt-injected model could name an address carrying data. Such
// markdown shows as a link to the image instead.
md.disable("image");

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const lang = token.info.trim().split(/\s+/)[0] ?? "";
  const label = lang ? md.utils.escapeHtml(lang) : "text";
  const highlighted = highlightCode(token.content, lang);
  const langClass = lang ? ` class="${highlighted === null ? "" : "hljs "}language-${md.utils.escapeHtml(lang)}"` : "";
  return (
    `<div class="code-block">` +
    `<div class="code-head"><span class="code-lang">${label}</span>` +
    `<button type="button" class="code-copy" data-testid="code-copy" aria-label="Copy the ${label} code">Copy</button></div>` +
    `<pre><code${langClass}>${highlighted ?? md.utils.escapeHtml(token.content)}</code></pre></div>\n`
  );
};

const defaultLinkOpen =
  md.renderer.rules.link_open ??
  ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));

md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const href = String(token.attrGet("href") ?? "");
  if (OPENABLE.test(href)) {
    token.attrSet("title", href);
    token.attrSet("rel", "noopener noreferrer");
    token.attrSet("data-external", "true");
  }
  return defaultLinkOpen(tokens, idx, options, env, self);
};

// Tables scroll sideways inside the message instead of widening it.
md.renderer.rules.table_open = () => `<div class="table-wrap"><table>\n`;
md.renderer.rules.table_close = () => `</table></div>\n`;

/** The message's HTML: raw HTML escaped, unsafe links left as text. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

// While a reply streams the transcript is rendered again at every delta; finished messages come
// from here instead of being parsed again.
const cache = new Map<string, string>();
const CACHE_SIZE = 200;

/** `renderMarkdown`, remembering the last few hundred messages. */
export function renderMarkdownCached(text: string): string {
  let html = cache.get(text);
  if (html === undefined) {
    html = renderMarkdown(text);
    cache.set(text, html);
    if (cache.size > CACHE_SIZE) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) {
        cache.delete(oldest);
      }
    }
  }
  return html;
}
