//! The approvals area: answer a pending question, list the pending ones (after a reload), the
//! audit trail of tool calls, and the grants in force (each revocable).

use osprey_types::{ApprovalAnswer, AuditFilter, AuditRow, GrantRow, PendingApproval, UiError};
use tauri::State;

use crate::CoreState;

#[tauri::command]
pub fn answer_approval(
    state: State<'_, CoreState>,
    request_id: String,
    answer: ApprovalAnswer,
) -> Result<(), UiError> {
    answer_with(&state, &request_id, answer)
}

#[tauri::command]
pub fn pending_approvals(state: State<'_, CoreState>) -> Result<Vec<PendingApproval>, UiError> {
    Ok(state.core()?.approvals().pending())
}

#[tauri::command]
pub async fn audit_log(
    state: State<'_, CoreState>,
    filter: AuditFilter,
) -> Result<Vec<AuditRow>, UiError> {
    Ok(state.core()?.audit_log(filter).await?)
}

#[tauri::command]
pub fn list_grants(state: State<'_, CoreState>) -> Result<Vec<GrantRow>, UiError> {
    Ok(state.core()?.grants()?)
}

/// Revokes a grant; the next call it covered is asked again.
#[tauri::command]
pub fn revoke_grant(state: State<'_, CoreState>, grant_id: i64) -> Result<(), UiError> {
    Ok(state.core()?.revoke_grant(grant_id)?)
}

// Split from the command so it can be tested without a Tauri runtime.
fn answer_with(state: &CoreState, request_id: &str, answer: ApprovalAnswer) -> Result<(), UiError> {
    Ok(state
        .core()?
        .approvals()
        .answer(request_id, answer)
        .map_err(osprey_core::CoreError::from)?)
}

#[cfg(test)]
mod tests {
    use osprey_core::CoreOptions;

    use super::*;

    #[test]
    fn answering_nothing_pending_says_so_with_a_code() {
        let dir = tempfile::tempdir().unwrap();
        let state = CoreState::open(CoreOptions {
            data_dir: Some(dir.path().to_path_buf()),
            policy: None,
            ..CoreOptions::default()
        });
        let error = answer_with(&state, "call-1", ApprovalAnswer::Once).unwrap_err();
        assert_eq!(error.code, osprey_types::UiErrorCode::ApprovalNotPending);
        assert!(error.message.contains("call-1"));
    }
}
