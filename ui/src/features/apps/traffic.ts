// The gRPC inspector's calls as the Apps page shows them: one line per call a developer can scan
// (method, status, time, sizes, when), and the messages as indented JSON.

import type { AppExchange } from "../../gen";

export type CallTone = "ok" | "error" | "pending";

export interface CallLine {
  /** `ToolService/Execute`: the package is the same for every call. */
  method: string;
  status: string;
  tone: CallTone;
  took: string;
  sizes: string;
  when: string;
}

export function shortMethod(method: string): string {
  const [service, name] = method.split("/");
  if (!name) {
    return method;
  }
  return `${service.split(".").pop()}/${name}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  if (bytes < 1024 * 1024) {
    return `${(bytes / 1024).toFixed(1)} KB`;
  }
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export function ago(thenMs: number, nowMs: number): string {
  const seconds = Math.max(0, Math.round((nowMs - thenMs) / 1000));
  if (seconds < 60) {
    return `${seconds} s ago`;
  }
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) {
    return `${minutes} min ago`;
  }
  return `${Math.round(minutes / 60)} h ago`;
}

export function callLine(call: AppExchange, nowMs: number): CallLine {
  const ended = call.duration_ms !== null;
  const tone: CallTone = !ended ? "pending" : call.status === "Ok" ? "ok" : "error";
  return {
    method: shortMethod(call.method),
    status: !ended ? "Still going" : (call.status ?? "No answer"),
    tone,
    took: ended ? `${(call.duration_ms ?? 0).toFixed(1)} ms` : "",
    sizes: `sent ${formatBytes(call.request_bytes)}, received ${formatBytes(call.response_bytes)}`,
    when: ago(call.started_at_ms, nowMs),
  };
}

/** A message as shown: JSON indented, or the inspector's own note (a string) as it is. */
export function showMessage(message: unknown): string {
  return typeof message === "string" ? message : JSON.stringify(message, null, 2);
}

/** Newest first, as a developer reads them. */
export function newestFirst(calls: AppExchange[]): AppExchange[] {
  return [...calls].sort((a, b) => b.id - a.id);
}
