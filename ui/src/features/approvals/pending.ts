// Pending approval questions as plain data: which are open, how each core event changes the
// list, and how long each has left. ApprovalDialog and ApprovalsView render from this.

import type { ApprovalAnswer, CoreEvent, GrantScope, PendingApproval } from "../../gen";

/** The open questions, oldest deadline first. */
export function applyApprovalEvent(pending: PendingApproval[], event: CoreEvent): PendingApproval[] {
  switch (event.type) {
    case "approval_requested": {
      if (pending.some((p) => p.request.id === event.request.id)) {
        return pending;
      }
      const next = [...pending, { request: event.request, deadline_ms: event.deadline_ms }];
      return next.sort((a, b) => a.deadline_ms - b.deadline_ms);
    }
    case "approval_resolved":
      return pending.some((p) => p.request.id === event.request_id)
        ? pending.filter((p) => p.request.id !== event.request_id)
        : pending;
    default:
      return pending;
  }
}

/** Whole seconds until the question is denied (never negative). */
export function secondsLeft(deadlineMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil((deadlineMs - nowMs) / 1000));
}

/** "tool resource action", e.g. "shell bash exec". */
export function describeCall(pending: PendingApproval): string {
  const { tool, resource, action } = pending.request;
  return [tool, resource, action].filter((part) => part).join(" ");
}

/**
 * Whether the question may be answered beyond this call ("always this session", a grant). An
 * install from the store, or a command outside the sandbox, is answered for this call only: the
 * core ignores any lasting answer to it, so the dialog does not offer one.
 */
export function offersLastingAnswers(pending: PendingApproval): boolean {
  return pending.request.once_only !== true;
}

/** A lasting scope in words, for the grant buttons. */
export function describeScope(scope: GrantScope): string {
  switch (scope.kind) {
    case "path_prefix":
      return `files under ${scope.value}`;
    case "domain":
      return `the web domain ${scope.value}`;
    case "app":
      return `the app ${scope.value}`;
    case "command_pattern":
      return `commands matching \`${scope.value}\``;
  }
}

export const ONCE: ApprovalAnswer = { answer: "once" };
export const ALWAYS_THIS_SESSION: ApprovalAnswer = { answer: "always_this_session" };
export const DENY: ApprovalAnswer = { answer: "deny" };

/** A grant of `scope` for the rest of the session. */
export function grantForSession(scope: GrantScope): ApprovalAnswer {
  return { answer: "grant", scope, duration: { kind: "session" } };
}
