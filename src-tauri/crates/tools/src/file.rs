//! The `file` tool: read, write, edit, glob and grep, every path checked by the [`PathGuard`].
//!
//! Paths may be absolute, start with `~/` (the guard's home), or be relative. Relative paths
//! resolve against the call's `cwd` field when given, else the tool's base directory
//! ([`FileTool::with_base_dir`]), else the process's working directory at call time. The
//! guard's answer (the resolved path) is the path actually used, so `..` and symlinks cannot
//! slip past it. Glob and grep check every directory before descending and every hit before
//! returning it.
//!
//! All disk work runs on the blocking pool and polls the call's cancellation token and
//! deadline, so a cancelled search over a huge tree stops promptly.

#[cfg(unix)]
mod anchored;
mod glob;
mod grep;
mod read;
mod walk;
mod write;

use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use futures::future::BoxFuture;
use osprey_types::{ErrorCode, ToolResult};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::call::{ApprovalNeed, Call, CallFacts};
use crate::domain::{Domain, FieldType};
use crate::security::paths::PathGuard;
use crate::security::workspace;
use crate::tool::{DomainTool, ToolContext};

/// Lines a read returns when `limit` is not given.
pub const DEFAULT_READ_LIMIT: u64 = 2000;
/// Files a glob returns when `limit` is not given.
pub const DEFAULT_GLOB_LIMIT: u64 = 100;
/// Matching lines a grep returns when `limit` is not given.
pub const DEFAULT_GREP_LIMIT: u64 = 100;

/// The `file` domain tool.
pub struct FileTool {
    guard: PathGuard,
    base_dir: Option<PathBuf>,
    workspaces: Vec<PathBuf>,
    domain: Domain,
}

impl FileTool {
    /// A file tool whose relative paths resolve against the process's working directory.
    pub fn new(guard: PathGuard) -> Self {
        FileTool {
            guard,
            base_dir: None,
            workspaces: Vec::new(),
            domain: file_domain(),
        }
    }

    /// Resolves relative paths against `dir` instead of the process's working directory.
    pub fn with_base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// The workspace folders: reads, globs and greps inside them need no approval; elsewhere
    /// they are asked under the default policy (as writes are). Empty: the working directory
    /// relative paths resolve against, unless that is the home folder or `/` (the same rule as
    /// the shell sandbox's writable folders).
    pub fn with_workspaces(mut self, workspaces: Vec<PathBuf>) -> Self {
        self.workspaces = workspaces;
        self
    }

    /// Whether `path` lies inside a workspace folder (see [`workspace`]).
    fn in_workspace(&self, path: &Path) -> bool {
        let default = self
            .base_dir
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let folders = workspace::folders(&self.workspaces, &default, self.guard.home());
        workspace::contains(&folders, path)
    }

    pub fn guard(&self) -> &PathGuard {
        &self.guard
    }

    /// What reading the file a call's `path` (and `cwd`) names involves, judged as `file read`
    /// judges it: the path, and whether it lies outside the workspace folders. Another tool that
    /// reads a file the model names (the vision tool's images) states these facts, so the same
    /// safeguard, denied paths and approval apply to it.
    pub fn read_facts(&self, input: &serde_json::Map<String, serde_json::Value>) -> CallFacts {
        self.facts(&read_call(input))
    }

    /// The file a call's `path` (and `cwd`) names, resolved and checked by the path guard as
    /// `file read` does.
    pub fn resolve_read(
        &self,
        input: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<PathBuf, crate::Refusal> {
        let target = self
            .target(&read_call(input))
            .map_err(|message| crate::Refusal::new(ErrorCode::InvalidInput, message))?;
        self.guard.check_read(&target)
    }

    /// The absolute (not yet guard-resolved) path a call's `path` field names, or the search
    /// root for glob/grep when `path` is absent.
    fn target(&self, call: &Call) -> Result<PathBuf, String> {
        let base = self.base(call)?;
        match call.str("path").map(str::trim).filter(|p| !p.is_empty()) {
            Some(raw) => Ok(absolute(&base, &self.expand_home(raw)?)),
            None => match call.action() {
                "glob" | "grep" => Ok(base),
                action => Err(format!("file {action} needs `path`")),
            },
        }
    }

    /// The directory relative paths resolve against for this call.
    fn base(&self, call: &Call) -> Result<PathBuf, String> {
        let default = match &self.base_dir {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| format!("cannot determine the working directory: {e}"))?,
        };
        match call.str("cwd").map(str::trim).filter(|c| !c.is_empty()) {
            Some(raw) => Ok(absolute(&default, &self.expand_home(raw)?)),
            None => Ok(default),
        }
    }

    fn expand_home(&self, raw: &str) -> Result<PathBuf, String> {
        let rest = match raw.strip_prefix('~') {
            None => return Ok(PathBuf::from(raw)),
            Some("") => "",
            Some(rest) => match rest.strip_prefix('/') {
                Some(rest) => rest,
                // `~user/...` is not expanded; treat it as a literal name.
                None => return Ok(PathBuf::from(raw)),
            },
        };
        let home = self
            .guard
            .home()
            .ok_or_else(|| format!("`{raw}` starts with ~ but the home directory is unknown"))?;
        Ok(if rest.is_empty() {
            home.to_path_buf()
        } else {
            home.join(rest)
        })
    }

    async fn dispatch(&self, ctx: &ToolContext, call: Call) -> ToolResult {
        let target = match self.target(&call) {
            Ok(path) => path,
            Err(message) => return ToolResult::error(ErrorCode::InvalidInput, message),
        };
        let stop = Stop {
            cancel: ctx.cancel.clone(),
            deadline: ctx.deadline,
        };
        let guard = self.guard.clone();
        let action = call.action().to_string();
        let job = move || -> ToolResult {
            match action.as_str() {
                "read" => read::run(&guard, &target, &call, &stop),
                "write" => write::write(&guard, &target, &call),
                "edit" => write::edit(&guard, &target, &call),
                "glob" => glob::run(&guard, &target, &call, &stop),
                "grep" => grep::run(&guard, &target, &call, &stop),
                other => ToolResult::error(
                    ErrorCode::InvalidInput,
                    format!("file has no action `{other}`; use read, write, edit, glob or grep"),
                ),
            }
        };
        match tokio::task::spawn_blocking(job).await {
            Ok(result) => result,
            Err(err) => ToolResult::error(
                ErrorCode::ToolFailed,
                format!("the file tool failed internally: {err}"),
            ),
        }
    }
}

impl DomainTool for FileTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let action = call.action();
        let path = self.target(call).ok();
        let shown = path
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| call.str("path").unwrap_or("?").to_string());
        let mut facts = CallFacts {
            approval: match action {
                "write" | "edit" => ApprovalNeed::Required,
                _ => ApprovalNeed::None,
            },
            ..Default::default()
        };
        facts.summary = match action {
            "write" => {
                let bytes = call.str("content").map_or(0, str::len);
                let verb = if call.bool("append") == Some(true) {
                    "append to"
                } else {
                    "write"
                };
                format!("{verb} {shown} ({bytes} bytes)")
            }
            "edit" => {
                let all = if call.bool("replace_all") == Some(true) {
                    ", every occurrence"
                } else {
                    ""
                };
                format!("edit {shown}{all}")
            }
            "read" => format!("read {shown}"),
            "glob" => format!("glob {} under {shown}", call.str("pattern").unwrap_or("")),
            "grep" => format!("grep /{}/ under {shown}", call.str("pattern").unwrap_or("")),
            other => format!("file {other} {shown}"),
        };
        if let Some(path) = path {
            match action {
                "write" | "edit" => facts.write_paths.push(path),
                _ => {
                    if !self.in_workspace(&path) {
                        facts.needs_approval = Some(format!(
                            "{} is outside the workspace folders",
                            path.display()
                        ));
                        facts.summary.push_str(" (outside the workspace folders)");
                    }
                    facts.read_paths.push(path);
                }
            }
        }
        facts
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.dispatch(ctx, call))
    }
}

/// A `file read` of the `path` and `cwd` in `input`.
fn read_call(input: &serde_json::Map<String, serde_json::Value>) -> Call {
    let mut only = serde_json::Map::new();
    for key in ["path", "cwd"] {
        if let Some(value) = input.get(key) {
            only.insert(key.to_string(), value.clone());
        }
    }
    Call {
        resource: Some("file".into()),
        action: Some("read".into()),
        input: only,
    }
}

fn file_domain() -> Domain {
    use ApprovalNeed::{None as Free, Required};
    Domain::new(
        "file",
        "Read, write, edit and search files. Paths are absolute, ~/..., or relative to `cwd`. \
         Read before editing; edit replaces exact text. Use glob to find files by name and grep \
         to search their contents (regex, ripgrep syntax).",
    )
    .closed_world()
    .resource(
        "file",
        &["files", "fs", "filesystem"],
        &[
            (
                "read",
                "Read a text file with line numbers; page with offset/limit",
                Free,
            ),
            (
                "write",
                "Create or replace a file with `content` (parents created; `append` to add)",
                Required,
            ),
            (
                "edit",
                "Replace `old_text` (exact, unique unless replace_all) with `new_text`",
                Required,
            ),
            (
                "glob",
                "Find files by glob pattern (e.g. **/*.rs), newest first",
                Free,
            ),
            (
                "grep",
                "Search file contents with a regex; prints path:line: text",
                Free,
            ),
        ],
    )
    .field(
        "path",
        FieldType::String,
        "The file (read, write, edit), or the directory or file to search (glob, grep; default: the working directory)",
    )
    .required_for(&["read", "write", "edit"])
    .field_alias(&["file_path", "filepath", "file"])
    .field(
        "cwd",
        FieldType::String,
        "Directory that relative paths resolve against (default: Osprey's working directory)",
    )
    .field(
        "offset",
        FieldType::Integer,
        "read: first line to show, 1-based (default 1)",
    )
    .field(
        "limit",
        FieldType::Integer,
        "read: lines (default 2000); glob: files (default 100); grep: matching lines (default 100)",
    )
    .field("content", FieldType::String, "write: the text to write")
    .required_for(&["write"])
    .field_alias(&["contents", "text"])
    .field(
        "append",
        FieldType::Boolean,
        "write: add to the end instead of replacing",
    )
    .default_value(json!(false))
    .field(
        "old_text",
        FieldType::String,
        "edit: the exact text to replace, including whitespace; include enough surrounding lines to make it unique",
    )
    .required_for(&["edit"])
    .field_alias(&["old_string", "old_str"])
    .field("new_text", FieldType::String, "edit: the replacement text")
    .required_for(&["edit"])
    .field_alias(&["new_string", "new_str"])
    .field(
        "replace_all",
        FieldType::Boolean,
        "edit: replace every occurrence instead of requiring exactly one",
    )
    .default_value(json!(false))
    .field(
        "pattern",
        FieldType::String,
        "glob: a glob like **/*.rs (no slash = match the file name at any depth); grep: a regex",
    )
    .required_for(&["glob", "grep"])
    .field(
        "glob",
        FieldType::String,
        "grep: only search files matching this glob (e.g. *.rs, src/**/*.ts)",
    )
    .field(
        "case_insensitive",
        FieldType::Boolean,
        "grep: ignore case",
    )
    .default_value(json!(false))
    .field(
        "context",
        FieldType::Integer,
        "grep: lines of context before and after each match (default 0)",
    )
}

/// Joins a relative path onto `base`, dropping `.` components. `..` is kept: the guard
/// resolves it against the real file system, where symlinks make lexical folding wrong.
fn absolute(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    joined
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// The call's cancellation token and deadline, for blocking loops to poll.
#[derive(Clone)]
pub(crate) struct Stop {
    cancel: CancellationToken,
    deadline: Instant,
}

impl Stop {
    /// Why work must stop now, if it must.
    fn reason(&self) -> Option<ToolResult> {
        if self.cancel.is_cancelled() {
            Some(ToolResult::error(
                ErrorCode::Cancelled,
                "the call was cancelled",
            ))
        } else if Instant::now() >= self.deadline {
            Some(ToolResult::error(
                ErrorCode::Timeout,
                "the call ran past its deadline and was stopped",
            ))
        } else {
            None
        }
    }

    fn should_stop(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}

fn failed(message: impl Into<String>) -> ToolResult {
    ToolResult::error(ErrorCode::ToolFailed, message)
}

/// The message for a path that does not exist, with near names from its directory.
fn not_found(path: &Path) -> ToolResult {
    let mut message = format!("file not found: {}", path.display());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("").to_string();
    let mut similar = Vec::new();
    if let (Some(parent), false) = (path.parent(), stem.is_empty()) {
        if let Ok(entries) = std::fs::read_dir(parent) {
            for entry in entries.flatten().take(10_000) {
                let candidate = entry.file_name().to_string_lossy().to_string();
                if candidate.to_lowercase().contains(&stem) {
                    similar.push(candidate);
                }
            }
        } else {
            message.push_str(&format!(
                " (its directory {} does not exist either)",
                parent.display()
            ));
        }
    }
    similar.sort();
    similar.truncate(5);
    if !similar.is_empty() {
        message.push_str(&format!(
            ". Similar names in that directory: {}",
            similar.join(", ")
        ));
    }
    let hint = if name.is_empty() {
        "**/*".to_string()
    } else {
        format!("**/{name}")
    };
    message.push_str(&format!(
        ". To find it, use file glob with pattern \"{hint}\"."
    ));
    failed(message)
}

/// Formats a byte count for people: `512 B`, `12.3 KB`, `1.2 MB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(home: &Path) -> FileTool {
        FileTool::new(PathGuard::new(
            Some(home.to_path_buf()),
            home.join(".osprey"),
        ))
        .with_base_dir("/work/base")
    }

    fn call(input: serde_json::Value) -> Call {
        file_domain().resolve(input).unwrap()
    }

    #[test]
    fn relative_paths_resolve_against_cwd_then_base() {
        let t = tool(Path::new("/home/me"));
        let c = call(json!({"action": "read", "path": "src/./lib.rs"}));
        assert_eq!(t.target(&c).unwrap(), Path::new("/work/base/src/lib.rs"));
        let c = call(json!({"action": "read", "path": "lib.rs", "cwd": "/tmp/x"}));
        assert_eq!(t.target(&c).unwrap(), Path::new("/tmp/x/lib.rs"));
        let c = call(json!({"action": "read", "path": "~/notes.txt"}));
        assert_eq!(t.target(&c).unwrap(), Path::new("/home/me/notes.txt"));
        let c = call(json!({"action": "glob", "pattern": "*.rs"}));
        assert_eq!(t.target(&c).unwrap(), Path::new("/work/base"));
        // `..` stays for the guard to resolve on the real file system.
        let c = call(json!({"action": "read", "path": "../x"}));
        assert_eq!(t.target(&c).unwrap(), Path::new("/work/base/../x"));
    }

    #[test]
    fn facts_name_the_path_and_the_approval_need() {
        let t = tool(Path::new("/home/me"));
        let f = t.facts(&call(
            json!({"action": "write", "path": "/tmp/a.txt", "content": "hello"}),
        ));
        assert_eq!(f.summary, "write /tmp/a.txt (5 bytes)");
        assert_eq!(f.write_paths, vec![PathBuf::from("/tmp/a.txt")]);
        assert_eq!(f.approval, ApprovalNeed::Required);
        let f = t.facts(&call(json!({"action": "read", "path": "/tmp/a.txt"})));
        assert_eq!(f.read_paths, vec![PathBuf::from("/tmp/a.txt")]);
        assert_eq!(f.approval, ApprovalNeed::None);
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(1_234_567), "1.2 MB");
        assert_eq!(human_bytes(51_200), "51.2 KB");
    }
}
