import { describe, expect, it } from "vitest";
import type { McpServerView, SkillView } from "../../gen";
import {
  mcpConfig,
  mcpStateLabel,
  mcpToolName,
  originRulesValue,
  parseLines,
  personaForm,
  personaValue,
  policyValue,
  skillSourceLabel,
  splitArgs,
} from "./settingsForm";

describe("policy form", () => {
  it("reads one entry per line, trimmed, once", () => {
    expect(parseLines(" git  status \n\ncargo\ngit status\n")).toEqual(["git status", "cargo"]);
  });

  it("builds the stored policy from the form", () => {
    const policy = { level: "full" as const, ask: "always" as const, allowlist: [], safe_bins: ["ls"] };
    expect(policyValue(policy, "make test\n", "ls\ncat")).toEqual({
      level: "full",
      ask: "always",
      allowlist: ["make test"],
      safe_bins: ["ls", "cat"],
    });
  });
});

describe("origin rules", () => {
  it("adds and removes an entry and drops empty origins", () => {
    const deny = { comm: ["shell"], app: ["shell"] };
    expect(originRulesValue(deny, "mcp", "file.write", true)).toEqual({
      deny: { comm: ["shell"], app: ["shell"], mcp: ["file.write"] },
    });
    expect(originRulesValue(deny, "comm", "shell", false)).toEqual({ deny: { app: ["shell"] } });
    // No duplicates, no blanks.
    expect(originRulesValue(deny, "comm", "shell", true)).toEqual({ deny });
    expect(originRulesValue(deny, "comm", "  ", true)).toEqual({ deny });
  });
});

describe("MCP servers", () => {
  it("splits arguments like a shell line, quotes grouping", () => {
    expect(splitArgs(`--root "/tmp/my files" -v 'a b'`)).toEqual(["--root", "/tmp/my files", "-v", "a b"]);
  });

  it("builds a stdio or HTTP entry, or says what is missing", () => {
    expect(mcpConfig({ name: "echo", kind: "command", command: "/bin/mcp-echo", args: "--x 1", url: "" })).toEqual({
      name: "echo",
      config: { command: "/bin/mcp-echo", args: ["--x", "1"] },
    });
    expect(mcpConfig({ name: "docs", kind: "url", command: "", args: "", url: "https://example.com/mcp" })).toEqual({
      name: "docs",
      config: { url: "https://example.com/mcp" },
    });
    expect(mcpConfig({ name: "a__b", kind: "command", command: "x", args: "", url: "" })).toHaveProperty("problem");
    expect(mcpConfig({ name: "ok", kind: "command", command: " ", args: "", url: "" })).toHaveProperty("problem");
    expect(mcpConfig({ name: "ok", kind: "url", command: "", args: "", url: "ftp://x" })).toHaveProperty("problem");
  });

  it("describes the connection and shows tools without their prefix", () => {
    const server: McpServerView = {
      name: "echo",
      enabled: true,
      command: "mcp-echo",
      args: [],
      url: null,
      state: "connected",
      error: null,
      tools: ["mcp__echo__echo", "mcp__echo__add"],
    };
    expect(mcpStateLabel(server)).toBe("Connected · 2 tools");
    expect(mcpStateLabel({ ...server, state: "retrying" })).toBe("Not connected, retrying");
    expect(mcpToolName("echo", "mcp__echo__add")).toBe("add");
    expect(mcpToolName("my.server", "mcp__my_server__x")).toBe("x");
  });
});

describe("skills", () => {
  it("says where a skill comes from", () => {
    const skill: SkillView = { name: "s", description: "", source: "app", app: "com.example.units", path: "", enabled: true };
    expect(skillSourceLabel(skill)).toBe("From the app com.example.units");
    expect(skillSourceLabel({ ...skill, source: "bundled" })).toBe("Comes with Osprey");
    expect(skillSourceLabel({ ...skill, source: "user" })).toBe("Yours");
  });
});

describe("persona form", () => {
  it("round-trips a stored persona and drops blank fields", () => {
    const stored = {
      name: "Kestrel",
      emoji: "🦅",
      vibe: "dry",
      personality: null,
      quiet_hours: { start: "23:00", end: "06:30" },
    };
    const form = personaForm(stored);
    expect(form.quiet).toBe(true);
    expect(personaValue(form)).toEqual(stored);
    expect(personaValue({ ...form, name: "  ", vibe: "  ", quiet: false })).toEqual({
      name: "Osprey",
      emoji: "🦅",
      vibe: null,
      personality: null,
      quiet_hours: null,
    });
  });

  it("offers night-time quiet hours when none are set", () => {
    const form = personaForm({ name: "Osprey", emoji: null, vibe: null, personality: null, quiet_hours: null });
    expect(form).toMatchObject({ quiet: false, quietStart: "22:00", quietEnd: "07:00" });
  });
});
