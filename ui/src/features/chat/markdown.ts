// Assistant messages as markdown, rendered to HTML that is safe to insert: markdown-it with raw
// HTML off (a `<script>` in the model's text is shown as text) and its link validation (no
// `javascript:`, `vbscript:`, `file:` or non-image `data:` links). Code blocks get a header with
// the language and a Copy button; ChatView handles the button and the links by delegation
// (links open in the system browser, never in the app's window).
//
// Streaming: the text is rendered again as it grows, and markdown-it renders unfinished input
// (an unclosed fence is a code block to the end, an unclosed `**` stays literal), so a half
// message always shows sensibly.

import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
// No images from a reply: a remote one would be fetched unasked (the page's CSP refuses it, so it
// would show broken), and a prompt-injected model could name an address carrying data. Such
// markdown shows as a link to the image instead.
md.disable("image");

/** Schemes a link may open in the system browser (markdown-it has already dropped the dangerous ones). */
const OPENABLE = /^(https?:|mailto:)/i;

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const lang = token.info.trim().split(/\s+/)[0] ?? "";
  const label = lang ? md.utils.escapeHtml(lang) : "text";
  const langClass = lang ? ` class="language-${md.utils.escapeHtml(lang)}"` : "";
  return (
    `<div class="code-block">` +
    `<div class="code-head"><span class="code-lang">${label}</span>` +
    `<button type="button" class="code-copy" data-testid="code-copy" aria-label="Copy the ${label} code">Copy</button></div>` +
    `<pre><code${langClass}>${md.utils.escapeHtml(token.content)}</code></pre></div>\n`
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

/** Whether a link's address may be handed to the system browser. */
export function isOpenableLink(href: string | null | undefined): href is string {
  return !!href && OPENABLE.test(href.trim());
}
