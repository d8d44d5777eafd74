import { describe, expect, it } from "vitest";
import type { Component } from "svelte";
import { isLazy, viewLoader, type ViewLoaders } from "./views";

const View = (() => {}) as unknown as Component;

function counting(fail: { approvals: number }) {
  const calls = { approvals: 0, store: 0, apps: 0, settings: 0 };
  const loaders: ViewLoaders = {
    approvals: async () => {
      calls.approvals += 1;
      if (calls.approvals <= fail.approvals) throw new Error("Importing a module script failed.");
      return { default: View };
    },
    store: async () => ((calls.store += 1), { default: View }),
    apps: async () => ((calls.apps += 1), { default: View }),
    settings: async () => ((calls.settings += 1), { default: View }),
  };
  return { calls, loaders };
}

describe("views", () => {
  it("loads every page but chat on demand, and nothing for an unknown route", () => {
    expect(isLazy("chat")).toBe(false);
    expect(isLazy(null)).toBe(false);
    for (const route of ["approvals", "store", "apps", "settings"] as const) {
      expect(isLazy(route)).toBe(true);
    }
  });

  it("imports a page once however many ask, at the same time or later", async () => {
    const { calls, loaders } = counting({ approvals: 0 });
    const load = viewLoader(loaders);
    const [first, second] = await Promise.all([load("settings"), load("settings")]);
    expect(await load("settings")).toBe(first);
    expect(second).toBe(View);
    expect(calls).toEqual({ approvals: 0, store: 0, apps: 0, settings: 1 });
  });

  it("tries a failed import again on the next call, and keeps it once it worked", async () => {
    const { calls, loaders } = counting({ approvals: 1 });
    const load = viewLoader(loaders);
    await expect(load("approvals")).rejects.toThrow("Importing a module script failed.");
    expect(await load("approvals")).toBe(View);
    expect(await load("approvals")).toBe(View);
    expect(calls.approvals).toBe(2);
  });
});
