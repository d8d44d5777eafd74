//! Installed apps' tools in a short-lived process (`osprey tools`, `osprey tool <app tool>`).
//! The apps of a data folder run under one supervisor. When a long-running Osprey (the desktop
//! app or `osprey daemon`) holds the folder, it is asked over the control socket to launch each
//! app (nothing happens to one already running), and this process dials the app's own socket,
//! checking that the process serving it is the pid the supervisor reported, and registers the
//! app's tools in its own registry. When none runs, this process claims the folder and launches
//! the apps under a supervisor of its own, stopped by [`AppToolsLease::release`]. Either way a
//! call goes through this process's registry: hooks, origin rules, approval, safeguard, audit.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::Core;
use crate::control::{self, ControlError};
use crate::services::FolderLock;

/// How long dialling a running app's socket may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// The apps reached for this process, and what became of each.
#[must_use = "release it: apps this process launched run until then"]
pub struct AppToolsLease {
    core: Core,
    /// Set when this process launched the apps itself (no running Osprey held the folder).
    own: Option<FolderLock>,
    /// The tools each app brought into this process's registry, by app id.
    pub tools: BTreeMap<String, Vec<String>>,
    /// `(app id, why)` for each app that could not be reached, or whose tool was refused.
    pub failures: Vec<(String, String)>,
}

impl std::fmt::Debug for AppToolsLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppToolsLease")
            .field("own", &self.own.is_some())
            .field("tools", &self.tools)
            .field("failures", &self.failures)
            .finish()
    }
}

impl AppToolsLease {
    /// Whether the apps run under this process's own supervisor (no desktop or daemon ran).
    pub fn launched_here(&self) -> bool {
        self.own.is_some()
    }

    /// The app whose tool `name` is, if one of the reached apps brought it.
    pub fn app_of(&self, name: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|(_, tools)| tools.iter().any(|tool| tool == name))
            .map(|(app, _)| app.as_str())
    }

    /// Stops the apps this process launched and releases the data folder; apps of a running
    /// Osprey keep running.
    pub async fn release(mut self) {
        for tools in self.tools.values() {
            for tool in tools {
                self.core.registry().unregister(tool);
            }
        }
        if let Some(lock) = self.own.take() {
            self.core.stop_apps().await;
            drop(lock);
        }
    }
}

impl Core {
    /// The installed, non-quarantined app whose manifest declares the tool `name` (`tool:NAME`).
    pub async fn app_declaring(&self, name: &str) -> Option<String> {
        self.installed_apps()
            .await
            .into_iter()
            .find(|app| app.manifest.tools().any(|tool| tool == name))
            .map(|app| app.manifest.id)
    }

    /// Brings the tools of the installed apps `ids` into this core's registry, through the
    /// running desktop app or `osprey daemon` when one holds the data folder (asking it to
    /// launch those not running when `launch`, else passing them over), else by launching them
    /// here (claiming the folder: another Osprey holding it without a control socket fails with
    /// [`crate::FolderInUse`]). Each app gets up to `wait`; one that is not there by then, or
    /// fails, is in [`AppToolsLease::failures`].
    pub async fn reach_app_tools(
        &self,
        ids: &[String],
        wait: Duration,
        launch: bool,
    ) -> anyhow::Result<AppToolsLease> {
        let mut lease = AppToolsLease {
            core: self.clone(),
            own: None,
            tools: BTreeMap::new(),
            failures: Vec::new(),
        };
        if ids.is_empty() {
            return Ok(lease);
        }
        match control::request(self.data_dir(), &json!({"op": "ping"})).await {
            Ok(_) => {
                let running = if launch {
                    None
                } else {
                    Some(self.running_apps().await?)
                };
                let running = &running;
                let reached = ids.iter().map(|id| async move {
                    // Without `launch`, only the apps serving now are reached.
                    let pid = match running.as_ref().map(|running| running.get(id)) {
                        None => None,
                        Some(Some(Some(pid))) => Some(*pid),
                        Some(state) => {
                            let state = if state.is_some() {
                                "not serving now"
                            } else {
                                "not started"
                            };
                            let why = format!(
                                "{state} in the running Osprey (`osprey app launch {id}` starts it)"
                            );
                            return (id.clone(), Err(why));
                        }
                    };
                    let outcome = tokio::time::timeout(wait, self.reach_running_app(id, pid))
                        .await
                        .unwrap_or_else(|_| Err(format!("not ready within {}s", wait.as_secs())));
                    (id.clone(), outcome)
                });
                for (id, outcome) in futures::future::join_all(reached).await {
                    match outcome {
                        Ok((tools, refused)) => {
                            lease
                                .failures
                                .extend(refused.into_iter().map(|(tool, why)| {
                                    (
                                        id.clone(),
                                        format!("its tool `{tool}` is not offered: {why}"),
                                    )
                                }));
                            lease.tools.insert(id, tools);
                        }
                        Err(why) => lease.failures.push((id, why)),
                    }
                }
            }
            Err(ControlError::NotRunning(_)) => {
                lease.own = Some(FolderLock::claim(self.data_dir(), "osprey tool")?);
                let launched = tokio::time::timeout(wait, self.apps().launch_here(ids)).await;
                match launched {
                    Ok(outcomes) => {
                        for (id, outcome) in outcomes {
                            match outcome {
                                Ok(_) => {
                                    let tools = self.apps().tools_of(&id);
                                    lease.tools.insert(id, tools);
                                }
                                Err(error) => lease.failures.push((id, error.to_string())),
                            }
                        }
                    }
                    Err(_) => {
                        // Whatever did start in time brought its tools; the rest are late.
                        for id in ids {
                            let tools = self.apps().tools_of(id);
                            if tools.is_empty() {
                                lease.failures.push((
                                    id.clone(),
                                    format!("not ready within {}s", wait.as_secs()),
                                ));
                            } else {
                                lease.tools.insert(id.clone(), tools);
                            }
                        }
                    }
                }
            }
            Err(error) => return Err(error.into()),
        }
        Ok(lease)
    }

    /// Each app the running Osprey supervises: its pid while it runs.
    async fn running_apps(&self) -> anyhow::Result<BTreeMap<String, Option<u32>>> {
        let answer = control::request(self.data_dir(), &json!({"op": "app.status"})).await?;
        Ok(answer["apps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|app| {
                let pid = app["pid"].as_u64().and_then(|pid| u32::try_from(pid).ok());
                Some((app["id"].as_str()?.to_string(), pid))
            })
            .collect())
    }

    /// Dials the socket of `id` as run by the running Osprey (`pid`, else it is asked to launch
    /// the app, which answers with the pid of one already running), checking the pid, and
    /// registers its tools here: `(registered, refused with why)`.
    async fn reach_running_app(
        &self,
        id: &str,
        pid: Option<u32>,
    ) -> Result<(Vec<String>, Vec<(String, String)>), String> {
        let pid = match pid {
            Some(pid) => pid,
            None => {
                let answer =
                    control::request(self.data_dir(), &json!({"op": "app.launch", "id": id}))
                        .await
                        .map_err(|error| error.to_string())?;
                if answer["ok"] != true {
                    return Err(format!(
                        "{}: {}",
                        answer["code"].as_str().unwrap_or("failed"),
                        answer["message"].as_str().unwrap_or_default()
                    ));
                }
                answer["pid"]
                    .as_u64()
                    .and_then(|pid| u32::try_from(pid).ok())
                    .ok_or("the running Osprey reported no pid for it")?
            }
        };
        let manifest = self
            .installed_apps()
            .await
            .into_iter()
            .find(|app| app.manifest.id == id)
            .map(|app| app.manifest)
            .ok_or("it is not installed")?;
        let socket = self
            .apps()
            .apps_dir()
            .join(id)
            .join(osprey_apps::layout::SOCKET_FILE);
        // This process does not supervise the app, so its calls are not the running Osprey's to
        // inspect.
        let channel = osprey_rpc::connect_checked(&socket, Some(pid), DIAL_TIMEOUT)
            .await
            .map(osprey_rpc::AppChannel::uninspected)
            .map_err(|error| format!("dialling it: {error}"))?;
        let registration =
            osprey_apps::provided_tools::register_tools(self.registry(), &manifest, channel, &[])
                .await
                .map_err(|error| error.to_string())?;
        Ok((registration.registered, registration.refused))
    }
}
