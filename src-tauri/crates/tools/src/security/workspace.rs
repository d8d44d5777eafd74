//! The workspace folders: where shell commands may write (the kernel sandbox), and where reads
//! need no approval under the default policy (the file tool's reads, globs and greps, and what
//! safe bins read). Configured ones (`shell.sandbox`'s `workspaces`), else the working directory,
//! unless that is the home folder or `/`: neither is ever a workspace as a whole.

use std::path::{Path, PathBuf};

use super::shell_syntax::CommandAnalysis;

/// The workspace folders for a tool configured with `configured`, working in `default_dir`.
pub fn folders(configured: &[PathBuf], default_dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    if !configured.is_empty() {
        return configured.to_vec();
    }
    let whole = default_dir == Path::new("/") || home.is_some_and(|h| default_dir == h);
    if whole {
        Vec::new()
    } else {
        vec![default_dir.to_path_buf()]
    }
}

/// Whether `path` lies inside one of `folders`, judged where it really is (links followed).
pub fn contains(folders: &[PathBuf], path: &Path) -> bool {
    let Some(real) = real_location(path) else {
        return false;
    };
    folders
        .iter()
        .filter_map(|dir| real_location(dir))
        .any(|dir| real.starts_with(dir))
}

/// Where `path` really is: its nearest existing ancestor with every link followed, then the
/// rest of the path as written (a file about to be created, or a missing one). `None` when the
/// rest climbs with `..`, which only the file system could resolve.
pub fn real_location(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return Some(rest.iter().rev().fold(real, |acc, part| acc.join(part)));
        }
        rest.push(existing.file_name()?.to_os_string());
        existing = existing.parent()?;
    }
}

/// The first place outside `folders` a shell command reads, as far as its words tell: its
/// start directory (or an `env -C` one), each operand that names a path (it has a `/`, starts
/// with `~` or `.`, or exists where the command starts; an option's `=value` too) and each
/// redirection. Used to keep safe bins from reading outside the workspace unasked; commands
/// that are not safe bins are asked anyway, and the kernel sandbox holds either way.
pub fn first_read_outside(
    analysis: &CommandAnalysis,
    start: &Path,
    home: Option<&Path>,
    folders: &[PathBuf],
) -> Option<PathBuf> {
    let expand = |base: &Path, word: &str| -> PathBuf {
        match (word.strip_prefix('~'), home) {
            (Some(""), Some(home)) => home.to_path_buf(),
            (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
            _ => base.join(word),
        }
    };
    for command in &analysis.commands {
        let base = command
            .chdir
            .as_deref()
            .map_or_else(|| start.to_path_buf(), |dir| expand(start, dir));
        let operands = command
            .args
            .iter()
            .filter_map(|arg| match arg.strip_prefix('-') {
                Some(option) => option.split_once('=').map(|(_, value)| value),
                None => Some(arg.as_str()),
            })
            .filter(|word| !word.is_empty())
            .filter(|word| {
                word.contains('/')
                    || word.starts_with('~')
                    || word.starts_with('.')
                    || base.join(word).exists()
            })
            .map(|word| expand(&base, word));
        let redirects = command
            .redirects
            .iter()
            .filter(|r| !r.target.starts_with('&'))
            .map(|r| expand(&base, &r.target));
        if let Some(outside) = std::iter::once(base.clone())
            .chain(operands)
            .chain(redirects)
            .find(|path| path != Path::new("/dev/null") && !contains(folders, path))
        {
            return Some(outside);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::shell_syntax::analyze;

    #[test]
    fn home_and_root_are_never_a_workspace_as_a_whole() {
        let home = Path::new("/home/me");
        assert!(folders(&[], home, Some(home)).is_empty());
        assert!(folders(&[], Path::new("/"), Some(home)).is_empty());
        assert_eq!(
            folders(&[], Path::new("/home/me/src"), Some(home)),
            [PathBuf::from("/home/me/src")]
        );
        let configured = [PathBuf::from("/work")];
        assert_eq!(folders(&configured, home, Some(home)), configured);
    }

    #[test]
    fn reads_are_judged_where_they_lead() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        let other = root.path().join("other");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(ws.join("notes.txt"), "x").unwrap();
        std::fs::write(other.join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(&other, ws.join("door")).unwrap();
        let folders = [ws.clone()];
        let outside =
            |command: &str| first_read_outside(&analyze(command), &ws, Some(root.path()), &folders);
        for inside in [
            "ls -la",
            "cat notes.txt",
            "grep -rn foo src",
            "wc -l ./notes.txt < notes.txt",
            "head -n 3 notes.txt 2>/dev/null",
        ] {
            assert_eq!(outside(inside), None, "{inside}");
        }
        for (command, leads) in [
            ("cat ../other/secret.txt", "secret.txt"),
            ("cat door/secret.txt", "secret.txt"),
            ("ls ~/other", "other"),
            ("grep --file=/etc/passwd x", "passwd"),
            ("env -C ../other ls", "other"),
            ("wc -l < /etc/hostname", "hostname"),
        ] {
            let found = outside(command).unwrap_or_else(|| panic!("{command} is inside"));
            assert!(found.ends_with(leads), "{command}: {}", found.display());
        }
    }
}
