//! The directory walker glob and grep share: ripgrep's `ignore` walker with `.gitignore`
//! honoured, hidden entries and bulky dependency/build directories skipped, and every
//! directory checked by the [`PathGuard`] before it is entered.

use std::path::Path;

use ignore::{DirEntry, WalkBuilder};

use crate::security::paths::PathGuard;

/// Directory names never descended into: version control, dependencies and caches that drown
/// real results. `target` is not listed by name (plenty of projects have a real `target/`
/// folder); Cargo's build directory is skipped because it carries a `CACHEDIR.TAG`.
pub(crate) const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "vendor",
    "__pycache__",
    ".venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
];

/// A walker over `root`. `include_hidden` is set when the pattern itself names a hidden
/// component (`.github/**`), so asking for one is not silently answered with nothing.
pub(crate) fn walker(guard: &PathGuard, root: &Path, include_hidden: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!include_hidden)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .parents(true)
        .follow_links(false);
    let guard = guard.clone();
    builder.filter_entry(move |entry| keep_entry(&guard, entry));
    builder
}

fn keep_entry(guard: &PathGuard, entry: &DirEntry) -> bool {
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    if !is_dir {
        // Files are checked by the caller when they match, which is far rarer than seeing one.
        return true;
    }
    if entry.depth() > 0 {
        let name = entry.file_name().to_string_lossy();
        if SKIPPED_DIRS.contains(&name.as_ref()) {
            return false;
        }
        // The Cache Directory Tagging Standard: build outputs (Cargo's target/, ...) say they
        // are caches, so they hold nothing worth searching.
        if entry.path().join("CACHEDIR.TAG").is_file() {
            return false;
        }
    }
    guard.check_read(entry.path()).is_ok()
}

/// Whether a glob pattern names a hidden path component explicitly.
pub(crate) fn mentions_hidden(pattern: &str) -> bool {
    pattern
        .split(['/', '\\'])
        .any(|part| part.starts_with('.') && part != "." && part != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_components_are_noticed() {
        assert!(mentions_hidden(".github/**/*.yml"));
        assert!(mentions_hidden("**/.env"));
        assert!(!mentions_hidden("**/*.rs"));
        assert!(!mentions_hidden("../src/*.rs"));
    }
}
