// Settings, Agents: the editor's form for the person's agent types, and how types and packs are
// described. The core checks a saved type with the loader's own checks; this only shapes the form.
import type { AgentTypeDraft, AgentTypeView, ToolPackView } from "../../ipc";

export interface AgentForm {
  name: string;
  description: string;
  prompt: string;
  model: string;
  packs: string[];
}

export const EMPTY_AGENT_FORM: AgentForm = { name: "", description: "", prompt: "", model: "", packs: [] };

/** The form for editing `type` (its own model, not the one a setting gives it). */
export function formFor(type: AgentTypeView): AgentForm {
  return {
    name: type.name,
    description: type.description,
    prompt: type.prompt,
    model: type.own_model ?? "",
    packs: [...type.packs],
  };
}

/** What is sent to the core: trimmed, an empty model left out. */
export function draftOf(form: AgentForm): AgentTypeDraft {
  const model = form.model.trim();
  return {
    name: form.name.trim(),
    description: form.description.trim(),
    prompt: form.prompt.trim(),
    ...(model ? { model } : {}),
    packs: [...form.packs],
  };
}

/** Adds or removes a pack, keeping the order they were chosen in. */
export function togglePack(packs: string[], name: string, on: boolean): string[] {
  const without = packs.filter((p) => p !== name);
  return on ? [...without, name] : without;
}

/** The model a type runs on, in words. */
export function modelLabel(type: AgentTypeView): string {
  if (!type.model) {
    return "the parent's model";
  }
  return type.model_from_setting ? `${type.model} (agents.models setting)` : type.model;
}

/** The prompt's first sentence (or its start), for a list. */
export function promptSummary(prompt: string, max = 160): string {
  const text = prompt.trim().replace(/\s+/g, " ");
  const sentence = text.match(/^.*?[.!?](\s|$)/)?.[0]?.trim() ?? text;
  return sentence.length > max ? `${sentence.slice(0, max - 1).trimEnd()}…` : sentence;
}

/** Risk profiles from least to most. */
const RISKS = ["read-only", "standard", "privileged"];

/** The riskiest of the chosen packs (what the trust setting must allow), or null. */
export function riskiest(packs: string[], all: ToolPackView[]): string | null {
  const risks = packs.map((name) => all.find((p) => p.name === name)?.risk).filter((r): r is string => !!r);
  if (risks.length === 0) {
    return null;
  }
  return risks.reduce((a, b) => (RISKS.indexOf(b) > RISKS.indexOf(a) ? b : a));
}
