import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ApprovalRequest } from "../../gen";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const { approvals } = await import("./approvalsStore.svelte");

function request(id: string): ApprovalRequest {
  return {
    id,
    tool: "shell",
    resource: "bash",
    action: "exec",
    origin: "user",
    session_id: "chat-1",
    summary: "touch /tmp/x",
    input: {},
    suggested_scopes: [],
    once_only: false,
  };
}

describe("the approvals store", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    invoke.mockReset();
    approvals.pending = [
      { request: request("a"), deadline_ms: 1 },
      { request: request("b"), deadline_ms: 2 },
    ];
    approvals.error = null;
  });

  afterEach(() => {
    approvals.pending = [];
    vi.useRealTimers();
  });

  it("sends the answer for the right request and drops it from the list", async () => {
    invoke.mockResolvedValue(null);
    await approvals.answer("a", { answer: "always_this_session" });
    expect(invoke).toHaveBeenCalledWith("answer_approval", {
      requestId: "a",
      answer: { answer: "always_this_session" },
    });
    expect(approvals.pending.map((p) => p.request.id)).toEqual(["b"]);
    expect(approvals.error).toBeNull();
  });

  it("shows why an answer was refused, and drops the question that is no longer open", async () => {
    invoke.mockRejectedValue({ code: "approval_not_pending", message: "no pending approval `b`" });
    await approvals.answer("b", { answer: "once" });
    expect(approvals.error).toEqual({ code: "approval_not_pending", message: "no pending approval `b`" });
    expect(approvals.pending.map((p) => p.request.id)).toEqual(["a"]);
  });

  it("ticks the countdowns' clock only while a question is open", () => {
    expect(vi.getTimerCount()).toBe(1);
    const before = approvals.now;
    vi.advanceTimersByTime(1000);
    expect(approvals.now).toBe(before + 1000);

    approvals.pending = [];
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(approvals.now).toBe(before + 1000);

    approvals.pending = [{ request: request("c"), deadline_ms: 3 }];
    expect(vi.getTimerCount()).toBe(1);
    expect(approvals.now).toBe(before + 2000);
  });
});
