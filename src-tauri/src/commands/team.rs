//! A conversation's team (the panel under the chat: sub-agents, branches, the task graph) and
//! the agent types and tool packs of Settings, Agents.

use osprey_types::{AgentCatalogView, AgentTypeDraft, AgentTypeView, TeamAgent, TeamView, UiError};
use tauri::State;

use crate::CoreState;

#[tauri::command]
pub fn session_team(state: State<'_, CoreState>, session_id: String) -> Result<TeamView, UiError> {
    Ok(state.core()?.session_team(&session_id)?)
}

/// Cancels a running sub-agent of the conversation (the agent tool's `task cancel`).
#[tauri::command]
pub async fn cancel_subagent(
    state: State<'_, CoreState>,
    session_id: String,
    task_id: i64,
) -> Result<TeamAgent, UiError> {
    Ok(state.core()?.cancel_subagent(&session_id, task_id).await?)
}

#[tauri::command]
pub fn agent_catalog(state: State<'_, CoreState>) -> Result<AgentCatalogView, UiError> {
    Ok(state.core()?.agent_catalog())
}

/// Saves the person's agent type to `<data>/agents/<name>.json`, checked as the loader checks.
#[tauri::command]
pub fn save_agent_type(
    state: State<'_, CoreState>,
    draft: AgentTypeDraft,
) -> Result<AgentTypeView, UiError> {
    Ok(state.core()?.save_agent_type(draft)?)
}

#[tauri::command]
pub fn delete_agent_type(state: State<'_, CoreState>, name: String) -> Result<(), UiError> {
    Ok(state.core()?.delete_agent_type(&name)?)
}
