// The chat's model picker: what it offers (the default, then each provider that can answer with
// its configured model) and which pick each chat keeps. Pure, so it is unit-tested.

import type { ProviderOverview } from "../../gen";

export const DEFAULT_PICK = "default";

export interface ModelOption {
  /** `default`, or `<provider>:<model>`. */
  id: string;
  /** Null: whatever chat resolves to (Settings > Model). */
  provider: string | null;
  model: string | null;
  label: string;
}

const SHORT_NAMES: Record<string, string> = {
  anthropic: "Anthropic",
  openai: "OpenAI",
  ollama: "Ollama",
};

/** The default first, then each provider with a key (or needing none) and its model. */
export function modelOptions(overview: ProviderOverview | null): ModelOption[] {
  const uses = overview?.chat_uses;
  const options: ModelOption[] = [
    { id: DEFAULT_PICK, provider: null, model: null, label: uses ? `Default (${uses})` : "Default model" },
  ];
  for (const row of overview?.providers ?? []) {
    if (row.key === "not_set" || !row.model) {
      continue;
    }
    options.push({
      id: `${row.provider}:${row.model}`,
      provider: row.provider,
      model: row.model,
      label: `${SHORT_NAMES[row.provider] ?? row.provider} · ${row.model}`,
    });
  }
  return options;
}

/** The option with this id, or the default when it is gone (its key removed since). */
export function pickedOption(options: ModelOption[], id: string): ModelOption {
  return options.find((option) => option.id === id) ?? options[0];
}

/**
 * Each chat's pick, in memory: a chat keeps what was picked for it; a new chat starts with the
 * last pick made.
 */
export class ModelPicks {
  private picks = new Map<string, string>();
  private last = DEFAULT_PICK;

  get(sessionId: string | null): string {
    return sessionId === null ? this.last : (this.picks.get(sessionId) ?? DEFAULT_PICK);
  }

  set(sessionId: string | null, id: string): void {
    this.last = id;
    if (sessionId !== null) {
      this.picks.set(sessionId, id);
    }
  }
}
