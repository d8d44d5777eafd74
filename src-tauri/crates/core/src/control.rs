//! The control socket: how a short-lived `osprey` command asks the long-running Osprey (the
//! desktop app or `osprey daemon`) to do what needs its supervisor, such as launching or
//! stopping an app. One JSON object per line each way over `<data>/control.sock`, which is
//! created 0600 and refuses peers of another user, so it grants nothing the person's own files
//! did not. Requests: `{"op": "ping"}`, `{"op": "app.launch", "id": ...}`,
//! `{"op": "app.stop", "id": ...}`, `{"op": "app.status"}`, `{"op": "app.inspect", "id": ..., "limit": N}` (the app's last calls as
//! the gRPC inspector kept them), `{"op": "app.sweep"}` (check the
//! installed apps against a freshly fetched revocation list now), `{"op": "app.configure", "id":
//! ...}` (another process connected or disconnected the app's account, or changed the store
//! token: push the app its configuration again), `{"op": "settings.applied",
//! "key": ...}` (another process stored this setting: put the stored value in force). Answers: `{"ok": true, ...}` or
//! `{"ok": false, "code": ..., "message": ...}`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::Core;

/// The socket's file name in the data directory.
pub const SOCKET: &str = "control.sock";
/// A request line longer than this is refused (they are a few dozen bytes).
const MAX_LINE: usize = 64 * 1024;
/// How long a client waits for an answer; launching an app waits for it to be healthy.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(150);

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// The running server; dropping it stops accepting and removes the socket.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    cancel: CancellationToken,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Why a control request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Nothing listens: neither the desktop app nor `osprey daemon` runs on this data dir.
    #[error(
        "no running Osprey supervises the apps in {0}: start the desktop app or `osprey daemon` first"
    )]
    NotRunning(String),
    #[error("talking to the running Osprey: {0}")]
    Io(String),
}

fn refusal(code: &str, message: impl Into<String>) -> Value {
    json!({"ok": false, "code": code, "message": message.into()})
}

impl Core {
    /// Listens on `<data>/control.sock` on the current tokio runtime. A socket left by a run
    /// that died is replaced; one that still answers means another Osprey owns this data dir,
    /// which is refused.
    pub fn serve_control(&self) -> anyhow::Result<ControlServer> {
        let path = socket_path(self.data_dir());
        if path.exists() {
            if std::os::unix::net::UnixStream::connect(&path).is_ok() {
                anyhow::bail!(
                    "another Osprey is already running on {} (its control socket answers)",
                    self.data_dir().display()
                );
            }
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the stale {}", path.display()))?;
        }
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("listening on {}", path.display()))?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .with_context(|| format!("making {} private", path.display()))?;
        let cancel = CancellationToken::new();
        let core = self.clone();
        let stop = cancel.clone();
        tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    _ = stop.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(error) => {
                            tracing::warn!(%error, "control socket accept failed");
                            continue;
                        }
                    },
                };
                let core = core.clone();
                tokio::spawn(async move {
                    if let Err(error) = serve_connection(&core, stream).await {
                        tracing::debug!(%error, "control connection ended");
                    }
                });
            }
        });
        Ok(ControlServer { path, cancel })
    }
}

/// Only the user Osprey runs as may talk to it (the file mode says so too; this also covers a
/// socket reached through a directory someone else can traverse).
fn same_user(stream: &UnixStream) -> bool {
    let own = nix::unistd::Uid::current().as_raw();
    stream.peer_cred().is_ok_and(|peer| peer.uid() == own)
}

async fn serve_connection(core: &Core, stream: UnixStream) -> std::io::Result<()> {
    if !same_user(&stream) {
        tracing::warn!("refused a control connection from another user");
        return Ok(());
    }
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        let read = (&mut lines)
            .take(MAX_LINE as u64 + 1)
            .read_line(&mut line)
            .await?;
        if read == 0 {
            return Ok(());
        }
        let answer = if line.len() > MAX_LINE {
            refusal("too_large", "a control request is one short JSON line")
        } else {
            match serde_json::from_str::<Value>(&line) {
                Ok(request) => handle(core, &request).await,
                Err(error) => refusal("invalid_request", format!("not JSON: {error}")),
            }
        };
        let mut text = answer.to_string();
        text.push('\n');
        write.write_all(text.as_bytes()).await?;
        if line.len() > MAX_LINE {
            return Ok(());
        }
    }
}

async fn handle(core: &Core, request: &Value) -> Value {
    let id = request["id"].as_str().unwrap_or_default();
    let supervisor = core.apps().supervisor();
    match request["op"].as_str().unwrap_or_default() {
        "ping" => json!({"ok": true, "data_dir": core.data_dir().display().to_string()}),
        "app.launch" | "app.stop" if id.is_empty() => {
            refusal("invalid_request", "name the app: {\"id\": \"...\"}")
        }
        "app.launch" => match supervisor.launch(id).await {
            Ok(pid) => json!({"ok": true, "id": id, "pid": pid}),
            Err(error) => refusal(error.code(), error.to_string()),
        },
        "app.stop" => match supervisor.stop(id).await {
            Ok(()) => json!({"ok": true, "id": id}),
            Err(error) => refusal(error.code(), error.to_string()),
        },
        "app.status" => match supervisor.status().await {
            Ok(states) => {
                use osprey_apps::supervisor::AppState;
                let apps: Vec<Value> = states
                    .into_iter()
                    .map(|(id, state)| {
                        let (name, pid) = match state {
                            AppState::Launching => ("launching", None),
                            AppState::Running { pid } => ("running", Some(pid)),
                            AppState::Restarting => ("restarting", None),
                            AppState::GaveUp => ("gave_up", None),
                        };
                        json!({"id": id, "state": name, "pid": pid})
                    })
                    .collect();
                json!({"ok": true, "apps": apps})
            }
            Err(error) => refusal(error.code(), error.to_string()),
        },
        "app.inspect" => {
            let limit = request["limit"]
                .as_u64()
                .map_or(osprey_rpc::inspect::EXCHANGES_KEPT, |limit| limit as usize);
            json!({"ok": true, "traffic": core.local_app_traffic(id, limit)})
        }
        "app.sweep" => {
            let report = core.apps().sweep_revocations(true).await;
            let revoked: Vec<Value> = report
                .revoked
                .iter()
                .map(|(id, reason)| json!({"id": id, "reason": reason}))
                .collect();
            json!({
                "ok": true,
                "revoked": revoked,
                "held": report.held,
                "released": report.released,
                "unavailable": report.unavailable,
            })
        }
        "app.configure" => {
            // Another process changed what the app is given (its account, the store token).
            let app = core
                .installed_apps()
                .await
                .into_iter()
                .find(|app| app.manifest.id == id);
            match app {
                Some(app) => {
                    core.accounts().wake();
                    core.push_app_configuration(&app.manifest).await;
                    json!({"ok": true, "id": id})
                }
                None => refusal("not_installed", format!("no installed app `{id}`")),
            }
        }
        "settings.applied" => {
            let key = request["key"].as_str().unwrap_or_default();
            match core.apply_stored_setting(key).await {
                Ok(()) => json!({"ok": true, "key": key}),
                Err(error) => refusal(error.code.as_str(), error.message),
            }
        }
        other => refusal(
            "unknown_op",
            format!(
                "unknown request `{other}` (ping, app.launch, app.stop, app.status, app.sweep, \
                 app.configure, settings.applied)"
            ),
        ),
    }
}

/// Sends one request to the Osprey running on `data_dir` and returns its answer.
pub async fn request(data_dir: &Path, request: &Value) -> Result<Value, ControlError> {
    let path = socket_path(data_dir);
    let mut stream = match UnixStream::connect(&path).await {
        Ok(stream) => stream,
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Err(ControlError::NotRunning(data_dir.display().to_string()));
        }
        Err(error) => return Err(ControlError::Io(error.to_string())),
    };
    let exchange = async {
        let mut text = request.to_string();
        text.push('\n');
        stream.write_all(text.as_bytes()).await?;
        let mut answer = String::new();
        BufReader::new(&mut stream).read_line(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(CLIENT_TIMEOUT, exchange)
        .await
        .map_err(|_| ControlError::Io("no answer within 150 s".into()))?
        .map_err(|error| ControlError::Io(error.to_string()))?;
    serde_json::from_str(&answer)
        .map_err(|error| ControlError::Io(format!("the answer is not JSON: {error}")))
}
