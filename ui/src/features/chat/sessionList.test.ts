import { describe, expect, it } from "vitest";
import type { ChatSessionSummary } from "../../gen";
import { displayTitle, formatTokens, usageDescription, usageLabel, withRenamed } from "./sessionList";

const session = (id: string, title: string | null): ChatSessionSummary => ({
  id,
  title,
  status: "idle",
  updated_ms: 1,
  message_count: 2,
});

describe("session list", () => {
  it("names untitled sessions", () => {
    expect(displayTitle(session("a", null))).toBe("Untitled chat");
    expect(displayTitle(session("a", "  "))).toBe("Untitled chat");
    expect(displayTitle(session("a", "Trip"))).toBe("Trip");
  });

  it("renames in place", () => {
    const list = [session("a", "one"), session("b", "two")];
    expect(withRenamed(list, session("b", "new")).map((s) => s.title)).toEqual(["one", "new"]);
    expect(withRenamed(list, session("zz", "new"))).toEqual(list);
  });
});

describe("usage", () => {
  it("formats token counts short", () => {
    expect(formatTokens(0)).toBe("0");
    expect(formatTokens(999)).toBe("999");
    expect(formatTokens(1000)).toBe("1k");
    expect(formatTokens(1234)).toBe("1.2k");
    expect(formatTokens(45_678)).toBe("46k");
    expect(formatTokens(2_500_000)).toBe("2.5M");
  });

  it("shows nothing before any tokens, then in and out", () => {
    expect(usageLabel(null)).toBeNull();
    expect(usageLabel({ input_tokens: 0, output_tokens: 0, context_tokens: null })).toBeNull();
    const usage = { input_tokens: 12_345, output_tokens: 678, context_tokens: 4000 };
    expect(usageLabel(usage)).toBe("12k in · 678 out");
    expect(usageDescription(usage)).toBe(
      "This chat used 12,345 input and 678 output tokens; the last call read 4,000 tokens of context.",
    );
  });
});
