import { describe, expect, it } from "vitest";
import type { ProviderRow } from "../../gen";
import { changedSettings, keyLabel, takesKey } from "./providers";

const openai: ProviderRow = {
  provider: "openai",
  base_url: null,
  model: "gpt-4.1-mini",
  key: "not_set",
};

describe("provider settings", () => {
  it("describes the key without ever holding it", () => {
    expect(keyLabel(openai)).toBe("No key yet");
    expect(keyLabel({ ...openai, key: "stored" })).toBe("Key stored");
    expect(keyLabel({ ...openai, key: "environment" })).toBe("Key from the environment");
    expect(takesKey({ ...openai, provider: "ollama", key: "not_needed" })).toBe(false);
    expect(takesKey(openai)).toBe(true);
  });

  it("writes only what changed, and an emptied field clears it", () => {
    expect(changedSettings(openai, { model: "gpt-4.1-mini", baseUrl: "", apiKey: "" })).toEqual([]);
    expect(
      changedSettings(openai, { model: " qwen3 ", baseUrl: "http://127.0.0.1:8080/v1", apiKey: "sk-1" }),
    ).toEqual([
      ["provider.openai.model", "qwen3"],
      ["provider.openai.base_url", "http://127.0.0.1:8080/v1"],
      ["provider.openai.api_key", "sk-1"],
    ]);
    const stored = { ...openai, base_url: "http://old/v1" };
    expect(changedSettings(stored, { model: "gpt-4.1-mini", baseUrl: "", apiKey: "" })).toEqual([
      ["provider.openai.base_url", ""],
    ]);
  });
});
