//! Where a shell command starts: the call's `cwd` field against the tool's default directory.
//! Used on every platform (the policy judges relative paths from here before anything runs),
//! while running commands is Unix-only for now.

use std::path::{Path, PathBuf};

use osprey_types::{ErrorCode, ToolResult};

use super::ShellTool;

pub(super) fn default_dir(tool: &ShellTool) -> Result<PathBuf, ToolResult> {
    match &tool.config.default_cwd {
        Some(dir) => Ok(dir.clone()),
        None => std::env::current_dir().map_err(|err| {
            ToolResult::error(
                ErrorCode::ToolFailed,
                format!("cannot determine the working directory: {err}"),
            )
        }),
    }
}

/// Where a command with this `cwd` field starts, for judging its relative paths before it
/// runs; `None` when that cannot be told (the call then fails in [`working_dir`] anyway).
pub(crate) fn start_dir(tool: &ShellTool, raw: Option<&str>) -> Option<PathBuf> {
    working_dir(tool, raw).ok()
}

pub(super) fn working_dir(tool: &ShellTool, raw: Option<&str>) -> Result<PathBuf, ToolResult> {
    let default = default_dir(tool)?;
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(default);
    };
    let expanded = match (raw.strip_prefix('~'), tool.home()) {
        (Some(""), Some(home)) => home,
        (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
        _ => PathBuf::from(raw),
    };
    let dir = if expanded.is_absolute() {
        expanded
    } else {
        default.join(expanded)
    };
    if !Path::new(&dir).is_dir() {
        return Err(ToolResult::error(
            ErrorCode::ToolFailed,
            format!("cwd {} does not exist or is not a directory", dir.display()),
        ));
    }
    Ok(dir)
}
