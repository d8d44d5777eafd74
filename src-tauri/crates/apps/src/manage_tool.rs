//! The `app` domain tool: list, launch, stop, settings, configure, browse, install, uninstall;
//! and the installed-apps section of the system prompt.

use std::sync::Arc;

use futures::future::BoxFuture;
use osprey_tools::domain::Domain;
use osprey_tools::{ApprovalNeed, Call, CallFacts, DomainTool, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use crate::install::{InstalledApp, Installer};
use crate::settings::SettingsStore;
use crate::store_client::{StoreClient, StoreLink};
use crate::supervisor::{AppState, AppStatus, Supervisor};
use crate::trust::Trust;
use crate::{Error, Result};

/// The `app` tool. Cheap handles inside; register it with `Registry::register_domain`.
pub struct AppsTool {
    domain: Domain,
    installer: Installer,
    supervisor: Supervisor,
    settings: SettingsStore,
    store: Option<(StoreLink, Arc<Trust>)>,
}

impl AppsTool {
    pub fn new(
        installer: Installer,
        supervisor: Supervisor,
        settings: SettingsStore,
        store: Option<(StoreLink, Arc<Trust>)>,
    ) -> AppsTool {
        AppsTool {
            domain: domain(),
            installer,
            supervisor,
            settings,
            store,
        }
    }

    async fn list(&self) -> Result<Value> {
        // With no supervisor running (the command line, or after shutdown) nothing runs.
        let states = self.supervisor.apps().await.unwrap_or_default();
        let apps: Vec<Value> = self
            .installer
            .list()
            .into_iter()
            .map(|app| describe(&app, state_of(&states, &app.manifest.id)))
            .collect();
        Ok(json!({ "apps": apps }))
    }

    async fn dispatch(&self, call: &Call) -> Result<Value> {
        let id = call.str("id").unwrap_or_default();
        match call.action() {
            "list" => self.list().await,
            "launch" => {
                let pid = self.supervisor.launch(id).await?;
                Ok(json!({ "id": id, "running": true, "pid": pid }))
            }
            "stop" => {
                self.supervisor.stop(id).await?;
                Ok(json!({ "id": id, "running": false }))
            }
            "settings" => {
                self.installed(id)?;
                Ok(json!({ "id": id, "settings": self.settings.read(id) }))
            }
            "configure" => {
                self.installed(id)?;
                let values = call.input.get("values").cloned().unwrap_or(Value::Null);
                let settings = self.settings.update(id, &values)?;
                let pushed = match self.supervisor.channel(id).await? {
                    Some((manifest, channel)) => {
                        // With the accounts' tokens, which the answer here never shows.
                        self.settings.push_to(channel, &manifest).await?;
                        true
                    }
                    None => false,
                };
                Ok(json!({ "id": id, "settings": settings, "pushed_to_running_app": pushed }))
            }
            "browse" => {
                let (client, _) = self.store()?;
                let page = call.u64("page").unwrap_or(1).clamp(1, 10_000) as u32;
                client
                    .catalog(call.str("query").unwrap_or_default(), page)
                    .await
            }
            "install" => {
                let (client, trust) = self.store()?;
                let outcome = client.install(id, &self.installer, trust).await?;
                Ok(serde_json::to_value(outcome).unwrap_or_default())
            }
            "uninstall" => {
                self.installed(id)?;
                // Not running is fine: uninstalling a stopped app is the usual case.
                let _ = self.supervisor.stop(id).await;
                self.installer.uninstall(id)?;
                Ok(json!({ "id": id, "uninstalled": true }))
            }
            other => Err(Error::NotInstalled(format!("unknown action `{other}`"))),
        }
    }

    fn installed(&self, id: &str) -> Result<InstalledApp> {
        self.installer
            .list()
            .into_iter()
            .find(|app| app.manifest.id == id)
            .ok_or_else(|| Error::NotInstalled(id.to_owned()))
    }

    fn store(&self) -> Result<(StoreClient, &Trust)> {
        self.store
            .as_ref()
            .and_then(|(link, trust)| Some((link.client()?, trust.as_ref())))
            .ok_or_else(|| Error::StoreUnavailable("no app store is configured".into()))
    }
}

impl DomainTool for AppsTool {
    fn domain(&self) -> &Domain {
        &self.domain
    }

    fn facts(&self, call: &Call) -> CallFacts {
        let id = call.str("id").map(str::to_owned);
        let summary = match (&id, call.action()) {
            (Some(id), "configure") => format!("change the settings of app {id}"),
            (Some(id), action) => format!("{action} app {id}"),
            (None, "browse") => format!(
                "search the app store for \"{}\"",
                call.str("query").unwrap_or_default()
            ),
            (None, action) => format!("{action} apps"),
        };
        // Installing puts third-party code on the computer and uninstalling deletes an app's
        // data: only the person's answer to this very call lets either run, at every level.
        let ask_every_time = matches!(call.action(), "install" | "uninstall").then(|| {
            format!(
                "{} changes what is installed on this computer",
                call.action()
            )
        });
        CallFacts {
            summary,
            app: id,
            ask_every_time,
            ..CallFacts::default()
        }
    }

    fn approval_details<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        call: &'a Call,
    ) -> osprey_tools::DetailsFuture<'a> {
        Box::pin(async move {
            if call.action() != "install" {
                return Ok(None);
            }
            let id = call.str("id").unwrap_or_default();
            let installed = self.installed(id).ok().map(|app| app.manifest);
            let refused = |error: Error| {
                ToolResult::error(
                    ErrorCode::ToolFailed,
                    format!("cannot ask about installing `{id}`: {error}"),
                )
            };
            let (client, _) = self.store().map_err(refused)?;
            let (details, _, _) =
                crate::store_client::app_install_details(&client, id, installed.as_ref())
                    .await
                    .map_err(refused)?;
            Ok(Some(Box::new(details)))
        })
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext, call: Call) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match self.dispatch(&call).await {
                Ok(value) => ToolResult::text(
                    serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
                ),
                Err(error) => {
                    let code = match &error {
                        Error::NotInstalled(_) => ErrorCode::InvalidInput,
                        _ => ErrorCode::ToolFailed,
                    };
                    ToolResult::error(code, error.to_string())
                }
            }
        })
    }
}

fn domain() -> Domain {
    use ApprovalNeed::{None, Required};
    Domain::new(
        "app",
        "Osprey apps: list the installed ones, launch or stop them, read and change their \
         settings, search the app store, install and uninstall. Installing shows the permissions \
         an app asks for; updates that add permissions wait for the person's approval.",
    )
    .resource(
        "app",
        &["apps", "application"],
        &[
            (
                "list",
                "Installed apps with their state, capabilities and flags (sideloaded, quarantined, pending update)",
                None,
            ),
            ("launch", "Start an installed app", Required),
            ("stop", "Stop a running app", Required),
            ("settings", "Read an app's settings", None),
            (
                "configure",
                "Change an app's settings (`values`: keys to set; null removes a key) and push them to the app",
                Required,
            ),
            ("browse", "Search the app store (`query`, `page`)", None),
            ("install", "Install an app from the store by `id`", Required),
            ("uninstall", "Stop an app and remove it with its data", Required),
        ],
    )
    .field("id", FieldType::String, "The app's id")
    .required_for(&["launch", "stop", "settings", "configure", "install", "uninstall"])
    .field("values", FieldType::Object, "Settings to change")
    .required_for(&["configure"])
    .field("query", FieldType::String, "Text to search the store for")
    .field("page", FieldType::Integer, "Store result page, from 1")
}

fn state_of(states: &[AppStatus], id: &str) -> Value {
    let Some(status) = states.iter().find(|app| app.id == id) else {
        return json!({"running": false});
    };
    match status.state {
        AppState::Launching => json!({"running": false, "launching": true}),
        // What the OS sandbox enforces for the process (level enforced, degraded or off).
        AppState::Running { pid } => {
            json!({"running": true, "pid": pid, "sandbox": status.sandbox})
        }
        AppState::Restarting => json!({"running": false, "restarting": true}),
        AppState::GaveUp => json!({"running": false, "gave_up": true}),
    }
}

fn describe(app: &InstalledApp, state: Value) -> Value {
    let manifest = &app.manifest;
    json!({
        "id": manifest.id,
        "name": manifest.name,
        "version": manifest.version,
        "description": manifest.description,
        "provides": manifest.provides,
        "permissions": manifest.permissions,
        "sideloaded": app.sideloaded,
        "quarantined": app.quarantined,
        "pending_permissions": app.pending_permissions,
        "state": state,
    })
}

/// The installed-apps section of the system prompt: one line per app, with what it provides and
/// its flags, so the model knows which app tools exist and which apps it may launch.
pub fn installed_apps_prompt(apps: &[InstalledApp], states: &[(String, AppState)]) -> String {
    if apps.is_empty() {
        return String::new();
    }
    let mut section = String::from("## Installed apps\n");
    for app in apps {
        let manifest = &app.manifest;
        let provides: Vec<String> = manifest.provides.iter().map(ToString::to_string).collect();
        let state = match states.iter().find(|(id, _)| *id == manifest.id) {
            Some((_, AppState::Launching)) => "launching",
            Some((_, AppState::Running { .. })) => "running",
            Some((_, AppState::Restarting)) => "restarting",
            Some((_, AppState::GaveUp)) => "stopped after repeated crashes",
            None => "not running",
        };
        let mut flags = Vec::new();
        if app.sideloaded {
            flags.push("sideloaded, unsigned");
        }
        if app.quarantined.is_some() {
            flags.push("quarantined");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        // Names and descriptions come from app authors: keep them on one line each.
        let one_line = |text: &str| text.replace(['\n', '\r'], " ");
        section.push_str(&format!(
            "- {} ({} {}): {}; provides {}; {state}{flags}\n",
            one_line(&manifest.name),
            manifest.id,
            manifest.version,
            one_line(&manifest.description),
            provides.join(", "),
        ));
    }
    section
}
