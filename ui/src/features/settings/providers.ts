// Pure helpers for the Settings > Model section, kept apart from the component so they can be
// unit-tested without a Tauri runtime.
import type { ProviderRow } from "../../gen";

export const PROVIDER_NAMES: Record<string, string> = {
  anthropic: "Anthropic",
  openai: "OpenAI or a compatible server",
  ollama: "Ollama (local)",
};

/** How a provider's key stands, in words. */
export function keyLabel(row: ProviderRow): string {
  switch (row.key) {
    case "not_needed":
      return "No key needed";
    case "environment":
      return "Key from the environment";
    case "stored":
      return "Key stored";
    default:
      return "No key yet";
  }
}

/** Whether the provider can hold a key (Ollama needs none). */
export function takesKey(row: ProviderRow): boolean {
  return row.key !== "not_needed";
}

/**
 * The settings to write for a form's values: only fields that changed, as `provider.<kind>.<field>`
 * keys; an emptied field clears the stored value.
 */
export function changedSettings(
  row: ProviderRow,
  form: { model: string; baseUrl: string; apiKey: string },
): Array<[string, string]> {
  const changes: Array<[string, string]> = [];
  const prefix = `provider.${row.provider}`;
  if (form.model.trim() !== row.model) {
    changes.push([`${prefix}.model`, form.model.trim()]);
  }
  if (form.baseUrl.trim() !== (row.base_url ?? "")) {
    changes.push([`${prefix}.base_url`, form.baseUrl.trim()]);
  }
  if (form.apiKey.trim() !== "") {
    changes.push([`${prefix}.api_key`, form.apiKey.trim()]);
  }
  return changes;
}
