import { beforeEach, describe, expect, it, vi } from "vitest";
import type { AuditRow, GrantRow } from "../../gen";
import {
  EMPTY_FILTER,
  callLabel,
  decisionLabel,
  formatDuration,
  formatWhen,
  grantEnds,
  toFilter,
} from "./audit";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const { Trail, PAGE } = await import("./trail.svelte");

function row(id: number): AuditRow {
  return {
    id,
    at_ms: 0,
    tool: "shell",
    resource: "bash",
    action: "exec",
    origin: "user",
    session_id: null,
    decision: "allow:grant",
    outcome: "allowed",
    code: null,
    duration_ms: 3.2,
    error: null,
    summary: "git status",
  };
}

function grant(id: number, expires_ms: number | null, session_id: string | null = null): GrantRow {
  return {
    id,
    scope: { kind: "command_pattern", value: "git *" },
    description: "commands matching `git *`",
    session_id,
    expires_ms,
  };
}

describe("audit rows", () => {
  it("read as words", () => {
    expect(decisionLabel("ask:grant")).toBe("you granted a scope");
    expect(decisionLabel("autonomous")).toBe("run unasked: autonomous mode was on");
    expect(decisionLabel("something_new")).toBe("something new");
    expect(callLabel({ tool: "web", resource: null, action: "fetch" })).toBe("web fetch");
    expect(callLabel({ tool: "file", resource: "file", action: "write" })).toBe("file write");
    expect(callLabel({ tool: "shell", resource: "bash", action: "exec" })).toBe("shell bash exec");
    expect(formatDuration(0.2)).toBe("<1 ms");
    expect(formatDuration(12.4)).toBe("12 ms");
    expect(formatDuration(1400)).toBe("1.4 s");
    const now = new Date(2025, 5, 10, 12).getTime();
    expect(formatWhen(now - 1000, now)).not.toMatch(/2025/);
    expect(formatWhen(now - 3 * 86_400_000, now)).toMatch(/2025/);
  });

  it("filters send only what was filled in", () => {
    expect(toFilter(EMPTY_FILTER)).toEqual({ limit: 100 });
    expect(toFilter({ tool: " shell ", origin: "app", outcome: "refused", text: "rm" }, 40, 50)).toEqual({
      tool: "shell",
      origin: "app",
      outcome: "refused",
      text: "rm",
      before_id: 40,
      limit: 50,
    });
  });

  it("grants say when they end", () => {
    const now = 1_000_000;
    expect(grantEnds(grant(1, null), now)).toBe("Until you revoke it");
    expect(grantEnds(grant(1, null, "s"), now)).toBe("Until this conversation ends");
    expect(grantEnds(grant(1, now + 5 * 60_000), now)).toBe("For 5 more minutes");
    expect(grantEnds(grant(1, now - 1), now)).toBe("Expired");
  });
});

describe("the trail and grants", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("loads a filtered page and the older ones after it", async () => {
    const trail = new Trail();
    invoke.mockResolvedValueOnce(Array.from({ length: PAGE }, (_, i) => row(100 - i)));
    trail.form.outcome = "allowed";
    await trail.load();
    expect(invoke).toHaveBeenLastCalledWith("audit_log", { filter: { outcome: "allowed", limit: PAGE } });
    expect(trail.more).toBe(true);
    invoke.mockResolvedValueOnce([row(10)]);
    await trail.loadMore();
    expect(invoke).toHaveBeenLastCalledWith("audit_log", {
      filter: { outcome: "allowed", before_id: 100 - PAGE + 1, limit: PAGE },
    });
    expect(trail.rows).toHaveLength(PAGE + 1);
    expect(trail.more).toBe(false);
  });

  it("revokes a grant and drops one that is already gone", async () => {
    const trail = new Trail();
    invoke.mockResolvedValueOnce([grant(1, null), grant(2, null)]);
    await trail.loadGrants();
    invoke.mockResolvedValueOnce(null);
    await trail.revoke(1);
    expect(invoke).toHaveBeenLastCalledWith("revoke_grant", { grantId: 1 });
    expect(trail.grants.map((g) => g.id)).toEqual([2]);
    invoke.mockRejectedValueOnce({ code: "grant_not_found", message: "no grant 2" });
    await trail.revoke(2);
    expect(trail.grants).toEqual([]);
    expect(trail.grantsError?.code).toBe("grant_not_found");
  });
});
