// The Apps page's accounts as plain data: which app is connected to which provider, how
// AppAccountChanged events update that, and what the person is told before connecting.

import type { AppAccount, AppAccountState, CoreEvent } from "../../gen";

/** The accounts by app id, after `event` (an account changed, or its app was uninstalled). */
export function applyAccountEvent(
  accounts: Record<string, AppAccount>,
  event: CoreEvent,
): Record<string, AppAccount> {
  if (event.type !== "app_account_changed") {
    return accounts;
  }
  return { ...accounts, [event.account.app_id]: event.account };
}

/** The accounts of a listing, by app id. */
export function byApp(list: AppAccount[]): Record<string, AppAccount> {
  return Object.fromEntries(list.map((account) => [account.app_id, account]));
}

const LABELS: Record<AppAccountState, string> = {
  not_connected: "Not connected",
  connected: "Connected",
  disconnected: "Disconnected: connect again",
};

export function accountLabel(account: AppAccount): string {
  return `${account.provider}: ${LABELS[account.state]}`;
}

/** The host the person signs in at (the address itself when it cannot be read). */
export function signInHost(account: AppAccount): string {
  try {
    return new URL(account.authorize_url).host;
  } catch {
    return account.authorize_url;
  }
}

/** What the person confirms before the browser opens: who asks, where, for what. */
export function connectQuestion(account: AppAccount): string {
  const scopes =
    account.scopes.length > 0 ? `It asks for: ${account.scopes.join(", ")}.` : "It asks for no particular scopes.";
  return (
    `${account.app_name} wants to use your ${account.provider} account. ` +
    `Your browser will open ${signInHost(account)} to sign in; Osprey keeps the tokens and gives ` +
    `them only to ${account.app_name}. ${scopes}`
  );
}

/** "expires in 5 min" style, for a connected account (`now` in Unix seconds). */
export function expiryText(account: AppAccount, now: number): string | null {
  if (account.state !== "connected" || account.expires_at === null) {
    return null;
  }
  const left = account.expires_at - now;
  if (left <= 0) {
    return "token expired; Osprey refreshes it";
  }
  if (left < 120) {
    return `token expires in ${left} s`;
  }
  if (left < 7200) {
    return `token expires in ${Math.round(left / 60)} min`;
  }
  return `token expires in ${Math.round(left / 3600)} h`;
}
