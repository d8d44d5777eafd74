// The chat transcript as plain data, and how each core event changes it. Pure functions, so the
// streaming logic is unit-tested without a webview; ChatView only renders what these return.

import type { CoreEvent, ToolResult, TranscriptItem } from "../../gen";

export type ToolStatus = "running" | "done" | "failed";

/** One entry on screen. Streaming appends to the last entry when it is of the same kind. */
export type Entry =
  | { kind: "user"; text: string }
  /** An image the person attached (a `data:` URL), shown above their text. */
  | { kind: "user_image"; image: string }
  | { kind: "assistant"; text: string }
  | { kind: "thinking"; text: string }
  | {
      kind: "tool_call";
      callId: string;
      name: string;
      input: unknown;
      status: ToolStatus;
      result: ToolResult | null;
    };

export interface Transcript {
  /** The session shown; events of other sessions are ignored. */
  sessionId: string | null;
  entries: Entry[];
  /** A turn is running in this session. */
  running: boolean;
  /** How the last turn failed, if it did. */
  error: { code: string; message: string } | null;
}

export function emptyTranscript(sessionId: string | null = null): Transcript {
  return { sessionId, entries: [], running: false, error: null };
}

function toolStatus(result: ToolResult | null): ToolStatus {
  if (result === null) {
    return "running";
  }
  return result.is_error ? "failed" : "done";
}

/** A stored session's history as a transcript (nothing running). */
export function fromHistory(sessionId: string, items: TranscriptItem[]): Transcript {
  const entries: Entry[] = items.map((item) => {
    switch (item.kind) {
      case "tool_call":
        return {
          kind: "tool_call",
          callId: item.call_id,
          name: item.name,
          input: item.input,
          // A stored call without a result never finished (the turn was stopped or crashed).
          status: item.result ? toolStatus(item.result) : "failed",
          result: item.result,
        };
      case "user_image":
        return { kind: "user_image", image: item.image };
      default:
        return { kind: item.kind, text: item.text };
    }
  });
  return { sessionId, entries, running: false, error: null };
}

/** The person's message (with the image they attached), shown at once (before the core confirms the turn). */
export function addUserMessage(transcript: Transcript, text: string, image: string | null = null): Transcript {
  const attached: Entry[] = image ? [{ kind: "user_image", image }] : [];
  return {
    ...transcript,
    entries: [...transcript.entries, ...attached, { kind: "user", text }],
    running: true,
    error: null,
  };
}

function appendText(entries: Entry[], kind: "assistant" | "thinking", text: string): Entry[] {
  const last = entries[entries.length - 1];
  if (last && last.kind === kind) {
    return [...entries.slice(0, -1), { kind, text: last.text + text }];
  }
  return [...entries, { kind, text }];
}

function sessionOf(event: CoreEvent): string | null {
  // Reminder events name a session only when the reminder has one.
  return "session_id" in event ? (event.session_id ?? null) : null;
}

/**
 * The transcript after `event`. Returns the same object when the event is not about this
 * session (or not about chat), so callers can skip re-rendering.
 */
export function applyEvent(transcript: Transcript, event: CoreEvent): Transcript {
  const session = sessionOf(event);
  if (session === null || session !== transcript.sessionId) {
    return transcript;
  }
  switch (event.type) {
    case "chat_turn_started":
      return { ...transcript, running: true, error: null };
    case "chat_text_delta":
      return { ...transcript, entries: appendText(transcript.entries, "assistant", event.text) };
    case "chat_thinking_delta":
      return { ...transcript, entries: appendText(transcript.entries, "thinking", event.text) };
    case "chat_tool_call_started":
      if (transcript.entries.some((e) => e.kind === "tool_call" && e.callId === event.call_id)) {
        return transcript;
      }
      return {
        ...transcript,
        entries: [
          ...transcript.entries,
          {
            kind: "tool_call",
            callId: event.call_id,
            name: event.name,
            input: event.input,
            status: "running",
            result: null,
          },
        ],
      };
    case "chat_tool_call_finished":
      return {
        ...transcript,
        entries: transcript.entries.map((entry) =>
          entry.kind === "tool_call" && entry.callId === event.call_id
            ? { ...entry, status: toolStatus(event.result), result: event.result }
            : entry,
        ),
      };
    case "chat_turn_finished":
      return { ...transcript, running: false };
    case "chat_turn_failed":
      return {
        ...transcript,
        running: false,
        error: event.code === "cancelled" ? null : { code: event.code, message: event.message },
      };
    default:
      return transcript;
  }
}

/** The input fields that say what a call acts on, most telling first. */
const TARGET_FIELDS = ["url", "ref", "selector", "path", "command", "query", "key", "text", "id", "name"];
const SUMMARY_TARGET_MAX = 60;

/**
 * What a call does, for its collapsed card: `browser navigate https://example.com`,
 * `file read notes.txt`. The resource and action, then the first of the fields that name what it
 * acts on, on one line and cut at 60 characters. Empty when the input has none of them.
 */
export function callSummary(input: unknown): string {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return "";
  }
  const fields = input as Record<string, unknown>;
  const words = ["resource", "action"]
    .map((key) => fields[key])
    .filter((value): value is string => typeof value === "string" && value.trim() !== "");
  const target = TARGET_FIELDS.map((key) => fields[key]).find(
    (value): value is string => typeof value === "string" && value.trim() !== "",
  );
  if (target !== undefined) {
    const line = target.replace(/\s+/g, " ").trim();
    words.push(line.length > SUMMARY_TARGET_MAX ? `${line.slice(0, SUMMARY_TARGET_MAX - 1)}…` : line);
  }
  return words.join(" ");
}

/** A finished call's status as shown on its card: `done in 0.3 s`, `failed: policy_denied`. */
export function finishedLabel(status: ToolStatus, result: ToolResult | null): string {
  const word = status === "done" ? "done" : "failed";
  const code = status === "failed" && result?.code ? `: ${result.code}` : "";
  const ms = result?.duration_ms;
  if (ms === undefined) {
    return word + code;
  }
  const took = ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
  return `${word}${code} in ${took}`;
}

/** The text of a tool result, for the expanded card. */
export function resultText(result: ToolResult | null): string {
  if (!result) {
    return "";
  }
  return result.content
    .map((block) => (block.type === "text" ? block.text : `[image ${block.mime_type}]`))
    .join("\n");
}

/** A new session's id: time-based with a random tail, unique enough across windows. */
export function newSessionId(now: number = Date.now()): string {
  const tail = Math.floor(Math.random() * 0x100000)
    .toString(16)
    .padStart(5, "0");
  return `chat-${now}-${tail}`;
}

/** The text of the person's last message: what Retry sends again after a failed turn. */
export function lastUserText(transcript: Transcript): string | null {
  for (let i = transcript.entries.length - 1; i >= 0; i--) {
    const entry = transcript.entries[i];
    if (entry.kind === "user") return entry.text;
  }
  return null;
}

/** What a key pressed anywhere in the chat asks for (Esc stops a running turn, Ctrl+K starts a
 * new chat, Ctrl+L goes to the message box), or null for a key the chat leaves alone. A key
 * something else already handled (a dialog, the search box's Esc) is left alone too. */
export function chatShortcut(
  key: { key: string; ctrlKey: boolean; metaKey: boolean; altKey: boolean; shiftKey: boolean; defaultPrevented: boolean },
  running: boolean,
): "stop" | "new_chat" | "focus_input" | null {
  if (key.defaultPrevented || key.altKey) return null;
  const command = key.ctrlKey || key.metaKey;
  if (key.key === "Escape" && !command && !key.shiftKey) return running ? "stop" : null;
  if (command && !key.shiftKey && key.key.toLowerCase() === "k") return "new_chat";
  if (command && !key.shiftKey && key.key.toLowerCase() === "l") return "focus_input";
  return null;
}
