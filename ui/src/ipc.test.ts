import { beforeEach, describe, expect, it, vi } from "vitest";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const { IPC_ERROR, IPC_UNAVAILABLE, appInfo, reportInteractive, toUiError } = await import("./ipc");

describe("toUiError", () => {
  it("keeps a UiError from a Rust command as it is", () => {
    expect(toUiError({ code: "core_unavailable", message: "disk full", extra: 1 })).toEqual({
      code: "core_unavailable",
      message: "disk full",
    });
  });

  it("wraps Tauri's plain-string rejections", () => {
    expect(toUiError("Command app_info not allowed by ACL")).toEqual({
      code: IPC_ERROR,
      message: "Command app_info not allowed by ACL",
    });
  });

  it("reports a thrown Error outside Tauri as ipc_unavailable", () => {
    const error = toUiError(new TypeError("window.__TAURI_INTERNALS__ is undefined"));
    expect(error.code).toBe(IPC_UNAVAILABLE);
    expect(error.message).toContain("__TAURI_INTERNALS__");
  });

  it("stringifies anything else", () => {
    expect(toUiError(42)).toEqual({ code: IPC_ERROR, message: "42" });
    expect(toUiError({ code: 1, message: "not a UiError" }).code).toBe(IPC_ERROR);
  });
});

describe("reportInteractive", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("calls the desktop's paint probe when the desktop defined one", () => {
    const probe = vi.fn();
    vi.stubGlobal("__OSPREY_PAINT_PROBE__", probe);
    try {
      reportInteractive();
    } finally {
      vi.unstubAllGlobals();
    }
    expect(probe).toHaveBeenCalledTimes(1);
    expect(probe).toHaveBeenCalledWith("interactive");
    expect(invoke).not.toHaveBeenCalled();
  });

  it("does nothing without a probe (the normal start)", () => {
    expect(() => reportInteractive()).not.toThrow();
    expect(invoke).not.toHaveBeenCalled();
  });
});

describe("appInfo", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("invokes the app_info command and returns its value", async () => {
    const info = { version: "0.1.0", data_dir: "/tmp/osprey", tools: ["file", "shell"] };
    invoke.mockResolvedValue(info);
    await expect(appInfo()).resolves.toEqual(info);
    expect(invoke).toHaveBeenCalledWith("app_info", undefined);
  });

  it("rejects with a UiError when the command fails", async () => {
    invoke.mockRejectedValue({ code: "core_unavailable", message: "cannot open database" });
    const error: unknown = await appInfo().then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(error).toEqual({ code: "core_unavailable", message: "cannot open database" });
  });
});

describe("the session list's commands", () => {
  beforeEach(() => {
    invoke.mockReset();
    invoke.mockResolvedValue(null);
  });

  it("name their commands and arguments as the shell declares them", async () => {
    const { deleteSession, openLink, renameSession, searchSessions, sessionUsage } = await import("./ipc");
    await searchSessions("trams");
    await renameSession("chat-1", "Trip");
    await deleteSession("chat-1");
    await sessionUsage("chat-1");
    await openLink("https://example.com");
    expect(invoke.mock.calls).toEqual([
      ["search_sessions", { query: "trams" }],
      ["rename_session", { sessionId: "chat-1", title: "Trip" }],
      ["delete_session", { sessionId: "chat-1" }],
      ["session_usage", { sessionId: "chat-1" }],
      ["open_link", { url: "https://example.com" }],
    ]);
  });
});

describe("the apps' account commands", () => {
  beforeEach(() => {
    invoke.mockReset();
    invoke.mockResolvedValue(null);
  });

  it("name their commands and arguments as the shell declares them", async () => {
    const { connectAppAccount, disconnectAppAccount, listAppAccounts } = await import("./ipc");
    await listAppAccounts();
    await connectAppAccount("mail");
    await disconnectAppAccount("mail");
    expect(invoke.mock.calls).toEqual([
      ["list_app_accounts", undefined],
      ["connect_app_account", { appId: "mail" }],
      ["disconnect_app_account", { appId: "mail" }],
    ]);
  });
});

describe("the store's skill commands", () => {
  beforeEach(() => {
    invoke.mockReset();
    invoke.mockResolvedValue(null);
  });

  it("name their commands and arguments as the shell declares them", async () => {
    const { installStoreSkill, storeSkills, uninstallStoreSkill } = await import("./ipc");
    await storeSkills("pdf", null, 2);
    await installStoreSkill("pdf", "1.0.0", "ab12");
    await uninstallStoreSkill("pdf");
    expect(invoke.mock.calls).toEqual([
      ["store_skills", { query: "pdf", category: null, page: 2 }],
      ["install_store_skill", { name: "pdf", version: "1.0.0", sha256: "ab12" }],
      ["uninstall_store_skill", { name: "pdf" }],
    ]);
  });
});
