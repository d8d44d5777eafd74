//! The layout of an installed app's directory, `<data>/apps/<id>/`: manifest.json, the binary,
//! signatures.json, SKILL.md, ui/, data/ (the app's own, kept across updates), logs/, tmp/ (the
//! app's private TMPDIR, emptied at each launch), and the run files app.sock, .pid and
//! .sandbox.json (what the OS sandbox enforces, see `crate::sandbox`).

use std::path::{Path, PathBuf};

use crate::napp::BINARY_NAMES;

pub const DATA_DIR: &str = "data";
pub const LOGS_DIR: &str = "logs";
pub const SOCKET_FILE: &str = "app.sock";
pub const PID_FILE: &str = ".pid";

/// The app's executable: `binary`, else `app`.
pub fn binary_path(app_dir: &Path) -> PathBuf {
    BINARY_NAMES
        .iter()
        .map(|name| app_dir.join(name))
        .find(|path| std::fs::symlink_metadata(path).is_ok())
        .unwrap_or_else(|| app_dir.join(BINARY_NAMES[0]))
}
