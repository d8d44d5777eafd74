//! The store area: the front page, searched and paged catalog lists, an app's page, installing
//! from the store (progress arrives as `app_install_progress` core events), and permissions in
//! plain words. Uninstalling and approving updates are the apps area's commands.

use osprey_types::{
    AppInstallReport, PermissionExplained, StoreAppDetails, StoreCatalogPage, StoreHome, UiError,
};
use tauri::State;

use crate::CoreState;

#[tauri::command]
pub async fn store_home(state: State<'_, CoreState>) -> Result<StoreHome, UiError> {
    Ok(state.core()?.store_home().await?)
}

#[tauri::command]
pub async fn store_catalog(
    state: State<'_, CoreState>,
    query: String,
    category: Option<String>,
    page: u32,
) -> Result<StoreCatalogPage, UiError> {
    let core = state.core()?;
    Ok(core
        .store_catalog(&query, category.as_deref(), page)
        .await?)
}

#[tauri::command]
pub async fn store_app(
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<StoreAppDetails, UiError> {
    Ok(state.core()?.store_app(&app_id).await?)
}

/// Downloads, verifies and installs (or stages an update of) a store app.
#[tauri::command]
pub async fn install_store_app(
    state: State<'_, CoreState>,
    app_id: String,
) -> Result<AppInstallReport, UiError> {
    Ok(state.core()?.install_store_app(&app_id).await?)
}

#[tauri::command]
pub fn explain_permissions(permissions: Vec<String>) -> Vec<PermissionExplained> {
    osprey_core::store::explain_permissions(&permissions)
}
