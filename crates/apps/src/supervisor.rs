//! The supervisor: a task that owns the running apps. It launches and stops them on request,
//! attaches their capabilities, checks each one every `health_interval` (process alive and a
//! gRPC health check with its deadline) and notices exits at once, restarts a failed app after a
//! backoff (`initial_backoff` doubling per restart in the last hour, capped at `max_backoff`),
//! and after `max_restarts` restarts within an hour gives up: the app's capabilities are
//! detached and a [`SupervisorEvent::GaveUp`] tells the UI.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::capabilities::CapabilityHost;
use crate::runtime::{Launcher, RunningApp};
use crate::{Error, Result};

const RESTART_WINDOW: Duration = Duration::from_secs(3600);

#[derive(Clone, Debug)]
pub struct SupervisorConfig {
    pub health_interval: Duration,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Restarts allowed within an hour before giving up.
    pub max_restarts: usize,
}

impl Default for SupervisorConfig {
    fn default() -> SupervisorConfig {
        SupervisorConfig {
            health_interval: Duration::from_secs(15),
            initial_backoff: Duration::from_secs(10),
            max_backoff: Duration::from_secs(300),
            max_restarts: 5,
        }
    }
}

/// What the supervisor tells its listeners (the UI, tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SupervisorEvent {
    Launched {
        id: String,
        pid: u32,
    },
    /// The app failed (`reason`); a restart is scheduled after `delay`.
    Failed {
        id: String,
        reason: String,
        delay: Duration,
    },
    Restarted {
        id: String,
        pid: u32,
    },
    /// Too many restarts: the app is stopped and its capabilities are gone.
    GaveUp {
        id: String,
        restarts: usize,
    },
    Stopped {
        id: String,
    },
}

/// The state of one supervised app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppState {
    Running {
        pid: u32,
    },
    /// Waiting to be restarted.
    Restarting,
    GaveUp,
}

enum Request {
    Launch(String, oneshot::Sender<Result<u32>>),
    Reload {
        id: String,
        suppress_within: Option<Duration>,
        reply: oneshot::Sender<Result<Reload>>,
    },
    Stop(String, oneshot::Sender<Result<()>>),
    Status(oneshot::Sender<Vec<(String, AppState)>>),
    Channel(
        String,
        oneshot::Sender<Option<(crate::manifest::Manifest, tonic::transport::Channel)>>,
    ),
}

/// What a reload did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reload {
    /// Started (it was not running) or restarted; the new pid.
    Started(u32),
    /// Skipped: the supervisor is restarting it, or (re)started it within the suppression
    /// window, so the file changes were its own doing.
    Suppressed,
}

/// A handle on the supervisor task. Cheap to clone; the task ends when the token is cancelled
/// (stopping every app) or every handle is dropped.
///
/// A handle can exist before its task runs ([`Supervisor::idle`], then [`Supervisor::run`]): the
/// composition root hands it to the `app` tool when it opens, without a runtime or processes,
/// and starts the task later. Until then (and after the task ended) requests fail at once with
/// `supervisor_stopped` instead of waiting.
#[derive(Clone)]
pub struct Supervisor {
    requests: Arc<std::sync::RwLock<Option<mpsc::Sender<Request>>>>,
    events: broadcast::Sender<SupervisorEvent>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").finish_non_exhaustive()
    }
}

impl Supervisor {
    /// Starts the task on the current tokio runtime and returns its handle.
    pub fn start(
        launcher: Launcher,
        host: Arc<dyn CapabilityHost>,
        config: SupervisorConfig,
        cancel: CancellationToken,
    ) -> Supervisor {
        let supervisor = Supervisor::idle();
        supervisor.run(launcher, host, config, cancel);
        supervisor
    }

    /// A handle with no task behind it yet: needs no runtime; requests fail with
    /// `supervisor_stopped` until [`Supervisor::run`].
    pub fn idle() -> Supervisor {
        let (events, _) = broadcast::channel(256);
        Supervisor {
            requests: Arc::new(std::sync::RwLock::new(None)),
            events,
        }
    }

    /// Starts the task behind this handle (and its clones) on the current tokio runtime. A task
    /// already behind it is replaced: it stops its apps once its requests channel closes.
    pub fn run(
        &self,
        launcher: Launcher,
        host: Arc<dyn CapabilityHost>,
        config: SupervisorConfig,
        cancel: CancellationToken,
    ) {
        let (requests, receiver) = mpsc::channel(64);
        let (exits, exit_receiver) = mpsc::unbounded_channel();
        let task = Task {
            launcher,
            host,
            config,
            apps: HashMap::new(),
            events: self.events.clone(),
            exits,
        };
        tokio::spawn(task.run(receiver, exit_receiver, cancel));
        *self.requests.write().unwrap_or_else(|e| e.into_inner()) = Some(requests);
    }

    /// Resolves once no task is behind this handle any more: after cancellation, when the task
    /// has stopped every app. At once for an idle handle.
    pub async fn stopped(&self) {
        let requests = self
            .requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(requests) = requests {
            requests.closed().await;
        }
    }

    /// Whether a task is behind this handle and still taking requests.
    pub fn is_running(&self) -> bool {
        self.requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|requests| !requests.is_closed())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<SupervisorEvent> {
        self.events.subscribe()
    }

    /// Launches an installed app and supervises it; returns its pid.
    pub async fn launch(&self, id: &str) -> Result<u32> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Launch(id.to_owned(), reply)).await?;
        answer.await.map_err(|_| gone())?
    }

    /// Restarts an app whose files changed (or starts it, if it is not running or was given up
    /// on). With `suppress_within`, a reload is skipped when the supervisor is already restarting
    /// the app or (re)started it less than that long ago: the watcher passes its debounce so the
    /// changes an install or a restart made do not restart the app twice.
    pub async fn reload(&self, id: &str, suppress_within: Option<Duration>) -> Result<Reload> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Reload {
            id: id.to_owned(),
            suppress_within,
            reply,
        })
        .await?;
        answer.await.map_err(|_| gone())?
    }

    /// Stops an app and stops supervising it.
    pub async fn stop(&self, id: &str) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Stop(id.to_owned(), reply)).await?;
        answer.await.map_err(|_| gone())?
    }

    /// The manifest and gRPC channel of a running app (for settings pushes and UI requests).
    pub async fn channel(
        &self,
        id: &str,
    ) -> Result<Option<(crate::manifest::Manifest, tonic::transport::Channel)>> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Channel(id.to_owned(), reply)).await?;
        answer.await.map_err(|_| gone())
    }

    pub async fn status(&self) -> Result<Vec<(String, AppState)>> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Status(reply)).await?;
        answer.await.map_err(|_| gone())
    }

    async fn send(&self, request: Request) -> Result<()> {
        let requests = self
            .requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(gone)?;
        requests.send(request).await.map_err(|_| gone())
    }
}

fn gone() -> Error {
    Error::LaunchFailed {
        id: String::new(),
        reason: "supervisor_stopped",
        message: "the supervisor is not running".into(),
    }
}

struct Supervised {
    running: Option<RunningApp>,
    /// When the current process was started.
    started_at: Instant,
    /// When each restart in the last hour happened.
    restarts: VecDeque<Instant>,
    restart_at: Option<Instant>,
    gave_up: bool,
}

struct Task {
    launcher: Launcher,
    host: Arc<dyn CapabilityHost>,
    config: SupervisorConfig,
    apps: HashMap<String, Supervised>,
    events: broadcast::Sender<SupervisorEvent>,
    /// Exit notices from the per-app watch tasks: (id, pid).
    exits: mpsc::UnboundedSender<(String, u32)>,
}

impl Task {
    async fn run(
        mut self,
        mut requests: mpsc::Receiver<Request>,
        mut exits: mpsc::UnboundedReceiver<(String, u32)>,
        cancel: CancellationToken,
    ) {
        let mut health = tokio::time::interval(self.config.health_interval);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let next_restart = self.apps.values().filter_map(|a| a.restart_at).min();
            let restart_due = async {
                match next_restart {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = cancel.cancelled() => break,
                request = requests.recv() => match request {
                    Some(request) => self.handle(request).await,
                    None => break,
                },
                Some((id, pid)) = exits.recv() => {
                    let current = self.apps.get(&id).and_then(|a| a.running.as_ref()).map(RunningApp::pid);
                    if current == Some(pid) {
                        self.failed(&id, "the process exited".into()).await;
                    }
                }
                _ = health.tick() => self.check_health().await,
                () = restart_due => self.restart_due().await,
            }
        }
        let ids: Vec<String> = self.apps.keys().cloned().collect();
        for id in ids {
            self.stop_app(&id).await;
        }
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::Launch(id, reply) => {
                let result = self.launch(&id).await;
                let _ = reply.send(result);
            }
            Request::Reload {
                id,
                suppress_within,
                reply,
            } => {
                let result = self.reload(&id, suppress_within).await;
                let _ = reply.send(result);
            }
            Request::Stop(id, reply) => {
                let result = if self.apps.contains_key(&id) {
                    self.stop_app(&id).await;
                    Ok(())
                } else {
                    Err(Error::NotInstalled(format!("{id} is not running")))
                };
                let _ = reply.send(result);
            }
            Request::Channel(id, reply) => {
                let running = self
                    .apps
                    .get(&id)
                    .and_then(|app| app.running.as_ref())
                    .map(|running| (running.manifest().clone(), running.channel()));
                let _ = reply.send(running);
            }
            Request::Status(reply) => {
                let mut status: Vec<(String, AppState)> = self
                    .apps
                    .iter()
                    .map(|(id, app)| {
                        let state = match (&app.running, app.gave_up) {
                            (_, true) => AppState::GaveUp,
                            (Some(running), false) => AppState::Running { pid: running.pid() },
                            (None, false) => AppState::Restarting,
                        };
                        (id.clone(), state)
                    })
                    .collect();
                status.sort_by(|a, b| a.0.cmp(&b.0));
                let _ = reply.send(status);
            }
        }
    }

    async fn launch(&mut self, id: &str) -> Result<u32> {
        if let Some(app) = self.apps.get(id)
            && let Some(running) = &app.running
        {
            return Ok(running.pid());
        }
        let running = self.start(id).await?;
        let pid = running.pid();
        self.apps.insert(
            id.to_owned(),
            Supervised {
                running: Some(running),
                started_at: Instant::now(),
                restarts: VecDeque::new(),
                restart_at: None,
                gave_up: false,
            },
        );
        let _ = self.events.send(SupervisorEvent::Launched {
            id: id.to_owned(),
            pid,
        });
        Ok(pid)
    }

    async fn reload(&mut self, id: &str, suppress_within: Option<Duration>) -> Result<Reload> {
        let Some(app) = self.apps.get_mut(id) else {
            return self.launch(id).await.map(Reload::Started);
        };
        if app.gave_up {
            // New files are a new chance (a developer fixed the crash).
            self.apps.remove(id);
            return self.launch(id).await.map(Reload::Started);
        }
        if let Some(window) = suppress_within
            && (app.restart_at.is_some() || app.started_at.elapsed() < window)
        {
            return Ok(Reload::Suppressed);
        }
        if let Some(running) = app.running.take() {
            running.stop().await;
        }
        match self.start(id).await {
            Ok(running) => {
                let pid = running.pid();
                if let Some(app) = self.apps.get_mut(id) {
                    app.running = Some(running);
                    app.started_at = Instant::now();
                    app.restart_at = None;
                }
                let _ = self.events.send(SupervisorEvent::Restarted {
                    id: id.to_owned(),
                    pid,
                });
                Ok(Reload::Started(pid))
            }
            Err(error) => {
                self.failed(id, error.to_string()).await;
                Err(error)
            }
        }
    }

    /// Launches, attaches capabilities, and watches for the exit.
    async fn start(&self, id: &str) -> Result<RunningApp> {
        let running = self.launcher.launch(id).await?;
        if let Err(error) = self.host.attach(&running).await {
            running.stop().await;
            return Err(error);
        }
        let mut exit = running.exit_watch();
        let exits = self.exits.clone();
        let (id, pid) = (id.to_owned(), running.pid());
        tokio::spawn(async move {
            if exit.wait_for(Option::is_some).await.is_ok() {
                let _ = exits.send((id, pid));
            }
        });
        Ok(running)
    }

    async fn check_health(&mut self) {
        // All at once: one hung app must not delay the others' checks by its 5 s deadline.
        let checks = self.apps.iter().filter_map(|(id, app)| {
            app.running.as_ref().map(|running| async move {
                running
                    .health()
                    .await
                    .err()
                    .map(|error| (id.clone(), error.to_string()))
            })
        });
        let failed: Vec<(String, String)> = futures::future::join_all(checks)
            .await
            .into_iter()
            .flatten()
            .collect();
        for (id, reason) in failed {
            self.failed(&id, reason).await;
        }
    }

    /// The app died or is unhealthy: stop what is left of it, then schedule a restart or give up.
    async fn failed(&mut self, id: &str, reason: String) {
        let Some(app) = self.apps.get_mut(id) else {
            return;
        };
        if let Some(running) = app.running.take() {
            running.stop().await;
        }
        let now = Instant::now();
        while app
            .restarts
            .front()
            .is_some_and(|at| now.duration_since(*at) > RESTART_WINDOW)
        {
            app.restarts.pop_front();
        }
        if app.restarts.len() >= self.config.max_restarts {
            app.gave_up = true;
            app.restart_at = None;
            let restarts = app.restarts.len();
            tracing::warn!(app = id, restarts, "too many restarts: giving up");
            self.host.detach(id);
            let _ = self.events.send(SupervisorEvent::GaveUp {
                id: id.to_owned(),
                restarts,
            });
            return;
        }
        let exponent = u32::try_from(app.restarts.len())
            .unwrap_or(u32::MAX)
            .min(16);
        let delay = self
            .config
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(exponent))
            .min(self.config.max_backoff);
        app.restart_at = Some(now + delay);
        tracing::warn!(app = id, ?delay, "app failed ({reason}); restarting");
        let _ = self.events.send(SupervisorEvent::Failed {
            id: id.to_owned(),
            reason,
            delay,
        });
    }

    async fn restart_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .apps
            .iter()
            .filter(|(_, app)| app.restart_at.is_some_and(|at| at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if let Some(app) = self.apps.get_mut(&id) {
                app.restart_at = None;
                app.restarts.push_back(Instant::now());
            }
            match self.start(&id).await {
                Ok(running) => {
                    let pid = running.pid();
                    if let Some(app) = self.apps.get_mut(&id) {
                        app.running = Some(running);
                        app.started_at = Instant::now();
                    }
                    let _ = self.events.send(SupervisorEvent::Restarted { id, pid });
                }
                Err(error) => self.failed(&id, error.to_string()).await,
            }
        }
    }

    async fn stop_app(&mut self, id: &str) {
        if let Some(app) = self.apps.remove(id) {
            self.host.detach(id);
            if let Some(running) = app.running {
                running.stop().await;
            }
            let _ = self
                .events
                .send(SupervisorEvent::Stopped { id: id.to_owned() });
        }
    }
}
