// The window's one copy of the automation status (the banner and the chat read it).
import type { AutomationStatus } from "../../gen";
import { automationStatus, onCoreEvent, setAutomationPaused, toUiError, type UiError } from "../../ipc";
import { IDLE, applyAutomationEvent } from "./automation";

export const automation = $state<{ status: AutomationStatus; error: UiError | null }>({
  status: IDLE,
  error: null,
});

/** Loads the status and follows events; returns the function that stops following. */
export function followAutomation(): () => void {
  let closed = false;
  let unlisten: (() => void) | null = null;
  automationStatus()
    .then((status) => (automation.status = status))
    .catch(() => {
      // Without a core the banner has nothing to say; the app shows the core's error.
    });
  onCoreEvent((event) => {
    const next = applyAutomationEvent(automation.status, event);
    if (next !== automation.status) automation.status = next;
  })
    .then((stop) => (closed ? stop() : (unlisten = stop)))
    .catch(() => {});
  return () => {
    closed = true;
    unlisten?.();
  };
}

export async function setPaused(paused: boolean): Promise<void> {
  automation.error = null;
  try {
    automation.status = await setAutomationPaused(paused);
  } catch (reason) {
    automation.error = toUiError(reason);
  }
}
