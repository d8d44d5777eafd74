// The open approval questions, shared by the dialog (always mounted in App.svelte) and the
// Approvals page: loaded once, then kept current from core events.

import { answerApproval, onCoreEvent, pendingApprovals, toUiError, type UiError } from "../../ipc";
import type { ApprovalAnswer, PendingApproval } from "../../gen";
import { applyApprovalEvent } from "./pending";

class ApprovalsStore {
  pending = $state<PendingApproval[]>([]);
  error = $state<UiError | null>(null);
  now = $state(Date.now());
  private started = false;

  /** Starts listening (once) and loads what is already waiting. */
  async start(): Promise<void> {
    if (this.started) {
      return;
    }
    this.started = true;
    setInterval(() => (this.now = Date.now()), 250);
    try {
      await onCoreEvent((event) => {
        this.pending = applyApprovalEvent(this.pending, event);
      });
      const already = await pendingApprovals();
      this.pending = already.reduce(
        (list, p) =>
          applyApprovalEvent(list, {
            type: "approval_requested",
            request: p.request,
            deadline_ms: p.deadline_ms,
          }),
        this.pending,
      );
    } catch (reason) {
      this.error = toUiError(reason);
    }
  }

  async answer(requestId: string, answer: ApprovalAnswer): Promise<void> {
    this.error = null;
    try {
      await answerApproval(requestId, answer);
    } catch (reason) {
      this.error = toUiError(reason);
    }
    // Answered, timed out or withdrawn meanwhile: either way it is no longer open.
    this.pending = this.pending.filter((p) => p.request.id !== requestId);
  }
}

export const approvals = new ApprovalsStore();
