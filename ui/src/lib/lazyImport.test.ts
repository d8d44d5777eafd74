import { describe, expect, it } from "vitest";
import { LazyImport } from "./lazyImport.svelte";

describe("LazyImport", () => {
  it("imports nothing until asked, then once however many ask, at once or later", async () => {
    let calls = 0;
    const module = { name: "view" };
    const lazy = new LazyImport(async () => ((calls += 1), module));
    expect(calls).toBe(0);
    expect(lazy.value).toBeNull();
    const [first, second] = await Promise.all([lazy.load(), lazy.load()]);
    expect(first).toBe(module);
    expect(second).toBe(module);
    expect(await lazy.load()).toBe(module);
    expect(lazy.value).toBe(module);
    expect(calls).toBe(1);
  });

  it("tries a failed import again on the next call, and keeps it once it worked", async () => {
    let calls = 0;
    const lazy = new LazyImport(async () => {
      calls += 1;
      if (calls === 1) throw new Error("Importing a module script failed.");
      return "module";
    });
    await expect(lazy.load()).rejects.toThrow("Importing a module script failed.");
    expect(lazy.value).toBeNull();
    expect(await lazy.load()).toBe("module");
    expect(await lazy.load()).toBe("module");
    expect(lazy.value).toBe("module");
    expect(calls).toBe(2);
  });
});
