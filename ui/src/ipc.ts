// The only module that talks to the Rust side. Everything else imports typed functions from here,
// so the UI can be unit-tested (and later driven by the agent) without a Tauri runtime, and every
// failure reaches a component in one shape: `UiError { code, message }`.

import { invoke } from "@tauri-apps/api/core";
import { EventFeed } from "./lib/eventFeed";
import type { ChatSearchHit, ChatUsage, UiEventBatch, WindowAsk } from "./gen";
import type {
  AuditFilter,
  AuditRow,
  GrantRow,
  PermissionExplained,
  StoreAppDetails,
  StoreCatalogPage,
  StoreHome,
  StoreSkillPage,
  StoreSkillReport,
  StoreSkillSummary,
} from "./gen";
import type {
  AppAccount,
  AppInstallReport,
  AppTraffic,
  AppStatus,
  ApprovalAnswer,
  ChatSessionSummary,
  CoreEvent,
  CoreInfo,
  PendingApproval,
  ProviderOverview,
  ProviderRow,
  TranscriptItem,
  UiError as CoreUiError,
  UiErrorCode,
} from "./gen";
import type {
  AutomationStatus,
  McpServerView,
  OsCapabilityView,
  PolicySettings,
  SettingsOverview,
  SkillView,
  Theme,
  WindowSnapshot,
} from "./gen";

export type { ChatSearchHit, ChatUsage };
export type {
  AuditFilter,
  AuditRow,
  GrantRow,
  PermissionExplained,
  StoreAppDetails,
  StoreCatalogPage,
  StoreHome,
  StoreSkillPage,
  StoreSkillReport,
  StoreSkillSummary,
};
export type {
  AppAccount,
  AppInstallReport,
  AppStatus,
  AppTraffic,
  ApprovalAnswer,
  ChatSessionSummary,
  CoreEvent,
  CoreInfo,
  PendingApproval,
  ProviderOverview,
  ProviderRow,
  TranscriptItem,
  UiErrorCode,
};
export type {
  AutomationStatus,
  McpServerView,
  OsCapabilityView,
  PolicySettings,
  SettingsOverview,
  SkillView,
  Theme,
  WindowAsk,
  WindowSnapshot,
};

/** Codes produced on the TypeScript side (the Rust side owns the rest). */
export const IPC_UNAVAILABLE = "ipc_unavailable";
export const IPC_ERROR = "ipc_error";

/** Every code a failure can carry: the core's (generated from Rust) and the two made here. */
export type ErrorCode = UiErrorCode | typeof IPC_UNAVAILABLE | typeof IPC_ERROR;

/** A failure as every component receives it. */
export type UiError = Omit<CoreUiError, "code"> & { code: ErrorCode };

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
 * Tells the start-up benchmark the first view works: the app's script has run and taken over the
 * view the page painted without it (src/prerender.ts; main.ts calls this once). The desktop defines
 * `__OSPREY_PAINT_PROBE__` only when started with `OSPREY_PAINT_PROBE=1` (src-tauri/src/paint_probe.rs);
 * otherwise this is one property lookup that finds nothing.
 */
export function reportInteractive(): void {
  (globalThis as { __OSPREY_PAINT_PROBE__?: (stage: string) => void }).__OSPREY_PAINT_PROBE__?.("interactive");
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

/**
 * Resolves while the background services (apps, reminders, MCP servers, the control socket) run;
 * rejects with why they did not start: `data_folder_in_use` names the other Osprey that holds the
 * data folder.
 */
export function backgroundStatus(): Promise<void> {
  return call<void>("background_status");
}

/** What chat will use and each provider's stored settings (Settings > Model). */
export function providerOverview(): Promise<ProviderOverview> {
  return call<ProviderOverview>("provider_overview");
}

/**
 * Writes one provider setting (`provider.default`, `provider.<kind>.model | base_url | api_key`;
 * an empty value clears it) and returns the new overview. Keys go to the OS keyring.
 */
export function setProviderSetting(key: string, value: string): Promise<ProviderOverview> {
  return call<ProviderOverview>("set_provider_setting", { key, value });
}

// ---- Core events -------------------------------------------------------------------------------

/** The shell's event feed (lib/eventFeed.ts), started by the first subscriber. */
let feed: EventFeed | null = null;

function eventFeed(): EventFeed {
  feed ??= new EventFeed(
    (after) => call<UiEventBatch>("next_ui_events", { after }),
    (route) => {
      window.location.hash = `#/${route}`;
    },
  );
  return feed;
}

/**
 * Calls `handler` with every core event until the returned function is called; nothing is missed
 * from the moment the promise resolves. Outside Tauri (unit tests, a plain browser) nothing
 * arrives and the returned function does nothing.
 */
export async function onCoreEvent(handler: (event: CoreEvent) => void): Promise<() => void> {
  if (!inTauri()) {
    return () => {};
  }
  return eventFeed().onCore(handler);
}

// ---- Chat ------------------------------------------------------------------------------------------

/**
 * Starts a turn; resolves with the session id (a new one when `sessionId` is null). `provider`
 * and `model` are the model picker's choice for this turn; null uses Settings > Model.
 */
export function sendMessage(
  sessionId: string | null,
  text: string,
  provider: string | null = null,
  model: string | null = null,
  image: string | null = null,
): Promise<string> {
  return call<string>("send_message", { sessionId, text, provider, model, image });
}

/** Stops the session's running turn; false when none was running. */
export function cancelTurn(sessionId: string): Promise<boolean> {
  return call<boolean>("cancel_turn", { sessionId });
}

export function listSessions(): Promise<ChatSessionSummary[]> {
  return call<ChatSessionSummary[]>("list_sessions");
}

export function loadHistory(sessionId: string): Promise<TranscriptItem[]> {
  return call<TranscriptItem[]>("load_history", { sessionId });
}

/** Sessions whose title or messages hold `query`, newest first, each with a snippet. */
export function searchSessions(query: string): Promise<ChatSearchHit[]> {
  return call<ChatSearchHit[]>("search_sessions", { query });
}

/** Gives the session a title (1 to 200 characters, one line); resolves with the renamed session. */
export function renameSession(sessionId: string, title: string): Promise<ChatSessionSummary> {
  return call<ChatSessionSummary>("rename_session", { sessionId, title });
}

/** Deletes the session with its messages (refused with `turn_running` while a turn runs). */
export function deleteSession(sessionId: string): Promise<void> {
  return call<void>("delete_session", { sessionId });
}

/** The tokens the session used, summed from its stored messages. */
export function sessionUsage(sessionId: string): Promise<ChatUsage> {
  return call<ChatUsage>("session_usage", { sessionId });
}

/** Opens a web or mail link in the system browser (never in the app's window). */
export function openLink(url: string): Promise<void> {
  return call<void>("open_link", { url });
}

// ---- Approvals -------------------------------------------------------------------------------------

export function answerApproval(requestId: string, answer: ApprovalAnswer): Promise<void> {
  return call<void>("answer_approval", { requestId, answer });
}

export function pendingApprovals(): Promise<PendingApproval[]> {
  return call<PendingApproval[]>("pending_approvals");
}

// ---- Apps ------------------------------------------------------------------------------------------

export function listApps(): Promise<AppStatus[]> {
  return call<AppStatus[]>("list_apps");
}

/**
 * Installs (or updates) an app from a `.napp` file path or a store id, verified (signatures, then
 * the revocation list) before anything is placed. A refusal rejects with its code
 * (`signature_invalid`, `revoked`, `store_unavailable`, ...).
 */
export function installApp(source: string): Promise<AppInstallReport> {
  return call<AppInstallReport>("install_app", { source });
}

/** Stops the app and removes it with its data and logs. */
export function uninstallApp(appId: string): Promise<void> {
  return call<void>("uninstall_app", { appId });
}

export function approveAppUpdate(appId: string): Promise<AppStatus> {
  return call<AppStatus>("approve_app_update", { appId });
}

export function rejectAppUpdate(appId: string): Promise<AppStatus> {
  return call<AppStatus>("reject_app_update", { appId });
}

/** Opens the app's UI in its own window (osprey-app://<id>/). */
export function openAppUi(appId: string): Promise<void> {
  return call<void>("open_app_ui", { appId });
}

/** Each installed app's account with its provider (never a token). */
export function listAppAccounts(): Promise<AppAccount[]> {
  return call<AppAccount[]>("list_app_accounts");
}

/** The app's last gRPC calls as the inspector kept them, oldest first (credentials redacted). */
export function appTraffic(appId: string, limit?: number): Promise<AppTraffic> {
  return call<AppTraffic>("app_traffic", { appId, limit: limit ?? null });
}

/**
 * Connects the app's account: the provider's sign-in opens in the system browser, and this
 * resolves once the person signed in there (or rejects with `oauth_failed` and the reason).
 */
export function connectAppAccount(appId: string): Promise<AppAccount> {
  return call<AppAccount>("connect_app_account", { appId });
}

/** Deletes the app's tokens and tells the app. */
export function disconnectAppAccount(appId: string): Promise<AppAccount> {
  return call<AppAccount>("disconnect_app_account", { appId });
}

// ---- Settings, automation and the tray's quick actions -------------------------------------------

/** Each capability of the `os` tool, whether it works on this machine and why not (Settings). */
export function osCapabilities(): Promise<OsCapabilityView[]> {
  return call<OsCapabilityView[]>("os_capabilities");
}

/** Policy, origin rules, MCP servers, skills, store URL, data folder, theme, pause (Settings). */
export function settingsOverview(): Promise<SettingsOverview> {
  return call<SettingsOverview>("settings_overview");
}

/**
 * Validates, stores and applies one setting (`null` goes back to the default) and returns the new
 * overview; refused with `invalid_setting` and the reason, nothing stored.
 */
export function setSetting(key: string, value: unknown): Promise<SettingsOverview> {
  return call<SettingsOverview>("set_setting", { key, value });
}

/** Adds or replaces one MCP server (`{command, args}` or `{url}`) and reconnects the servers. */
export function saveMcpServer(name: string, config: Record<string, unknown>): Promise<SettingsOverview> {
  return call<SettingsOverview>("save_mcp_server", { name, config });
}

export function removeMcpServer(name: string): Promise<SettingsOverview> {
  return call<SettingsOverview>("remove_mcp_server", { name });
}

export function setSkillEnabled(name: string, enabled: boolean): Promise<SettingsOverview> {
  return call<SettingsOverview>("set_skill_enabled", { name, enabled });
}

export function automationStatus(): Promise<AutomationStatus> {
  return call<AutomationStatus>("automation_status");
}

/** Pauses (no tool runs; reminder and comm turns wait) or resumes all automation. */
export function setAutomationPaused(paused: boolean): Promise<AutomationStatus> {
  return call<AutomationStatus>("set_automation_paused", { paused });
}

/** A snapshot of the window that has the focus now. */
export function seeCurrentWindow(): Promise<WindowSnapshot> {
  return call<WindowSnapshot>("see_current_window");
}

/** Calls `handler` with each snapshot the tray takes, until the returned function is called. */
export async function onAskAboutWindow(handler: (ask: WindowAsk) => void): Promise<() => void> {
  if (!inTauri()) {
    return () => {};
  }
  return eventFeed().onAsk(handler);
}

// ---- Store -----------------------------------------------------------------------------------------

/** Featured and popular apps and the categories of the store `store.url` names. */
export function storeHome(): Promise<StoreHome> {
  return call<StoreHome>("store_home");
}

/** One page (from 1) of the catalog: all apps, or those matching `query`, within `category`. */
export function storeCatalog(
  query: string,
  category: string | null,
  page: number,
): Promise<StoreCatalogPage> {
  return call<StoreCatalogPage>("store_catalog", { query, category, page });
}

/** An app's page: details, permissions in plain words, what an update adds, reviews. */
export function storeApp(appId: string): Promise<StoreAppDetails> {
  return call<StoreAppDetails>("store_app", { appId });
}

/**
 * Downloads, verifies and installs (or stages an update of) a store app; `app_install_progress`
 * core events report the download and the verification meanwhile.
 */
export function installStoreApp(appId: string): Promise<AppInstallReport> {
  return call<AppInstallReport>("install_store_app", { appId });
}

/** One page of the store's skills (searched, within a category), each with its installed version. */
export function storeSkills(query: string, category: string | null, page: number): Promise<StoreSkillPage> {
  return call<StoreSkillPage>("store_skills", { query, category, page });
}

/**
 * Installs (or updates) the store skill the person was shown; refused (`store_unavailable`,
 * `signature_invalid`, ...) when the store now serves another version or archive.
 */
export function installStoreSkill(name: string, version: string, sha256: string): Promise<StoreSkillReport> {
  return call<StoreSkillReport>("install_store_skill", { name, version, sha256 });
}

/** Removes a skill the store installed. */
export function uninstallStoreSkill(name: string): Promise<StoreSkillReport> {
  return call<StoreSkillReport>("uninstall_store_skill", { name });
}

/** What each permission lets an app do, in plain words. */
export function explainPermissions(permissions: string[]): Promise<PermissionExplained[]> {
  return call<PermissionExplained[]>("explain_permissions", { permissions });
}

// ---- Audit and grants ------------------------------------------------------------------------------

/** Tool calls from the audit trail, newest first, narrowed by `filter`. */
export function auditLog(filter: AuditFilter): Promise<AuditRow[]> {
  return call<AuditRow[]>("audit_log", { filter });
}

/** The lasting grants in force. */
export function listGrants(): Promise<GrantRow[]> {
  return call<GrantRow[]>("list_grants");
}

/** Revokes a grant: the next call it covered is asked again. */
export function revokeGrant(grantId: number): Promise<void> {
  return call<void>("revoke_grant", { grantId });
}

// ---- Mail and calendar/contacts accounts (Settings' Accounts) --------------------------------------

import type {
  AccountCheck,
  DavAccountInput,
  DavAccountView,
  MailAccountInput,
  MailAccountView,
  MailServerView,
  OsAccountsView,
} from "./gen";
export type {
  AccountCheck,
  DavAccountInput,
  DavAccountView,
  MailAccountInput,
  MailAccountView,
  MailServerView,
  OsAccountsView,
};

/** The `os` tool's mail and calendar/contacts accounts; whether each has a password, never it. */
export function osAccounts(): Promise<OsAccountsView> {
  return call<OsAccountsView>("os_accounts");
}

/** Adds or changes a mail account; an empty password keeps the stored one. */
export function saveMailAccount(account: MailAccountInput): Promise<OsAccountsView> {
  return call<OsAccountsView>("save_mail_account", { account });
}

/** Removes a mail account and its stored password. */
export function removeMailAccount(name: string): Promise<OsAccountsView> {
  return call<OsAccountsView>("remove_mail_account", { name });
}

/** Adds or changes a CalDAV/CardDAV account; an empty password keeps the stored one. */
export function saveDavAccount(account: DavAccountInput): Promise<OsAccountsView> {
  return call<OsAccountsView>("save_dav_account", { account });
}

/** Removes a CalDAV/CardDAV account and its stored password. */
export function removeDavAccount(name: string): Promise<OsAccountsView> {
  return call<OsAccountsView>("remove_dav_account", { name });
}

/** Logs in to the mail account's IMAP server; whether it worked, in words. */
export function testMailAccount(name: string): Promise<AccountCheck> {
  return call<AccountCheck>("test_mail_account", { name });
}

/** Lists the account's calendars and address books; whether it worked, in words. */
export function testDavAccount(name: string): Promise<AccountCheck> {
  return call<AccountCheck>("test_dav_account", { name });
}

// The team under a conversation and the agent types of Settings (issue 14).
import type {
  AgentCatalogView,
  AgentTypeDraft,
  AgentTypeView,
  TeamAgent,
  TeamGraphTask,
  TeamView,
  ToolPackView,
} from "./gen";
export type { AgentCatalogView, AgentTypeDraft, AgentTypeView, TeamAgent, TeamGraphTask, TeamView, ToolPackView };

/** A conversation's sub-agents, branches and task graph. */
export function sessionTeam(sessionId: string): Promise<TeamView> {
  return call<TeamView>("session_team", { sessionId });
}

/** Cancels a running sub-agent of the conversation (its own sub-agents stop with it). */
export function cancelSubagent(sessionId: string, taskId: number): Promise<TeamAgent> {
  return call<TeamAgent>("cancel_subagent", { sessionId, taskId });
}

/** The agent types and tool packs loaded now. */
export function agentCatalog(): Promise<AgentCatalogView> {
  return call<AgentCatalogView>("agent_catalog");
}

/** Saves the person's agent type (`<data>/agents/<name>.json`); the next spawn uses it. */
export function saveAgentType(draft: AgentTypeDraft): Promise<AgentTypeView> {
  return call<AgentTypeView>("save_agent_type", { draft });
}

/** Deletes the person's agent type. */
export function deleteAgentType(name: string): Promise<void> {
  return call<void>("delete_agent_type", { name });
}
