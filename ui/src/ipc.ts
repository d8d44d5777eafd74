// The only module that talks to the Rust side. Everything else imports typed functions from here,
// so the UI can be unit-tested (and later driven by the agent) without a Tauri runtime, and every
// failure reaches a component in one shape: `UiError { code, message }`.

import { invoke } from "@tauri-apps/api/core";
import type { CoreInfo } from "./gen/CoreInfo";
import type { UiError } from "./gen/UiError";

export type { CoreInfo, UiError };

/** Codes produced on the TypeScript side (the Rust side owns the rest). */
export const IPC_UNAVAILABLE = "ipc_unavailable";
export const IPC_ERROR = "ipc_error";

function isUiError(value: unknown): value is UiError {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Record<string, unknown>).code === "string" &&
    typeof (value as Record<string, unknown>).message === "string"
  );
}

/** True when the page runs inside the Tauri webview (not in a plain browser or a unit test). */
export function inTauri(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

/**
 * Maps whatever `invoke` rejected with to a `UiError`. Rust commands reject with a serialized
 * `UiError`; Tauri itself rejects with a plain string (unknown command, denied by a capability);
 * outside Tauri the call throws before it leaves the page.
 */
export function toUiError(reason: unknown): UiError {
  if (isUiError(reason)) {
    return { code: reason.code, message: reason.message };
  }
  if (typeof reason === "string") {
    return { code: IPC_ERROR, message: reason };
  }
  if (reason instanceof Error) {
    return {
      code: inTauri() ? IPC_ERROR : IPC_UNAVAILABLE,
      message: inTauri() ? reason.message : `Osprey's core is not reachable: ${reason.message}`,
    };
  }
  return { code: IPC_ERROR, message: String(reason) };
}

async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (reason) {
    throw toUiError(reason);
  }
}

/** Version, data directory and registered tools of the running core (Settings > About). */
export function appInfo(): Promise<CoreInfo> {
  return call<CoreInfo>("app_info");
}
