import { describe, expect, it } from "vitest";
import type { AppStatus } from "../../gen";
import { applyAppEvent, isTrouble, stateLabel } from "./apps";

function app(id: string, name: string, state: AppStatus["state"] = "running"): AppStatus {
  return {
    id,
    name,
    version: "1.0.0",
    description: "",
    state,
    reason: null,
    sideloaded: false,
    permissions: [],
    pending_permissions: null,
    has_ui: false,
  };
}

describe("the apps list", () => {
  it("replaces a changed app in place and keeps the list sorted by name", () => {
    const list = [app("b", "Beta"), app("a", "alpha")];
    const next = applyAppEvent(list, {
      type: "app_state_changed",
      app: { ...app("b", "Beta", "gave_up"), reason: "crashed 6 times" },
    });
    expect(next.map((a) => [a.id, a.state])).toEqual([
      ["a", "running"],
      ["b", "gave_up"],
    ]);
    const added = applyAppEvent(next, { type: "app_state_changed", app: app("c", "Aardvark") });
    expect(added.map((a) => a.id)).toEqual(["c", "a", "b"]);
  });

  it("drops an app the store says was removed elsewhere", () => {
    const list = [app("a", "A"), app("b", "B")];
    const next = applyAppEvent(list, {
      type: "app_removed",
      app_id: "a",
      reason: "You removed A on another device.",
    });
    expect(next.map((a) => a.id)).toEqual(["b"]);
  });

  it("leaves the list alone for other events", () => {
    const list = [app("a", "A")];
    expect(applyAppEvent(list, { type: "chat_turn_started", session_id: "s" })).toBe(list);
  });

  it("labels states and flags the troubled ones", () => {
    expect(stateLabel("revocation_unavailable")).toContain("revocation");
    expect(isTrouble("gave_up")).toBe(true);
    expect(isTrouble("running")).toBe(false);
  });
});
