//! The unconditional safeguard: runs after the approval policy on every call, under every
//! policy level including `full`, and cannot be switched off. It refuses privilege escalation,
//! destructive deletes, device writes, disk formatting, fork bombs, and writes to protected
//! paths, seeing through shell syntax with [`super::shell_syntax`].
//!
//! It judges every simple command the analysis lists, including those inside substitutions,
//! `bash -c` strings, `sudo`'s command and `find -exec`. Paths in arguments are expanded (`~`,
//! `$HOME`, `${HOME}`, and the working directory a preceding `cd` set) and then judged by the
//! [`PathGuard`], which folds `..` and follows symlinks.
//!
//! Decisions a reviewer should know:
//! - Reads are not judged here: `cat ~/.ssh/id_rsa.pub` or `ssh-keygen -l -f ~/.ssh/id_ed25519`
//!   run (the policy still decides whether to ask). The file tool refuses credential reads.
//! - `history -c` is allowed: a non-interactive shell's history is not the person's.
//! - `crontab` is allowed only to list (`-l`); any other use rewrites the spool.
//! - An unset variable at the start of a delete target (`rm -rf $DIR/`) is judged as empty,
//!   the way it would run: `rm -rf "$X/"` is refused, `rm -rf "${X:?}/"` is not.
//! - A plain recursive function is allowed; one that calls itself in a pipeline, in the
//!   background or twice is a fork bomb.

use std::path::{Path, PathBuf};

use osprey_types::ErrorCode;

use super::Refusal;
use super::paths::PathGuard;
use super::shell_syntax::{CommandAnalysis, SimpleCommand, program_name};

mod rules;

#[derive(Clone, Debug)]
pub struct Safeguard {
    paths: PathGuard,
}

/// The working directory as far as the command's own `cd`s tell.
#[derive(Clone, Debug)]
enum Cwd {
    /// Not changed: relative paths are taken from the process's directory.
    Process,
    At(PathBuf),
    /// Changed to something only known at run time.
    Unknown,
}

impl Safeguard {
    pub fn new(paths: PathGuard) -> Self {
        Safeguard { paths }
    }

    pub fn paths(&self) -> &PathGuard {
        &self.paths
    }

    /// Checks a parsed shell command.
    pub fn check_command(&self, analysis: &CommandAnalysis) -> Result<(), Refusal> {
        if let Some(name) = &analysis.fork_bomb {
            return Err(Refusal::new(
                ErrorCode::SafeguardBlocked,
                format!(
                    "the safeguard blocked a fork bomb: the shell function `{name}` calls itself \
                     in a pipeline, in the background or repeatedly, which would exhaust the \
                     machine's processes"
                ),
            ));
        }
        let mut cwd = Cwd::Process;
        for command in &analysis.commands {
            let check = Check {
                guard: self,
                command,
                cwd: &cwd,
            };
            if let Err((rule, why)) = rules::check(&check) {
                return Err(Refusal::new(
                    ErrorCode::SafeguardBlocked,
                    format!(
                        "the safeguard blocked `{}` ({rule}): {why}. This check applies at \
                         every approval level and cannot be turned off",
                        display(command)
                    ),
                ));
            }
            if let Some(next) = check.cd_target() {
                cwd = next;
            }
        }
        Ok(())
    }

    /// Whether the command reads a protected path (`cat ~/.ssh/id_rsa`, `< ~/.aws/credentials`).
    /// Reading is not blocked — `ssh-keygen -l -f ~/.ssh/id_ed25519.pub` is a fair request — but
    /// such a command must never run without a person's say: the policy asks instead of
    /// allowing it by safe bin, allowlist or `full`. Returns why.
    pub fn sensitive_read(&self, analysis: &CommandAnalysis) -> Option<String> {
        let mut cwd = Cwd::Process;
        for command in &analysis.commands {
            let check = Check {
                guard: self,
                command,
                cwd: &cwd,
            };
            let operands = command
                .args
                .iter()
                .map(|a| match a.split_once('=') {
                    Some((flag, value)) if flag.starts_with('-') => value,
                    _ => a.as_str(),
                })
                .chain(command.redirects.iter().map(|r| r.target.as_str()));
            for arg in operands {
                let path_like = arg.contains('/')
                    || arg.starts_with('~')
                    || arg.starts_with('$')
                    || matches!(cwd, Cwd::At(_));
                if !path_like || arg.starts_with('-') {
                    continue;
                }
                if let Some(path) = check.path(arg)
                    && let Err(refusal) = self.paths.check_read(&path)
                {
                    return Some(refusal.message);
                }
            }
            if let Some(next) = check.cd_target() {
                cwd = next;
            }
        }
        None
    }

    /// Checks a path a call will write.
    pub fn check_write_path(&self, path: &Path) -> Result<(), Refusal> {
        self.paths.check_write(path).map(|_| ())
    }
}

/// One command under judgement.
struct Check<'a> {
    guard: &'a Safeguard,
    command: &'a SimpleCommand,
    cwd: &'a Cwd,
}

/// A refusal reason: the rule's name and the detail.
type Blocked = (&'static str, String);

impl Check<'_> {
    fn name(&self) -> String {
        program_name(&self.command.program).to_ascii_lowercase()
    }

    fn args(&self) -> &[String] {
        &self.command.args
    }

    fn paths(&self) -> &PathGuard {
        &self.guard.paths
    }

    /// Expands `~`, `$HOME`, `${HOME}` and a leading unset variable, and makes the path
    /// absolute against the tracked working directory. `None` when it is only known at run
    /// time.
    fn path(&self, arg: &str) -> Option<PathBuf> {
        let home = self.paths().home();
        let expanded: String = if arg == "~" || arg.starts_with("~/") {
            format!("{}{}", home?.display(), &arg[1..])
        } else if let Some(rest) = arg.strip_prefix("${HOME}").or_else(|| {
            arg.strip_prefix("$HOME")
                .filter(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        }) {
            format!("{}{rest}", home?.display())
        } else if let Some(rest) = arg.strip_prefix('~') {
            // `~user`: root's home is known; others sit beside ours.
            let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
            let base = if user == "root" {
                PathBuf::from("/root")
            } else {
                home?.parent()?.join(user)
            };
            format!("{}/{tail}", base.display())
        } else if let Some(rest) = strip_plain_variable(arg) {
            // An unset variable expands to nothing: `$DIR/` is `/`.
            if rest.is_empty() {
                return None;
            }
            rest.to_string()
        } else {
            arg.to_string()
        };
        if expanded.contains("$(") || expanded.contains('`') || expanded.contains('$') {
            return None;
        }
        let path = PathBuf::from(&expanded);
        if path.is_absolute() || looks_windows(&expanded) {
            return Some(path);
        }
        match self.cwd {
            Cwd::Process => Some(path),
            Cwd::At(dir) => Some(dir.join(path)),
            Cwd::Unknown => None,
        }
    }

    /// The new working directory when this command is a `cd`.
    fn cd_target(&self) -> Option<Cwd> {
        if !matches!(self.name().as_str(), "cd" | "pushd" | "chdir") {
            return None;
        }
        let target = self
            .args()
            .iter()
            .find(|a| !(a.starts_with('-') && a.len() > 1) || a.as_str() == "-");
        Some(match target.map(String::as_str) {
            None => match self.paths().home() {
                Some(home) => Cwd::At(home.to_path_buf()),
                None => Cwd::Unknown,
            },
            Some("-") => Cwd::Unknown,
            Some(dir) => match self.path(dir) {
                Some(p) => Cwd::At(self.paths().resolve(&p)),
                None => Cwd::Unknown,
            },
        })
    }

    /// Refuses a write to `arg` (a device, a protected path).
    fn write(&self, arg: &str) -> Result<(), Blocked> {
        if arg.is_empty() || arg.starts_with('&') {
            return Ok(());
        }
        let Some(path) = self.path(arg) else {
            return Ok(());
        };
        if let Some(device) = block_device(&path.to_string_lossy()) {
            return Err((
                "write to a block device",
                format!("{device} is a disk; writing to it destroys its data"),
            ));
        }
        self.paths()
            .check_write(&path)
            .map(|_| ())
            .map_err(|r| ("write to a protected path", r.message))
    }

    /// Refuses deleting (or moving away, or recursively changing) `arg`.
    fn delete(&self, arg: &str, recursive: bool) -> Result<(), Blocked> {
        let Some(path) = self.path(arg) else {
            return Ok(());
        };
        let text = path.to_string_lossy().to_string();
        if let Some(device) = block_device(&text) {
            return Err((
                "write to a block device",
                format!("{device} is a disk; writing to it destroys its data"),
            ));
        }
        if has_glob(&text) {
            return self.delete_pattern(&path, recursive);
        }
        self.paths()
            .check_delete(&path)
            .map(|_| ())
            .map_err(|r| ("delete of a protected path", r.message))
    }

    /// `rm -rf /*`, `rm -rf ~/*`, `rm ~/.ba*`: judge the directory the pattern lists, and what
    /// it matches on disk now.
    fn delete_pattern(&self, path: &Path, recursive: bool) -> Result<(), Blocked> {
        let mut parent = PathBuf::new();
        let mut pattern = None;
        for component in path.components() {
            let text = component.as_os_str().to_string_lossy();
            if has_glob(&text) {
                pattern = Some(text.to_string());
                break;
            }
            parent.push(component);
        }
        let Some(pattern) = pattern else {
            return Ok(());
        };
        let resolved = self.paths().resolve(&parent);
        let is_home = self
            .paths()
            .home()
            .is_some_and(|h| self.paths().resolve(h) == resolved || h == parent);
        let match_all = matches!(pattern.as_str(), "*" | ".*" | "*.*" | "?*" | "**");
        if let Err(refusal) = self.paths().check_write(&parent)
            && (!is_home || recursive || match_all)
        {
            return Err((
                "delete of a protected path",
                format!(
                    "`{}` would delete inside {}: {}",
                    path.display(),
                    parent.display(),
                    refusal.message
                ),
            ));
        }
        // What the pattern matches right now.
        if let Ok(entries) = std::fs::read_dir(&resolved) {
            for entry in entries.flatten().take(4096) {
                let name = entry.file_name().to_string_lossy().to_string();
                if glob_match(&pattern, &name) {
                    self.paths()
                        .check_delete(&parent.join(&name))
                        .map_err(|r| ("delete of a protected path", r.message))?;
                }
            }
        }
        Ok(())
    }
}

/// `$NAME` or `${NAME}` at the start of `arg`, followed by `/` or nothing: the rest.
fn strip_plain_variable(arg: &str) -> Option<&str> {
    let rest = arg.strip_prefix('$')?;
    let (name, tail) = if let Some(inner) = rest.strip_prefix('{') {
        let end = inner.find('}')?;
        (&inner[..end], &inner[end + 1..])
    } else {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    };
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (plain && (tail.is_empty() || tail.starts_with('/'))).then_some(tail)
}

fn looks_windows(text: &str) -> bool {
    let b = text.as_bytes();
    (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') || text.starts_with("\\\\")
}

fn has_glob(text: &str) -> bool {
    text.contains(['*', '?']) || text.find('[').is_some_and(|i| text[i..].contains(']'))
}

/// A shell pattern match of one file name (`*`, `?`, `[...]`); a leading dot must be matched
/// explicitly, as in bash.
fn glob_match(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(end) = p.iter().skip(1).position(|&c| c == ']') else {
                    return !n.is_empty() && n[0] == '[' && go(&p[1..], &n[1..]);
                };
                let set = &p[1..=end];
                let (negate, set) = match set.first() {
                    Some('!' | '^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let Some(&c) = n.first() else { return false };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= c && c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                hit != negate && go(&p[end + 2..], &n[1..])
            }
            Some(&c) => n.first() == Some(&c) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// The disk a path names, if it is a block device (by name: the node may not exist here).
fn block_device(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase().replace('\\', "/");
    if lower.starts_with("//./physicaldrive")
        || lower.starts_with("//./harddisk")
        || lower.starts_with("//?/globalroot")
    {
        return Some(text.to_string());
    }
    let name = lower.strip_prefix("/dev/")?;
    const DISKS: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "mapper/", "md", "dm-", "loop",
        "sr", "nbd", "zd", "zram", "mtdblock", "ubd", "bcache", "nvd", "ada", "da", "mfid", "rbd",
        "drbd", "dasd", "scd", "fd0", "cciss/", "vg", "emcpower",
    ];
    let is_disk = DISKS.iter().any(|d| {
        name.strip_prefix(d).is_some_and(|rest| {
            d.ends_with('/')
                || rest.is_empty()
                || rest.starts_with(|c: char| c.is_ascii_alphanumeric())
        })
    }) || name.starts_with("disk/");
    is_disk.then(|| text.to_string())
}

/// The command as a person would read it.
fn display(command: &SimpleCommand) -> String {
    let mut words: Vec<&str> = command.wrappers.iter().map(String::as_str).collect();
    if !command.program.is_empty() {
        words.push(&command.program);
    }
    words.extend(command.args.iter().map(String::as_str));
    let mut text = words.join(" ");
    for r in &command.redirects {
        if r.writes {
            text.push_str(" > ");
            text.push_str(&r.target);
        }
    }
    if text.len() > 200 {
        let mut end = 200;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::shell_syntax::analyze;

    fn guard() -> Safeguard {
        Safeguard::new(PathGuard::new(
            Some(PathBuf::from("/home/tester")),
            PathBuf::from("/home/tester/.local/share/osprey"),
        ))
    }

    #[test]
    fn messages_name_the_rule_and_the_command() {
        let err = guard()
            .check_command(&analyze("ls && sudo rm -rf /"))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::SafeguardBlocked);
        assert!(
            err.message.contains("privilege escalation"),
            "{}",
            err.message
        );
        assert!(err.message.contains("`sudo rm -rf /`"), "{}", err.message);
        let err = guard().check_command(&analyze("rm -rf ~")).unwrap_err();
        assert!(err.message.contains("/home/tester"), "{}", err.message);
        let err = guard()
            .check_command(&analyze(":(){ :|:& };:"))
            .unwrap_err();
        assert!(err.message.contains("fork bomb"), "{}", err.message);
    }

    #[test]
    fn cd_moves_the_working_directory() {
        let g = guard();
        assert!(g.check_command(&analyze("cd / && rm -rf *")).is_err());
        assert!(g.check_command(&analyze("cd ~ && rm -rf .ssh")).is_err());
        assert!(g.check_command(&analyze("cd && rm -rf *")).is_err());
        assert!(
            g.check_command(&analyze("cd /tmp/build && rm -rf *"))
                .is_ok()
        );
        assert!(
            g.check_command(&analyze("cd \"$(mktemp -d)\" && rm -rf x"))
                .is_ok()
        );
    }

    #[test]
    fn reads_of_protected_paths_are_reported_for_the_policy() {
        let g = guard();
        let read = |cmd: &str| g.sensitive_read(&analyze(cmd));
        assert!(read("cat ~/.ssh/id_rsa").unwrap().contains(".ssh"));
        assert!(read("base64 < ~/.aws/credentials").is_some());
        assert!(read("cd ~/.ssh && cat id_rsa").is_some());
        assert!(read("grep --file=$HOME/.netrc x").is_some());
        assert_eq!(read("cat ./notes.txt src/main.rs"), None);
        assert_eq!(read("git commit -m 'fix: ~ handling'"), None);
    }

    #[test]
    fn check_write_path_uses_the_table() {
        let g = guard();
        let err = g
            .check_write_path(Path::new("/home/tester/.ssh/authorized_keys"))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::SensitivePath);
        assert!(g.check_write_path(Path::new("/home/tester/p/x")).is_ok());
    }

    #[test]
    fn patterns_match_like_bash() {
        assert!(glob_match("*", "a"));
        assert!(!glob_match("*", ".ssh"));
        assert!(glob_match(".s*", ".ssh"));
        assert!(glob_match("[a-c]?", "b1"));
        assert!(!glob_match("[!a-c]?", "b1"));
        assert_eq!(strip_plain_variable("$DIR/"), Some("/"));
        assert_eq!(strip_plain_variable("${DIR}/etc"), Some("/etc"));
        assert_eq!(strip_plain_variable("${DIR:?}/"), None);
        assert!(block_device("/dev/nvme0n1p1").is_some());
        assert!(block_device("/dev/null").is_none());
        assert!(block_device("/dev/stdout").is_none());
    }
}
