//! The chat area: send a message (the turn runs in the background and streams `chat_*` core
//! events), stop it, list sessions, load a session's transcript.

use osprey_core::chat::Chats;
use osprey_types::{ChatSessionSummary, TranscriptItem, UiError};
use tauri::State;

use crate::CoreState;

/// How many sessions the list shows.
const SESSION_LIST_LIMIT: u32 = 100;

fn chats(state: &CoreState) -> Result<&Chats, UiError> {
    state.chats()
}

/// Starts a turn and returns its session id (a new session when `session_id` is null).
#[tauri::command]
pub async fn send_message(
    state: State<'_, CoreState>,
    session_id: Option<String>,
    text: String,
) -> Result<String, UiError> {
    Ok(chats(&state)?.send(session_id, &text).await?)
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
