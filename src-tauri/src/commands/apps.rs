//! The apps area: installed apps with their state, installing (from a file or the store) and
//! uninstalling, approving or rejecting a staged update (new permissions), opening an app's UI in
//! its own window on the `osprey-app://` scheme, and the apps' accounts (connect through the
//! system browser, disconnect), and each app's recent gRPC traffic (the inspector).

use osprey_types::{AppAccount, AppInstallReport, AppStatus, AppTraffic, UiError, UiErrorCode};
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

/// The app's last gRPC calls as the inspector kept them (for app developers; credentials
/// redacted).
#[tauri::command]
pub async fn app_traffic(
    state: State<'_, CoreState>,
    app_id: String,
    limit: Option<u32>,
) -> Result<AppTraffic, UiError> {
    Ok(state
        .core()?
        .app_traffic(&app_id, limit.map(|limit| limit as usize))
        .await?)
}

/// Every installed app's account with its provider (never a token).
#[tauri::command]
pub async fn list_app_accounts(state: State<'_, CoreState>) -> Result<Vec<AppAccount>, UiError> {
    Ok(state.core()?.app_accounts().await)
}

/// The desktop's browser for a sign-in: the system's, through the shell plugin's opener.
struct SystemBrowser(AppHandle);

impl osprey_core::accounts::Browser for SystemBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        // tauri-plugin-shell's `open` is deprecated in favour of tauri-plugin-opener; it still
        // does exactly this (the system's opener), and the plugin is already here.
        #[allow(deprecated)]
        tauri_plugin_shell::ShellExt::shell(&self.0)
            .open(url, None)
            .map_err(|error| error.to_string())
    }
}

/// Connects the app's account: the provider's sign-in opens in the system browser and this
/// answers once the person signed in (or after five minutes). The page asked the person first,
/// showing the scopes.
#[tauri::command]
pub async fn connect_app_account(
    app: AppHandle,
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<AppAccount, UiError> {
    let core = state.core()?;
    Ok(core
        .connect_app_account(&app_id, None, &SystemBrowser(app), None)
        .await?)
}

/// Deletes the app's tokens and tells the app.
#[tauri::command]
pub async fn disconnect_app_account(
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<AppAccount, UiError> {
    Ok(state.core()?.disconnect_app_account(&app_id, None).await?)
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
        // An app's permissions are its manifest's; its UI asks for no device or site permission
        // (wry's macOS default would grant the camera and microphone).
        .on_permission_request(|_, _| tauri::webview::PermissionResponse::Deny)
        .build()
        .map(|window| crate::rendering::apply(&window))
        .map_err(|error| ui_error(UiErrorCode::WindowFailed, error))
}
