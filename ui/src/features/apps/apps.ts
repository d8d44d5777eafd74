// The Apps page's list as plain data: how AppStateChanged (and AppRemoved) events update it and how each state
// reads to a person.

import type { AppRunState, AppStatus, CoreEvent } from "../../gen";

/** The list after `event`: the changed app replaced (or added), sorted by name; an app removed
 * elsewhere (the store told Osprey) leaves it. */
export function applyAppEvent(apps: AppStatus[], event: CoreEvent): AppStatus[] {
  if (event.type === "app_removed") {
    return apps.filter((app) => app.id !== event.app_id);
  }
  if (event.type !== "app_state_changed") {
    return apps;
  }
  const others = apps.filter((app) => app.id !== event.app.id);
  return [...others, event.app].sort((a, b) =>
    a.name.toLowerCase().localeCompare(b.name.toLowerCase()),
  );
}

const LABELS: Record<AppRunState, string> = {
  stopped: "Stopped",
  launching: "Launching",
  running: "Running",
  restarting: "Restarting",
  gave_up: "Gave up",
  quarantined: "Quarantined",
  revocation_unavailable: "Blocked: revocation list unavailable",
  failed: "Failed to start",
};

export function stateLabel(state: AppRunState): string {
  return LABELS[state];
}

/** States that need the person's attention (shown as warnings). */
export function isTrouble(state: AppRunState): boolean {
  return ["gave_up", "quarantined", "revocation_unavailable", "failed"].includes(state);
}
