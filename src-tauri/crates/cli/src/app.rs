//! `osprey app install | list | remove | sideload | unsideload | approve-update | reject-update |
//! inspect | accounts | connect | disconnect`: the installed apps in `<data>/apps/`, managed through the
//! same installer the desktop app uses, and their accounts (see [`accounts`]).
//!
//! Store packages are verified against the store's signing key and checked against its
//! revocation list (both cached in `<data>/trust/`, so an install of a file works offline while
//! the cache is fresh enough). Refusals print `osprey: <code>: <message>` (or `{ok, code, ...}`
//! with `--json`) and exit with 3; other failures exit with 1.
//!
//! `launch`, `stop`, `sweep` and `inspect` need a supervisor, which lives in a long-running Osprey (the desktop app
//! or `osprey daemon`): they ask it over its control socket, and say so when none runs rather
//! than start an app nobody would watch over.

mod accounts;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use osprey_apps::InstalledApp;
use osprey_core::CoreError;
use osprey_types::{AppInstallOutcome, AppInstallReport, UiErrorCode};
use serde_json::{Value, json};

/// Exit code for something Osprey refused (same as a refused tool call).
const EXIT_REFUSED: u8 = 3;
/// Exit code for a failure to run.
const EXIT_FAILED: u8 = 1;

#[derive(Args, Debug)]
pub struct AppArgs {
    #[command(subcommand)]
    action: AppAction,
    /// Print one JSON object instead of readable text.
    #[arg(long, global = true)]
    json: bool,
    /// The store's root URL (default: $OSPREY_STORE_URL, else the `store.url` setting).
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,
}

#[derive(Subcommand, Debug)]
enum AppAction {
    /// Install (or update) an app from a signed `.napp` file or by its store id.
    Install {
        /// A `.napp` file (a path ending in `.napp`, or any existing file) or a store app id.
        source: String,
    },
    /// List the installed apps, with their sideloaded, quarantined and pending-update flags.
    List,
    /// Start an app, through the running desktop app or `osprey daemon` (their supervisor
    /// watches over it); waits until it is healthy.
    Launch { id: String },
    /// Stop an app, through the running desktop app or `osprey daemon`.
    Stop { id: String },
    /// Check the installed apps against the store's revocation list now, through the running
    /// desktop app or `osprey daemon` (they also do it every hour): revoked apps are stopped and
    /// quarantined.
    Sweep,
    /// Remove an app with its data, logs and any staged update (a sideload loses its link only).
    Remove { id: String },
    /// Link a project directory in as an app, without signatures (for developers).
    Sideload { dir: PathBuf },
    /// Remove a sideload link (the project directory is not touched).
    Unsideload { id: String },
    /// Swap in a staged update that asks for new permissions.
    ApproveUpdate { id: String },
    /// Drop a staged update; the installed version stays.
    RejectUpdate { id: String },
    /// The apps' accounts (the providers their manifests connect to): connected or not, the
    /// scopes, when the access token expires. Tokens are never printed.
    Accounts,
    /// Connect an app to its provider: prints what it asks for, opens your browser at the
    /// provider's sign-in (or prints the address to open) and waits for you to sign in.
    Connect {
        id: String,
        /// The provider (the app's own when left out).
        provider: Option<String>,
        /// How long to wait for the sign-in, in seconds.
        #[arg(long, default_value_t = 300, value_name = "SECONDS")]
        timeout: u64,
    },
    /// The app's last gRPC calls as the running desktop app or `osprey daemon` kept them (for app
    /// developers): method, status, duration, sizes and each message as JSON, credentials
    /// redacted. Health checks show only when they fail.
    Inspect {
        id: String,
        /// How many of the most recent calls.
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: usize,
    },
    /// Disconnect an app's account: its tokens are deleted and the app is told.
    Disconnect {
        id: String,
        provider: Option<String>,
    },
}

/// The outer error is a failure to run; the inner one is Osprey refusing, with its code.
type Outcome = anyhow::Result<Result<Value, CoreError>>;

pub async fn run(data_dir: Option<PathBuf>, args: AppArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let data = osprey_core::resolve_data_dir(data_dir.as_deref());
    let core = crate::open(Some(data.clone()), None, None)?;
    let outcome: Outcome = match args.action {
        AppAction::Install { source } => Ok(core
            .install_app(&source, args.store.filter(|url| !url.trim().is_empty()))
            .await
            .map(|report| install_json(&report))),
        AppAction::List => Ok(Ok(list(
            &core.installed_apps().await,
            &running_states(&data).await,
        ))),
        AppAction::Launch { id } => {
            return supervised(&data, json!({"op": "app.launch", "id": id}), json, |answer| {
                format!("{id} is running (pid {})", answer["pid"])
            })
            .await;
        }
        AppAction::Stop { id } => {
            return supervised(&data, json!({"op": "app.stop", "id": id}), json, |_| {
                format!("stopped {id}")
            })
            .await;
        }
        AppAction::Sweep => {
            return supervised(&data, json!({"op": "app.sweep"}), json, sweep_summary).await;
        }
        AppAction::Remove { id } => Ok(core.uninstall_app(&id).await.map(|()| {
            json!({"id": id, "message": format!("removed {id} with its data and logs")})
        })),
        AppAction::Sideload { dir } => Ok(core.sideload_app(&dir).await.map(|manifest| {
            json!({
                "id": manifest.id,
                "version": manifest.version,
                "message": format!(
                    "sideloaded {} {} from {}{} and started it once (unsigned: for development \
                     only)",
                    manifest.id,
                    manifest.version,
                    dir.display(),
                    manifest
                        .build
                        .as_ref()
                        .map(|build| format!(", built with `{}`", build.command.join(" ")))
                        .unwrap_or_default()
                ),
            })
        })),
        AppAction::Unsideload { id } => Ok(core.unsideload_app(&id).await.map(|()| {
            json!({"id": id, "message": format!("unsideloaded {id} (the project directory is untouched)")})
        })),
        AppAction::ApproveUpdate { id } => Ok(core.approve_app_update(&id).await.map(|app| {
            json!({
                "id": app.id,
                "version": app.version,
                "permissions": app.permissions,
                "message": format!(
                    "approved: {} {} is installed; a running Osprey restarts it on the new version",
                    app.id, app.version
                ),
            })
        })),
        AppAction::Accounts => Ok(Ok(accounts::list(&core.app_accounts().await))),
        AppAction::Inspect { id, limit } => Ok(core
            .app_traffic(&id, Some(limit))
            .await
            .map(|traffic| inspect_json(&traffic))),
        AppAction::Connect {
            id,
            provider,
            timeout,
        } => Ok(accounts::connect(&core, &id, provider.as_deref(), timeout, json).await),
        AppAction::Disconnect { id, provider } => Ok(core
            .disconnect_app_account(&id, provider.as_deref())
            .await
            .map(|account| {
                json!({
                    "account": account,
                    "message": format!(
                        "disconnected {} from {}: {}",
                        account.app_id,
                        account.provider,
                        account.reason.as_deref().unwrap_or("it had no tokens")
                    ),
                })
            })),
        AppAction::RejectUpdate { id } => Ok(core.reject_app_update(&id).await.map(|_| {
            json!({"id": id, "message": format!("rejected the staged update of {id}; the installed version stays")})
        })),
    };
    match outcome {
        Ok(Ok(mut report)) => {
            if json {
                report["ok"] = Value::Bool(true);
                report["code"] = Value::Null;
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", report["message"].as_str().unwrap_or_default());
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(Err(error)) => {
            let code = error.code.as_str();
            let message = describe(&error);
            let exit = if refusal(&error) {
                EXIT_REFUSED
            } else {
                EXIT_FAILED
            };
            if json {
                let report =
                    json!({"ok": false, "code": code, "reason": error.reason, "message": message});
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                eprintln!("osprey: {code}: {message}");
            }
            Ok(ExitCode::from(exit))
        }
        Err(error) => report_failure(json, "failed", &format!("{error:#}")),
    }
}

/// The inspector's calls: the traffic itself for `--json`, one block per call as text.
fn inspect_json(traffic: &osprey_types::AppTraffic) -> Value {
    const SHOWN: usize = 400;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |now| now.as_millis() as u64);
    let mut text = String::new();
    if traffic.exchanges.is_empty() {
        text.push_str(&format!(
            "no calls to {} kept yet (the inspector keeps the last {} calls of a running app)",
            traffic.app_id, traffic.calls_kept
        ));
    }
    for exchange in &traffic.exchanges {
        let ago = now_ms.saturating_sub(exchange.started_at_ms) as f64 / 1000.0;
        let took = exchange
            .duration_ms
            .map_or_else(|| "still going".to_string(), |ms| format!("{ms:.1} ms"));
        let status = exchange.status.as_deref().unwrap_or("no status");
        text.push_str(&format!(
            "#{} {ago:.1} s ago  {}  {status}  {took}  sent {} B, received {} B\n",
            exchange.id, exchange.method, exchange.request_bytes, exchange.response_bytes
        ));
        if let Some(message) = &exchange.message {
            text.push_str(&format!("  {message}\n"));
        }
        for (arrow, messages) in [("->", &exchange.request), ("<-", &exchange.response)] {
            for message in messages {
                let mut line = message.to_string();
                if line.chars().count() > SHOWN {
                    line = line.chars().take(SHOWN).collect::<String>() + "... (--json for all)";
                }
                text.push_str(&format!("  {arrow} {line}\n"));
            }
        }
    }
    json!({"traffic": traffic, "message": text.trim_end()})
}

/// An install's report as the CLI prints it: the core's, with the commands that answer a
/// staged update.
fn install_json(report: &AppInstallReport) -> Value {
    let mut message = report.message.clone();
    if report.outcome == AppInstallOutcome::PendingApproval {
        message.push_str(&format!(
            " (`osprey app approve-update {id}` or `osprey app reject-update {id}`)",
            id = report.app_id
        ));
        // What each new permission lets the app do, as the desktop's prompt says it.
        for permission in osprey_core::store::explain_permissions(&report.new_permissions) {
            message.push_str(&format!(
                "\n  {}: {}",
                permission.permission, permission.explanation
            ));
        }
    }
    json!({
        "outcome": report.outcome,
        "id": report.app_id,
        "version": report.version,
        "from_version": report.from_version,
        "new_permissions": report.new_permissions,
        "message": message,
    })
}

/// What a sweep did, in a sentence per kind of outcome.
fn sweep_summary(answer: &Value) -> String {
    let mut lines = Vec::new();
    for revoked in answer["revoked"].as_array().into_iter().flatten() {
        lines.push(format!(
            "revoked: {} ({}); stopped and quarantined",
            revoked["id"].as_str().unwrap_or_default(),
            revoked["reason"].as_str().unwrap_or_default()
        ));
    }
    if let Some(why) = answer["unavailable"].as_str() {
        lines.push(format!("no revocation list: {why}"));
    }
    for id in answer["held"].as_array().into_iter().flatten() {
        lines.push(format!(
            "stopped until a revocation list can be fetched: {}",
            id.as_str().unwrap_or_default()
        ));
    }
    for id in answer["released"].as_array().into_iter().flatten() {
        lines.push(format!(
            "running again: {}",
            id.as_str().unwrap_or_default()
        ));
    }
    if lines.is_empty() {
        lines.push("no installed app is revoked".to_string());
    }
    lines.join("\n")
}

/// Asks the running Osprey (desktop app or `osprey daemon`) to do `request` with its supervisor.
#[cfg(unix)]
async fn supervised(
    data: &Path,
    request: Value,
    json: bool,
    done: impl FnOnce(&Value) -> String,
) -> anyhow::Result<ExitCode> {
    let answer = match osprey_core::control::request(data, &request).await {
        Ok(answer) => answer,
        Err(error @ osprey_core::control::ControlError::NotRunning(_)) => {
            return report_failure(json, "not_running", &error.to_string());
        }
        Err(error) => return report_failure(json, "failed", &error.to_string()),
    };
    if answer["ok"] != true {
        let code = answer["code"].as_str().unwrap_or("failed");
        let message = answer["message"].as_str().unwrap_or_default();
        if json {
            println!("{}", serde_json::to_string_pretty(&answer)?);
        } else {
            eprintln!("osprey: {code}: {message}");
        }
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        println!("{}", done(&answer));
    }
    Ok(ExitCode::SUCCESS)
}

/// Apps run only on Unix for now: there is no supervisor to ask elsewhere.
#[cfg(not(unix))]
async fn supervised(
    _data: &Path,
    _request: Value,
    json: bool,
    _done: impl FnOnce(&Value) -> String,
) -> anyhow::Result<ExitCode> {
    report_failure(json, "unsupported", "apps do not run on this platform yet")
}

#[cfg(not(unix))]
async fn running_states(_data: &Path) -> std::collections::HashMap<String, String> {
    Default::default()
}

/// Each app's state in the running Osprey, when one runs on this data dir (else nothing: the
/// listing then says only what is installed).
#[cfg(unix)]
async fn running_states(data: &Path) -> std::collections::HashMap<String, String> {
    let Ok(answer) = osprey_core::control::request(data, &json!({"op": "app.status"})).await else {
        return Default::default();
    };
    answer["apps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|app| {
            Some((
                app["id"].as_str()?.to_string(),
                app["state"].as_str()?.to_string(),
            ))
        })
        .collect()
}

fn report_failure(json: bool, code: &str, message: &str) -> anyhow::Result<ExitCode> {
    if json {
        let report = json!({"ok": false, "code": code, "reason": null, "message": message});
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!("osprey: {code}: {message}");
    }
    Ok(ExitCode::from(EXIT_FAILED))
}

/// Osprey refusing (exit 3), as opposed to failing to run (exit 1).
fn refusal(error: &CoreError) -> bool {
    !matches!(
        error.code,
        UiErrorCode::StoreUnavailable
            | UiErrorCode::Io
            | UiErrorCode::LaunchFailed
            | UiErrorCode::Storage
            | UiErrorCode::Internal
            | UiErrorCode::NotRunning
    )
}

/// The error's text without its leading code: `reason: detail`, or the detail.
fn describe(error: &CoreError) -> String {
    let text = error.message.as_str();
    let rest = text.strip_prefix(error.code.as_str()).unwrap_or(text);
    let rest = match &error.reason {
        Some(reason) => rest
            .strip_prefix(&format!(" ({reason})"))
            .map(|detail| format!("{reason}{detail}"))
            .unwrap_or_else(|| rest.to_owned()),
        None => rest.to_owned(),
    };
    rest.trim_start_matches([':', ' ']).to_owned()
}

fn list(apps: &[InstalledApp], states: &std::collections::HashMap<String, String>) -> Value {
    let mut lines = Vec::new();
    let entries: Vec<Value> = apps
        .iter()
        .map(|app| {
            let manifest = &app.manifest;
            let mut line = format!("{} {} ({})", manifest.id, manifest.version, manifest.name);
            if app.sideloaded {
                line.push_str(" [sideloaded]");
            }
            let state = states.get(&manifest.id);
            if let Some(state) = state {
                line.push_str(&format!(" [{state}]"));
            }
            if let Some(reason) = &app.quarantined {
                line.push_str(&format!(" [quarantined: {}]", reason.trim()));
            }
            if let Some(permissions) = &app.pending_permissions {
                line.push_str(&format!(
                    " [update pending approval: {}]",
                    permissions.join(", ")
                ));
            }
            lines.push(line);
            json!({
                "id": manifest.id,
                "name": manifest.name,
                "version": manifest.version,
                "path": app.path,
                "sideloaded": app.sideloaded,
                "quarantined": app.quarantined.is_some(),
                "quarantine_reason": app.quarantined,
                "pending_update": app.pending_permissions.is_some(),
                "pending_permissions": app.pending_permissions,
                "state": state,
            })
        })
        .collect();
    let message = if lines.is_empty() {
        "no apps installed".to_owned()
    } else {
        lines.join("\n")
    };
    json!({"apps": entries, "message": message})
}
