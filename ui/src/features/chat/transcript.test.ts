import { describe, expect, it } from "vitest";
import type { CoreEvent } from "../../gen";
import {
  callSummary,
  chatShortcut,
  lastUserText,
  addUserMessage,
  applyEvent,
  emptyTranscript,
  finishedLabel,
  fromHistory,
  resultText,
  type Transcript,
} from "./transcript";

const S = "chat-1";

function play(start: Transcript, events: CoreEvent[]): Transcript {
  return events.reduce(applyEvent, start);
}

describe("applying a turn's events", () => {
  it("streams text and thinking into one entry each and ends the turn", () => {
    const started = addUserMessage(emptyTranscript(S), "hello");
    expect(started.running).toBe(true);
    const done = play(started, [
      { type: "chat_turn_started", session_id: S },
      { type: "chat_thinking_delta", session_id: S, text: "The person " },
      { type: "chat_thinking_delta", session_id: S, text: "greets me." },
      { type: "chat_text_delta", session_id: S, text: "Hel" },
      { type: "chat_text_delta", session_id: S, text: "lo!" },
      { type: "chat_turn_finished", session_id: S, stop: "end_turn", text: "Hello!" },
    ]);
    expect(done.entries).toEqual([
      { kind: "user", text: "hello" },
      { kind: "thinking", text: "The person greets me." },
      { kind: "assistant", text: "Hello!" },
    ]);
    expect(done.running).toBe(false);
    expect(done.error).toBeNull();
  });

  it("tracks a tool call from running to its result, and text after it is a new entry", () => {
    const result = { content: [{ type: "text" as const, text: "made it" }], is_error: false };
    const done = play(emptyTranscript(S), [
      { type: "chat_text_delta", session_id: S, text: "Let me check." },
      { type: "chat_tool_call_started", session_id: S, call_id: "c1", name: "shell", input: { command: "ls" } },
      { type: "chat_tool_call_started", session_id: S, call_id: "c1", name: "shell", input: { command: "ls" } },
    ]);
    expect(done.entries).toHaveLength(2);
    expect(done.entries[1]).toMatchObject({ kind: "tool_call", status: "running", result: null });
    const finished = play(done, [
      { type: "chat_tool_call_finished", session_id: S, call_id: "c1", name: "shell", result },
      { type: "chat_text_delta", session_id: S, text: "Done." },
    ]);
    expect(finished.entries[1]).toMatchObject({ status: "done", result });
    expect(finished.entries[2]).toEqual({ kind: "assistant", text: "Done." });
    expect(resultText(result)).toBe("made it");
  });

  it("marks a refused call as failed", () => {
    const refused = {
      content: [{ type: "text" as const, text: "the person did not approve" }],
      is_error: true,
      code: "approval_denied" as const,
    };
    const done = play(emptyTranscript(S), [
      { type: "chat_tool_call_started", session_id: S, call_id: "c2", name: "shell", input: {} },
      { type: "chat_tool_call_finished", session_id: S, call_id: "c2", name: "shell", result: refused },
    ]);
    expect(done.entries[0]).toMatchObject({ status: "failed" });
  });

  it("keeps a failure's code and message, but not a cancellation's", () => {
    const failed = play(addUserMessage(emptyTranscript(S), "hi"), [
      { type: "chat_turn_failed", session_id: S, code: "auth", message: "bad key" },
    ]);
    expect(failed.running).toBe(false);
    expect(failed.error).toEqual({ code: "auth", message: "bad key" });
    const cancelled = play(addUserMessage(emptyTranscript(S), "hi"), [
      { type: "chat_turn_failed", session_id: S, code: "cancelled", message: "the turn was cancelled" },
    ]);
    expect(cancelled.error).toBeNull();
  });

  it("ignores other sessions and other kinds of events, returning the same object", () => {
    const start = emptyTranscript(S);
    expect(applyEvent(start, { type: "chat_text_delta", session_id: "other", text: "x" })).toBe(start);
    expect(
      applyEvent(start, { type: "approval_resolved", request_id: "r", resolution: { kind: "timed_out" } }),
    ).toBe(start);
    // Reminder events name a session, or none; neither is a chat entry.
    expect(
      applyEvent(start, { type: "reminder_fired", reminder_id: "1", title: "t", trigger: "manual", session_id: S }),
    ).toBe(start);
    expect(applyEvent(start, { type: "reminder_finished", reminder_id: "1", outcome: "ok" })).toBe(start);
  });
});

describe("history", () => {
  it("turns stored items into entries; a call without a result counts as failed", () => {
    const transcript = fromHistory(S, [
      { kind: "user", text: "list" },
      { kind: "tool_call", call_id: "c1", name: "shell", input: {}, result: { content: [], is_error: false } },
      { kind: "tool_call", call_id: "c2", name: "shell", input: {}, result: null },
      { kind: "assistant", text: "ok" },
    ]);
    expect(transcript.entries.map((e) => (e.kind === "tool_call" ? e.status : e.kind))).toEqual([
      "user",
      "done",
      "failed",
      "assistant",
    ]);
    expect(transcript.running).toBe(false);
  });
});

describe("callSummary", () => {
  it("says what a call acts on: resource, action and the most telling field", () => {
    expect(callSummary({ resource: "browser", action: "navigate", url: "https://example.com/", profile: "native" })).toBe(
      "browser navigate https://example.com/",
    );
    // A ref names the element better than the text typed into it.
    expect(callSummary({ resource: "browser", action: "type", ref: "e3", text: "hello" })).toBe("browser type e3");
    expect(callSummary({ action: "read", path: "notes.txt" })).toBe("read notes.txt");
  });

  it("keeps to one short line", () => {
    const command = `echo ${"x".repeat(100)}\nrm -rf build`;
    const summary = callSummary({ resource: "shell", action: "run", command });
    expect(summary.startsWith("shell run echo xxx")).toBe(true);
    expect(summary).not.toContain("\n");
    expect(summary.endsWith("…")).toBe(true);
    expect(summary.length).toBe("shell run ".length + 60);
  });

  it("is empty for inputs that say nothing of the kind", () => {
    expect(callSummary({})).toBe("");
    expect(callSummary({ resource: "", count: 3 })).toBe("");
    expect(callSummary(null)).toBe("");
    expect(callSummary("text")).toBe("");
    expect(callSummary([1, 2])).toBe("");
  });
});

describe("finishedLabel", () => {
  it("names the duration and, for a failure, its code", () => {
    const done = { content: [], is_error: false, duration_ms: 320 };
    expect(finishedLabel("done", done)).toBe("done in 320 ms");
    const failed = { content: [], is_error: true, code: "policy_denied" as const, duration_ms: 2500 };
    expect(finishedLabel("failed", failed)).toBe("failed: policy_denied in 2.5 s");
    expect(finishedLabel("failed", null)).toBe("failed");
  });
});

describe("an attached image", () => {
  const image = "data:image/png;base64,iVBORw0KGgo=";

  it("shows above the person's text when sent and when the history is loaded", () => {
    const sent = addUserMessage(emptyTranscript(S), "what is this?", image);
    expect(sent.entries).toEqual([
      { kind: "user_image", image },
      { kind: "user", text: "what is this?" },
    ]);
    const loaded = fromHistory(S, [
      { kind: "user_image", image },
      { kind: "user", text: "what is this?" },
    ]);
    expect(loaded.entries).toEqual(sent.entries);
    expect(addUserMessage(emptyTranscript(S), "hi").entries).toEqual([{ kind: "user", text: "hi" }]);
  });
});

describe("lastUserText", () => {
  it("finds the person's last message, past the replies after it", () => {
    let t = addUserMessage(emptyTranscript("s"), "first", null);
    t = addUserMessage(t, "second", "data:image/png;base64,AA");
    t = { ...t, entries: [...t.entries, { kind: "assistant", text: "reply" }] };
    expect(lastUserText(t)).toBe("second");
    expect(lastUserText(emptyTranscript())).toBeNull();
  });
});

describe("chatShortcut", () => {
  const key = (k: string, mods: Partial<{ ctrlKey: boolean; metaKey: boolean; altKey: boolean; shiftKey: boolean; defaultPrevented: boolean }> = {}) => ({
    key: k,
    ctrlKey: false,
    metaKey: false,
    altKey: false,
    shiftKey: false,
    defaultPrevented: false,
    ...mods,
  });

  it("stops a running turn on Esc, and only then", () => {
    expect(chatShortcut(key("Escape"), true)).toBe("stop");
    expect(chatShortcut(key("Escape"), false)).toBeNull();
    // The search box or a dialog used this Esc already.
    expect(chatShortcut(key("Escape", { defaultPrevented: true }), true)).toBeNull();
  });

  it("takes Ctrl+K and Ctrl+L (Cmd on a Mac), in either case", () => {
    expect(chatShortcut(key("k", { ctrlKey: true }), false)).toBe("new_chat");
    expect(chatShortcut(key("K", { metaKey: true }), true)).toBe("new_chat");
    expect(chatShortcut(key("l", { ctrlKey: true }), false)).toBe("focus_input");
    expect(chatShortcut(key("k"), false)).toBeNull();
    expect(chatShortcut(key("l", { ctrlKey: true, shiftKey: true }), false)).toBeNull();
    expect(chatShortcut(key("k", { ctrlKey: true, altKey: true }), false)).toBeNull();
  });
});
