// Settings, Agents: the editor's form and descriptions, and the commands it calls through a
// mocked IPC with the arguments the Rust side expects.
import { beforeEach, describe, expect, it, vi } from "vitest";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const ipc = await import("../../ipc");
const agents = await import("./agents");
type AgentTypeView = import("../../ipc").AgentTypeView;

const type: AgentTypeView = {
  name: "triage",
  description: "Sorts the inbox",
  prompt: "You sort mail. Be brief.",
  model: "claude-haiku",
  own_model: "claude-sonnet",
  model_from_setting: true,
  packs: ["read-only-research"],
  builtin: false,
  source: "/data/agents/triage.json",
  unavailable_packs: [],
};

describe("agent types in Settings", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("edits a type's own model and sends a trimmed draft without an empty model", () => {
    const form = agents.formFor(type);
    expect(form.model).toBe("claude-sonnet");
    expect(agents.draftOf({ ...form, name: " triage ", model: "  " })).toEqual({
      name: "triage",
      description: "Sorts the inbox",
      prompt: "You sort mail. Be brief.",
      packs: ["read-only-research"],
    });
    expect(agents.togglePack(["a", "b"], "a", false)).toEqual(["b"]);
    expect(agents.togglePack(["b"], "a", true)).toEqual(["b", "a"]);
    expect(agents.togglePack(["a"], "a", true)).toEqual(["a"]);
  });

  it("describes models, prompts and the riskiest chosen pack", () => {
    expect(agents.modelLabel(type)).toBe("claude-haiku (agents.models setting)");
    expect(agents.modelLabel({ ...type, model: undefined })).toBe("the parent's model");
    expect(agents.promptSummary("You sort mail.  Be brief.")).toBe("You sort mail.");
    expect(agents.promptSummary("no stop at all")).toBe("no stop at all");
    const packs = [
      { name: "r", description: "", risk: "read-only", tools: [], builtin: true },
      { name: "c", description: "", risk: "privileged", tools: [], builtin: true },
      { name: "w", description: "", risk: "standard", tools: [], builtin: true },
    ];
    expect(agents.riskiest(["r", "w"], packs)).toBe("standard");
    expect(agents.riskiest(["c", "r"], packs)).toBe("privileged");
    expect(agents.riskiest([], packs)).toBeNull();
  });

  it("saves, deletes and lists through the commands the core exposes", async () => {
    invoke.mockResolvedValue({});
    await ipc.agentCatalog();
    await ipc.saveAgentType(agents.draftOf(agents.formFor(type)));
    await ipc.deleteAgentType("triage");
    expect(invoke.mock.calls).toEqual([
      ["agent_catalog", undefined],
      [
        "save_agent_type",
        {
          draft: {
            name: "triage",
            description: "Sorts the inbox",
            prompt: "You sort mail. Be brief.",
            model: "claude-sonnet",
            packs: ["read-only-research"],
          },
        },
      ],
      ["delete_agent_type", { name: "triage" }],
    ]);
  });
});
