//! Launching and stopping an installed app as a sandboxed sidecar: per-app launch lock, binary
//! validation, stale socket removal, `data/`, `logs/` and a fresh private `tmp/`, a sanitized
//! environment, the OS sandbox (the app is started through the `osprey-app-sandbox` launcher,
//! see [`crate::sandbox`]), its own process group, a `.pid` file, a reaper task, logs with
//! rotation, waiting for the socket with backoff up to the manifest's `startup_timeout`, the
//! socket made 0600, the peer's pid checked against the child, gRPC over the socket, a health
//! check, and the launcher's report of what the kernel enforced. Stop is SIGTERM to the group, a
//! grace period, then SIGKILL, and the socket and pid file removed.
//!
//! Registering capabilities (tools, hooks, UI, gateway) is the caller's next step; supervision
//! (health every 15 s, restarts with backoff) builds on [`RunningApp`].

mod logs;
mod process;

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use osprey_rpc::AppChannel;
use osprey_rpc::v1::{HealthCheckRequest, HealthCheckResponse, health_check_response};
use tokio::sync::watch;

pub use process::{kill_orphans, process_gone};

use crate::manifest::{Capability, Manifest};
use crate::sandbox::{SandboxOptions, SandboxReport};
use crate::{Error, Result};

pub use crate::layout::{DATA_DIR, LOGS_DIR, PID_FILE, SOCKET_FILE};
/// The only variables of Osprey's environment an app sees (besides its six `OSPREY_APP_*`).
/// `TMPDIR` is always the app's private `tmp/`, whatever Osprey's is.
pub const INHERITED_ENV: [&str; 6] = ["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ"];

/// How launches and stops behave.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Between SIGTERM and SIGKILL.
    pub stop_grace: Duration,
    /// The deadline of each health check.
    pub health_timeout: Duration,
    /// Each of logs/stdout.log and logs/stderr.log rotates past this size.
    pub log_max_bytes: u64,
    /// Copy the app's output, prefixed `[app:<id>]`, onto Osprey's stderr.
    pub echo_logs: bool,
    /// The values of [`INHERITED_ENV`] passed on (default: Osprey's own, where set).
    pub inherited_env: Vec<(String, OsString)>,
    /// The OS sandbox: on, with the launcher found beside the executable, by default.
    pub sandbox: SandboxOptions,
    /// Where each app's recent gRPC calls are kept for the inspector (a ring per app id, shared
    /// by every launch, so the calls before a crash outlive it).
    pub traffic: osprey_rpc::Traffic,
}

impl Default for LaunchOptions {
    fn default() -> LaunchOptions {
        LaunchOptions {
            stop_grace: Duration::from_secs(2),
            health_timeout: Duration::from_secs(5),
            log_max_bytes: 2 * 1024 * 1024,
            echo_logs: true,
            inherited_env: INHERITED_ENV
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|value| ((*name).to_owned(), value)))
                .collect(),
            sandbox: SandboxOptions::default(),
            traffic: osprey_rpc::Traffic::new(),
        }
    }
}

/// Launches the apps installed under one apps directory, one launch at a time per app.
pub struct Launcher {
    apps_dir: PathBuf,
    options: LaunchOptions,
    trust: Option<Arc<crate::trust::Trust>>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Launcher {
    pub fn new(apps_dir: impl Into<PathBuf>, options: LaunchOptions) -> Launcher {
        Launcher {
            apps_dir: apps_dir.into(),
            options,
            trust: None,
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// Store apps are checked against the revocation list before every launch (sideloaded apps
    /// are not store apps).
    pub fn with_trust(mut self, trust: Arc<crate::trust::Trust>) -> Launcher {
        self.trust = Some(trust);
        self
    }

    pub fn apps_dir(&self) -> &Path {
        &self.apps_dir
    }

    /// Launches the app installed as `<apps dir>/<id>` and returns it healthy and connected.
    pub async fn launch(&self, id: &str) -> Result<RunningApp> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(locks.entry(id.to_owned()).or_default())
        };
        let _guard = lock.lock().await;

        let dir = self.apps_dir.join(id);
        let manifest_path = dir.join(crate::napp::MANIFEST);
        let manifest_bytes = std::fs::read(&manifest_path)
            .map_err(|e| Error::io(format!("read {}", manifest_path.display()), e))?;
        let manifest = Manifest::parse(&manifest_bytes)?;
        if manifest.id != id {
            return Err(Error::manifest(
                "id",
                format!("`{}` is installed under `{id}`", manifest.id),
            ));
        }
        let sideloaded = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
        // Revocation first (a revoked app says so once quarantined too), then the quarantine
        // mark, then the files against the signature (a quarantined app has no binary left).
        if let Some(trust) = &self.trust
            && !sideloaded
        {
            trust.check_launch(&manifest.id, &manifest.version).await?;
        }
        if let Ok(reason) = std::fs::read_to_string(dir.join(crate::install::QUARANTINE_MARKER)) {
            return Err(launch_failed(
                id,
                "quarantined",
                format!("quarantined: {reason}"),
            ));
        }
        if let Some(trust) = &self.trust
            && !sideloaded
        {
            trust
                .verify_installed(&dir)
                .await
                .map_err(|error| match error {
                    Error::SignatureInvalid { .. } => launch_failed(
                        id,
                        "package_changed",
                        format!(
                            "its installed files no longer match the store's signature ({error}); \
                         reinstall it from the store"
                        ),
                    ),
                    // The store's key could not be had: nothing can be checked, so nothing runs.
                    other => other,
                })?;
        }
        let binary = process::check_binary(&dir)?;
        if let Some(pid) = process::running_pid(&dir) {
            return Err(launch_failed(
                id,
                "already_running",
                format!("pid {pid} is running this app"),
            ));
        }
        let socket = dir.join(SOCKET_FILE);
        remove_stale_socket(id, &socket)?;
        let data = real_dir(&dir.join(DATA_DIR))?;
        let logs = real_dir(&dir.join(LOGS_DIR))?;
        let tmp = fresh_dir(&dir.join(crate::sandbox::TMP_DIR))?;
        let status_file = dir.join(crate::sandbox::STATUS_FILE);
        let _ = std::fs::remove_file(&status_file);
        let plan = self.sandbox_plan(&manifest, &dir, &binary, &data, &tmp, sideloaded)?;

        let mut command = match &plan {
            Plan::Launcher { launcher, policy } => {
                let mut command = tokio::process::Command::new(launcher);
                command.args(policy.to_arguments());
                command
            }
            Plan::Direct(_) => tokio::process::Command::new(&binary),
        };
        command
            .env_clear()
            .envs(
                self.options
                    .inherited_env
                    .iter()
                    .filter(|(k, _)| k != "TMPDIR")
                    .map(|(k, v)| (k, v)),
            )
            .env("TMPDIR", &tmp)
            .env("OSPREY_APP_DIR", &dir)
            .env("OSPREY_APP_SOCK", &socket)
            .env("OSPREY_APP_ID", &manifest.id)
            .env("OSPREY_APP_NAME", &manifest.name)
            .env("OSPREY_APP_VERSION", &manifest.version)
            .env("OSPREY_APP_DATA", &data)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        let mut child = spawn(&mut command).await.map_err(|e| {
            launch_failed(
                id,
                "spawn",
                format!("cannot start {}: {e}", binary.display()),
            )
        })?;
        let pid = child.id().unwrap_or_default();
        let pid_file = dir.join(PID_FILE);
        let _ = std::fs::write(&pid_file, format!("{pid}\n"));

        let mut pumps = Vec::new();
        for (stream, name) in [
            (
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
                "stdout.log",
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
                "stderr.log",
            ),
        ] {
            if let Some(stream) = stream {
                let log = logs::RotatingLog::open(logs.join(name), self.options.log_max_bytes)
                    .await
                    .map_err(|e| Error::io(format!("open {}", logs.join(name).display()), e))?;
                pumps.push(tokio::spawn(logs::pump(
                    stream,
                    log,
                    manifest.id.clone(),
                    self.options.echo_logs,
                )));
            }
        }
        let (exit_sender, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            let _ = exit_sender.send(Some(status));
        });

        let mut app = RunningApp {
            manifest,
            dir,
            pid,
            channel: None,
            exit,
            options: self.options.clone(),
            stopped: false,
            sandbox: SandboxReport::off("not started yet"),
        };
        let connected = app.connect(&socket).await.and_then(|()| {
            app.sandbox = match plan {
                Plan::Direct(report) => report,
                // Written by the launcher before its exec, so before the app could bind.
                Plan::Launcher { .. } => read_report(&app.manifest.id, &status_file)?,
            };
            Ok(())
        });
        match connected {
            Ok(()) => Ok(app),
            Err(error) => {
                app.kill_now().await;
                // Let the log pumps finish so the error can quote the app's last words.
                for pump in pumps {
                    let _ = tokio::time::timeout(Duration::from_secs(1), pump).await;
                }
                Err(with_stderr_tail(error, &logs.join("stderr.log")))
            }
        }
    }
}

/// How an app is started: through the launcher with its policy, or directly (no OS sandbox, for
/// the reason in the report).
enum Plan {
    Launcher {
        launcher: PathBuf,
        policy: Box<crate::sandbox::Policy>,
    },
    Direct(SandboxReport),
}

impl Launcher {
    /// Through the launcher when there is one. Without: store apps are refused (fail closed),
    /// sideloaded apps (a developer's own build) run unsandboxed and flagged.
    fn sandbox_plan(
        &self,
        manifest: &Manifest,
        dir: &Path,
        binary: &Path,
        data: &Path,
        tmp: &Path,
        sideloaded: bool,
    ) -> Result<Plan> {
        let options = &self.options.sandbox;
        if !options.enabled {
            return Ok(Plan::Direct(SandboxReport::off(
                "the sandbox is turned off in the launch options",
            )));
        }
        if !cfg!(target_os = "linux") {
            return Ok(Plan::Direct(SandboxReport::off(
                "no OS sandbox on this platform yet: sanitized environment and process group only",
            )));
        }
        let launcher = match crate::sandbox::find_launcher(options.launcher.as_deref()) {
            Ok(launcher) => launcher,
            Err(looked_in) => {
                let places: Vec<String> =
                    looked_in.iter().map(|p| p.display().to_string()).collect();
                let missing = format!(
                    "the sandbox launcher {} was not found (looked in: {})",
                    crate::sandbox::LAUNCHER_NAME,
                    places.join(", ")
                );
                if sideloaded {
                    tracing::warn!(app = %manifest.id, "{missing}: the sideloaded app runs unsandboxed");
                    return Ok(Plan::Direct(SandboxReport::off(format!(
                        "{missing}; sideloaded apps run without it during development"
                    ))));
                }
                return Err(launch_failed(
                    &manifest.id,
                    "sandbox_unavailable",
                    format!(
                        "{missing}; store apps are never run unsandboxed: reinstall Osprey, or \
                         in a source checkout run `cargo build -p osprey-sandbox --bin {}`",
                        crate::sandbox::LAUNCHER_NAME
                    ),
                ));
            }
        };
        let policy = crate::sandbox::Policy::for_app(
            &manifest.id,
            dir,
            binary,
            data,
            tmp,
            crate::permissions::has_prefix(&manifest.permissions, "network"),
            !sideloaded && !options.allow_degraded,
        );
        Ok(Plan::Launcher {
            launcher,
            policy: Box::new(policy),
        })
    }
}

/// The launcher's report; an app started through the launcher without one is not trusted.
fn read_report(id: &str, status_file: &Path) -> Result<SandboxReport> {
    let text = std::fs::read_to_string(status_file).map_err(|e| {
        launch_failed(
            id,
            "sandbox_unverified",
            format!("no sandbox report at {}: {e}", status_file.display()),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        launch_failed(
            id,
            "sandbox_unverified",
            format!("unreadable sandbox report {}: {e}", status_file.display()),
        )
    })
}

/// A launched app: its process (leading its own group) and its gRPC channel. Dropping it without
/// [`RunningApp::stop`] kills the group at once.
pub struct RunningApp {
    manifest: Manifest,
    dir: PathBuf,
    pid: u32,
    channel: Option<AppChannel>,
    exit: watch::Receiver<Option<Option<ExitStatus>>>,
    options: LaunchOptions,
    stopped: bool,
    sandbox: SandboxReport,
}

impl std::fmt::Debug for RunningApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningApp")
            .field("id", &self.manifest.id)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// How a stop went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopReport {
    /// The app did not exit within the grace period and was killed.
    pub killed: bool,
    pub status: Option<ExitStatus>,
}

impl RunningApp {
    pub fn id(&self) -> &str {
        &self.manifest.id
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// What the OS sandbox enforces for this app.
    pub fn sandbox(&self) -> &SandboxReport {
        &self.sandbox
    }

    /// The gRPC channel to the app (cheap to clone).
    pub fn channel(&self) -> AppChannel {
        self.channel.clone().unwrap_or_else(|| {
            AppChannel::uninspected(
                tonic::transport::Endpoint::from_static("http://unconnected.invalid")
                    .connect_lazy(),
            )
        })
    }

    /// A receiver that changes to `Some` when the process exits (for watchers).
    pub fn exit_watch(&self) -> watch::Receiver<Option<Option<ExitStatus>>> {
        self.exit.clone()
    }

    /// The exit status once the process has exited.
    pub fn exited(&self) -> Option<Option<ExitStatus>> {
        *self.exit.borrow()
    }

    /// Waits until the process exits or `timeout` passes.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<Option<ExitStatus>> {
        let _ = tokio::time::timeout(timeout, self.exit.wait_for(Option::is_some)).await;
        self.exited()
    }

    /// One health check with the configured deadline: the process is alive and its primary
    /// service answers `SERVING`.
    pub async fn health(&self) -> Result<()> {
        if self.exited().is_some() {
            return Err(launch_failed(
                self.id(),
                "exited",
                "the app is not running".into(),
            ));
        }
        let channel = self.channel();
        let call = health_check(channel, &self.manifest);
        let response = tokio::time::timeout(self.options.health_timeout, call)
            .await
            .map_err(|_| {
                launch_failed(
                    self.id(),
                    "unhealthy",
                    format!("no health answer within {:?}", self.options.health_timeout),
                )
            })?
            .map_err(|status| launch_failed(self.id(), "unhealthy", status.to_string()))?;
        if response.status() == health_check_response::Status::Serving {
            Ok(())
        } else {
            Err(launch_failed(
                self.id(),
                "unhealthy",
                format!("not serving: {}", response.message),
            ))
        }
    }

    /// SIGTERM to the group; SIGKILL after the grace period; then the socket and pid file go.
    pub async fn stop(mut self) -> StopReport {
        self.stopped = true;
        self.channel = None;
        let mut killed = false;
        if self.exited().is_none() {
            process::signal_group(self.pid, Signal::SIGTERM);
            if self.wait_exit(self.options.stop_grace).await.is_none() {
                killed = true;
                process::signal_group(self.pid, Signal::SIGKILL);
                self.wait_exit(Duration::from_secs(5)).await;
            }
        }
        self.sweep().await;
        StopReport {
            killed,
            status: self.exited().flatten(),
        }
    }

    async fn kill_now(&mut self) {
        self.stopped = true;
        process::signal_group(self.pid, Signal::SIGKILL);
        self.wait_exit(Duration::from_secs(5)).await;
        self.sweep().await;
    }

    /// Kills what is left of the group (children the app started) and removes the run files.
    async fn sweep(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !process::group_gone(self.pid) && Instant::now() < deadline {
            process::signal_group(self.pid, Signal::SIGKILL);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = std::fs::remove_file(self.dir.join(SOCKET_FILE));
        let _ = std::fs::remove_file(self.dir.join(PID_FILE));
        let _ = std::fs::remove_file(self.dir.join(crate::sandbox::STATUS_FILE));
    }

    /// Waits for the socket with backoff up to the startup timeout, then dials it checking the
    /// peer's pid, then checks health.
    async fn connect(&mut self, socket: &Path) -> Result<()> {
        let id = self.manifest.id.clone();
        let timeout = Duration::from_secs(self.manifest.startup_timeout_secs);
        let deadline = Instant::now() + timeout;
        let mut backoff = Duration::from_millis(2);
        loop {
            if let Some(status) = self.exited() {
                return Err(launch_failed(
                    &id,
                    "exited",
                    format!("the app exited before serving ({})", describe(status)),
                ));
            }
            if std::fs::symlink_metadata(socket).is_ok_and(|m| m.file_type().is_socket()) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(launch_failed(
                    &id,
                    "startup_timeout",
                    format!("no socket within the startup timeout ({timeout:?})"),
                ));
            }
            let wait = backoff.min(deadline - now);
            // Wake early if the process exits while we wait.
            let _ = tokio::time::timeout(wait, self.exit.wait_for(Option::is_some)).await;
            backoff = (backoff * 2).min(Duration::from_millis(100));
        }
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error::io(format!("chmod {}", socket.display()), e))?;
        // The socket file exists from bind(), a moment before listen(): a refused connection
        // is retried until the startup deadline (a peer mismatch is not).
        let channel = loop {
            let remaining = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(500));
            match osprey_rpc::connect_checked(socket, Some(self.pid), remaining).await {
                Ok(channel) => break channel,
                Err(error @ osprey_rpc::Error::PeerMismatch { .. }) => {
                    return Err(launch_failed(&id, error.code(), error.to_string()));
                }
                Err(error) => {
                    if Instant::now() >= deadline || self.exited().is_some() {
                        return Err(launch_failed(&id, error.code(), error.to_string()));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(100));
                }
            }
        };
        self.channel = Some(self.options.traffic.inspect(&id, channel));
        self.health().await
    }
}

impl Drop for RunningApp {
    fn drop(&mut self) {
        if !self.stopped {
            process::signal_group(self.pid, Signal::SIGKILL);
            let _ = std::fs::remove_file(self.dir.join(SOCKET_FILE));
            let _ = std::fs::remove_file(self.dir.join(PID_FILE));
        }
    }
}

/// Asks the service of the app's first capability for its health.
async fn health_check(
    channel: AppChannel,
    manifest: &Manifest,
) -> std::result::Result<HealthCheckResponse, tonic::Status> {
    use osprey_rpc::v1::{
        channel_service_client::ChannelServiceClient, comm_service_client::CommServiceClient,
        gateway_service_client::GatewayServiceClient, hook_service_client::HookServiceClient,
        schedule_service_client::ScheduleServiceClient, tool_service_client::ToolServiceClient,
        ui_service_client::UiServiceClient,
    };
    let request = HealthCheckRequest {};
    let response = match manifest.provides.first() {
        Some(Capability::Hooks) => HookServiceClient::new(channel).health_check(request).await,
        Some(Capability::Gateway) => {
            GatewayServiceClient::new(channel)
                .health_check(request)
                .await
        }
        Some(Capability::Comm) => CommServiceClient::new(channel).health_check(request).await,
        Some(Capability::Channel(_)) => {
            ChannelServiceClient::new(channel)
                .health_check(request)
                .await
        }
        Some(Capability::Ui) => UiServiceClient::new(channel).health_check(request).await,
        Some(Capability::Schedule) => {
            ScheduleServiceClient::new(channel)
                .health_check(request)
                .await
        }
        _ => ToolServiceClient::new(channel).health_check(request).await,
    };
    response.map(tonic::Response::into_inner)
}

fn remove_stale_socket(id: &str, socket: &Path) -> Result<()> {
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(socket)
            .map_err(|e| Error::io(format!("remove stale {}", socket.display()), e)),
        Ok(_) => Err(launch_failed(
            id,
            "socket_path_occupied",
            format!("{} exists and is not a socket", socket.display()),
        )),
        Err(_) => Ok(()),
    }
}

/// Creates `path` as a directory, refusing a symlink or file in its place.
fn real_dir(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(path.to_path_buf()),
        Ok(_) => Err(Error::io(
            format!("{} is not a directory", path.display()),
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )),
        Err(_) => {
            std::fs::create_dir(path)
                .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
            Ok(path.to_path_buf())
        }
    }
}

/// Spawns, retrying briefly on ETXTBSY: a binary just written (installed, updated) can still be
/// open for writing in a child another thread forked meanwhile, until that child's exec.
async fn spawn(command: &mut tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 50 =>
            {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            result => return result,
        }
    }
}

/// Creates `path` as an empty directory: what an earlier run left in it is removed (without
/// following symlinks), and a symlink or file in its place is refused.
fn fresh_dir(path: &Path) -> Result<PathBuf> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_dir() {
            return Err(Error::io(
                format!("{} is not a directory", path.display()),
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        std::fs::remove_dir_all(path)
            .map_err(|e| Error::io(format!("empty {}", path.display()), e))?;
    }
    real_dir(path)
}

fn launch_failed(id: &str, reason: &'static str, message: String) -> Error {
    Error::LaunchFailed {
        id: id.to_owned(),
        reason,
        message,
    }
}

fn describe(status: Option<ExitStatus>) -> String {
    status.map_or_else(|| "status unknown".to_owned(), |s| s.to_string())
}

/// Appends the last lines the app wrote to stderr to a launch failure.
fn with_stderr_tail(error: Error, stderr_log: &Path) -> Error {
    let Error::LaunchFailed {
        id,
        reason,
        message,
    } = error
    else {
        return error;
    };
    let tail: Vec<String> = std::fs::read_to_string(stderr_log)
        .unwrap_or_default()
        .lines()
        .rev()
        .take(5)
        .map(str::to_owned)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let message = if tail.is_empty() {
        message
    } else {
        format!("{message}; stderr: {}", tail.join(" | "))
    };
    Error::LaunchFailed {
        id,
        reason,
        message,
    }
}
