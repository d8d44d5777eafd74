// The Approvals page's trail and grants as plain data: how a row reads (outcome, decision,
// duration, time), how the filter form becomes a query, and when a grant ends.

import type { AuditFilter, AuditOutcome, AuditRow, GrantRow, Origin } from "../../gen";

export const OUTCOME_LABELS: Record<AuditOutcome, string> = {
  allowed: "Allowed",
  approved: "Approved",
  refused: "Refused",
  failed: "Failed",
};

/** The decision as a person reads it: `ask:grant` -> "you granted a scope". */
export function decisionLabel(decision: string): string {
  const known: Record<string, string> = {
    "allow:read_only": "read-only, no question needed",
    "allow:full": "allowed by the Full policy level",
    "allow:safe_bin": "a safe read-only program",
    "allow:allowlist": "on the allowlist",
    "allow:session": "you allowed it for this session",
    "allow:grant": "covered by a grant",
    "ask:once": "you allowed it once",
    "ask:session": "you allowed it for this session",
    "ask:grant": "you granted a scope",
    hook: "handled by an app's hook",
    autonomous: "run unasked: autonomous mode was on",
    tool_disabled: "refused: the tool is switched off in Settings",
    quota_exceeded: "refused: the tool's quota was used up",
    circuit_open: "refused: the tool kept failing and is paused",
    approval_denied: "denied (by you, or nobody answered in time)",
    policy_denied: "the policy refused it",
    origin_denied: "not allowed from this origin",
    safeguard_blocked: "blocked by the safeguard",
    ssrf_blocked: "blocked: a private network address",
    sensitive_path: "blocked: a sensitive path",
    cancelled: "cancelled",
  };
  return known[decision] ?? decision.replace(/_/g, " ");
}

/** `tool resource action`, skipping what is missing. */
export function callLabel(row: Pick<AuditRow, "tool" | "resource" | "action">): string {
  // `file file write` says the tool twice: a resource named like its tool is left out.
  const resource = row.resource === row.tool ? null : row.resource;
  return [row.tool, resource, row.action].filter(Boolean).join(" ");
}

/** `12 ms`, `1.4 s`, `<1 ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1) {
    return "<1 ms";
  }
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/** The time of a row: the clock today, the date and clock before. */
export function formatWhen(atMs: number, now: number = Date.now()): string {
  const at = new Date(atMs);
  const today = new Date(now);
  const sameDay = at.toDateString() === today.toDateString();
  const time = at.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return sameDay ? time : `${at.toLocaleDateString(undefined, { dateStyle: "medium" })} ${time}`;
}

/** The filter form's fields. */
export interface FilterForm {
  tool: string;
  origin: Origin | "";
  outcome: AuditOutcome | "";
  text: string;
}

export const EMPTY_FILTER: FilterForm = { tool: "", origin: "", outcome: "", text: "" };

/** The query the form asks for; empty fields narrow nothing. */
export function toFilter(form: FilterForm, beforeId?: number, limit = 100): AuditFilter {
  const filter: AuditFilter = { limit };
  if (form.tool.trim()) filter.tool = form.tool.trim();
  if (form.origin) filter.origin = form.origin;
  if (form.outcome) filter.outcome = form.outcome;
  if (form.text.trim()) filter.text = form.text.trim();
  if (beforeId !== undefined) filter.before_id = beforeId;
  return filter;
}

/** When a grant ends, in words. */
export function grantEnds(grant: GrantRow, now: number = Date.now()): string {
  if (grant.expires_ms === null) {
    return grant.session_id ? "Until this conversation ends" : "Until you revoke it";
  }
  const left = grant.expires_ms - now;
  if (left <= 0) {
    return "Expired";
  }
  const minutes = Math.round(left / 60_000);
  if (minutes < 60) {
    return `For ${Math.max(1, minutes)} more minute${minutes === 1 ? "" : "s"}`;
  }
  return `Until ${new Date(grant.expires_ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })}`;
}

/** The grants list after a revocation. */
export function withoutGrant(grants: GrantRow[], id: number): GrantRow[] {
  return grants.filter((grant) => grant.id !== id);
}
