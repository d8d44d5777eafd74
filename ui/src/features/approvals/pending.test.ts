import { describe, expect, it } from "vitest";
import type { ApprovalRequest, CoreEvent, PendingApproval } from "../../gen";
import {
  applyApprovalEvent,
  describeCall,
  describeScope,
  grantForSession,
  offersLastingAnswers,
  secondsLeft,
} from "./pending";

function request(id: string): ApprovalRequest {
  return {
    id,
    tool: "shell",
    resource: "bash",
    action: "exec",
    origin: "user",
    session_id: "chat-1",
    summary: "touch /tmp/x",
    input: { command: "touch /tmp/x" },
    suggested_scopes: [{ kind: "command_pattern", value: "touch *" }],
    once_only: false,
  };
}

function play(events: CoreEvent[]): PendingApproval[] {
  return events.reduce(applyApprovalEvent, [] as PendingApproval[]);
}

describe("pending approvals", () => {
  it("offers lasting answers only when the question is not for this call only", () => {
    const shell: PendingApproval = { request: request("a"), deadline_ms: 1 };
    expect(offersLastingAnswers(shell)).toBe(true);
    const install: PendingApproval = {
      request: {
        ...request("b"),
        tool: "store",
        resource: "apps",
        action: "install",
        suggested_scopes: [],
        once_only: true,
        details: {
          title: "Install the app Units 1.0.0 from the store",
          kind: "app",
          name: "Units",
          id: "com.example.units",
          version: "1.0.0",
          publisher: "Acme Apps",
          signer: "the store at http://127.0.0.1:8787, which signs what it lists with its key 3f1c0a9e5b7d2c84",
          permissions: [
            {
              permission: "network:api.example.com",
              explanation: "Connect to api.example.com over the internet",
              sensitivity: "medium",
            },
          ],
          files: [],
          notes: [],
        },
      },
      deadline_ms: 2,
    };
    expect(offersLastingAnswers(install)).toBe(false);
    expect(describeCall(install)).toBe("store apps install");
  });

  it("adds requests in deadline order and removes them when resolved, however", () => {
    const open = play([
      { type: "approval_requested", request: request("b"), deadline_ms: 2000 },
      { type: "approval_requested", request: request("a"), deadline_ms: 1000 },
      { type: "approval_requested", request: request("c"), deadline_ms: 3000 },
    ]);
    expect(open.map((p) => p.request.id)).toEqual(["a", "b", "c"]);
    const after = [
      { type: "approval_resolved", request_id: "a", resolution: { kind: "answered", answer: { answer: "once" } } },
      { type: "approval_resolved", request_id: "b", resolution: { kind: "timed_out" } },
      { type: "approval_resolved", request_id: "zzz", resolution: { kind: "withdrawn" } },
    ] satisfies CoreEvent[];
    expect(after.reduce(applyApprovalEvent, open).map((p) => p.request.id)).toEqual(["c"]);
  });

  it("ignores a repeated request and unrelated events (same array back)", () => {
    const open = play([{ type: "approval_requested", request: request("a"), deadline_ms: 1000 }]);
    expect(
      applyApprovalEvent(open, { type: "approval_requested", request: request("a"), deadline_ms: 1000 }),
    ).toBe(open);
    expect(applyApprovalEvent(open, { type: "chat_turn_started", session_id: "chat-1" })).toBe(open);
  });

  it("counts down in whole seconds and stops at zero", () => {
    expect(secondsLeft(120_000, 0)).toBe(120);
    expect(secondsLeft(1_500, 1_000)).toBe(1);
    expect(secondsLeft(1_000, 5_000)).toBe(0);
  });

  it("describes calls and scopes in words", () => {
    const pending = { request: request("a"), deadline_ms: 0 };
    expect(describeCall(pending)).toBe("shell bash exec");
    expect(describeScope({ kind: "domain", value: "example.com" })).toBe("the web domain example.com");
    expect(grantForSession({ kind: "app", value: "notes" })).toEqual({
      answer: "grant",
      scope: { kind: "app", value: "notes" },
      duration: { kind: "session" },
    });
  });
});
