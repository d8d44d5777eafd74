import { describe, expect, it } from "vitest";
import { applyTheme, isTheme, paintRememberedTheme, rememberedTheme, resolveTheme } from "./theme";

describe("theme", () => {
  it("follows the system only when asked to", () => {
    expect(resolveTheme("system", true)).toBe("dark");
    expect(resolveTheme("system", false)).toBe("light");
    expect(resolveTheme("light", true)).toBe("light");
    expect(resolveTheme("dark", false)).toBe("dark");
  });

  it("knows its three values", () => {
    expect(isTheme("dark")).toBe(true);
    expect(isTheme("purple")).toBe(false);
    expect(isTheme(null)).toBe(false);
  });

  it("paints the root with the resolved theme and keeps the choice", () => {
    const root = { dataset: {} } as unknown as HTMLElement;
    applyTheme("dark", root);
    expect(root.dataset.theme).toBe("dark");
    expect(root.dataset.themeChoice).toBe("dark");
    // No system preference here: following the system paints light.
    applyTheme("system", root);
    expect(root.dataset.theme).toBe("light");
    expect(root.dataset.themeChoice).toBe("system");
    // Without storage (as in this test) the remembered choice is the default.
    expect(rememberedTheme()).toBe("system");
  });

  it("paints the remembered theme before the first paint from its source alone", () => {
    // As index.html runs it: the function's text, with nothing of this module in scope.
    const run = new Function("localStorage", "matchMedia", "document", `(${paintRememberedTheme.toString()})();`);
    for (const stored of [null, "light", "dark", "system", "purple"]) {
      for (const dark of [false, true]) {
        const root = { dataset: {} as Record<string, string> };
        const storage = { getItem: (key: string) => (key === "osprey.theme" ? stored : null) };
        run(storage, () => ({ matches: dark }), { documentElement: root });
        const choice = isTheme(stored) ? stored : "system";
        expect(root.dataset).toEqual({ theme: resolveTheme(choice, dark), themeChoice: choice });
      }
    }
    // The key it reads is the one applyTheme writes.
    const written: Record<string, string> = {};
    const storage = { setItem: (key: string, value: string) => (written[key] = value) };
    (globalThis as { localStorage?: unknown }).localStorage = storage;
    try {
      applyTheme("dark", { dataset: {} } as unknown as HTMLElement);
    } finally {
      delete (globalThis as { localStorage?: unknown }).localStorage;
    }
    expect(written).toEqual({ "osprey.theme": "dark" });
    // Storage that throws (a locked-down page) follows the system.
    const root = { dataset: {} as Record<string, string> };
    const locked = {
      getItem: () => {
        throw new Error("denied");
      },
    };
    run(locked, () => ({ matches: true }), { documentElement: root });
    expect(root.dataset).toEqual({ theme: "dark", themeChoice: "system" });
  });
});
