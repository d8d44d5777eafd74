import { describe, expect, it } from "vitest";

// Every source file's text, through Vite's raw imports (no Node APIs needed in the type check).
const sources = import.meta.glob<string>(["./**/*.ts", "./**/*.svelte", "!./**/*.test.ts"], {
  query: "?raw",
  import: "default",
  eager: true,
});

describe("module boundaries", () => {
  it("finds the sources it checks", () => {
    expect(Object.keys(sources)).toContain("./ipc.ts");
    expect(Object.keys(sources)).toContain("./App.svelte");
  });

  it("lets only ipc.ts import @tauri-apps/api", () => {
    const importers = Object.entries(sources)
      .filter(([, text]) => /from\s+["']@tauri-apps\/api/.test(text))
      .map(([path]) => path);
    expect(importers).toEqual(["./ipc.ts"]);
  });

  it("keeps the generated types self-contained (they import only each other)", () => {
    const generated = Object.entries(sources).filter(([path]) => path.startsWith("./gen/"));
    expect(generated.length).toBeGreaterThan(0);
    for (const [path, text] of generated) {
      const imports = [...text.matchAll(/from\s+["']([^"']+)["']/g)].map((m) => m[1]);
      for (const target of imports) {
        expect(target.startsWith("./"), `${path} imports ${target}`).toBe(true);
      }
    }
  });
});
