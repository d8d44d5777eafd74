//! Every shell command runs in the kernel's sandbox (`osprey-sandbox`, see the osprey-sandbox
//! crate): the whole file system readable but the credential stores, the password databases and
//! Osprey's data folder; writable only in the workspace folders, a private temp dir and the tool
//! caches; no privilege gain, no ptrace, no mounts or namespaces, signals only within its own
//! processes. The shell-syntax safeguard stays the first line; this is the one the kernel keeps.
//!
//! What this kernel enforces is learned once per process (`osprey-sandbox --probe`). Where it
//! cannot confine files or system calls, or the launcher is missing, commands still run when a
//! person approves each one (the tool says so in every call's facts). A call with
//! `sandbox: false` runs outside it, also only with a person's answer each time.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use osprey_sandbox::{Policy, SandboxLevel, SandboxReport, ShellScope};

/// Folders under the home directory that commands may write besides the workspace: the caches
/// and stores of the common build tools. The program folders and startup files inside them
/// (`.cargo/bin`, `.cargo/env`, `go/bin`, the Rust toolchains) stay read-only: what is written
/// there runs later outside any sandbox (see [`crate::security::paths::startup_paths_within`]).
pub const DEFAULT_HOME_CACHES: &[&str] = &[
    ".cache",
    ".cargo",
    ".rustup",
    ".npm",
    ".yarn",
    ".pnpm-store",
    ".local/share/pnpm/store",
    ".m2",
    ".gradle",
    "go",
];

/// The program that uses each default cache: a missing cache folder is made when its program is
/// installed (a folder that does not exist cannot be granted, so the tool's first run in the
/// sandbox would fail where it works outside), and not for tools that are not installed.
const CACHE_PROGRAMS: &[(&str, &str)] = &[
    (".cargo", "cargo"),
    (".rustup", "rustup"),
    (".npm", "npm"),
    (".yarn", "yarn"),
    (".pnpm-store", "pnpm"),
    (".local/share/pnpm/store", "pnpm"),
    (".m2", "mvn"),
    (".gradle", "gradle"),
    ("go", "go"),
];

/// How shell commands are confined.
#[derive(Clone, Debug)]
pub struct ShellSandbox {
    /// Commands run through the launcher. Off only for tests of the tool's own mechanics and
    /// the benchmark's baseline; the desktop and the CLI never turn it off.
    pub enabled: bool,
    /// The launcher; `None` looks beside the running executable.
    pub launcher: Option<PathBuf>,
    /// Where commands may write: the workspace folders. Empty: the default working directory
    /// (`ShellConfig::default_cwd`, else Osprey's working directory), unless that is the home
    /// directory or `/`, which are never writable as a whole.
    pub workspaces: Vec<PathBuf>,
    /// Folders under the home directory commands may also write (tool caches).
    pub home_caches: Vec<String>,
    /// Never reachable by commands, on top of the credential stores and password databases
    /// ([`crate::security::paths::secret_paths`]): Osprey's data folder.
    pub hidden: Vec<PathBuf>,
    /// The person's denied paths (`tools.denied_paths`, live): those that name one path are
    /// hidden too, looked up as each command starts.
    pub denied: crate::governance::DeniedPaths,
    /// Commands may use the network.
    pub network: bool,
}

impl Default for ShellSandbox {
    fn default() -> ShellSandbox {
        ShellSandbox {
            enabled: true,
            launcher: None,
            workspaces: Vec::new(),
            home_caches: DEFAULT_HOME_CACHES.iter().map(|s| s.to_string()).collect(),
            hidden: Vec::new(),
            denied: Default::default(),
            network: true,
        }
    }
}

impl ShellSandbox {
    /// No sandbox: commands are Osprey's plain children (tests of the tool's mechanics).
    pub fn off() -> ShellSandbox {
        ShellSandbox {
            enabled: false,
            ..ShellSandbox::default()
        }
    }
}

/// What this machine offers, learned once.
#[derive(Clone, Debug)]
pub(crate) enum Availability {
    /// The launcher and what the kernel enforced for the probe.
    Ready {
        launcher: PathBuf,
        report: SandboxReport,
    },
    /// Commands cannot be confined here; why, for people.
    Unavailable(String),
}

impl Availability {
    /// Why commands must be approved one by one on this machine, if they must.
    pub(crate) fn lacking(&self) -> Option<String> {
        match self {
            Availability::Ready { report, .. } if report.level == SandboxLevel::Enforced => None,
            Availability::Ready { report, .. } => Some(format!(
                "this kernel cannot fully sandbox shell commands ({})",
                report.notes.join("; ")
            )),
            Availability::Unavailable(why) => Some(why.clone()),
        }
    }
}

/// The probe's answer for `config`, computed on first use.
pub(crate) fn availability(config: &ShellSandbox, cell: &OnceLock<Availability>) -> Availability {
    cell.get_or_init(|| probe(config)).clone()
}

fn probe(config: &ShellSandbox) -> Availability {
    if !cfg!(target_os = "linux") {
        return Availability::Unavailable(
            "shell commands have no OS sandbox on this platform yet".into(),
        );
    }
    let launcher = match osprey_sandbox::find_launcher(config.launcher.as_deref()) {
        Ok(launcher) => launcher,
        Err(looked_in) => {
            let places: Vec<String> = looked_in.iter().map(|p| p.display().to_string()).collect();
            return Availability::Unavailable(format!(
                "the sandbox launcher {} was not found (looked in: {}); reinstall Osprey, or in \
                 a source checkout run `cargo build -p osprey-sandbox`",
                osprey_sandbox::LAUNCHER_NAME,
                places.join(", ")
            ));
        }
    };
    match osprey_sandbox::probe(&launcher) {
        Ok(report) => Availability::Ready { launcher, report },
        Err(why) => Availability::Unavailable(why),
    }
}

/// The launcher's program and arguments for running `command` in `cwd`'s sandbox.
pub(crate) struct Confined {
    pub launcher: PathBuf,
    pub arguments: Vec<String>,
}

/// What runs in the sandbox: a bash command (the `shell` tool) or a program with its
/// arguments, unparsed (the `exec` tool).
pub(crate) enum Run<'a> {
    Bash(&'a str),
    Argv(&'a [String]),
}

/// What a command may reach: `workspaces` (or the fallback), the private `tmp`, the caches.
pub(crate) fn confine(
    config: &ShellSandbox,
    launcher: &Path,
    run: Run<'_>,
    default_dir: &Path,
    home: Option<&Path>,
    env: &[(OsString, OsString)],
    tmp: &Path,
) -> Confined {
    let mut writable = crate::security::workspace::folders(&config.workspaces, default_dir, home);
    writable.push(tmp.to_path_buf());
    let mut kept = Vec::new();
    if let Some(home) = home {
        let caches: Vec<PathBuf> = config
            .home_caches
            .iter()
            .map(|dir| {
                let cache = home.join(dir);
                prepare_cache(&cache, dir, env);
                cache
            })
            .collect();
        kept = crate::security::paths::startup_paths_within(home, &config.home_caches)
            .into_iter()
            .filter(|path| path.symlink_metadata().is_ok())
            .collect();
        writable.extend(caches);
    }
    let mut hidden = crate::security::paths::secret_paths(home);
    hidden.extend(config.hidden.iter().cloned());
    hidden.extend(config.denied.literal_paths());
    let (program, args) = match run {
        Run::Bash(command) => (
            bash(env),
            vec![
                "--noprofile".into(),
                "--norc".into(),
                "-c".into(),
                command.into(),
            ],
        ),
        Run::Argv(argv) => (program_path(&argv[0], env), argv[1..].to_vec()),
    };
    let policy = Policy::for_shell(&ShellScope {
        program,
        args,
        writable,
        hidden,
        kept,
        network: config.network,
    });
    Confined {
        launcher: launcher.to_path_buf(),
        arguments: policy.to_arguments(),
    }
}

/// `bash` on the child's `PATH` (the launcher execs a path, not a name).
fn bash(env: &[(OsString, OsString)]) -> PathBuf {
    find_program("bash", env).unwrap_or_else(|| PathBuf::from("/bin/bash"))
}

/// The program an argv names, as the launcher needs it: a path as given, a bare name looked up
/// on the child's `PATH` (left as is when absent, so the launcher's error names it).
pub(crate) fn program_path(name: &str, env: &[(OsString, OsString)]) -> PathBuf {
    if name.contains('/') {
        return PathBuf::from(name);
    }
    find_program(name, env).unwrap_or_else(|| PathBuf::from(name))
}

/// `name` on the child's `PATH`.
fn find_program(name: &str, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let path = env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.clone())
        .unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Makes a missing cache folder (owner-only) when the tool that uses it is installed, or when
/// the person named it in `shell.sandbox.caches`; see [`CACHE_PROGRAMS`].
fn prepare_cache(cache: &Path, dir: &str, env: &[(OsString, OsString)]) {
    if cache.symlink_metadata().is_ok() {
        return;
    }
    let wanted = match CACHE_PROGRAMS.iter().find(|(folder, _)| *folder == dir) {
        Some((_, program)) => find_program(program, env).is_some(),
        None => true,
    };
    if wanted {
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            let made = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(cache);
            if let Err(err) = made {
                tracing::debug!(%err, cache = %cache.display(), "could not make a cache folder");
            }
        }
    }
}

/// A sentence for a sandboxed command that failed on a refusal the kernel gave.
pub(crate) fn refusal_note(output: &str) -> Option<&'static str> {
    let refused = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    refused.iter().any(|r| output.contains(r)).then_some(
        "[sandbox: this command ran in Osprey's kernel sandbox, which refuses writes outside the \
         workspace folders, its temp dir and the tool caches, reads of credential stores and \
         Osprey's data, and privilege changes; if the task truly needs more, run it again with \
         sandbox: false and a reason (the person is asked every time)]",
    )
}
