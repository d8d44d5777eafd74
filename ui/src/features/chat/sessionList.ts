// The session list's pure parts: titles, the list after a rename or a delete, and the usage
// line of the conversation header.

import type { ChatSessionSummary, ChatUsage } from "../../gen";

export const UNTITLED = "Untitled chat";

export function displayTitle(session: Pick<ChatSessionSummary, "title">): string {
  return session.title?.trim() || UNTITLED;
}

/** The list with `renamed` in place of the session of the same id (its place kept). */
export function withRenamed<T extends ChatSessionSummary>(list: T[], renamed: ChatSessionSummary): T[] {
  return list.map((session) => (session.id === renamed.id ? { ...session, title: renamed.title } : session));
}

/** `1234` → `1.2k`, `2500000` → `2.5M`. */
export function formatTokens(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0).replace(/\.0$/, "")}k`;
  }
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, "")}M`;
}

/** The header's short usage line, or null before the session used any tokens. */
export function usageLabel(usage: ChatUsage | null): string | null {
  if (!usage || (usage.input_tokens === 0 && usage.output_tokens === 0)) {
    return null;
  }
  return `${formatTokens(usage.input_tokens)} in · ${formatTokens(usage.output_tokens)} out`;
}

/** The longer description for screen readers and the tooltip. */
export function usageDescription(usage: ChatUsage): string {
  const context =
    usage.context_tokens === null ? "" : `; the last call read ${usage.context_tokens.toLocaleString("en")} tokens of context`;
  return `This chat used ${usage.input_tokens.toLocaleString("en")} input and ${usage.output_tokens.toLocaleString("en")} output tokens${context}.`;
}
