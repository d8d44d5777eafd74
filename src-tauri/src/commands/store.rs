//! The store area: the front page, searched and paged catalog lists, an app's page, installing
//! from the store (progress arrives as `app_install_progress` core events), and permissions in
//! plain words; the store's skills (listed, installed at the version shown, removed).
//! Uninstalling apps and approving updates are the apps area's commands.

use osprey_types::{
    AppInstallReport, PermissionExplained, StoreAppDetails, StoreCatalogPage, StoreHome,
    StoreSkillPage, StoreSkillReport, UiError,
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

/// One page of the store's skills, each with the version installed here.
#[tauri::command]
pub async fn store_skills(
    state: State<'_, CoreState>,
    query: String,
    category: Option<String>,
    page: u32,
) -> Result<StoreSkillPage, UiError> {
    let core = state.core()?;
    Ok(core.store_skills(&query, category.as_deref(), page).await?)
}

/// Installs (or updates) the store skill the person was shown (`version`, `sha256`): the store
/// serving anything else now is refused.
#[tauri::command]
pub async fn install_store_skill(
    state: State<'_, CoreState>,
    name: String,
    version: String,
    sha256: String,
) -> Result<StoreSkillReport, UiError> {
    let core = state.core()?;
    Ok(core
        .install_shown_store_skill(&name, &version, &sha256)
        .await?)
}

/// Removes a skill the store installed.
#[tauri::command]
pub async fn uninstall_store_skill(
    state: State<'_, CoreState>,
    name: String,
) -> Result<StoreSkillReport, UiError> {
    Ok(state.core()?.remove_store_skill(&name).await?)
}
