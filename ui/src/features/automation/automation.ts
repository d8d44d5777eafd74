// Pause state, autonomous mode and running work as the window shows them: one reducer over core events, so the
// banner and the chat agree with the tray without asking the core on every event.
import type { AutomationStatus, CoreEvent } from "../../gen";

export const IDLE: AutomationStatus = { paused: false, autonomous: false, turns: [], apps_running: 0, apps_total: 0 };

/** The status after an event; the same object when the event changes nothing shown here. */
export function applyAutomationEvent(status: AutomationStatus, event: CoreEvent): AutomationStatus {
  switch (event.type) {
    case "automation_paused":
      return event.paused === status.paused ? status : { ...status, paused: event.paused };
    case "autonomous_mode":
      return event.on === status.autonomous ? status : { ...status, autonomous: event.on };
    case "chat_turn_started":
      if (status.turns.some((turn) => turn.session_id === event.session_id)) return status;
      return {
        ...status,
        turns: [...status.turns, { session_id: event.session_id, origin: "user", started_ms: Date.now() }],
      };
    case "chat_turn_finished":
    case "chat_turn_failed":
      if (!status.turns.some((turn) => turn.session_id === event.session_id)) return status;
      return { ...status, turns: status.turns.filter((turn) => turn.session_id !== event.session_id) };
    default:
      return status;
  }
}

/** The banner's sentence while paused. */
export function pausedMessage(status: AutomationStatus): string {
  const waiting = status.turns.length;
  const base = "Automation is paused: no tool runs, and reminders and messages wait.";
  if (waiting === 0) return base;
  return `${base} ${waiting === 1 ? "1 turn is" : `${waiting} turns are`} waiting.`;
}
