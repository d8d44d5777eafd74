//! Pausing automation, the state of running work, and the snapshot behind "Ask about the current
//! window" (the tray's quick actions; the window's banner uses the same commands).

use osprey_types::{AutomationStatus, UiError, UiErrorCode, WindowSnapshot};
use tauri::State;

use crate::CoreState;

#[tauri::command]
pub async fn automation_status(state: State<'_, CoreState>) -> Result<AutomationStatus, UiError> {
    Ok(state.core()?.automation_status().await)
}

/// Pauses (no tool runs; reminder and comm turns wait) or resumes all automation.
#[tauri::command]
pub async fn set_automation_paused(
    state: State<'_, CoreState>,
    paused: bool,
) -> Result<AutomationStatus, UiError> {
    let core = state.core()?;
    core.set_automation_paused(paused);
    Ok(core.automation_status().await)
}

/// A snapshot of the window that has the focus now (the whole screen when none has).
#[tauri::command]
pub async fn see_current_window(state: State<'_, CoreState>) -> Result<WindowSnapshot, UiError> {
    Ok(state.core()?.see_focused_window().await?)
}

/// Runs one of the tray's quick actions by its menu id (`pause`, `new-chat`, ...), through the
/// tray's own handler: the window offers the same actions, and tests drive the tray this way
/// (no tray host runs under Xvfb).
#[tauri::command]
pub fn tray_action(app: tauri::AppHandle, id: String) -> Result<(), UiError> {
    match crate::tray::handle_menu_event(&crate::tray::AppShell(&app), &id) {
        Some(result) => result.map_err(|message| crate::ui_error(UiErrorCode::Internal, message)),
        None => Err(crate::ui_error(
            UiErrorCode::InvalidSetting,
            format!("`{id}` is not a tray action"),
        )),
    }
}
