import { describe, expect, it } from "vitest";
import { isLazy } from "./views";

describe("views", () => {
  it("loads every page but chat on demand, and nothing for an unknown route", () => {
    expect(isLazy("chat")).toBe(false);
    expect(isLazy(null)).toBe(false);
    for (const route of ["approvals", "store", "apps", "settings"] as const) {
      expect(isLazy(route)).toBe(true);
    }
  });
});
