//! The settings area: for now the About box.

use osprey_types::{CoreInfo, UiError};
use tauri::State;

use crate::CoreState;

/// Version, data directory and registered tools of the running core.
#[tauri::command]
pub fn app_info(state: State<'_, CoreState>) -> Result<CoreInfo, UiError> {
    info(&state)
}

// Split from the command so it can be tested without a Tauri runtime.
fn info(state: &CoreState) -> Result<CoreInfo, UiError> {
    Ok(state.core()?.info())
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
        });
        let info = info(&state).unwrap();
        assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
        assert_eq!(info.data_dir, dir.path().display().to_string());
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
        });
        let error = info(&state).unwrap_err();
        assert_eq!(error.code, crate::codes::CORE_UNAVAILABLE);
        assert!(!error.message.is_empty());
    }
}
