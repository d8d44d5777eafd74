// Which links in a reply may leave the app. Kept apart from markdown.ts so the chat view's click
// handler does not pull markdown-it and highlight.js into the first script the window loads.

/** Schemes a link may open in the system browser (markdown-it has already dropped the dangerous ones). */
export const OPENABLE = /^(https?:|mailto:)/i;

/** Whether a link's address may be handed to the system browser. */
export function isOpenableLink(href: string | null | undefined): href is string {
  return !!href && OPENABLE.test(href.trim());
}
