//! The settings area: the model provider (which one chat uses, its model and base URL, its key),
//! the policy, origin rules, MCP servers, skills, the store URL, the theme, and the About box.

use osprey_types::{
    CoreInfo, OsCapabilityView, ProviderOverview, SettingsOverview, UiError, UiErrorCode,
};
use tauri::State;

use crate::{Background, CoreState, ui_error};

/// Version, data directory and registered tools of the running core.
#[tauri::command]
pub fn app_info(state: State<'_, CoreState>) -> Result<CoreInfo, UiError> {
    info(&state)
}

/// Whether the background services (apps, reminders, MCP, the control socket) run; the error
/// (`data_folder_in_use` naming the other Osprey, or `services_unavailable`) when they did not
/// start.
#[tauri::command]
pub fn background_status(background: State<'_, Background>) -> Result<(), UiError> {
    background.status()
}

// Split from the command so it can be tested without a Tauri runtime.
fn info(state: &CoreState) -> Result<CoreInfo, UiError> {
    Ok(state.core()?.info())
}

/// What chat will use, each provider's stored settings, and whether it has a key (never the key).
#[tauri::command]
pub async fn provider_overview(state: State<'_, CoreState>) -> Result<ProviderOverview, UiError> {
    Ok(state.core()?.provider_overview().await)
}

/// Writes one provider setting as `osprey config set` takes it (`provider.default`,
/// `provider.app`, `provider.<kind>.model | base_url | api_key`; empty clears) and returns the
/// new overview. A key goes to the OS keyring, else the private file.
#[tauri::command]
pub async fn set_provider_setting(
    state: State<'_, CoreState>,
    key: String,
    value: String,
) -> Result<ProviderOverview, UiError> {
    write_provider_setting(&state, &key, &value).await
}

async fn write_provider_setting(
    state: &CoreState,
    key: &str,
    value: &str,
) -> Result<ProviderOverview, UiError> {
    let core = state.core()?;
    core.set_provider_setting(key, value)
        .map_err(|error| ui_error(UiErrorCode::InvalidSetting, format!("{error:#}")))?;
    Ok(core.provider_overview().await)
}

/// Each capability of the `os` tool, whether it works here and why not (probed on each call).
#[tauri::command]
pub async fn os_capabilities(
    state: State<'_, CoreState>,
) -> Result<Vec<OsCapabilityView>, UiError> {
    Ok(state.core()?.os_capabilities().await)
}

/// Everything the settings page shows besides the model providers.
#[tauri::command]
pub fn settings_overview(state: State<'_, CoreState>) -> Result<SettingsOverview, UiError> {
    Ok(state.core()?.settings_overview())
}

/// Validates, stores and applies one setting (`null` goes back to the default); returns what the
/// page shows now. Refused with `invalid_setting` and the reason.
#[tauri::command]
pub async fn set_setting(
    state: State<'_, CoreState>,
    key: String,
    value: serde_json::Value,
) -> Result<SettingsOverview, UiError> {
    let core = state.core()?;
    core.set_setting(&key, value).await?;
    Ok(core.settings_overview())
}

/// Turns one skill on or off.
#[tauri::command]
pub async fn set_skill_enabled(
    state: State<'_, CoreState>,
    name: String,
    enabled: bool,
) -> Result<SettingsOverview, UiError> {
    let core = state.core()?;
    core.set_skill_enabled(&name, enabled).await?;
    Ok(core.settings_overview())
}

/// Adds or replaces one MCP server and reconnects; returns what the page shows now.
#[tauri::command]
pub async fn save_mcp_server(
    state: State<'_, CoreState>,
    name: String,
    config: serde_json::Value,
) -> Result<SettingsOverview, UiError> {
    let core = state.core()?;
    core.save_mcp_server(&name, config).await?;
    Ok(core.settings_overview())
}

#[tauri::command]
pub async fn remove_mcp_server(
    state: State<'_, CoreState>,
    name: String,
) -> Result<SettingsOverview, UiError> {
    let core = state.core()?;
    core.delete_mcp_server(&name).await?;
    Ok(core.settings_overview())
}

#[cfg(test)]
mod tests {
    use osprey_core::CoreOptions;

    use super::*;

    #[test]
    fn reports_the_core_info_of_an_opened_core() {
        let dir = tempfile::tempdir().unwrap();
        let state = CoreState::open(CoreOptions {
            data_dir: Some(dir.path().to_path_buf()),
            policy: None,
            ..CoreOptions::default()
        });
        let info = info(&state).unwrap();
        assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
        assert_eq!(info.data_dir, dir.path().display().to_string());
    }

    #[tokio::test]
    async fn provider_settings_are_written_and_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let state = CoreState::open(CoreOptions {
            data_dir: Some(dir.path().to_path_buf()),
            policy: None,
            ..CoreOptions::default()
        });
        let overview = write_provider_setting(&state, "provider.default", "openai")
            .await
            .unwrap();
        assert_eq!(overview.default.as_deref(), Some("openai"));
        let overview = write_provider_setting(&state, "provider.openai.model", "gpt-4.1-mini")
            .await
            .unwrap();
        let openai = overview
            .providers
            .iter()
            .find(|row| row.provider == "openai")
            .unwrap();
        assert_eq!(openai.model, "gpt-4.1-mini");
        let error = write_provider_setting(&state, "provider.openai.base_url", "ftp://x")
            .await
            .unwrap_err();
        assert_eq!(error.code, UiErrorCode::InvalidSetting);
        assert!(error.message.contains("http or https"), "{}", error.message);
    }

    #[test]
    fn a_core_that_failed_to_open_gives_core_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        // A regular file where the data directory should be: opening must fail, not panic.
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        let state = CoreState::open(CoreOptions {
            data_dir: Some(file),
            policy: None,
            ..CoreOptions::default()
        });
        let error = info(&state).unwrap_err();
        assert_eq!(error.code, UiErrorCode::CoreUnavailable);
        assert!(!error.message.is_empty());
    }
}
