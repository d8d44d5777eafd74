import { describe, expect, it } from "vitest";
import { IDLE, applyAutomationEvent, pausedMessage } from "./automation";

describe("automation status", () => {
  it("follows pause, resume and turns from events", () => {
    let status = applyAutomationEvent(IDLE, { type: "automation_paused", paused: true });
    expect(status.paused).toBe(true);
    status = applyAutomationEvent(status, { type: "chat_turn_started", session_id: "a" });
    expect(status.turns.map((t) => t.session_id)).toEqual(["a"]);
    expect(pausedMessage(status)).toContain("1 turn is waiting");
    status = applyAutomationEvent(status, { type: "chat_turn_finished", session_id: "a", stop: "end_turn", text: "" });
    expect(status.turns).toEqual([]);
    status = applyAutomationEvent(status, { type: "automation_paused", paused: false });
    expect(status.paused).toBe(false);
  });

  it("follows autonomous mode on and off", () => {
    const on = applyAutomationEvent(IDLE, { type: "autonomous_mode", on: true });
    expect(on.autonomous).toBe(true);
    expect(applyAutomationEvent(on, { type: "autonomous_mode", on: true })).toBe(on);
    expect(applyAutomationEvent(on, { type: "autonomous_mode", on: false }).autonomous).toBe(false);
  });

  it("keeps the same object when nothing shown changes", () => {
    expect(applyAutomationEvent(IDLE, { type: "automation_paused", paused: false })).toBe(IDLE);
    expect(applyAutomationEvent(IDLE, { type: "chat_text_delta", session_id: "a", text: "x" })).toBe(IDLE);
  });
});
