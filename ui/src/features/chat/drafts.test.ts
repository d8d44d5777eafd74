import { describe, expect, it } from "vitest";
import { DRAFTS_KEY, Drafts, MAX_DRAFTS, NEW_CHAT_SLOT, type DraftStorage } from "./drafts";

function memoryStorage(initial: Record<string, string> = {}): DraftStorage & { data: Map<string, string> } {
  const data = new Map(Object.entries(initial));
  return {
    data,
    getItem: (key) => data.get(key) ?? null,
    setItem: (key, value) => void data.set(key, value),
    removeItem: (key) => void data.delete(key),
  };
}

describe("Drafts", () => {
  it("keeps a draft per session and one for the new chat while switching", () => {
    const drafts = new Drafts(null);
    drafts.set("a", "half a thought");
    drafts.set(null, "a new question");
    drafts.set("b", "other");
    expect(drafts.get("a")).toBe("half a thought");
    expect(drafts.get(null)).toBe("a new question");
    expect(drafts.get("b")).toBe("other");
    expect(drafts.get("c")).toBe("");
  });

  it("survives a reload through storage, and blank or sent drafts are forgotten", () => {
    const storage = memoryStorage();
    const first = new Drafts(storage);
    first.set("a", "keep me\nacross lines");
    first.set(null, "new");
    first.set("b", "sent soon");
    first.clear("b");
    first.set(null, "   ");
    expect(JSON.parse(storage.data.get(DRAFTS_KEY)!)).toEqual({ a: "keep me\nacross lines" });

    const reloaded = new Drafts(storage);
    expect(reloaded.get("a")).toBe("keep me\nacross lines");
    expect(reloaded.get("b")).toBe("");
    expect(reloaded.get(null)).toBe("");
    reloaded.clear("a");
    expect(storage.data.has(DRAFTS_KEY)).toBe(false);
  });

  it("starts empty from an unreadable entry and ignores storage that refuses writes", () => {
    expect(new Drafts(memoryStorage({ [DRAFTS_KEY]: "{not json" })).get("a")).toBe("");
    expect(new Drafts(memoryStorage({ [DRAFTS_KEY]: '["x"]' })).get("0")).toBe("");
    const loaded = new Drafts(memoryStorage({ [DRAFTS_KEY]: JSON.stringify({ a: "x", b: 3, [NEW_CHAT_SLOT]: "n" }) }));
    expect(loaded.get("a")).toBe("x");
    expect(loaded.get("b")).toBe("");
    expect(loaded.get(null)).toBe("n");

    const full: DraftStorage = {
      getItem: () => null,
      setItem: () => {
        throw new Error("QuotaExceededError");
      },
      removeItem: () => {},
    };
    const drafts = new Drafts(full);
    drafts.set("a", "still here");
    expect(drafts.get("a")).toBe("still here");
  });

  it("keeps only the most recently written drafts", () => {
    const drafts = new Drafts(null);
    for (let i = 0; i <= MAX_DRAFTS; i++) {
      drafts.set(`s${i}`, `draft ${i}`);
    }
    // s0 was the oldest: gone; writing s1 again made it the newest.
    expect(drafts.get("s0")).toBe("");
    drafts.set("s1", "again");
    drafts.set("extra", "x");
    expect(drafts.get("s1")).toBe("again");
    expect(drafts.get("s2")).toBe("");
  });
});
