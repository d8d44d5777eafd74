// The settings page's writes against a mocked IPC: the command names and arguments the Rust side
// expects, and a refusal kept in place by the section's save state.
import { beforeEach, describe, expect, it, vi } from "vitest";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const ipc = await import("../../ipc");
const { SaveState } = await import("./save.svelte");

describe("settings IPC", () => {
  beforeEach(() => invoke.mockReset());

  it("writes a setting as JSON and returns the new overview", async () => {
    invoke.mockResolvedValue({ theme: "dark" });
    const next = await ipc.setSetting("policy", { level: "full", ask: "off", allowlist: [], safe_bins: [] });
    expect(invoke).toHaveBeenCalledWith("set_setting", {
      key: "policy",
      value: { level: "full", ask: "off", allowlist: [], safe_bins: [] },
    });
    expect(next).toEqual({ theme: "dark" });
  });

  it("writes the tools settings as the core validates them", async () => {
    invoke.mockResolvedValue({});
    await ipc.setSetting("tools.disabled", ["desktop", "exec"]);
    await ipc.setSetting("tools.autonomous", true);
    await ipc.setSetting("tools.quotas", { shell: { per_session: 5, per_day: null } });
    expect(invoke.mock.calls).toEqual([
      ["set_setting", { key: "tools.disabled", value: ["desktop", "exec"] }],
      ["set_setting", { key: "tools.autonomous", value: true }],
      ["set_setting", { key: "tools.quotas", value: { shell: { per_session: 5, per_day: null } } }],
    ]);
  });

  it("adds and removes MCP servers, toggles skills and the pause", async () => {
    invoke.mockResolvedValue({});
    await ipc.saveMcpServer("echo", { command: "/bin/echo-mcp" });
    await ipc.removeMcpServer("echo");
    await ipc.setSkillEnabled("desktop-automation", false);
    await ipc.setAutomationPaused(true);
    expect(invoke.mock.calls).toEqual([
      ["save_mcp_server", { name: "echo", config: { command: "/bin/echo-mcp" } }],
      ["remove_mcp_server", { name: "echo" }],
      ["set_skill_enabled", { name: "desktop-automation", enabled: false }],
      ["set_automation_paused", { paused: true }],
    ]);
  });

  it("keeps a refusal in place and nothing is marked saved", async () => {
    invoke.mockRejectedValue({ code: "invalid_setting", message: "`store.url` must be an http or https URL" });
    const save = new SaveState();
    const done = vi.fn();
    const ok = await save.run(() => ipc.setSetting("store.url", "ftp://x"), done);
    expect(ok).toBe(false);
    expect(done).not.toHaveBeenCalled();
    expect(save.saved).toBe(false);
    expect(save.error).toEqual({ code: "invalid_setting", message: "`store.url` must be an http or https URL" });
    invoke.mockResolvedValue({ store_url: "https://store.example.com" });
    expect(await save.run(() => ipc.setSetting("store.url", "https://store.example.com"), done)).toBe(true);
    expect(save.error).toBeNull();
    expect(save.saved).toBe(true);
    expect(done).toHaveBeenCalledWith({ store_url: "https://store.example.com" });
  });
});
