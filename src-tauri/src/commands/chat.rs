//! The chat area: send a message (the turn runs in the background and streams `chat_*` core
//! events), stop it, list, search, rename and delete sessions, load a session's transcript and
//! its token usage, and open a message's link in the system browser.

use osprey_core::chat::{Chats, ModelPick, external_link};
use osprey_types::{
    ChatSearchHit, ChatSessionSummary, ChatUsage, TranscriptItem, UiError, UiErrorCode,
};
use tauri::{AppHandle, State};

use crate::CoreState;

/// How many sessions the list shows.
const SESSION_LIST_LIMIT: u32 = 100;

fn chats(state: &CoreState) -> Result<&Chats, UiError> {
    state.chats()
}

/// Starts a turn and returns its session id (a new session when `session_id` is null), with the
/// model picker's provider and model when given, and the image the person attached (a `data:`
/// URL) when there is one.
#[tauri::command]
pub async fn send_message(
    state: State<'_, CoreState>,
    session_id: Option<String>,
    text: String,
    provider: Option<String>,
    model: Option<String>,
    image: Option<String>,
) -> Result<String, UiError> {
    let pick = ModelPick { provider, model };
    Ok(chats(&state)?
        .send_with_image(session_id, &text, &pick, image.as_deref())
        .await?)
}

/// Stops the session's running turn; false when none was running.
#[tauri::command]
pub fn cancel_turn(state: State<'_, CoreState>, session_id: String) -> Result<bool, UiError> {
    Ok(chats(&state)?.cancel(&session_id))
}

#[tauri::command]
pub fn list_sessions(state: State<'_, CoreState>) -> Result<Vec<ChatSessionSummary>, UiError> {
    Ok(chats(&state)?.sessions(SESSION_LIST_LIMIT)?)
}

#[tauri::command]
pub fn load_history(
    state: State<'_, CoreState>,
    session_id: String,
) -> Result<Vec<TranscriptItem>, UiError> {
    Ok(chats(&state)?.history(&session_id)?)
}

/// Sessions whose title or messages hold `query`, newest first, with a snippet.
#[tauri::command]
pub fn search_sessions(
    state: State<'_, CoreState>,
    query: String,
) -> Result<Vec<ChatSearchHit>, UiError> {
    Ok(chats(&state)?.search(&query, SESSION_LIST_LIMIT)?)
}

#[tauri::command]
pub fn rename_session(
    state: State<'_, CoreState>,
    session_id: String,
    title: String,
) -> Result<ChatSessionSummary, UiError> {
    Ok(chats(&state)?.rename(&session_id, &title)?)
}

#[tauri::command]
pub fn delete_session(state: State<'_, CoreState>, session_id: String) -> Result<(), UiError> {
    Ok(chats(&state)?.delete(&session_id)?)
}

#[tauri::command]
pub fn session_usage(
    state: State<'_, CoreState>,
    session_id: String,
) -> Result<ChatUsage, UiError> {
    Ok(chats(&state)?.usage(&session_id)?)
}

/// Opens a link from a message in the system browser (http, https and mailto only, checked by
/// the core); the app's own window never navigates away.
#[tauri::command]
pub fn open_link(app: AppHandle, url: String) -> Result<(), UiError> {
    let url = external_link(&url)?;
    // tauri-plugin-shell's `open` is deprecated in favour of tauri-plugin-opener; it still does
    // exactly this (the system's opener), and the plugin is already here.
    #[allow(deprecated)]
    tauri_plugin_shell::ShellExt::shell(&app)
        .open(url, None)
        .map_err(|error| {
            UiError::new(
                UiErrorCode::Internal,
                format!("the system browser could not be opened: {error}"),
            )
        })
}
