import { describe, expect, it } from "vitest";
import type { ProviderOverview } from "../../gen";
import { DEFAULT_PICK, ModelPicks, modelOptions, pickedOption } from "./modelPicker";

const overview: ProviderOverview = {
  default: "anthropic",
  app: null,
  chat_uses: "anthropic claude-sonnet-4-5",
  chat_problem: null,
  providers: [
    { provider: "anthropic", base_url: null, model: "claude-sonnet-4-5", key: "stored" },
    { provider: "openai", base_url: null, model: "gpt-4.1", key: "not_set" },
    { provider: "ollama", base_url: null, model: "llama3.2", key: "not_needed" },
  ],
};

describe("modelOptions", () => {
  it("offers the default, then providers that can answer", () => {
    expect(modelOptions(overview).map((o) => [o.id, o.label])).toEqual([
      ["default", "Default (anthropic claude-sonnet-4-5)"],
      ["anthropic:claude-sonnet-4-5", "Anthropic · claude-sonnet-4-5"],
      ["ollama:llama3.2", "Ollama · llama3.2"],
    ]);
    expect(modelOptions(null)).toEqual([{ id: "default", provider: null, model: null, label: "Default model" }]);
  });

  it("falls back to the default for a pick that is gone", () => {
    const options = modelOptions(overview);
    expect(pickedOption(options, "ollama:llama3.2").provider).toBe("ollama");
    expect(pickedOption(options, "openai:gpt-4.1").id).toBe(DEFAULT_PICK);
  });
});

describe("ModelPicks", () => {
  it("keeps each chat's pick and starts a new chat with the last one", () => {
    const picks = new ModelPicks();
    expect(picks.get(null)).toBe(DEFAULT_PICK);
    picks.set("a", "ollama:llama3.2");
    expect(picks.get("a")).toBe("ollama:llama3.2");
    expect(picks.get("b")).toBe(DEFAULT_PICK);
    expect(picks.get(null)).toBe("ollama:llama3.2");
    picks.set(null, DEFAULT_PICK);
    expect(picks.get("a")).toBe("ollama:llama3.2");
  });
});
