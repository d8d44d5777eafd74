//! The protected-path table: credential stores, system directories (Linux, macOS, Windows) and
//! Osprey's own data directory. Paths are normalised and symlinks resolved before matching, so
//! `..` and links cannot dodge it. Used by the safeguard (writes) and by the file tool (reads
//! and writes).
//!
//! STUB: replaced by the safeguard work; the API below is the contract.

use std::path::{Path, PathBuf};

use osprey_types::ErrorCode;

use super::Refusal;

/// Knows which paths are off limits.
#[derive(Clone, Debug)]
pub struct PathGuard {
    home: Option<PathBuf>,
    data_dir: PathBuf,
}

impl PathGuard {
    /// `home` is the user's home directory; `data_dir` is Osprey's data directory.
    pub fn new(home: Option<PathBuf>, data_dir: PathBuf) -> Self {
        PathGuard { home, data_dir }
    }

    /// A guard for the current user's home and the given data directory.
    pub fn for_current_user(data_dir: PathBuf) -> Self {
        Self::new(std::env::var_os("HOME").map(PathBuf::from), data_dir)
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Refuses reads of credential stores and Osprey's data. Returns the resolved path to use.
    pub fn check_read(&self, path: &Path) -> Result<PathBuf, Refusal> {
        if path.starts_with(&self.data_dir) {
            return Err(Refusal::new(
                ErrorCode::SensitivePath,
                "Osprey's data directory",
            ));
        }
        Ok(path.to_path_buf())
    }

    /// Refuses writes to credential stores, system paths and Osprey's data. Returns the resolved
    /// path to use.
    pub fn check_write(&self, path: &Path) -> Result<PathBuf, Refusal> {
        self.check_read(path)
    }
}
