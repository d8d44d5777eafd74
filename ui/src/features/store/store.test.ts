import { describe, expect, it } from "vitest";
import type { AppInstallReport, PermissionExplained } from "../../gen";
import {
  IDLE,
  actionLabel,
  applyInstallProgress,
  askToInstall,
  categoryLabel,
  failInstall,
  finishInstall,
  formatRating,
  formatSize,
  pageCount,
  percent,
  promptPermissions,
  resultSentence,
  startInstall,
} from "./store";
import { explainStoreError } from "./errors";

const report: AppInstallReport = {
  app_id: "notes",
  version: "1.0.0",
  outcome: "installed",
  new_permissions: [],
  message: "installed notes 1.0.0",
};

describe("the install flow", () => {
  it("asks, downloads with progress, verifies and reports", () => {
    let flow = askToInstall("notes");
    expect(flow.phase).toBe("confirm");
    expect(percent(flow)).toBeNull();
    flow = startInstall(flow);
    expect(flow).toEqual({ phase: "downloading", appId: "notes", received: 0, total: null });
    expect(percent(flow)).toBeNull();
    flow = applyInstallProgress(flow, {
      type: "app_install_progress",
      app_id: "notes",
      stage: "downloading",
      received: 512,
      total: 2048,
    });
    expect(percent(flow)).toBe(25);
    // Another app's progress is not this one's.
    const other = applyInstallProgress(flow, {
      type: "app_install_progress",
      app_id: "other",
      stage: "verifying",
      received: 1,
      total: 1,
    });
    expect(other).toBe(flow);
    flow = applyInstallProgress(flow, {
      type: "app_install_progress",
      app_id: "notes",
      stage: "verifying",
      received: 2048,
      total: 2048,
    });
    expect(flow.phase).toBe("verifying");
    expect(percent(flow)).toBe(100);
    // A late download event never moves the bar back.
    const late = applyInstallProgress(flow, {
      type: "app_install_progress",
      app_id: "notes",
      stage: "downloading",
      received: 10,
      total: 2048,
    });
    expect(late.phase).toBe("verifying");
    flow = finishInstall(flow, report);
    expect(flow.phase).toBe("done");
  });

  it("does not start without the prompt and keeps the failure", () => {
    expect(startInstall(IDLE)).toBe(IDLE);
    const failed = failInstall(startInstall(askToInstall("x")), { code: "revoked", message: "no" });
    expect(failed).toEqual({ phase: "failed", appId: "x", error: { code: "revoked", message: "no" } });
    expect(failInstall(IDLE, { code: "revoked", message: "no" })).toBe(IDLE);
  });

  it("says what happened in a sentence per outcome", () => {
    expect(resultSentence(report, "Notes")).toContain("Notes 1.0.0 is installed");
    expect(
      resultSentence({ ...report, outcome: "updated", from_version: "0.9.0" }, "Notes"),
    ).toContain("from 0.9.0 to 1.0.0");
    expect(
      resultSentence({ ...report, outcome: "pending_approval", new_permissions: ["network:x.com"] }, "Notes"),
    ).toContain("Approve");
  });
});

describe("formatting", () => {
  it("sizes, ratings, pages and categories read naturally", () => {
    expect(formatSize(512)).toBe("512 bytes");
    expect(formatSize(2048)).toBe("2.0 KB");
    expect(formatSize(5 * 1024 * 1024 + 1)).toBe("5.0 MB");
    expect(formatSize(300 * 1024 * 1024)).toBe("300 MB");
    expect(formatRating({ rating: null, review_count: 0 })).toBe("No reviews yet");
    expect(formatRating({ rating: 4.25, review_count: 1 })).toBe("4.3 ★ (1 review)");
    expect(pageCount(0, 24)).toBe(1);
    expect(pageCount(49, 24)).toBe(3);
    expect(categoryLabel("developer-tools")).toBe("Developer tools");
    expect(actionLabel("not_installed")).toBe("Install");
    expect(actionLabel("update_available")).toBe("Update");
    expect(actionLabel("installed")).toBeNull();
  });
});

describe("the permission prompt", () => {
  const permissions: PermissionExplained[] = [
    { permission: "notification:send", explanation: "Show notifications", sensitivity: "low" },
    { permission: "filesystem:read", explanation: "Read files on your computer", sensitivity: "high" },
    { permission: "network:api.example.com", explanation: "Connect to api.example.com over the internet", sensitivity: "medium" },
  ];

  it("lists an update's additions first, then the most sensitive", () => {
    const listed = promptPermissions(permissions, ["notification:send"]);
    expect(listed.map((p) => [p.permission, p.added])).toEqual([
      ["notification:send", true],
      ["filesystem:read", false],
      ["network:api.example.com", false],
    ]);
    expect(promptPermissions(permissions, []).map((p) => p.sensitivity)).toEqual(["high", "medium", "low"]);
  });
});

describe("store errors", () => {
  it("say what happened and what to do for each failure the issue names", () => {
    const unreachable = explainStoreError({ code: "store_unavailable", message: "connection refused" });
    expect(unreachable.title).toMatch(/could not be reached/);
    expect(unreachable.action).toMatch(/Settings/);
    expect(explainStoreError({ code: "store_unavailable", message: "no store is set: ..." }).title).toMatch(
      /No store/,
    );
    expect(explainStoreError({ code: "signature_invalid", message: "" }).title).toMatch(/signature/);
    expect(explainStoreError({ code: "revoked", message: "" }).title).toMatch(/revoked/);
    expect(explainStoreError({ code: "launch_failed", message: "sandbox_unavailable: no user namespaces" }).title).toMatch(
      /sandbox/,
    );
    expect(explainStoreError({ code: "revocation_unavailable", message: "" }).action).toMatch(/internet/);
    expect(explainStoreError({ code: "internal", message: "boom" }).title).toMatch(/went wrong/);
  });
});
