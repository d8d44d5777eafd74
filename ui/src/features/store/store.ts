// The Store page's logic as plain data: the install flow (prompt, progress, result), sizes,
// ratings, paging, and permissions ordered for the prompt with an update's additions marked.

import type {
  AppInstallReport,
  CoreEvent,
  PermissionExplained,
  StoreAppSummary,
  StoreInstallState,
} from "../../gen";
import type { UiError } from "../../ipc";

/** Where an install stands. */
export type InstallFlow =
  | { phase: "idle" }
  /** The permission prompt is open. */
  | { phase: "confirm"; appId: string }
  | { phase: "downloading"; appId: string; received: number; total: number | null }
  | { phase: "verifying"; appId: string }
  | { phase: "done"; appId: string; report: AppInstallReport }
  | { phase: "failed"; appId: string; error: UiError };

export const IDLE: InstallFlow = { phase: "idle" };

/** The person pressed Install (or Update): ask first. */
export function askToInstall(appId: string): InstallFlow {
  return { phase: "confirm", appId };
}

/** The person agreed: the download starts (progress events follow). */
export function startInstall(flow: InstallFlow): InstallFlow {
  if (flow.phase !== "confirm") {
    return flow;
  }
  return { phase: "downloading", appId: flow.appId, received: 0, total: null };
}

/** Applies an `app_install_progress` event of the app being installed; others are ignored. */
export function applyInstallProgress(flow: InstallFlow, event: CoreEvent): InstallFlow {
  if (event.type !== "app_install_progress") {
    return flow;
  }
  if ((flow.phase !== "downloading" && flow.phase !== "verifying") || flow.appId !== event.app_id) {
    return flow;
  }
  if (event.stage === "verifying") {
    return { phase: "verifying", appId: flow.appId };
  }
  if (flow.phase === "verifying") {
    // A late download event never moves the bar backwards.
    return flow;
  }
  return { phase: "downloading", appId: flow.appId, received: event.received, total: event.total };
}

/** The install answered; from here on the flow is about the installed app's id (a file's too). */
export function finishInstall(flow: InstallFlow, report: AppInstallReport): InstallFlow {
  return flow.phase === "idle" ? flow : { phase: "done", appId: report.app_id, report };
}

export function failInstall(flow: InstallFlow, error: UiError): InstallFlow {
  return flow.phase === "idle" ? flow : { phase: "failed", appId: flow.appId, error };
}

/** 0 to 100 for the progress bar, or `null` while the length is unknown (an indeterminate bar). */
export function percent(flow: InstallFlow): number | null {
  if (flow.phase === "verifying" || flow.phase === "done") {
    return 100;
  }
  if (flow.phase !== "downloading" || !flow.total) {
    return null;
  }
  return Math.min(100, Math.round((flow.received * 100) / flow.total));
}

/** What the install did, in one sentence a person reads. */
export function resultSentence(report: AppInstallReport, name: string): string {
  switch (report.outcome) {
    case "installed":
      return `${name} ${report.version} is installed. It starts in the background; find it on the Apps page.`;
    case "updated":
      return `${name} is updated from ${report.from_version ?? "the previous version"} to ${report.version}.`;
    case "pending_approval":
      return `${name} ${report.version} asks for new permissions. Approve them to finish the update; until then the installed version keeps running.`;
  }
}

/** `1.2 MB`, `340 KB`, `512 bytes`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} bytes`;
  }
  const units = ["KB", "MB", "GB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** `4.5 ★ (12 reviews)`, or `No reviews yet`. */
export function formatRating(app: Pick<StoreAppSummary, "rating" | "review_count">): string {
  if (app.rating === null || app.review_count === 0) {
    return "No reviews yet";
  }
  const reviews = app.review_count === 1 ? "1 review" : `${app.review_count} reviews`;
  return `${app.rating.toFixed(1)} ★ (${reviews})`;
}

/** How many pages `total` apps fill. */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / Math.max(1, perPage)));
}

/** A category name as a label: `developer-tools` -> `Developer tools`. */
export function categoryLabel(name: string): string {
  const words = name.replace(/-/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export interface PromptPermission extends PermissionExplained {
  /** New in this update (highlighted). */
  added: boolean;
}

const RANK = { high: 0, medium: 1, low: 2 } as const;

/**
 * The permissions as the prompt lists them: an update's additions first, then by sensitivity
 * (high first), keeping the manifest's order otherwise.
 */
export function promptPermissions(
  permissions: PermissionExplained[],
  added: string[],
): PromptPermission[] {
  return permissions
    .map((p, index) => ({ ...p, added: added.includes(p.permission), index }))
    .sort(
      (a, b) =>
        Number(b.added) - Number(a.added) ||
        RANK[a.sensitivity] - RANK[b.sensitivity] ||
        a.index - b.index,
    )
    .map(({ index: _index, ...p }) => p);
}

/** The main button's label on an app's page. */
export function actionLabel(state: StoreInstallState): string | null {
  switch (state) {
    case "not_installed":
      return "Install";
    case "update_available":
      return "Update";
    case "installed":
    case "update_pending":
      return null;
  }
}
