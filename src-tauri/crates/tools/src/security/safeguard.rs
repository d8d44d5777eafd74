//! The unconditional safeguard: runs after the approval policy on every call, under every
//! policy level including `full`, and cannot be switched off. It refuses privilege escalation,
//! destructive deletes, device writes, disk formatting, fork bombs, and writes to protected
//! paths, seeing through shell syntax with [`super::shell_syntax`].
//!
//! It judges every simple command the analysis lists, including those inside substitutions,
//! `bash -c` strings, `sudo`'s command and `find -exec`. Paths in arguments are expanded (`~`,
//! `$HOME`, `${HOME}`, `$PWD`, and the working directory the call's `cwd`, a preceding `cd` or
//! `env -C` set) and then judged by the [`PathGuard`], which follows links component by
//! component. A file name pattern is judged as every path it can name: what it matches on disk
//! and the protected names it matches (`~/.ss?` is `~/.ssh`).
//!
//! What it cannot settle without running the command is not blocked but reported by
//! [`Safeguard::must_ask`], which the policy turns into a question at every level: a read of a
//! protected path, a write, delete or link whose target is only known at run time, a link made
//! to a protected path, a tree copied into a directory that holds protected paths.
//!
//! Decisions a reviewer should know:
//! - Reads are not blocked here: `cat ~/.ssh/id_rsa.pub` or `ssh-keygen -l -f ~/.ssh/id_ed25519`
//!   run once a person says yes (`must_ask`). The file tool refuses credential reads.
//! - `history -c` is allowed: a non-interactive shell's history is not the person's.
//! - `crontab` is allowed only to list (`-l`); any other use rewrites the spool.
//! - An unset variable at the start of a delete target (`rm -rf $DIR/`) is judged as empty,
//!   the way it would run: `rm -rf "$X/"` is refused; `rm -rf "$X/build"` and
//!   `rm -rf "${X:?}/"` are asked.
//! - A plain recursive function is allowed; one that calls itself in a pipeline, in the
//!   background or twice is a fork bomb.

use std::cell::RefCell;
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

    /// Checks a parsed shell command run in the process's working directory.
    pub fn check_command(&self, analysis: &CommandAnalysis) -> Result<(), Refusal> {
        self.check_command_in(analysis, None)
    }

    /// Checks a parsed shell command that starts in `cwd` (the shell tool's `cwd` field),
    /// against which its relative paths are judged.
    pub fn check_command_in(
        &self,
        analysis: &CommandAnalysis,
        cwd: Option<&Path>,
    ) -> Result<(), Refusal> {
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
        let asks = RefCell::new(None);
        let mut cwd = start(cwd);
        for command in &analysis.commands {
            let here = self.command_cwd(command, &cwd);
            let check = Check {
                guard: self,
                command,
                cwd: &here,
                asks: &asks,
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

    /// Why the command must not run without a person's say, though nothing in it is blocked:
    /// it reads a protected path (`cat ~/.ssh/id_rsa`, `< ~/.aws/credentials`, another
    /// process's `/proc/<pid>/environ`), or a place it writes, deletes or links to is only known
    /// when it runs (`rm -rf "$D"`, `> /dev/fd/7`, a pattern that may name a protected file, a
    /// relative path after a `cd` to somewhere unknown). Reading is not blocked —
    /// `ssh-keygen -l -f ~/.ssh/id_ed25519.pub` is a fair request — but the policy asks instead
    /// of allowing it by safe bin, allowlist or `full`. `cwd` is where the command starts.
    pub fn must_ask(&self, analysis: &CommandAnalysis, cwd: Option<&Path>) -> Option<String> {
        let asks = RefCell::new(None);
        let mut cwd = start(cwd);
        for command in &analysis.commands {
            let here = self.command_cwd(command, &cwd);
            let check = Check {
                guard: self,
                command,
                cwd: &here,
                asks: &asks,
            };
            // Blocked shapes are the registry's business; what they leave to ask is kept.
            let _ = rules::check(&check);
            let operands = command
                .args
                .iter()
                .map(|a| match a.split_once('=') {
                    // `--file=X`, and `if=X` as `dd` takes it.
                    Some((flag, value))
                        if flag.starts_with('-')
                            || (!flag.is_empty()
                                && flag.chars().all(|c| c.is_ascii_lowercase())) =>
                    {
                        value
                    }
                    _ => a.as_str(),
                })
                // `curl -F file=@PATH`, `-d @PATH`, `-F file=<PATH`: curl reads PATH.
                .map(|a| a.trim_start_matches(['@', '<']))
                .chain(command.redirects.iter().map(|r| r.target.as_str()));
            for arg in operands {
                let path_like = arg.contains('/')
                    || arg.starts_with('~')
                    || arg.starts_with('$')
                    || matches!(here, Cwd::At(_));
                if !path_like || arg.starts_with('-') {
                    continue;
                }
                if let Some(why) = check.read(arg) {
                    return Some(why);
                }
            }
            if let Some(next) = check.cd_target() {
                cwd = next;
            }
        }
        asks.into_inner()
    }

    /// The directory one command runs in: where the `cd`s left it, or the directory its
    /// wrapper names (`env -C DIR`).
    fn command_cwd(&self, command: &SimpleCommand, cwd: &Cwd) -> Cwd {
        let Some(dir) = &command.chdir else {
            return cwd.clone();
        };
        let probe = SimpleCommand::default();
        let check = Check {
            guard: self,
            command: &probe,
            cwd,
            asks: &RefCell::new(None),
        };
        match check.path(dir) {
            Some(p) => Cwd::At(self.paths.resolve(&p)),
            None => Cwd::Unknown,
        }
    }

    /// Checks a path a call will write.
    pub fn check_write_path(&self, path: &Path) -> Result<(), Refusal> {
        self.paths.check_write(path).map(|_| ())
    }
}

fn start(cwd: Option<&Path>) -> Cwd {
    match cwd {
        Some(dir) => Cwd::At(dir.to_path_buf()),
        None => Cwd::Process,
    }
}

/// One command under judgement.
struct Check<'a> {
    guard: &'a Safeguard,
    command: &'a SimpleCommand,
    cwd: &'a Cwd,
    /// The first reason found to ask rather than allow (see [`Safeguard::must_ask`]).
    asks: &'a RefCell<Option<String>>,
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
        } else if arg.starts_with("~-")
            || arg.starts_with("~+")
            || (arg.starts_with('~') && arg[1..].starts_with(|c: char| c.is_ascii_digit()))
        {
            // `~-`, `~+2`: the previous or a stacked working directory, known only when it runs.
            return None;
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

    /// Keeps a reason to ask (the first one found).
    fn ask(&self, why: String) {
        let mut asks = self.asks.borrow_mut();
        if asks.is_none() {
            *asks = Some(why);
        }
    }

    /// `$DIR/x` with `DIR` unknown is judged as `/x` (an unset variable expands to nothing),
    /// and asked, since `DIR` may be set to anything when it runs.
    fn unknown_variable(&self, arg: &str) {
        let home = arg.starts_with("$HOME") || arg.starts_with("${HOME}");
        // The shell tool sets `TMPDIR` to the command's private temporary directory (the
        // command setting it itself is seen: the value is substituted), so something inside it
        // is known to be there.
        let inside_tmp = ["$TMPDIR/", "${TMPDIR}/"]
            .iter()
            .any(|p| arg.strip_prefix(p).is_some_and(|rest| !rest.is_empty()));
        let single = arg.matches('$').count() == 1;
        if arg.contains('$') && !((home || inside_tmp) && single) {
            self.ask(format!(
                "where `{arg}` points depends on a variable only known when the command runs"
            ));
        }
    }

    /// Why reading `arg` needs a person's say, if it does: a protected path, or a pattern
    /// that may name one.
    fn read(&self, arg: &str) -> Option<String> {
        let Some(path) = self.path(arg) else {
            // `/proc/$PPID/environ`: the process is unknown, the file is not.
            return self
                .paths()
                .check_read(Path::new(arg))
                .err()
                .map(|r| r.message);
        };
        if let Some(why) = self.paths().indirect(&path) {
            return Some(why);
        }
        for candidate in self.candidates(&path) {
            if let Err(refusal) = self.paths().check_read(&candidate) {
                return Some(if candidate == path {
                    refusal.message
                } else {
                    format!(
                        "the pattern `{}` can name {}: {}",
                        path.display(),
                        candidate.display(),
                        refusal.message
                    )
                });
            }
        }
        None
    }

    /// The paths a word with a file name pattern can name: itself (bash keeps a pattern that
    /// matches nothing), what it matches on disk now, and the protected names it matches.
    fn candidates(&self, path: &Path) -> Vec<PathBuf> {
        let mut out = vec![path.to_path_buf()];
        if !has_glob(&path.to_string_lossy()) {
            return out;
        }
        let mut partial: Vec<PathBuf> = vec![PathBuf::new()];
        for component in path.components() {
            let text = component.as_os_str().to_string_lossy().to_string();
            if !has_glob(&text) {
                partial.iter_mut().for_each(|p| p.push(component));
                continue;
            }
            let mut next = Vec::new();
            for dir in &partial {
                let mut names: Vec<String> = self.paths().protected_names(dir);
                if let Ok(entries) = std::fs::read_dir(self.paths().resolve(dir)) {
                    names.extend(
                        entries
                            .flatten()
                            .take(4096)
                            .map(|e| e.file_name().to_string_lossy().to_string()),
                    );
                }
                let before = next.len();
                for name in names {
                    if glob_match(&text, &name) || glob_match(&text.to_lowercase(), &name) {
                        next.push(dir.join(&name));
                    }
                }
                if next.len() == before {
                    // Nothing matches here now: the pattern stays as written, and what is
                    // under it is still judged by where it stands.
                    next.push(dir.join(&text));
                }
            }
            next.truncate(MAX_CANDIDATES);
            partial = next;
        }
        out.extend(partial);
        out
    }

    /// The new working directory when this command is a `cd`.
    fn cd_target(&self) -> Option<Cwd> {
        if matches!(self.name().as_str(), "popd") {
            return Some(Cwd::Unknown);
        }
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
            Some(dir) if dir.starts_with('+') && self.name() == "pushd" => Cwd::Unknown,
            Some(dir) => match self.path(dir) {
                Some(p) => Cwd::At(self.paths().resolve(&p)),
                None => Cwd::Unknown,
            },
        })
    }

    /// Refuses a write to `arg` (a device, a protected path); asks when where it writes is
    /// only known when the command runs.
    fn write(&self, arg: &str) -> Result<(), Blocked> {
        if arg.is_empty() || arg.starts_with('&') {
            return Ok(());
        }
        let Some(path) = self.path(arg) else {
            self.ask(format!(
                "it writes to `{arg}`, which is only known when the command runs"
            ));
            return Ok(());
        };
        if let Some(device) = block_device(&path.to_string_lossy()) {
            return Err((
                "write to a block device",
                format!("{device} is a disk; writing to it destroys its data"),
            ));
        }
        self.unknown_variable(arg);
        if let Some(why) = self.paths().indirect(&path) {
            self.ask(why);
        }
        if arg.contains('{') && arg.contains('}') {
            self.ask(format!(
                "it writes to `{arg}`, a brace pattern only expanded when the command runs"
            ));
        }
        for candidate in self.candidates(&path) {
            self.paths()
                .check_write(&candidate)
                .map_err(|r| ("write to a protected path", r.message))?;
        }
        Ok(())
    }

    /// Refuses deleting (or moving away, or recursively changing) `arg`.
    fn delete(&self, arg: &str, recursive: bool) -> Result<(), Blocked> {
        let Some(path) = self.path(arg) else {
            self.ask(format!(
                "it deletes or changes `{arg}`, which is only known when the command runs"
            ));
            return Ok(());
        };
        self.unknown_variable(arg);
        if let Some(why) = self.paths().indirect(&path) {
            self.ask(why);
        }
        let text = path.to_string_lossy().to_string();
        if let Some(device) = block_device(&text) {
            return Err((
                "write to a block device",
                format!("{device} is a disk; writing to it destroys its data"),
            ));
        }
        if has_glob(&text) {
            self.delete_pattern(&path, recursive)?;
            for candidate in self.candidates(&path) {
                self.paths()
                    .check_delete(&candidate)
                    .map_err(|r| ("delete of a protected path", r.message))?;
            }
            return Ok(());
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

/// How many paths a pattern is expanded to before the rest are not looked at.
const MAX_CANDIDATES: usize = 512;

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
        "drbd", "dasd", "scd", "fd0", "cciss/", "vg", "emcpower", "block/", "root", "mtd", "ram",
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
    fn the_starting_directory_and_env_chdir_are_applied() {
        let g = guard();
        let home = Path::new("/home/tester");
        assert!(
            g.check_command_in(&analyze("rm -rf .ssh"), Some(home))
                .is_err()
        );
        assert!(
            g.check_command_in(&analyze("rm -rf .ssh"), Some(Path::new("/tmp/w")))
                .is_ok()
        );
        assert!(g.check_command(&analyze("env -C ~ rm -rf .ssh")).is_err());
        assert!(
            g.check_command(&analyze("env -C /tmp/w rm -rf .ssh"))
                .is_ok()
        );
        let ask = |cmd: &str| g.must_ask(&analyze(cmd), Some(home));
        assert!(ask("cat .ssh/id_rsa").unwrap().contains(".ssh"));
        assert!(ask("cd - && rm -rf x").is_some());
        assert!(ask("rm -rf \"$D\"").is_some());
        assert!(ask("echo hi > notes.txt").is_none());
    }

    #[test]
    fn killing_by_user_is_blocked_only_without_a_name() {
        let g = guard();
        let blocked = |cmd: &str| g.check_command(&analyze(cmd)).is_err();
        assert!(blocked("pkill -u tester"));
        assert!(blocked("killall -u tester"));
        assert!(blocked("pkill -v node"));
        assert!(blocked("killall -r '^.*$'"));
        assert!(!blocked("pkill -u tester node"));
        assert!(!blocked("killall -u tester firefox"));
        assert!(!blocked("pkill -f 'node server.js'"));
    }

    #[test]
    fn descriptors_are_the_commands_own() {
        let g = guard();
        let judged = |cmd: &str| {
            let a = analyze(cmd);
            (g.check_command(&a).is_ok(), g.must_ask(&a, None))
        };
        assert_eq!(judged("diff <(sort a) <(sort b)"), (true, None));
        assert_eq!(judged("echo x | tee >(wc -c)"), (true, None));
        assert_eq!(judged("echo x > /dev/stderr"), (true, None));
        let (ok, ask) = judged("echo x > /dev/fd/7");
        assert!(ok && ask.is_some());
        let (ok, ask) = judged("rm -rf $D/x");
        assert!(ok && ask.unwrap().contains("$D"));
        assert_eq!(judged("rm -rf \"$TMPDIR/build\""), (true, None));
        assert!(g.check_command(&analyze("rm -rf \"$TMPDIR/\"")).is_err());
        assert!(g.check_command(&analyze("rm -rf $D/")).is_err());
    }

    #[test]
    fn reads_of_protected_paths_are_reported_for_the_policy() {
        let g = guard();
        let read = |cmd: &str| g.must_ask(&analyze(cmd), None);
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
