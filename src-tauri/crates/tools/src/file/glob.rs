//! `file glob`: files whose path matches a glob, newest first.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use osprey_types::{ErrorCode, ToolResult};

use super::walk::{mentions_hidden, walker};
use super::{DEFAULT_GLOB_LIMIT, Stop, failed, not_found};
use crate::call::Call;
use crate::security::paths::PathGuard;

struct Hit {
    modified: SystemTime,
    path: PathBuf,
}

pub(crate) fn run(guard: &PathGuard, target: &Path, call: &Call, stop: &Stop) -> ToolResult {
    let Some(raw_pattern) = call.str("pattern").filter(|p| !p.trim().is_empty()) else {
        return ToolResult::error(ErrorCode::InvalidInput, "file glob needs `pattern`");
    };
    let limit = call.u64("limit").unwrap_or(DEFAULT_GLOB_LIMIT).max(1) as usize;
    let (root, pattern) = split_pattern(target, raw_pattern.trim());
    let root = match guard.check_read(&root) {
        Ok(root) => root,
        Err(refusal) => return refusal.into_result(),
    };
    match std::fs::metadata(&root) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return failed(format!(
                "{} is a file; glob searches a directory (give its parent as `path`)",
                root.display()
            ));
        }
        Err(_) => return not_found(&root),
    }
    let matcher = match compile(&pattern) {
        Ok(matcher) => matcher,
        Err(message) => return ToolResult::error(ErrorCode::InvalidInput, message),
    };
    // A pattern without a slash matches the file name at any depth, as in .gitignore and
    // ripgrep's -g.
    let by_name = !pattern.contains('/');

    let hits: Mutex<Vec<Hit>> = Mutex::new(Vec::new());
    let total = AtomicUsize::new(0);
    let seen = AtomicUsize::new(0);
    walker(guard, &root, mentions_hidden(&pattern))
        .build_parallel()
        .run(|| {
            let (hits, total, seen, matcher, root) = (&hits, &total, &seen, &matcher, &root);
            Box::new(move |entry| {
                if seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(512) && stop.should_stop() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if entry.file_type().is_none_or(|t| t.is_dir()) {
                    return WalkState::Continue;
                }
                let matched = if by_name {
                    matcher.is_match(entry.file_name())
                } else {
                    entry
                        .path()
                        .strip_prefix(root)
                        .is_ok_and(|relative| matcher.is_match(relative))
                };
                if !matched || guard.check_read(entry.path()).is_err() {
                    return WalkState::Continue;
                }
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                total.fetch_add(1, Ordering::Relaxed);
                let mut hits = hits.lock().unwrap_or_else(|e| e.into_inner());
                hits.push(Hit {
                    modified,
                    path: entry.into_path(),
                });
                // Keep memory bounded on huge trees: only the newest `limit` can be shown.
                if hits.len() > limit.saturating_mul(4).saturating_add(1024) {
                    newest_first(&mut hits);
                    hits.truncate(limit);
                }
                WalkState::Continue
            })
        });
    if let Some(result) = stop.reason() {
        return result;
    }
    let mut hits = hits.into_inner().unwrap_or_else(|e| e.into_inner());
    newest_first(&mut hits);
    hits.truncate(limit);
    let total = total.into_inner();
    if hits.is_empty() {
        return ToolResult::text(format!(
            "no files match `{pattern}` under {} (hidden and .gitignored files and directories \
             like node_modules, vendor and build caches are skipped)",
            root.display()
        ));
    }
    let mut out = String::new();
    for hit in &hits {
        out.push_str(&hit.path.to_string_lossy());
        out.push('\n');
    }
    if total > hits.len() {
        out.push_str(&format!(
            "[showing the newest {} of {total} matching files; narrow the pattern or raise limit]\n",
            hits.len()
        ));
    }
    ToolResult::text(out)
}

fn newest_first(hits: &mut [Hit]) {
    hits.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
}

fn compile(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|err| format!("invalid glob `{pattern}`: {err}"))
}

/// Splits an absolute pattern (`/src/app/**/*.rs`) into its literal directory prefix, which
/// becomes the root, and the rest; a relative pattern is kept against `root`.
fn split_pattern(root: &Path, pattern: &str) -> (PathBuf, String) {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let path = Path::new(pattern);
    if !path.is_absolute() {
        return (root.to_path_buf(), pattern.to_string());
    }
    let is_literal = |part: &str| !part.contains(['*', '?', '[', ']', '{', '}', '\\']);
    let components: Vec<Component> = path.components().collect();
    let mut prefix = PathBuf::new();
    let mut rest = Vec::new();
    for (i, component) in components.iter().enumerate() {
        let part = component.as_os_str().to_string_lossy();
        // The last component always stays in the pattern, so `/a/b.txt` means "b.txt in /a".
        if rest.is_empty() && i + 1 < components.len() && is_literal(&part) {
            prefix.push(component.as_os_str());
        } else {
            rest.push(part.into_owned());
        }
    }
    (prefix, rest.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_patterns_split_at_the_first_wildcard() {
        let (root, pattern) = split_pattern(Path::new("/cwd"), "/src/app/**/*.rs");
        assert_eq!(root, Path::new("/src/app"));
        assert_eq!(pattern, "**/*.rs");
        let (root, pattern) = split_pattern(Path::new("/cwd"), "./src/*.rs");
        assert_eq!(root, Path::new("/cwd"));
        assert_eq!(pattern, "src/*.rs");
        let (root, pattern) = split_pattern(Path::new("/cwd"), "/etc/hosts");
        assert_eq!(root, Path::new("/etc"));
        assert_eq!(pattern, "hosts");
    }

    #[test]
    fn star_does_not_cross_directories() {
        let m = compile("src/*.rs").unwrap();
        assert!(m.is_match("src/lib.rs"));
        assert!(!m.is_match("src/a/lib.rs"));
        assert!(compile("**/*.rs").unwrap().is_match("a/b/c.rs"));
        assert!(compile("**/*.rs").unwrap().is_match("c.rs"));
    }
}
