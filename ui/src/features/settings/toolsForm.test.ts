import { describe, expect, it } from "vitest";
import {
  breakerForm,
  breakerValue,
  disabledValue,
  isDisabled,
  listValue,
  quotaLabel,
  quotaRemoved,
  quotaValue,
} from "./toolsForm";

describe("tools switched off", () => {
  it("adds and removes a tool or category, sorted and once", () => {
    expect(disabledValue(["web"], "desktop", false)).toEqual(["desktop", "web"]);
    expect(disabledValue(["desktop", "web"], "desktop", true)).toEqual(["web"]);
    expect(disabledValue(["web"], "web", false)).toEqual(["web"]);
    expect(isDisabled(["shell"], "shell")).toBe(true);
    expect(isDisabled(["shell"], "exec")).toBe(false);
  });
});

describe("denied paths and the blocklist", () => {
  it("keeps one entry per line", () => {
    expect(listValue(" ~/private \n\n/srv/**/*.key\n~/private")).toEqual(["~/private", "/srv/**/*.key"]);
    expect(listValue("git   push\nrsync")).toEqual(["git push", "rsync"]);
  });
});

describe("quotas", () => {
  const quotas = { shell: { per_session: 50, per_day: null } };

  it("sets, replaces and removes one quota", () => {
    expect(quotaValue(quotas, "file.file.write", "", "100")).toEqual({
      quotas: {
        shell: { per_session: 50, per_day: null },
        "file.file.write": { per_session: null, per_day: 100 },
      },
    });
    expect(quotaValue(quotas, "shell", "5", "20")).toEqual({ quotas: { shell: { per_session: 5, per_day: 20 } } });
    // Both caps empty: the quota goes.
    expect(quotaValue(quotas, "shell", "", " ")).toEqual({ quotas: {} });
    expect(quotaRemoved(quotas, "shell")).toEqual({});
  });

  it("says what is wrong instead of storing it", () => {
    expect(quotaValue(quotas, "shell tool", "1", "")).toHaveProperty("problem");
    expect(quotaValue(quotas, "a.b.c.d", "1", "")).toHaveProperty("problem");
    expect(quotaValue(quotas, "shell", "0", "")).toHaveProperty("problem");
    expect(quotaValue(quotas, "shell", "", "2.5")).toHaveProperty("problem");
  });

  it("reads as a sentence", () => {
    expect(quotaLabel({ per_session: 5, per_day: 20 })).toBe("5 per session, 20 per day");
    expect(quotaLabel({ per_session: null, per_day: 3 })).toBe("3 per day");
  });
});

describe("circuit breaker", () => {
  it("round-trips the stored value and checks the numbers", () => {
    const view = { failures: 5, window_seconds: 60, cooldown_seconds: 60 };
    expect(breakerValue(breakerForm(view))).toEqual(view);
    expect(breakerValue({ failures: "0", windowSeconds: "0", cooldownSeconds: "0" })).toEqual({
      failures: 0,
      window_seconds: 0,
      cooldown_seconds: 0,
    });
    expect(breakerValue({ failures: "3", windowSeconds: "0", cooldownSeconds: "10" })).toHaveProperty("problem");
    expect(breakerValue({ failures: "x", windowSeconds: "1", cooldownSeconds: "1" })).toHaveProperty("problem");
  });
});
