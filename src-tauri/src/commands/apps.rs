//! The apps area: installed apps with their state, installing (from a file or the store) and
//! uninstalling, approving or rejecting a staged update (new permissions), and opening an app's UI in its own window on the `osprey-app://` scheme.

use osprey_types::{AppInstallReport, AppStatus, UiError, UiErrorCode};
use tauri::{AppHandle, Manager, State, WebviewUrl, WebviewWindowBuilder};

use crate::{CoreState, app_ui, ui_error};

#[tauri::command]
pub async fn list_apps(state: State<'_, CoreState>) -> Result<Vec<AppStatus>, UiError> {
    Ok(state.core()?.app_statuses().await)
}

/// Installs (or updates) an app from a `.napp` file or by its store id (`store.url`), through
/// the core's one verified install path.
#[tauri::command]
pub async fn install_app(
    state: State<'_, CoreState>,
    source: String,
) -> Result<AppInstallReport, UiError> {
    Ok(state.core()?.install_app(&source, None).await?)
}

/// Stops the app and removes it with its data and logs.
#[tauri::command]
pub async fn uninstall_app(state: State<'_, CoreState>, app_id: String) -> Result<(), UiError> {
    Ok(state.core()?.uninstall_app(&app_id).await?)
}

#[tauri::command]
pub async fn approve_app_update(
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<AppStatus, UiError> {
    Ok(state.core()?.approve_app_update(&app_id).await?)
}

#[tauri::command]
pub async fn reject_app_update(
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<AppStatus, UiError> {
    Ok(state.core()?.reject_app_update(&app_id).await?)
}

/// Opens (or brings forward) the app's UI window.
#[tauri::command]
pub async fn open_app_ui(
    app: AppHandle,
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<(), UiError> {
    let status = state.core()?.app_status(&app_id).await.ok_or_else(|| {
        UiError::new(
            UiErrorCode::UnknownApp,
            format!("no installed app `{app_id}`"),
        )
    })?;
    if !status.has_ui {
        return Err(UiError::new(
            UiErrorCode::NoUi,
            format!("{} has no UI", status.name),
        ));
    }
    let label = app_ui::window_label(&status.id).ok_or_else(|| {
        UiError::new(
            UiErrorCode::UnknownApp,
            format!("`{}` is not a valid app id", status.id),
        )
    })?;
    if let Some(window) = app.get_webview_window(&label) {
        return window
            .set_focus()
            .map_err(|error| ui_error(UiErrorCode::WindowFailed, error));
    }
    let url =
        app_ui::url_for(&status.id).map_err(|error| ui_error(UiErrorCode::WindowFailed, error))?;
    WebviewWindowBuilder::new(&app, label, WebviewUrl::CustomProtocol(url))
        .title(&status.name)
        .inner_size(900.0, 640.0)
        .build()
        .map(|_| ())
        .map_err(|error| ui_error(UiErrorCode::WindowFailed, error))
}
