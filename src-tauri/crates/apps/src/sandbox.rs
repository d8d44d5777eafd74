//! The OS sandbox around an app's process. Osprey never restricts its own process and never runs
//! code between fork and exec (that would need `unsafe`): it starts the launcher,
//! `osprey-app-sandbox`, with the app's [`Policy`] as its argument. The launcher limits its
//! resources (no core dumps, caps on file size, open files and processes), confines itself with
//! landlock (read and execute on the system directories, read on the app's own directory and the
//! few `/etc` files a program needs, read-write only on the app's `data/` and private `tmp/`,
//! creating its socket in its directory; no TCP without a `network:` permission; no signals or
//! abstract Unix sockets outside its domain), sets `no_new_privs`, installs a seccomp filter
//! (debugging, mounting, namespaces, kernel modules, BPF, keyrings, io_uring, ... refused;
//! sockets other than Unix ones refused without `network:`), writes a [`SandboxReport`] of what
//! the kernel enforced into the app directory and `exec`s the app binary. The pid stays the same,
//! so the runtime's peer check and process group work unchanged; the environment is not touched.
//!
//! Store apps fail closed: no launcher, or a kernel that cannot confine files, and they are not
//! run. Sideloaded apps (a developer's own project) run without the missing part, flagged.

#[cfg(target_os = "linux")]
mod linux;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The launcher's file name (beside the executable that launches apps).
pub const LAUNCHER_NAME: &str = "osprey-app-sandbox";
/// Bumped when [`Policy`] changes, so a stale launcher refuses instead of misreading it.
pub const PROTOCOL: u32 = 1;
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

/// What the launcher applies to itself before it becomes the app. Built by the runtime; passed
/// to the launcher as JSON in its argument list (so nothing is added to the app's environment).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub protocol: u32,
    pub app_id: String,
    /// The app binary the launcher execs.
    pub binary: PathBuf,
    /// Read and execute, and creating the app's socket file: the app's own directory.
    pub app_dir: PathBuf,
    /// Read and execute: the system's program and library directories (missing ones skipped).
    pub system: Vec<PathBuf>,
    /// Read only (files or directories; missing ones skipped).
    pub read_only: Vec<PathBuf>,
    /// Read and write (no execute): the app's `data/` and private `tmp/`.
    pub read_write: Vec<PathBuf>,
    /// Read and write device files (`/dev/null`, ...).
    pub devices: Vec<PathBuf>,
    /// The manifest has a `network:` permission: TCP and non-Unix sockets are allowed.
    pub network: bool,
    /// Refuse to start the app unless landlock and seccomp are both enforced (store apps).
    pub require_enforced: bool,
    /// Where the [`SandboxReport`] is written before the exec.
    pub status_file: PathBuf,
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
            app_id: app_id.to_owned(),
            binary: binary.to_path_buf(),
            app_dir: app_dir.to_path_buf(),
            system: SYSTEM_DIRS.iter().map(PathBuf::from).collect(),
            read_only,
            read_write: vec![data.to_path_buf(), tmp.to_path_buf()],
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            network,
            require_enforced,
            status_file: app_dir.join(STATUS_FILE),
            limits: Limits::default(),
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

/// The launcher's `main`: applies the policy in its arguments to this process and execs the app.
/// Returns only on failure, with the exit code (the message is on stderr, which the runtime
/// quotes in the launch error).
pub fn launcher_main() -> std::process::ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
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
        eprintln!("{LAUNCHER_NAME}: app {}: {message}", policy.app_id);
        std::process::ExitCode::from(126)
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!(
            "{LAUNCHER_NAME}: app {}: no OS sandbox on this platform yet",
            policy.app_id
        );
        std::process::ExitCode::from(126)
    }
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
        assert_eq!(policy.status_file, Path::new("/apps/demo/.sandbox.json"));
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
        arguments[1] = arguments[1].replace("\"protocol\":1", "\"protocol\":99");
        let error = Policy::from_arguments(&arguments).unwrap_err();
        assert!(error.contains("different builds"), "{error}");
        let error = Policy::from_arguments(&["--other".into(), "{}".into()]).unwrap_err();
        assert!(error.contains("--policy"), "{error}");
        assert!(Policy::from_arguments(&[]).unwrap_err().contains("usage"));
    }

    #[test]
    fn an_explicit_launcher_must_exist() {
        let missing = Path::new("/nonexistent/osprey-app-sandbox");
        assert_eq!(
            find_launcher(Some(missing)),
            Err(vec![missing.to_path_buf()])
        );
    }
}
