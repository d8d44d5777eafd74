import { describe, expect, it } from "vitest";
import { applyTheme, isTheme, rememberedTheme, resolveTheme } from "./theme";

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
});
