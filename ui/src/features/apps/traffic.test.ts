import { describe, expect, it } from "vitest";
import type { AppExchange } from "../../gen";
import { ago, callLine, formatBytes, newestFirst, shortMethod, showMessage } from "./traffic";

function call(overrides: Partial<AppExchange>): AppExchange {
  return {
    id: 1,
    method: "osprey.app.v1.ToolService/Execute",
    started_at_ms: 1_000_000,
    duration_ms: 3.25,
    status: "Ok",
    message: null,
    request_bytes: 120,
    response_bytes: 2048,
    request: [{ tool: "convert" }],
    response: [],
    ...overrides,
  };
}

describe("the inspector's call lines", () => {
  it("shortens the method to service and name", () => {
    expect(shortMethod("osprey.app.v1.ToolService/Execute")).toBe("ToolService/Execute");
    expect(shortMethod("odd")).toBe("odd");
  });

  it("reads a finished call with its status, time, sizes and age", () => {
    expect(callLine(call({}), 1_012_400)).toEqual({
      method: "ToolService/Execute",
      status: "Ok",
      tone: "ok",
      took: "3.3 ms",
      sizes: "sent 120 B, received 2.0 KB",
      when: "12 s ago",
    });
  });

  it("marks failures and calls still going", () => {
    expect(callLine(call({ status: "NotFound" }), 1_000_000).tone).toBe("error");
    expect(callLine(call({ status: null }), 1_000_000)).toMatchObject({ tone: "error", status: "No answer" });
    const open = callLine(call({ duration_ms: null, status: null }), 1_000_000);
    expect(open).toMatchObject({ tone: "pending", status: "Still going", took: "" });
  });

  it("formats sizes and ages in plain units", () => {
    expect(formatBytes(3 * 1024 * 1024)).toBe("3.0 MB");
    expect(ago(0, 90_000)).toBe("2 min ago");
    expect(ago(0, 2 * 3600_000)).toBe("2 h ago");
    expect(ago(5_000, 0)).toBe("0 s ago");
  });

  it("shows JSON indented and the inspector's notes as they are", () => {
    expect(showMessage({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(showMessage("(the rest is not kept)")).toBe("(the rest is not kept)");
  });

  it("lists the newest call first without changing the list it was given", () => {
    const calls = [call({ id: 1 }), call({ id: 3 }), call({ id: 2 })];
    expect(newestFirst(calls).map((c) => c.id)).toEqual([3, 2, 1]);
    expect(calls.map((c) => c.id)).toEqual([1, 3, 2]);
  });
});
