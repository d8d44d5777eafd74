// The open approval questions, shared by the dialog (always mounted in App.svelte) and the
// Approvals page: loaded once, then kept current from core events.

import { answerApproval, onCoreEvent, pendingApprovals, toUiError, type UiError } from "../../ipc";
import type { ApprovalAnswer, PendingApproval } from "../../gen";
import { applyApprovalEvent } from "./pending";

class ApprovalsStore {
  #pending = $state<PendingApproval[]>([]);
  error = $state<UiError | null>(null);
  /** The clock the questions' countdowns read; it ticks only while a question is open. */
  now = $state(Date.now());
  #ticker: ReturnType<typeof setInterval> | null = null;
  private started = false;

  get pending(): PendingApproval[] {
    return this.#pending;
  }

  /** Sets the open questions, and starts or stops the countdowns' clock: a window with nothing
   * to ask never wakes for it. */
  set pending(list: PendingApproval[]) {
    this.#pending = list;
    if (list.length > 0 && this.#ticker === null) {
      this.now = Date.now();
      this.#ticker = setInterval(() => (this.now = Date.now()), 250);
    } else if (list.length === 0 && this.#ticker !== null) {
      clearInterval(this.#ticker);
      this.#ticker = null;
    }
  }

  /** Starts listening (once) and loads what is already waiting. */
  async start(): Promise<void> {
    if (this.started) {
      return;
    }
    this.started = true;
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
