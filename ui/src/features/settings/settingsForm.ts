// Pure helpers for the settings sections (policy, origin rules, MCP servers, skills), kept apart
// from the components so they are unit-tested without a Tauri runtime.
import type { McpServerView, Origin, Persona, PolicySettings, SkillView } from "../../gen";

export const LEVELS: ReadonlyArray<{ id: PolicySettings["level"]; label: string; hint: string }> = [
  { id: "deny", label: "Deny", hint: "Nothing that needs approval runs." },
  {
    id: "allowlist",
    label: "Allowlist",
    hint: "Allowlisted commands, safe programs and your grants run; the rest is asked.",
  },
  { id: "full", label: "Full", hint: "Everything that can be checked runs. The safeguard still blocks dangerous calls." },
];

export const ASK_MODES: ReadonlyArray<{ id: PolicySettings["ask"]; label: string }> = [
  { id: "on-miss", label: "Ask when nothing allows a call" },
  { id: "always", label: "Always ask" },
  { id: "off", label: "Never ask: refuse what is not allowed" },
];

/** The origins a rule can name, with what each means to a person. */
export const ORIGINS: ReadonlyArray<{ id: Origin; label: string }> = [
  { id: "user", label: "You, in chat" },
  { id: "comm", label: "Messages from chat bridges" },
  { id: "app", label: "Installed apps" },
  { id: "skill", label: "Skills" },
  { id: "system", label: "Reminders and Osprey itself" },
  { id: "mcp", label: "MCP clients" },
];

/** One entry per line; blank lines and surrounding spaces dropped, duplicates once. */
export function parseLines(text: string): string[] {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim().replace(/\s+/g, " ");
    if (line && !seen.has(line)) {
      seen.add(line);
      lines.push(line);
    }
  }
  return lines;
}

/** The `policy` value to store for an edited form. */
export function policyValue(policy: PolicySettings, allowlist: string, safeBins: string): PolicySettings {
  return {
    level: policy.level,
    ask: policy.ask,
    allowlist: parseLines(allowlist),
    safe_bins: parseLines(safeBins),
  };
}

/** The `origin_rules` value with `entry` added to (or removed from) `origin`'s denies. */
export function originRulesValue(
  deny: Partial<Record<Origin, string[]>>,
  origin: Origin,
  entry: string,
  add: boolean,
): { deny: Partial<Record<Origin, string[]>> } {
  const next: Partial<Record<Origin, string[]>> = {};
  for (const [key, list] of Object.entries(deny) as Array<[Origin, string[] | undefined]>) {
    if (list && list.length > 0) next[key] = [...list];
  }
  const current = next[origin] ?? [];
  const clean = entry.trim();
  const updated = add
    ? current.includes(clean) || clean === ""
      ? current
      : [...current, clean]
    : current.filter((item) => item !== clean);
  if (updated.length > 0) {
    next[origin] = updated;
  } else {
    delete next[origin];
  }
  return { deny: next };
}

export interface McpForm {
  name: string;
  kind: "command" | "url";
  command: string;
  args: string;
  url: string;
}

export const EMPTY_MCP_FORM: McpForm = { name: "", kind: "command", command: "", args: "", url: "" };

/** Splits an argument line the way a person types it: spaces separate, quotes group. */
export function splitArgs(text: string): string[] {
  const args: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const match of text.matchAll(pattern)) {
    args.push(match[1] ?? match[2] ?? match[3]);
  }
  return args;
}

/**
 * The server's entry for `mcp.servers`, or why the form cannot be saved yet. The core checks
 * again (and says why) when it is written.
 */
export function mcpConfig(form: McpForm): { name: string; config: Record<string, unknown> } | { problem: string } {
  const name = form.name.trim();
  if (!/^[A-Za-z0-9_-]+$/.test(name) || name.includes("__")) {
    return { problem: "Give the server a name of letters, digits, - and _ (no double _)." };
  }
  if (form.kind === "command") {
    const command = form.command.trim();
    if (!command) return { problem: "Give the program that starts the server." };
    const args = splitArgs(form.args);
    return { name, config: args.length > 0 ? { command, args } : { command } };
  }
  const url = form.url.trim();
  if (!/^https?:\/\/\S+$/.test(url)) {
    return { problem: "Give the server's http:// or https:// address." };
  }
  return { name, config: { url } };
}

/** A server's connection in words. */
export function mcpStateLabel(server: McpServerView): string {
  switch (server.state) {
    case "connected":
      return server.tools.length === 1 ? "Connected · 1 tool" : `Connected · ${server.tools.length} tools`;
    case "connecting":
      return "Connecting…";
    case "retrying":
      return "Not connected, retrying";
    case "disabled":
      return "Turned off";
    case "invalid":
      return "Cannot be used as written";
    case "stopped":
      return "Stopped";
    case "not_started":
      return "Not started (background services are not running)";
    default:
      return server.state;
  }
}

/** A tool's registry name without the `mcp__<server>__` prefix. */
export function mcpToolName(server: string, tool: string): string {
  const prefix = `mcp__${server.replace(/[^A-Za-z0-9_-]/g, "_")}__`;
  return tool.startsWith(prefix) ? tool.slice(prefix.length) : tool;
}

/** Where a skill comes from, in words. */
export function skillSourceLabel(skill: SkillView): string {
  switch (skill.source) {
    case "bundled":
      return "Comes with Osprey";
    case "app":
      return skill.app ? `From the app ${skill.app}` : "From an app";
    case "user":
      return "Yours";
    default:
      return skill.source;
  }
}

/** The persona form as the person edits it: every field a string, quiet hours on or off. */
export interface PersonaForm {
  name: string;
  emoji: string;
  vibe: string;
  personality: string;
  quiet: boolean;
  quietStart: string;
  quietEnd: string;
}

export function personaForm(persona: Persona): PersonaForm {
  return {
    name: persona.name,
    emoji: persona.emoji ?? "",
    vibe: persona.vibe ?? "",
    personality: persona.personality ?? "",
    quiet: persona.quiet_hours !== null,
    quietStart: persona.quiet_hours?.start ?? "22:00",
    quietEnd: persona.quiet_hours?.end ?? "07:00",
  };
}

/** The `persona` value to store: blank optional fields become null, the name defaults to Osprey. */
export function personaValue(form: PersonaForm): Persona {
  const optional = (text: string) => (text.trim() === "" ? null : text.trim());
  return {
    name: form.name.trim() === "" ? "Osprey" : form.name.trim(),
    emoji: optional(form.emoji),
    vibe: optional(form.vibe),
    personality: optional(form.personality),
    quiet_hours: form.quiet ? { start: form.quietStart, end: form.quietEnd } : null,
  };
}
