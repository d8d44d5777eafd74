//! Settings' Accounts section: the `os` tool's mail accounts and calendar and contacts accounts
//! (list, save, remove, test). Each command forwards to one `Core` method; passwords only go in.

use osprey_types::{AccountCheck, DavAccountInput, MailAccountInput, OsAccountsView, UiError};
use tauri::State;

use crate::CoreState;

/// The mail and calendar/contacts accounts, each with whether a password is stored.
#[tauri::command]
pub fn os_accounts(state: State<'_, CoreState>) -> Result<OsAccountsView, UiError> {
    Ok(state.core()?.os_accounts())
}

/// Adds or changes a mail account (an empty password keeps the stored one).
#[tauri::command]
pub async fn save_mail_account(
    state: State<'_, CoreState>,
    account: MailAccountInput,
) -> Result<OsAccountsView, UiError> {
    Ok(state.core()?.save_mail_account(account).await?)
}

/// Removes a mail account and its password.
#[tauri::command]
pub async fn remove_mail_account(
    state: State<'_, CoreState>,
    name: String,
) -> Result<OsAccountsView, UiError> {
    Ok(state.core()?.remove_mail_account(&name).await?)
}

/// Adds or changes a calendar and contacts account (an empty password keeps the stored one).
#[tauri::command]
pub async fn save_dav_account(
    state: State<'_, CoreState>,
    account: DavAccountInput,
) -> Result<OsAccountsView, UiError> {
    Ok(state.core()?.save_dav_account(account).await?)
}

/// Removes a calendar and contacts account and its password.
#[tauri::command]
pub async fn remove_dav_account(
    state: State<'_, CoreState>,
    name: String,
) -> Result<OsAccountsView, UiError> {
    Ok(state.core()?.remove_dav_account(&name).await?)
}

/// Logs in to the mail account's IMAP server; the result in words.
#[tauri::command]
pub async fn test_mail_account(
    state: State<'_, CoreState>,
    name: String,
) -> Result<AccountCheck, UiError> {
    Ok(state.core()?.test_mail_account(&name).await)
}

/// Lists the account's calendars and address books; the result in words.
#[tauri::command]
pub async fn test_dav_account(
    state: State<'_, CoreState>,
    name: String,
) -> Result<AccountCheck, UiError> {
    Ok(state.core()?.test_dav_account(&name).await)
}
