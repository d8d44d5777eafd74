// Pure helpers for the Tools (governance) section: the `tools.*` values it stores, built from
// what the person typed, so they are unit-tested without a Tauri runtime.
import type { ToolBreakerView, ToolGovernanceView, ToolQuotaView } from "../../gen";
import { parseLines } from "./settingsForm";

/** What the person confirms before autonomous mode goes on. */
export const AUTONOMOUS_WARNING =
  "In autonomous mode, tool calls the approval policy would ask you about run without asking: " +
  "commands, file changes, messages. The safeguard still refuses what it refuses, your denied " +
  "paths and blocklist still hold, and commands outside the sandbox are still asked. " +
  "Osprey shows a banner for as long as it is on.";

/** The banner's sentence while autonomous mode is on. */
export const AUTONOMOUS_BANNER =
  "Autonomous mode is on: tool calls that would need your approval run without asking.";

/** Whether a tool or category is switched off. */
export function isDisabled(disabled: string[], name: string): boolean {
  return disabled.includes(name);
}

/** `tools.disabled` with `name` switched on (removed) or off (added), sorted, once. */
export function disabledValue(disabled: string[], name: string, enabled: boolean): string[] {
  const rest = disabled.filter((entry) => entry !== name);
  return (enabled ? rest : [...rest, name]).sort();
}

/** The `tools.denied_paths` or `tools.blocklist` value for a textarea: one entry per line. */
export function listValue(text: string): string[] {
  return parseLines(text);
}

/** A cap as typed: empty is no cap; otherwise a whole number of at least 1. */
function cap(text: string, what: string): number | null | { problem: string } {
  const clean = text.trim();
  if (clean === "") return null;
  if (!/^\d+$/.test(clean) || Number(clean) < 1) {
    return { problem: `${what} must be a whole number of at least 1, or empty for no cap` };
  }
  return Number(clean);
}

/** The `tools.quotas` value with the quota of `key` set (or removed when both caps are empty). */
export function quotaValue(
  quotas: Record<string, ToolQuotaView | undefined>,
  key: string,
  perSession: string,
  perDay: string,
): { quotas: Record<string, ToolQuotaView> } | { problem: string } {
  const name = key.trim();
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,2}$/.test(name)) {
    return { problem: "Name a tool, tool.resource or tool.resource.action (e.g. shell or shell.bash.exec)" };
  }
  const session = cap(perSession, "Per session");
  if (session !== null && typeof session === "object") return session;
  const day = cap(perDay, "Per day");
  if (day !== null && typeof day === "object") return day;
  const next: Record<string, ToolQuotaView> = {};
  for (const [existing, quota] of Object.entries(quotas)) {
    if (quota && existing !== name) next[existing] = quota;
  }
  if (session !== null || day !== null) next[name] = { per_session: session, per_day: day };
  return { quotas: next };
}

/** The `tools.quotas` value without `key`. */
export function quotaRemoved(
  quotas: Record<string, ToolQuotaView | undefined>,
  key: string,
): Record<string, ToolQuotaView> {
  const next: Record<string, ToolQuotaView> = {};
  for (const [existing, quota] of Object.entries(quotas)) {
    if (quota && existing !== key) next[existing] = quota;
  }
  return next;
}

/** How a quota reads in the list. */
export function quotaLabel(quota: ToolQuotaView): string {
  const parts: string[] = [];
  if (quota.per_session !== null) parts.push(`${quota.per_session} per session`);
  if (quota.per_day !== null) parts.push(`${quota.per_day} per day`);
  return parts.join(", ");
}

/** The `tools.breaker` value from the form, or what is wrong with it. */
export function breakerValue(form: {
  failures: string;
  windowSeconds: string;
  cooldownSeconds: string;
}): ToolBreakerView | { problem: string } {
  const whole = (text: string) => (/^\d+$/.test(text.trim()) ? Number(text.trim()) : null);
  const failures = whole(form.failures);
  const window = whole(form.windowSeconds);
  const cooldown = whole(form.cooldownSeconds);
  if (failures === null || window === null || cooldown === null) {
    return { problem: "Failures, window and cool-down are whole numbers (failures 0 turns the breaker off)" };
  }
  if (failures > 0 && (window < 1 || cooldown < 1)) {
    return { problem: "The window and the cool-down are at least 1 second" };
  }
  return { failures, window_seconds: window, cooldown_seconds: cooldown };
}

/** The breaker form's fields as the stored setting fills them. */
export function breakerForm(view: ToolGovernanceView["breaker"]): {
  failures: string;
  windowSeconds: string;
  cooldownSeconds: string;
} {
  return {
    failures: String(view.failures),
    windowSeconds: String(view.window_seconds),
    cooldownSeconds: String(view.cooldown_seconds),
  };
}
