//! What the desktop's Apps page shows and does: each installed app's state (from the installer's
//! list, the supervisor's status and what became of its launch), `AppStateChanged` events as
//! those change, approving or rejecting a staged update, and serving an app's UI
//! (`osprey-app://<id>/...`: static `ui/` files, `/api/*` forwarded to the app's UIService).

use osprey_types::AppStatus;

use crate::Core;

pub use osprey_apps::ui::{UiRequest, UiResponse};

#[cfg(unix)]
mod unix {
    use std::collections::HashMap;

    use anyhow::Context;
    use osprey_apps::InstallOutcome;
    use osprey_apps::install::InstalledApp;
    use osprey_apps::manifest::{Capability, Manifest};
    use osprey_apps::supervisor::AppState;
    use osprey_types::{
        AppExchange, AppInstallOutcome, AppInstallReport, AppRunState, AppTraffic, CoreEvent,
        InstallStage, UiErrorCode,
    };
    use tokio::sync::broadcast::error::RecvError;

    use super::*;
    use crate::apps::LAUNCHING;
    use crate::{CoreError, CoreResult};

    /// How long an install or removal waits for the store to note it (see
    /// [`Core::report_to_store`]).
    const REPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

    /// Runs an installer step off the async threads; its error keeps its code.
    async fn blocking<T: Send + 'static>(
        step: impl FnOnce() -> osprey_apps::Result<T> + Send + 'static,
    ) -> CoreResult<T> {
        Ok(tokio::task::spawn_blocking(step)
            .await
            .context("the install task failed")??)
    }

    /// What the installer did, with the sentence a person reads.
    pub(super) fn install_report(outcome: InstallOutcome) -> AppInstallReport {
        match outcome {
            InstallOutcome::Installed { id, version } => AppInstallReport {
                message: format!("installed {id} {version}"),
                app_id: id,
                version,
                outcome: AppInstallOutcome::Installed,
                from_version: None,
                new_permissions: Vec::new(),
            },
            InstallOutcome::Updated {
                id,
                from_version,
                version,
            } => AppInstallReport {
                message: format!("updated {id} from {from_version} to {version}"),
                app_id: id,
                version,
                outcome: AppInstallOutcome::Updated,
                from_version: Some(from_version),
                new_permissions: Vec::new(),
            },
            InstallOutcome::PendingApproval {
                id,
                version,
                new_permissions,
            } => AppInstallReport {
                message: format!(
                    "{id} {version} asks for new permissions ({}): it waits for your approval; \
                     the installed version stays until then",
                    new_permissions.join(", ")
                ),
                app_id: id,
                version,
                outcome: AppInstallOutcome::PendingApproval,
                from_version: None,
                new_permissions,
            },
        }
    }

    pub(super) fn status(
        app: &InstalledApp,
        supervised: Option<&AppState>,
        launch: Option<(String, String)>,
    ) -> AppStatus {
        let (state, reason) = if let Some(reason) = &app.quarantined {
            (AppRunState::Quarantined, Some(reason.clone()))
        } else {
            match (supervised, launch) {
                (Some(AppState::Running { .. }), _) => (AppRunState::Running, None),
                (Some(AppState::Restarting), _) => (AppRunState::Restarting, None),
                (Some(AppState::GaveUp), _) => (
                    AppRunState::GaveUp,
                    Some("it failed too often and was stopped; its tools are gone".into()),
                ),
                // Any other supervisor state is a launch on its way.
                (Some(_), _) => (AppRunState::Launching, None),
                (None, Some((code, _))) if code == LAUNCHING => (AppRunState::Launching, None),
                (None, Some((code, message))) if code == "revocation_unavailable" => {
                    (AppRunState::RevocationUnavailable, Some(message))
                }
                (None, Some((_, message))) => (AppRunState::Failed, Some(message)),
                (None, None) => (AppRunState::Stopped, None),
            }
        };
        let manifest = &app.manifest;
        AppStatus {
            id: manifest.id.clone(),
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            description: manifest.description.clone(),
            state,
            reason,
            sideloaded: app.sideloaded,
            permissions: manifest.permissions.clone(),
            pending_permissions: app.pending_permissions.clone(),
            has_ui: manifest.provides.contains(&Capability::Ui),
        }
    }

    impl Core {
        /// Every installed app with its state, sorted by name.
        pub async fn app_statuses(&self) -> Vec<AppStatus> {
            let platform = self.apps();
            let installer = platform.installer().clone();
            let installed = tokio::task::spawn_blocking(move || installer.list())
                .await
                .unwrap_or_default();
            // A supervisor that is not running (apps not started) has nothing running.
            let supervised: HashMap<String, AppState> = platform
                .supervisor()
                .status()
                .await
                .map(|list| list.into_iter().collect())
                .unwrap_or_default();
            let reports = platform.launch_reports();
            let mut list: Vec<AppStatus> = installed
                .iter()
                .map(|app| {
                    let id = &app.manifest.id;
                    status(app, supervised.get(id), reports.get(id))
                })
                .collect();
            list.sort_by_key(|app| app.name.to_lowercase());
            list
        }

        /// One app's status, if installed.
        pub async fn app_status(&self, id: &str) -> Option<AppStatus> {
            self.app_statuses()
                .await
                .into_iter()
                .find(|app| app.id == id)
        }

        /// Emits `AppStateChanged` whenever the supervisor or a launch reports on an app, until
        /// the core is dropped. [`Core::start`] spawns it on the current runtime.
        pub fn forward_app_events(&self) -> tokio::task::JoinHandle<()> {
            let core = self.clone();
            let mut supervisor = self.apps().supervisor().subscribe();
            let mut launches = self.apps().launch_reports().subscribe();
            tokio::spawn(async move {
                loop {
                    let id = tokio::select! {
                        event = supervisor.recv() => match event {
                            Ok(event) => supervisor_event_app(&event),
                            Err(RecvError::Lagged(_)) => None,
                            Err(RecvError::Closed) => break,
                        },
                        id = launches.recv() => match id {
                            Ok(id) => Some(id),
                            Err(RecvError::Lagged(_)) => None,
                            Err(RecvError::Closed) => break,
                        },
                    };
                    if let Some(id) = id
                        && let Some(app) = core.app_status(&id).await
                    {
                        core.emit(CoreEvent::AppStateChanged { app });
                    }
                }
            })
        }

        /// Installs (or updates) an app from a `.napp` file or by store id, through the one
        /// verified install path (signatures, then the revocation list, before anything is
        /// placed). A running Osprey's watcher launches the new app, or restarts an updated one.
        pub async fn install_app(
            &self,
            source: &str,
            store: Option<String>,
        ) -> CoreResult<AppInstallReport> {
            let outcome = self.apps().install(source, store).await?;
            let report = install_report(outcome);
            if let Some(app) = self.app_status(&report.app_id).await {
                self.emit(CoreEvent::AppStateChanged { app });
            }
            if report.outcome == AppInstallOutcome::Installed {
                self.report_to_store(&report.app_id, true).await;
            }
            Ok(report)
        }

        /// Installs (or updates) `id` from the store the settings name now, emitting
        /// [`CoreEvent::AppInstallProgress`] while it downloads (at most one per percent) and
        /// when it verifies; otherwise as [`Core::install_app`].
        pub async fn install_store_app(&self, id: &str) -> CoreResult<AppInstallReport> {
            self.install_store_app_expecting(id, None).await
        }

        /// [`Core::install_store_app`] of the package whose SHA-256 is `expected_sha256` (the
        /// one a person approved): another download is refused before it is unpacked.
        pub async fn install_store_app_expecting(
            &self,
            id: &str,
            expected_sha256: Option<&str>,
        ) -> CoreResult<AppInstallReport> {
            self.install_from_store(id, expected_sha256, true).await
        }

        /// [`Core::install_store_app_expecting`] of an install the store pushed (the person
        /// installed the app elsewhere): not told back to the store, which would ask the
        /// person's other devices about it once more.
        pub(crate) async fn install_pushed_store_app(
            &self,
            id: &str,
            expected_sha256: &str,
        ) -> CoreResult<AppInstallReport> {
            self.install_from_store(id, Some(expected_sha256), false)
                .await
        }

        async fn install_from_store(
            &self,
            id: &str,
            expected_sha256: Option<&str>,
            report_to_store: bool,
        ) -> CoreResult<AppInstallReport> {
            let store = self.store_url().ok_or_else(|| {
                CoreError::new(
                    UiErrorCode::StoreUnavailable,
                    "no store is set: enter the store's address in Settings (store.url)",
                )
            })?;
            let events = self.events().clone();
            let app_id = id.to_string();
            let mut last: Option<(InstallStage, u64)> = None;
            let mut progress = move |stage: InstallStage, received: u64, total: Option<u64>| {
                // Percent steps (or 256 KB steps without a length) keep the events few.
                let step = match total {
                    Some(total) if total > 0 => received.saturating_mul(100) / total,
                    _ => received / (256 * 1024),
                };
                if last == Some((stage, step)) {
                    return;
                }
                last = Some((stage, step));
                events.emit(CoreEvent::AppInstallProgress {
                    app_id: app_id.clone(),
                    stage,
                    received,
                    total,
                });
            };
            let outcome = self
                .apps()
                .install_from_store(id, Some(store), expected_sha256, &mut progress)
                .await?;
            let report = install_report(outcome);
            if let Some(app) = self.app_status(&report.app_id).await {
                self.emit(CoreEvent::AppStateChanged { app });
            }
            if report_to_store && report.outcome == AppInstallOutcome::Installed {
                self.report_to_store(&report.app_id, true).await;
            }
            Ok(report)
        }

        /// Tells the store the person installed (`true`) or removed the app `id` here, with
        /// their store token when they gave one, so their other Osprey installs hear of it
        /// (the store's `installed`/`uninstalled` events). Best effort, within
        /// [`REPORT_TIMEOUT`]: the install or removal stands whatever the store says, and a
        /// failure is only logged.
        async fn report_to_store(&self, id: &str, installed: bool) {
            let Some(client) = self.apps().store().client() else {
                return;
            };
            let secrets = self.secrets();
            let token =
                tokio::task::spawn_blocking(move || crate::store::read_store_token(&secrets))
                    .await
                    .ok()
                    .flatten();
            let Some(token) = token else { return };
            match tokio::time::timeout(REPORT_TIMEOUT, client.record_install(id, installed, &token))
                .await
            {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!(app = %id, "could not tell the store about it: {error}");
                }
                Err(_) => tracing::warn!(app = %id, "the store did not answer about it in time"),
            }
        }

        /// Every installed app as the installer lists it (flags, pending permissions, path).
        pub async fn installed_apps(&self) -> Vec<InstalledApp> {
            let installer = self.apps().installer().clone();
            tokio::task::spawn_blocking(move || installer.list())
                .await
                .unwrap_or_default()
        }

        /// Stops the app if it runs and removes it with its data, logs and any staged update
        /// (a sideloaded app loses its link only).
        pub async fn uninstall_app(&self, id: &str) -> CoreResult<()> {
            self.remove_app(id, true).await
        }

        /// [`Core::uninstall_app`]; `report_to_store`: whether the store hears of it (not when
        /// the store itself pushed the removal). Sideloaded apps never reach the store.
        pub(crate) async fn remove_app(&self, id: &str, report_to_store: bool) -> CoreResult<()> {
            let from_store = report_to_store
                && self
                    .installed_apps()
                    .await
                    .iter()
                    .any(|app| app.manifest.id == id && !app.sideloaded);
            self.stop_and_uninstall(id).await?;
            if from_store {
                self.report_to_store(id, false).await;
            }
            // The removal hook asked the app's OAuth provider to revoke its grant.
            self.accounts().finish_revocations().await;
            Ok(())
        }

        async fn stop_and_uninstall(&self, id: &str) -> CoreResult<()> {
            if self.apps().supervisor().is_running() {
                // Not running is fine: uninstalling a stopped app is the usual case.
                let _ = self.apps().supervisor().stop(id).await;
            }
            let installer = self.apps().installer().clone();
            let owned = id.to_string();
            blocking(move || installer.uninstall(&owned)).await?;
            self.apps().traffic().forget(id);
            Ok(())
        }

        /// The app's last `limit` gRPC calls (all it kept when None), oldest first, as the
        /// inspector kept them. The
        /// Osprey that supervises the apps keeps them: this one when it does, else the one
        /// answering the control socket (the desktop or `osprey daemon`).
        pub async fn app_traffic(&self, id: &str, limit: Option<usize>) -> CoreResult<AppTraffic> {
            let limit = limit.unwrap_or(osprey_rpc::inspect::EXCHANGES_KEPT);
            if !self
                .installed_apps()
                .await
                .iter()
                .any(|app| app.manifest.id == id)
            {
                return Err(CoreError::new(
                    UiErrorCode::NotInstalled,
                    format!("no installed app `{id}`"),
                ));
            }
            if self.apps().supervisor().is_running() {
                return Ok(self.local_app_traffic(id, limit));
            }
            let request = serde_json::json!({"op": "app.inspect", "id": id, "limit": limit});
            let answer = crate::control::request(self.data_dir(), &request)
                .await
                .map_err(|error| match error {
                    crate::control::ControlError::NotRunning(_) => {
                        CoreError::new(UiErrorCode::NotRunning, error.to_string())
                    }
                    crate::control::ControlError::Io(_) => {
                        CoreError::new(UiErrorCode::Io, error.to_string())
                    }
                })?;
            if answer["ok"] != true {
                return Err(CoreError::new(
                    UiErrorCode::Internal,
                    format!(
                        "the running Osprey refused: {}",
                        answer["message"].as_str().unwrap_or("no reason given")
                    ),
                ));
            }
            serde_json::from_value(answer["traffic"].clone()).map_err(|error| {
                CoreError::new(
                    UiErrorCode::Internal,
                    format!("the running Osprey's answer is not traffic: {error}"),
                )
            })
        }

        /// What this process's inspector kept of the app (see [`Core::app_traffic`]).
        pub fn local_app_traffic(&self, id: &str, limit: usize) -> AppTraffic {
            let exchanges = self
                .apps()
                .traffic()
                .recent(id, limit)
                .into_iter()
                .map(|exchange| AppExchange {
                    id: exchange.id,
                    method: exchange.method,
                    started_at_ms: exchange.started_at_ms,
                    duration_ms: exchange.duration_ms,
                    status: exchange.status,
                    message: exchange.message,
                    request_bytes: exchange.request_bytes,
                    response_bytes: exchange.response_bytes,
                    request: exchange.request,
                    response: exchange.response,
                })
                .collect();
            AppTraffic {
                app_id: id.to_string(),
                exchanges,
                calls_kept: osprey_rpc::inspect::EXCHANGES_KEPT as u32,
                bytes_kept: osprey_rpc::inspect::BYTES_KEPT as u32,
            }
        }

        /// Links a project directory in as an app, without signatures (for developers): runs
        /// its `build` step when the manifest has one, links it, and starts it once (here, or
        /// in the running desktop or daemon); an app that does not start loses its link again,
        /// so a broken project never sits among the apps.
        pub async fn sideload_app(&self, dir: &std::path::Path) -> CoreResult<Manifest> {
            let installer = self.apps().installer().clone();
            std::fs::create_dir_all(installer.apps_dir())
                .with_context(|| format!("creating {}", installer.apps_dir().display()))?;
            let dir = dir.to_path_buf();
            let manifest = blocking(move || installer.sideload(&dir)).await?;
            if let Err(why) = self.first_launch(&manifest.id).await {
                let installer = self.apps().installer().clone();
                let id = manifest.id.clone();
                let _ = blocking(move || installer.unsideload(&id)).await;
                return Err(CoreError::new(
                    UiErrorCode::LaunchFailed,
                    format!(
                        "{} was linked but did not start, so the link was removed: {why}. Fix \
                         the project and sideload it again",
                        manifest.id
                    ),
                ));
            }
            Ok(manifest)
        }

        /// Starts a freshly sideloaded app once: under this core's supervisor when apps run
        /// here, else through the running desktop or daemon, else under a supervisor of its own
        /// for the check (stopped again afterwards).
        async fn first_launch(&self, id: &str) -> Result<(), String> {
            if self.apps().supervisor().is_running() {
                return self
                    .apps()
                    .supervisor()
                    .launch(id)
                    .await
                    .map(|_| ())
                    .map_err(|error| error.to_string());
            }
            let lease = self
                .reach_app_tools(&[id.to_string()], std::time::Duration::from_secs(30), true)
                .await
                .map_err(|error| format!("{error:#}"))?;
            let failure = lease
                .failures
                .iter()
                .find(|(app, _)| app == id)
                .map(|(_, why)| why.clone());
            lease.release().await;
            failure.map_or(Ok(()), Err)
        }

        /// Removes a sideload link; the project directory is not touched.
        pub async fn unsideload_app(&self, id: &str) -> CoreResult<()> {
            if self.apps().supervisor().is_running() {
                let _ = self.apps().supervisor().stop(id).await;
            }
            let installer = self.apps().installer().clone();
            let owned = id.to_string();
            blocking(move || installer.unsideload(&owned)).await
        }

        /// Applies a staged update's new permissions (the person approved them) and restarts the
        /// app on the new version when apps run.
        pub async fn approve_app_update(&self, id: &str) -> CoreResult<AppStatus> {
            let installer = self.apps().installer().clone();
            let owned = id.to_string();
            blocking(move || installer.approve_update(&owned)).await?;
            if self.apps().supervisor().is_running()
                && let Err(error) = self.apps().supervisor().reload(id, None).await
            {
                tracing::warn!(app = %id, "updated but not restarted: {error}");
            }
            self.changed(id).await
        }

        /// Drops a staged update; the installed version keeps running.
        pub async fn reject_app_update(&self, id: &str) -> CoreResult<AppStatus> {
            let installer = self.apps().installer().clone();
            let owned = id.to_string();
            blocking(move || installer.reject_update(&owned)).await?;
            self.changed(id).await
        }

        async fn changed(&self, id: &str) -> CoreResult<AppStatus> {
            let app = self.app_status(id).await.ok_or_else(|| {
                CoreError::new(
                    UiErrorCode::NotInstalled,
                    format!("{id} is no longer installed"),
                )
            })?;
            self.emit(CoreEvent::AppStateChanged { app: app.clone() });
            Ok(app)
        }

        /// Serves one request of an app's UI window. The app must be installed, provide `ui`
        /// and be running (its `/api/*` needs the process; static files are served from its
        /// `ui/` dir with traversal, symlinks and oversize files refused by `osprey_apps::ui`).
        pub async fn serve_app_ui(&self, id: &str, request: UiRequest) -> UiResponse {
            let Some(app) = self.app_status(id).await else {
                return UiResponse::error(404, &format!("no installed app `{id}`"));
            };
            if !app.has_ui {
                return UiResponse::error(404, &format!("{} has no UI", app.name));
            }
            let Ok(Some((_manifest, channel))) = self.apps().supervisor().channel(id).await else {
                return UiResponse::error(
                    503,
                    &format!("{} is not running: start it from the Apps page", app.name),
                );
            };
            // The id matched an installed app, so it names a directory inside the apps dir.
            let dir = self.apps().apps_dir().join(&app.id);
            osprey_apps::ui::serve(&dir, channel, request).await
        }
    }

    fn supervisor_event_app(event: &osprey_apps::supervisor::SupervisorEvent) -> Option<String> {
        use osprey_apps::supervisor::SupervisorEvent as Event;
        Some(match event {
            Event::Launched { id, .. }
            | Event::Failed { id, .. }
            | Event::Restarted { id, .. }
            | Event::GaveUp { id, .. }
            | Event::Stopped { id } => id.clone(),
            #[allow(unreachable_patterns)]
            _ => return None,
        })
    }
}

/// Without the app runtime (Windows for now) there are no apps to show.
#[cfg(not(unix))]
impl Core {
    pub async fn app_statuses(&self) -> Vec<AppStatus> {
        Vec::new()
    }

    pub async fn app_status(&self, _id: &str) -> Option<AppStatus> {
        None
    }

    pub fn forward_app_events(&self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async {})
    }

    pub async fn install_app(
        &self,
        source: &str,
        _store: Option<String>,
    ) -> CoreResult<osprey_types::AppInstallReport> {
        Err(unsupported(source))
    }

    pub async fn uninstall_app(&self, id: &str) -> CoreResult<()> {
        Err(unsupported(id))
    }

    pub async fn installed_apps(&self) -> Vec<osprey_apps::InstalledApp> {
        Vec::new()
    }

    pub async fn sideload_app(&self, dir: &std::path::Path) -> CoreResult<osprey_apps::Manifest> {
        Err(unsupported(&dir.display().to_string()))
    }

    pub async fn approve_app_update(&self, id: &str) -> CoreResult<AppStatus> {
        Err(unsupported(id))
    }

    pub async fn unsideload_app(&self, id: &str) -> CoreResult<()> {
        Err(unsupported(id))
    }

    pub async fn reject_app_update(&self, id: &str) -> CoreResult<AppStatus> {
        Err(unsupported(id))
    }

    pub async fn app_traffic(
        &self,
        id: &str,
        _limit: Option<usize>,
    ) -> CoreResult<osprey_types::AppTraffic> {
        Err(unsupported(id))
    }

    pub async fn install_store_app(&self, id: &str) -> CoreResult<osprey_types::AppInstallReport> {
        Err(unsupported(id))
    }

    pub async fn install_store_app_expecting(
        &self,
        id: &str,
        _expected_sha256: Option<&str>,
    ) -> CoreResult<osprey_types::AppInstallReport> {
        Err(unsupported(id))
    }

    pub async fn serve_app_ui(&self, id: &str, _request: UiRequest) -> UiResponse {
        UiResponse::error(501, &unsupported(id).to_string())
    }
}

#[cfg(not(unix))]
fn unsupported(what: &str) -> crate::CoreError {
    crate::CoreError::new(
        osprey_types::UiErrorCode::NotSupported,
        format!("apps are not supported on this platform yet ({what})"),
    )
}

#[cfg(not(unix))]
use crate::CoreResult;

#[cfg(all(test, unix))]
mod tests {
    use osprey_apps::install::InstalledApp;
    use osprey_apps::manifest::Manifest;
    use osprey_apps::supervisor::AppState;
    use osprey_types::AppRunState;

    use super::unix::status;
    use crate::apps::LAUNCHING;

    fn installed(quarantined: Option<&str>) -> InstalledApp {
        let manifest = Manifest::parse(
            br#"{"id": "notes", "name": "Notes", "version": "2.0.0", "provides": ["ui"]}"#,
        )
        .unwrap();
        InstalledApp {
            manifest,
            path: "/apps/notes".into(),
            sideloaded: false,
            quarantined: quarantined.map(String::from),
            pending_permissions: Some(vec!["network:api.example.com".into()]),
        }
    }

    fn report(code: &str, message: &str) -> Option<(String, String)> {
        Some((code.to_string(), message.to_string()))
    }

    #[test]
    fn each_source_of_state_maps_to_what_the_page_shows() {
        let app = installed(None);
        let cases = [
            (
                Some(AppState::Running { pid: 7 }),
                None,
                AppRunState::Running,
                None,
            ),
            (
                Some(AppState::Restarting),
                None,
                AppRunState::Restarting,
                None,
            ),
            (
                Some(AppState::GaveUp),
                None,
                AppRunState::GaveUp,
                Some("failed too often"),
            ),
            (None, report(LAUNCHING, ""), AppRunState::Launching, None),
            (
                None,
                report(
                    "revocation_unavailable",
                    "the revocation list is 9 days old",
                ),
                AppRunState::RevocationUnavailable,
                Some("9 days old"),
            ),
            (
                None,
                report("binary_invalid", "not an executable"),
                AppRunState::Failed,
                Some("not an executable"),
            ),
            (None, None, AppRunState::Stopped, None),
        ];
        for (supervised, launch, state, reason) in cases {
            let shown = status(&app, supervised.as_ref(), launch);
            assert_eq!(shown.state, state);
            match reason {
                Some(part) => assert!(
                    shown.reason.as_deref().is_some_and(|r| r.contains(part)),
                    "{shown:?}"
                ),
                None => assert_eq!(shown.reason, None),
            }
            assert!(shown.has_ui);
            assert_eq!(
                shown.pending_permissions,
                Some(vec!["network:api.example.com".to_string()])
            );
        }
    }

    #[test]
    fn quarantine_wins_over_a_stale_report() {
        let app = installed(Some("revoked: malware"));
        let shown = status(&app, None, report("revocation_unavailable", "old list"));
        assert_eq!(shown.state, AppRunState::Quarantined);
        assert_eq!(shown.reason.as_deref(), Some("revoked: malware"));
    }
}
