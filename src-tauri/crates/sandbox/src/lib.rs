//! The kernel sandbox around what Osprey starts: app processes and shell commands. Osprey never
//! restricts its own process and never runs code between fork and exec (that would need
//! `unsafe`): it starts the launcher, `osprey-sandbox`, with a [`Policy`] as its argument. The
//! launcher limits its resources (no core dumps, caps on file size, open files and processes),
//! confines itself with landlock (read and execute where the policy says, read-write only where
//! it says, no TCP without the network; no signals or abstract Unix sockets outside its domain,
//! and no ptrace or `/proc/<pid>/mem` of processes outside it), sets `no_new_privs` (setuid does
//! nothing), installs a seccomp filter (debugging, mounting, namespaces, kernel modules, BPF,
//! keyrings, io_uring, ... refused; sockets other than Unix ones refused without the network),
//! writes a [`SandboxReport`] of what the kernel enforced when asked to, and `exec`s the program.
//! The pid stays the same, so process groups and peer checks work unchanged; the environment is
//! not touched.
//!
//! Apps: [`Policy::for_app`]; store apps fail closed (no launcher, or a kernel that cannot
//! confine files, and they are not run). Shell commands: [`Policy::for_shell`]: the whole file
//! system readable but the credential stores and Osprey's data, writable only in the workspace,
//! a private temp dir and the tool caches.

#[cfg(target_os = "linux")]
mod linux;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The launcher's file name (beside the executable that starts apps and commands).
pub const LAUNCHER_NAME: &str = "osprey-sandbox";
/// Bumped when [`Policy`] changes, so a stale launcher refuses instead of misreading it.
pub const PROTOCOL: u32 = 2;
/// What the launcher enforced, written into the app's directory before the app starts.
pub const STATUS_FILE: &str = ".sandbox.json";
/// The app's private temporary directory (its `TMPDIR`), emptied at every launch.
pub const TMP_DIR: &str = "tmp";

/// Read and execute: where the dynamic loader and shared libraries live.
const SYSTEM_DIRS: [&str; 8] = [
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/bin",
    "/sbin",
    "/nix/store",
];
/// Read only: what every dynamically linked program reads at start (or for the local time).
const SYSTEM_FILES: [&str; 3] = ["/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/localtime"];
/// Read only, and only with a `network:` permission: name resolution and certificates.
const NETWORK_FILES: [&str; 11] = [
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/crypto-policies",
];
/// Read and write: the harmless devices.
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

/// How the runtime uses the sandbox.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    /// Off runs apps with only the sanitized environment and their own process group (for
    /// measuring the sandbox's cost, and debugging). Never off in the desktop app or the CLI.
    pub enabled: bool,
    /// The launcher; `None` looks beside the current executable ([`find_launcher`]).
    pub launcher: Option<PathBuf>,
    /// Lets store apps run when the kernel cannot confine files or system calls (no landlock,
    /// no seccomp); the app is flagged `degraded`. Off by default: they are refused.
    pub allow_degraded: bool,
}

impl Default for SandboxOptions {
    fn default() -> SandboxOptions {
        SandboxOptions {
            enabled: true,
            launcher: None,
            allow_degraded: false,
        }
    }
}

/// Where the launcher is looked for: beside the current executable, and (for test and bench
/// executables, which cargo puts in `target/<profile>/deps/`) one directory up.
pub fn launcher_candidates() -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        candidates.push(dir.join(LAUNCHER_NAME));
        if dir.file_name().is_some_and(|name| name == "deps")
            && let Some(parent) = dir.parent()
        {
            candidates.push(parent.join(LAUNCHER_NAME));
        }
    }
    candidates
}

/// The launcher to use: `explicit` when given (it must exist), else the first of
/// [`launcher_candidates`] that is an executable file. `Err` lists where it was looked for.
pub fn find_launcher(explicit: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
    let candidates = match explicit {
        Some(path) => vec![path.to_path_buf()],
        None => launcher_candidates(),
    };
    candidates
        .iter()
        .find(|path| is_executable_file(path))
        .cloned()
        .ok_or(candidates)
}

fn is_executable_file(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Resource caps set before the app starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// The largest file the app may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Tasks (processes and threads) the app may add to those its user already has. Linux counts
    /// `RLIMIT_NPROC` per user, not per process tree, so the cap is the system's task count at
    /// launch plus this headroom: a fork bomb stops there instead of at the machine's limit.
    pub extra_tasks: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            open_files: 4096,
            file_size_bytes: 4 << 30,
            extra_tasks: 1024,
        }
    }
}

/// What the launcher applies to itself before it becomes the program. Built by the app runtime
/// or the shell tool; passed to the launcher as JSON in its argument list (so nothing is added
/// to the program's environment).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub protocol: u32,
    /// What is confined, for messages: `app com.example.units`, `shell command`.
    pub label: String,
    /// The program the launcher execs, and its arguments after its name.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Read and execute: program and library directories, or (for shell commands) everything
    /// readable (missing paths skipped).
    pub system: Vec<PathBuf>,
    /// Read only (files or directories; missing ones skipped).
    pub read_only: Vec<PathBuf>,
    /// Read and write: an app's `data/` and private `tmp/`; a command's workspace and caches.
    pub read_write: Vec<PathBuf>,
    /// Programs written under `read_write` may run (a build's output); never for apps.
    pub execute_writable: bool,
    /// Read and write device files (`/dev/null`, ...).
    pub devices: Vec<PathBuf>,
    /// Read, execute and creating Unix sockets: an app's own directory, where it serves.
    pub socket_dir: Option<PathBuf>,
    /// TCP and non-Unix sockets are allowed (an app's `network:` permission; shell commands).
    pub network: bool,
    /// Refuse to start unless landlock and seccomp are both enforced (store apps).
    pub require_enforced: bool,
    /// Where the [`SandboxReport`] is written before the exec (`None`: not written).
    pub status_file: Option<PathBuf>,
    pub limits: Limits,
}

impl Policy {
    /// The policy for an app: its directory, `data/` and `tmp/`, and whether the manifest asks
    /// for the network.
    pub fn for_app(
        app_id: &str,
        app_dir: &Path,
        binary: &Path,
        data: &Path,
        tmp: &Path,
        network: bool,
        require_enforced: bool,
    ) -> Policy {
        let mut read_only: Vec<PathBuf> = SYSTEM_FILES.iter().map(PathBuf::from).collect();
        if network {
            read_only.extend(NETWORK_FILES.iter().map(PathBuf::from));
        }
        Policy {
            protocol: PROTOCOL,
            label: format!("app {app_id}"),
            program: binary.to_path_buf(),
            args: Vec::new(),
            system: SYSTEM_DIRS.iter().map(PathBuf::from).collect(),
            read_only,
            read_write: vec![data.to_path_buf(), tmp.to_path_buf()],
            execute_writable: false,
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            socket_dir: Some(app_dir.to_path_buf()),
            network,
            require_enforced,
            status_file: Some(app_dir.join(STATUS_FILE)),
            limits: Limits::default(),
        }
    }

    /// The policy for a shell command (`scope.program`, usually bash, with its arguments):
    /// everything readable and executable but `scope.hidden` (credential stores, Osprey's data,
    /// the password databases), nothing under `/dev` but the harmless devices, and writes only
    /// under `scope.writable` (the workspace, a private temp dir, the tool caches), where built
    /// programs may run. The network stays open unless `scope.network` is false.
    pub fn for_shell(scope: &ShellScope) -> Policy {
        let hidden = with_real_paths(&scope.hidden);
        let system = readable_tree(&hidden);
        // A writable folder that holds a hidden or kept one (a workspace around Osprey's data,
        // a tool cache around its program folder) is granted around it, like the readable tree;
        // one inside them not at all. Kept paths stay readable through the readable tree.
        let mut unwritable = hidden.clone();
        unwritable.extend(with_real_paths(&scope.kept));
        let mut read_write: Vec<PathBuf> = scope
            .writable
            .iter()
            .flat_map(|path| reachable_except(path, &unwritable))
            .collect();
        read_write.extend(SHELL_DEVICE_DIRS.iter().map(PathBuf::from));
        Policy {
            protocol: PROTOCOL,
            label: "shell command".to_owned(),
            program: scope.program.clone(),
            args: scope.args.clone(),
            system,
            read_only: Vec::new(),
            read_write,
            execute_writable: true,
            devices: SHELL_DEVICES.iter().map(PathBuf::from).collect(),
            socket_dir: None,
            network: scope.network,
            require_enforced: false,
            status_file: None,
            limits: Limits {
                // Builds open many files and start many processes.
                open_files: 65_536,
                file_size_bytes: 64 << 30,
                extra_tasks: 4096,
            },
        }
    }

    /// The launcher's argument list (after its own name).
    pub fn to_arguments(&self) -> Vec<String> {
        vec![
            "--policy".to_owned(),
            serde_json::to_string(self).unwrap_or_default(),
        ]
    }

    /// Reads the launcher's argument list (after its own name).
    pub fn from_arguments(arguments: &[String]) -> Result<Policy, String> {
        let [flag, json] = arguments else {
            return Err(format!(
                "usage: {LAUNCHER_NAME} --policy <json> (Osprey starts it; it is not run by hand)"
            ));
        };
        if flag != "--policy" {
            return Err(format!(
                "unknown argument `{flag}`: expected --policy <json>"
            ));
        }
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("the policy is not JSON: {e}"))?;
        let protocol = value.get("protocol").and_then(serde_json::Value::as_u64);
        if protocol != Some(u64::from(PROTOCOL)) {
            return Err(format!(
                "policy protocol {protocol:?} does not match this launcher's {PROTOCOL}: \
                 the launcher and Osprey come from different builds; rebuild or reinstall both"
            ));
        }
        serde_json::from_value(value).map_err(|e| format!("the policy is invalid: {e}"))
    }
}

/// What a shell command may reach (see [`Policy::for_shell`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellScope {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Read, write and execute (missing paths skipped).
    pub writable: Vec<PathBuf>,
    /// Neither read nor written, nor anything under them (missing paths are fine).
    pub hidden: Vec<PathBuf>,
    /// Readable but never written, even inside `writable`: the startup files and program
    /// folders that live inside tool caches (`~/.cargo/bin`, `~/.cargo/env`), which run
    /// outside any sandbox later. Only existing ones matter: a missing one is not reserved, so
    /// its folder stays writable as a whole.
    pub kept: Vec<PathBuf>,
    pub network: bool,
}

/// Read and write: the harmless devices a command uses (terminals for programs that want one).
const SHELL_DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];
/// Read and write directories under `/dev`: pseudo-terminals and POSIX shared memory.
const SHELL_DEVICE_DIRS: [&str; 2] = ["/dev/pts", "/dev/shm"];

/// `paths`, plus where each one really is when a link leads there (both must stay hidden).
fn with_real_paths(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut all = paths.to_vec();
    for path in paths {
        if let Ok(real) = std::fs::canonicalize(path)
            && !all.contains(&real)
        {
            all.push(real);
        }
    }
    all
}

/// The readable tree for `hidden` (everything under `/` but them and `/dev`), kept between
/// commands while none of the folders it was listed from has changed (their modification times
/// move when an entry is added, removed or renamed): listing it costs milliseconds, checking it
/// a few `stat`s.
fn readable_tree(hidden: &[PathBuf]) -> Vec<PathBuf> {
    use std::sync::Mutex;
    struct Cached {
        hidden: Vec<PathBuf>,
        listed: Vec<(PathBuf, Option<std::time::SystemTime>)>,
        tree: Vec<PathBuf>,
    }
    static CACHE: Mutex<Option<Cached>> = Mutex::new(None);
    let modified = |dir: &Path| std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cached) = cache.as_ref()
        && cached.hidden == hidden
        && cached
            .listed
            .iter()
            .all(|(dir, when)| modified(dir) == *when)
    {
        return cached.tree.clone();
    }
    let mut listed = Vec::new();
    let mut tree: Vec<PathBuf> = reachable_listing(Path::new("/"), hidden, &mut listed)
        .into_iter()
        .filter(|path| !path.starts_with("/dev"))
        .collect();
    tree.sort();
    *cache = Some(Cached {
        hidden: hidden.to_vec(),
        listed: listed
            .into_iter()
            .map(|dir| {
                let when = modified(&dir);
                (dir, when)
            })
            .collect(),
        tree: tree.clone(),
    });
    tree
}

/// The paths to grant so that everything under `root` is reachable except `hidden` and what is
/// under it. Landlock only grants, so a directory holding a hidden path is not granted itself:
/// its other entries are, one by one (recursing towards the hidden path), which also means an
/// entry created there later is out of reach until the next command. A link is granted only
/// when what it leads to is neither hidden nor holds something hidden (landlock follows it).
pub fn reachable_except(root: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    reachable_listing(root, hidden, &mut Vec::new())
}

/// [`reachable_except`], noting in `listed` every folder whose entries it read.
fn reachable_listing(root: &Path, hidden: &[PathBuf], listed: &mut Vec<PathBuf>) -> Vec<PathBuf> {
    if hidden.iter().any(|h| root.starts_with(h)) {
        return Vec::new();
    }
    if !hidden.iter().any(|h| h.starts_with(root)) {
        return vec![root.to_path_buf()];
    }
    listed.push(root.to_path_buf());
    let Ok(entries) = std::fs::read_dir(root) else {
        // Cannot be listed: nothing under it is granted rather than all of it.
        return Vec::new();
    };
    let mut granted = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            let Ok(target) = std::fs::canonicalize(&path) else {
                continue;
            };
            if hidden
                .iter()
                .any(|h| target.starts_with(h) || h.starts_with(&target))
            {
                continue;
            }
            granted.push(path);
            continue;
        }
        granted.extend(reachable_listing(&path, hidden, listed));
    }
    granted
}

/// How much of the sandbox an app runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLevel {
    /// Files confined by landlock, system calls filtered by seccomp, `no_new_privs`, limits.
    Enforced,
    /// Some of it could not be applied on this kernel; `notes` say what is missing.
    Degraded,
    /// No OS sandbox: only the sanitized environment and the process group.
    Off,
}

/// What the sandbox enforces for a running app (shown in the app list).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    pub level: SandboxLevel,
    /// The landlock ABI the kernel offers (`None`: landlock unavailable).
    pub landlock_abi: Option<u32>,
    /// Files outside the allowed paths are out of reach (landlock).
    pub filesystem: bool,
    /// The app has no network: non-Unix sockets refused (seccomp), TCP refused (landlock ≥ 4).
    pub network_blocked: bool,
    pub seccomp: bool,
    pub no_new_privs: bool,
    /// The resource limits were set.
    pub limits: bool,
    /// What is missing or weaker than intended, for people.
    pub notes: Vec<String>,
}

impl SandboxReport {
    /// No sandbox at all, and why.
    pub fn off(reason: impl Into<String>) -> SandboxReport {
        SandboxReport {
            level: SandboxLevel::Off,
            landlock_abi: None,
            filesystem: false,
            network_blocked: false,
            seccomp: false,
            no_new_privs: false,
            limits: false,
            notes: vec![reason.into()],
        }
    }
}

/// The launcher's `main`: applies the policy in its arguments to this process and execs the
/// program.
/// Returns only on failure, with the exit code (the message is on stderr, which the runtime
/// quotes in the launch error).
pub fn launcher_main() -> std::process::ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if arguments == ["--probe"] {
        return probe_main();
    }
    let policy = match Policy::from_arguments(&arguments) {
        Ok(policy) => policy,
        Err(message) => {
            eprintln!("{LAUNCHER_NAME}: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    #[cfg(target_os = "linux")]
    {
        let message = linux::confine_and_exec(&policy);
        eprintln!("{LAUNCHER_NAME}: {}: {message}", policy.label);
        std::process::ExitCode::from(126)
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!(
            "{LAUNCHER_NAME}: {}: no OS sandbox on this platform yet",
            policy.label
        );
        std::process::ExitCode::from(126)
    }
}

/// `osprey-sandbox --probe`: applies a shell command's sandbox to itself and prints the
/// [`SandboxReport`] as JSON, so Osprey learns once what this kernel enforces.
fn probe_main() -> std::process::ExitCode {
    #[cfg(target_os = "linux")]
    {
        let policy = Policy::for_shell(&ShellScope {
            program: PathBuf::from("/bin/true"),
            network: true,
            ..ShellScope::default()
        });
        let report = linux::confine(&policy);
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
        std::process::ExitCode::SUCCESS
    }
    #[cfg(not(target_os = "linux"))]
    {
        let report = SandboxReport::off("no OS sandbox on this platform yet");
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
        std::process::ExitCode::SUCCESS
    }
}

/// Runs `launcher --probe`: what the kernel enforces for shell commands on this machine.
pub fn probe(launcher: &Path) -> Result<SandboxReport, String> {
    let output = std::process::Command::new(launcher)
        .arg("--probe")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", launcher.display()))?;
    serde_json::from_slice(&output.stdout).map_err(|e| {
        format!(
            "{} --probe gave no report ({e}): {}",
            launcher.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(network: bool) -> Policy {
        let dir = Path::new("/apps/demo");
        Policy::for_app(
            "demo",
            dir,
            &dir.join("binary"),
            &dir.join("data"),
            &dir.join("tmp"),
            network,
            true,
        )
    }

    #[test]
    fn the_policy_round_trips_through_the_arguments() {
        let policy = policy(false);
        assert_eq!(
            Policy::from_arguments(&policy.to_arguments()).unwrap(),
            policy
        );
        assert_eq!(
            policy.read_write,
            [PathBuf::from("/apps/demo/data"), "/apps/demo/tmp".into()]
        );
        assert_eq!(
            policy.status_file.as_deref(),
            Some(Path::new("/apps/demo/.sandbox.json"))
        );
    }

    #[test]
    fn name_resolution_files_are_readable_only_with_the_network() {
        let resolv = PathBuf::from("/etc/resolv.conf");
        assert!(!policy(false).read_only.contains(&resolv));
        assert!(policy(true).read_only.contains(&resolv));
        assert!(
            !policy(false)
                .read_only
                .iter()
                .any(|p| p == Path::new("/etc"))
        );
    }

    #[test]
    fn a_launcher_from_another_build_refuses_the_policy() {
        let mut arguments = policy(false).to_arguments();
        arguments[1] = arguments[1].replace(&format!("\"protocol\":{PROTOCOL}"), "\"protocol\":99");
        let error = Policy::from_arguments(&arguments).unwrap_err();
        assert!(error.contains("different builds"), "{error}");
        let error = Policy::from_arguments(&["--other".into(), "{}".into()]).unwrap_err();
        assert!(error.contains("--policy"), "{error}");
        assert!(Policy::from_arguments(&[]).unwrap_err().contains("usage"));
    }

    #[test]
    fn hidden_paths_are_left_out_and_everything_around_them_granted() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        for dir in [
            ".ssh",
            ".local/share/osprey",
            ".local/share/other",
            "src/deep",
        ] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::write(home.join(".netrc"), "machine x").unwrap();
        std::fs::write(home.join("notes.txt"), "hi").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        std::os::unix::fs::symlink(home.join("src"), home.join("code")).unwrap();
        let hidden = [
            home.join(".ssh"),
            home.join(".netrc"),
            home.join(".local/share/osprey"),
        ];
        let mut granted = reachable_except(&home, &hidden);
        granted.sort();
        let expected: Vec<PathBuf> = ["code", ".local/share/other", "notes.txt", "src"]
            .iter()
            .map(|p| home.join(p))
            .collect();
        let mut expected = expected;
        expected.sort();
        assert_eq!(granted, expected);
        // Nothing hidden below: the root itself; hidden root: nothing.
        assert_eq!(
            reachable_except(&home.join("src"), &hidden),
            [home.join("src")]
        );
        assert!(reachable_except(&home.join(".ssh"), &hidden).is_empty());
    }

    #[test]
    fn the_readable_tree_is_kept_until_a_listed_folder_changes() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join("a.txt"), "a").unwrap();
        let hidden = vec![home.join(".ssh")];
        let first = readable_tree(&hidden);
        assert!(first.contains(&home.join("a.txt")));
        assert!(!first.iter().any(|p| p.starts_with(home.join(".ssh"))));
        assert_eq!(readable_tree(&hidden), first);
        // A new entry beside the hidden one is seen at the next command.
        std::fs::write(home.join("b.txt"), "b").unwrap();
        let next = readable_tree(&hidden);
        assert!(
            next.contains(&home.join("b.txt")),
            "the cached tree was reused"
        );
    }

    #[test]
    fn a_shell_policy_never_grants_devices_or_hidden_paths_wholesale() {
        let policy = Policy::for_shell(&ShellScope {
            program: PathBuf::from("/bin/bash"),
            args: vec!["-c".into(), "true".into()],
            writable: vec![PathBuf::from("/tmp")],
            hidden: vec![PathBuf::from("/etc/shadow")],
            network: true,
            ..ShellScope::default()
        });
        assert!(!policy.system.contains(&PathBuf::from("/")));
        assert!(!policy.system.contains(&PathBuf::from("/etc")));
        assert!(!policy.system.iter().any(|p| p.starts_with("/dev")));
        assert!(!policy.system.contains(&PathBuf::from("/etc/shadow")));
        assert!(policy.system.contains(&PathBuf::from("/usr")));
        assert!(policy.read_write.contains(&PathBuf::from("/tmp")));
        // A workspace around a hidden folder is granted around it.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("data")).unwrap();
        std::fs::create_dir_all(root.path().join("src")).unwrap();
        let around = Policy::for_shell(&ShellScope {
            writable: vec![root.path().to_path_buf(), root.path().join("data/inner")],
            hidden: vec![root.path().join("data")],
            ..ShellScope::default()
        });
        assert!(around.read_write.contains(&root.path().join("src")));
        assert!(
            !around
                .read_write
                .iter()
                .any(|p| p.starts_with(root.path().join("data")))
        );
        assert!(!around.read_write.contains(&root.path().to_path_buf()));
        // A cache around a program folder: writable around it, the folder itself only readable.
        std::fs::create_dir_all(root.path().join("cache/bin")).unwrap();
        std::fs::create_dir_all(root.path().join("cache/registry")).unwrap();
        let cache = Policy::for_shell(&ShellScope {
            writable: vec![root.path().join("cache")],
            kept: vec![root.path().join("cache/bin")],
            ..ShellScope::default()
        });
        assert!(
            cache
                .read_write
                .contains(&root.path().join("cache/registry"))
        );
        assert!(!cache.read_write.iter().any(
            |p| p.starts_with(root.path().join("cache/bin")) || p == &root.path().join("cache")
        ));
        assert_eq!(
            Policy::from_arguments(&policy.to_arguments()).unwrap(),
            policy
        );
    }

    #[test]
    fn an_explicit_launcher_must_exist() {
        let missing = Path::new("/nonexistent/osprey-sandbox");
        assert_eq!(
            find_launcher(Some(missing)),
            Err(vec![missing.to_path_buf()])
        );
    }
}
