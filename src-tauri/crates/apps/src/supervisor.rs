//! The supervisor: a task that owns the running apps. Each supervised app has a task of its own
//! (launches, stops, health checks, restarts of one app never wait on another's), and the
//! supervisor routes requests to them and answers status from what they publish. Launches run
//! concurrently, at most `max_concurrent_launches` at once; an app being launched shows as
//! [`AppState::Launching`], so one app's slow start or `startup_timeout` delays no other. Each app
//! task attaches the app's capabilities, checks it every `health_interval` (process alive and a
//! gRPC health check with its deadline) and notices exits at once, restarts a failed app after a
//! backoff (`initial_backoff` doubling per restart in the last hour, capped at `max_backoff`),
//! and after `max_restarts` restarts within an hour gives up: the app's capabilities are
//! detached and a [`SupervisorEvent::GaveUp`] tells the UI.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, broadcast, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::capabilities::CapabilityHost;
use crate::manifest::Manifest;
use crate::runtime::{Launcher, RunningApp};
use crate::sandbox::SandboxReport;
use crate::{Error, Result};

const RESTART_WINDOW: Duration = Duration::from_secs(3600);

#[derive(Clone, Debug)]
pub struct SupervisorConfig {
    pub health_interval: Duration,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Restarts allowed within an hour before giving up.
    pub max_restarts: usize,
    /// Launches in progress at once (an app waiting for its socket holds one).
    pub max_concurrent_launches: usize,
}

impl Default for SupervisorConfig {
    fn default() -> SupervisorConfig {
        SupervisorConfig {
            health_interval: Duration::from_secs(15),
            initial_backoff: Duration::from_secs(10),
            max_backoff: Duration::from_secs(300),
            max_restarts: 5,
            max_concurrent_launches: default_launch_slots(),
        }
    }
}

/// Twice the CPUs, at least 8: a launch mostly waits (for exec, the runtime's start, the socket),
/// so more launches than CPUs overlap well; the bound keeps 150 apps from all starting at once.
fn default_launch_slots() -> usize {
    std::thread::available_parallelism()
        .map_or(8, |cpus| cpus.get() * 2)
        .clamp(8, 64)
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
    /// Being started (or waiting for a launch slot): not serving yet.
    Launching,
    Running {
        pid: u32,
    },
    /// Waiting to be restarted.
    Restarting,
    GaveUp,
}

/// One supervised app as [`Supervisor::apps`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppStatus {
    pub id: String,
    pub state: AppState,
    /// What the OS sandbox enforces for the running process (`None` while not running).
    pub sandbox: Option<SandboxReport>,
}

enum Request {
    Launch(String, oneshot::Sender<Result<u32>>),
    Reload {
        id: String,
        suppress_within: Option<Duration>,
        reply: oneshot::Sender<Result<Reload>>,
    },
    Stop(String, oneshot::Sender<Result<()>>),
    Status(oneshot::Sender<Vec<AppStatus>>),
    Channel(
        String,
        oneshot::Sender<Option<(Manifest, osprey_rpc::AppChannel)>>,
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
        let (ended, ended_receiver) = mpsc::unbounded_channel();
        let slots = Arc::new(Semaphore::new(config.max_concurrent_launches.max(1)));
        let task = Task {
            context: Arc::new(Context {
                launcher,
                host,
                config,
                events: self.events.clone(),
                slots,
            }),
            apps: HashMap::new(),
            stopping: HashMap::new(),
            generation: 0,
            ended,
            apps_cancel: CancellationToken::new(),
        };
        tokio::spawn(task.run(receiver, ended_receiver, cancel));
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
        self.ask(|reply| Request::Launch(id.to_owned(), reply))
            .await?
    }

    /// Restarts an app whose files changed (or starts it, if it is not running or was given up
    /// on). With `suppress_within`, a reload is skipped when the supervisor is already restarting
    /// the app or (re)started it less than that long ago: the watcher passes its debounce so the
    /// changes an install or a restart made do not restart the app twice.
    pub async fn reload(&self, id: &str, suppress_within: Option<Duration>) -> Result<Reload> {
        self.ask(|reply| Request::Reload {
            id: id.to_owned(),
            suppress_within,
            reply,
        })
        .await?
    }

    /// Stops an app and stops supervising it.
    pub async fn stop(&self, id: &str) -> Result<()> {
        self.ask(|reply| Request::Stop(id.to_owned(), reply))
            .await?
    }

    /// The manifest and gRPC channel of a running app (for settings pushes and UI requests).
    pub async fn channel(
        &self,
        id: &str,
    ) -> Result<Option<(crate::manifest::Manifest, osprey_rpc::AppChannel)>> {
        self.ask(|reply| Request::Channel(id.to_owned(), reply))
            .await
    }

    /// Each supervised app's state, by id.
    pub async fn status(&self) -> Result<Vec<(String, AppState)>> {
        Ok(self
            .apps()
            .await?
            .into_iter()
            .map(|app| (app.id, app.state))
            .collect())
    }

    /// Each supervised app's state and sandbox, by id.
    pub async fn apps(&self) -> Result<Vec<AppStatus>> {
        self.ask(Request::Status).await
    }

    /// Sends the request `make` builds around a reply slot and waits for the answer. The task
    /// answers, or drops unanswered, every request it takes; but a send that got its slot just
    /// before the task dropped its end of the channel lands after the channel was emptied and
    /// would sit there unanswered for as long as this handle lives (seen: a launch right after
    /// a shutdown waited for ever). So the wait also ends when the task's end is gone.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> Result<T> {
        let requests = self
            .requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(gone)?;
        let (reply, mut answer) = oneshot::channel();
        requests.send(make(reply)).await.map_err(|_| gone())?;
        tokio::select! {
            biased;
            answered = &mut answer => answered.map_err(|_| gone()),
            // Every reply is given or dropped before the task lets go of its end; one more
            // look catches an answer that came in with the close.
            () = requests.closed() => answer.try_recv().map_err(|_| gone()),
        }
    }
}

fn gone() -> Error {
    Error::LaunchFailed {
        id: String::new(),
        reason: "supervisor_stopped",
        message: "the supervisor is not running".into(),
    }
}

/// What the supervisor task and every app task share.
struct Context {
    launcher: Launcher,
    host: Arc<dyn CapabilityHost>,
    config: SupervisorConfig,
    events: broadcast::Sender<SupervisorEvent>,
    /// Launch slots (see [`SupervisorConfig::max_concurrent_launches`]).
    slots: Arc<Semaphore>,
}

impl Context {
    fn emit(&self, event: SupervisorEvent) {
        let _ = self.events.send(event);
    }
}

/// What an app task publishes for status requests (`None` once it no longer supervises).
#[derive(Clone)]
struct Snapshot {
    state: AppState,
    sandbox: Option<SandboxReport>,
    channel: Option<(Manifest, osprey_rpc::AppChannel)>,
}

type Published = Arc<Mutex<Option<Snapshot>>>;

enum AppRequest {
    Launch(oneshot::Sender<Result<u32>>),
    Reload {
        suppress_within: Option<Duration>,
        reply: oneshot::Sender<Result<Reload>>,
    },
    Stop(oneshot::Sender<Result<()>>),
}

/// The supervisor's hold on one app task.
struct AppHandle {
    generation: u64,
    requests: mpsc::UnboundedSender<AppRequest>,
    published: Published,
    /// Cancelled when the app task has ended (its process stopped).
    finished: CancellationToken,
}

struct Task {
    context: Arc<Context>,
    apps: HashMap<String, AppHandle>,
    /// App tasks told to stop and not finished yet: a new task for the same app waits for them.
    stopping: HashMap<String, CancellationToken>,
    generation: u64,
    /// App tasks that ended on their own (a first launch failed): (id, generation).
    ended: mpsc::UnboundedSender<(String, u64)>,
    /// Stops every app task at shutdown.
    apps_cancel: CancellationToken,
}

impl Task {
    async fn run(
        mut self,
        mut requests: mpsc::Receiver<Request>,
        mut ended: mpsc::UnboundedReceiver<(String, u64)>,
        cancel: CancellationToken,
    ) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                request = requests.recv() => match request {
                    Some(request) => self.route(request),
                    None => break,
                },
                Some((id, generation)) = ended.recv() => {
                    if self.apps.get(&id).is_some_and(|app| app.generation == generation) {
                        self.apps.remove(&id);
                    }
                }
            }
        }
        // Every app task stops its app (concurrently); the requests channel stays open until
        // they all have, so `Supervisor::stopped` means the processes are gone.
        self.apps_cancel.cancel();
        let finished: Vec<CancellationToken> = self
            .apps
            .values()
            .map(|app| app.finished.clone())
            .chain(self.stopping.values().cloned())
            .collect();
        let all_stopped = async {
            for token in finished {
                token.cancelled().await;
            }
        };
        tokio::pin!(all_stopped);
        loop {
            tokio::select! {
                () = &mut all_stopped => break,
                // A request sent while the apps stop is refused at once: dropping it drops its
                // reply, which the caller reads as `supervisor_stopped` instead of waiting.
                request = requests.recv() => if request.is_none() { break },
            }
        }
        drop(requests);
    }

    fn route(&mut self, request: Request) {
        match request {
            Request::Launch(id, reply) => self.forward(&id, AppRequest::Launch(reply)),
            Request::Reload {
                id,
                suppress_within,
                reply,
            } => self.forward(
                &id,
                AppRequest::Reload {
                    suppress_within,
                    reply,
                },
            ),
            Request::Stop(id, reply) => match self.apps.remove(&id) {
                Some(app) => {
                    self.stopping.insert(id.clone(), app.finished.clone());
                    if let Err(mpsc::error::SendError(AppRequest::Stop(reply))) =
                        app.requests.send(AppRequest::Stop(reply))
                    {
                        let _ =
                            reply.send(Err(Error::NotInstalled(format!("{id} is not running"))));
                    }
                }
                None => {
                    let _ = reply.send(Err(Error::NotInstalled(format!("{id} is not running"))));
                }
            },
            Request::Status(reply) => {
                let mut apps: Vec<AppStatus> = self
                    .apps
                    .iter()
                    .filter_map(|(id, app)| {
                        let snapshot = app
                            .published
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone()?;
                        Some(AppStatus {
                            id: id.clone(),
                            state: snapshot.state,
                            sandbox: snapshot.sandbox,
                        })
                    })
                    .collect();
                apps.sort_by(|a, b| a.id.cmp(&b.id));
                let _ = reply.send(apps);
            }
            Request::Channel(id, reply) => {
                let channel = self.apps.get(&id).and_then(|app| {
                    app.published
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .as_ref()
                        .and_then(|snapshot| snapshot.channel.clone())
                });
                let _ = reply.send(channel);
            }
        }
    }

    /// Hands `request` to the app's task, starting one if there is none (or it just ended).
    fn forward(&mut self, id: &str, request: AppRequest) {
        let request = match self.apps.get(id) {
            Some(app) => match app.requests.send(request) {
                Ok(()) => return,
                Err(mpsc::error::SendError(request)) => request,
            },
            None => request,
        };
        let app = self.spawn_app(id);
        // A fresh task's receiver is alive: the send cannot fail.
        let _ = app.requests.send(request);
    }

    fn spawn_app(&mut self, id: &str) -> &AppHandle {
        self.generation += 1;
        let previous = self
            .stopping
            .remove(id)
            .or_else(|| self.apps.get(id).map(|app| app.finished.clone()));
        self.stopping.retain(|_, finished| !finished.is_cancelled());
        let (requests, receiver) = mpsc::unbounded_channel();
        let published = Arc::new(Mutex::new(Some(Snapshot {
            state: AppState::Launching,
            sandbox: None,
            channel: None,
        })));
        let finished = CancellationToken::new();
        let actor = AppTask {
            id: id.to_owned(),
            context: Arc::clone(&self.context),
            published: Arc::clone(&published),
            running: None,
            launching: false,
            supervised: false,
            started_at: Instant::now(),
            restarts: VecDeque::new(),
            restart_at: None,
            gave_up: false,
        };
        tokio::spawn(actor.run(
            receiver,
            self.apps_cancel.child_token(),
            previous,
            finished.clone().drop_guard(),
            (self.ended.clone(), self.generation),
        ));
        self.apps.insert(
            id.to_owned(),
            AppHandle {
                generation: self.generation,
                requests,
                published,
                finished,
            },
        );
        &self.apps[id]
    }
}

/// Whether an app task goes on after a request.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    End,
    /// A first launch failed: end unless more requests are waiting (each is its own attempt).
    EndIfIdle,
}

/// One app's task: owns its process and its restart bookkeeping.
struct AppTask {
    id: String,
    context: Arc<Context>,
    published: Published,
    running: Option<RunningApp>,
    launching: bool,
    /// It has run under this task at least once (a failed first launch ends the task instead).
    supervised: bool,
    /// When the current process was started.
    started_at: Instant,
    /// When each restart in the last hour happened.
    restarts: VecDeque<Instant>,
    restart_at: Option<Instant>,
    gave_up: bool,
}

impl AppTask {
    async fn run(
        mut self,
        mut requests: mpsc::UnboundedReceiver<AppRequest>,
        cancel: CancellationToken,
        previous: Option<CancellationToken>,
        _finished: tokio_util::sync::DropGuard,
        (ended, generation): (mpsc::UnboundedSender<(String, u64)>, u64),
    ) {
        if let Some(previous) = previous {
            // The app's previous task is still stopping its process: its socket and pid file
            // must be gone before this one launches.
            previous.cancelled().await;
        }
        let interval = self.context.config.health_interval;
        let mut health = tokio::time::interval_at(Instant::now() + interval, interval);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let mut exit = self.running.as_ref().map(RunningApp::exit_watch);
            let exited = async {
                match exit.as_mut() {
                    Some(exit) => {
                        let _ = exit.wait_for(Option::is_some).await;
                    }
                    None => std::future::pending().await,
                }
            };
            let restart_at = self.restart_at;
            let restart_due = async {
                match restart_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let flow = tokio::select! {
                () = cancel.cancelled() => Flow::End,
                request = requests.recv() => match request {
                    Some(request) => self.handle(request, &cancel).await,
                    None => Flow::End,
                },
                () = exited => {
                    self.failed("the process exited".into()).await;
                    Flow::Continue
                }
                _ = health.tick() => {
                    self.check_health().await;
                    Flow::Continue
                }
                () = restart_due => {
                    self.restart(&cancel).await;
                    Flow::Continue
                }
            };
            match flow {
                Flow::Continue => {}
                Flow::EndIfIdle if !requests.is_empty() => {}
                Flow::End | Flow::EndIfIdle => break,
            }
        }
        // No new requests from here: the supervisor starts a new task for them, which waits for
        // this one to finish.
        requests.close();
        if let Some(running) = self.running.take() {
            self.context.host.depart(&self.id).await;
            self.context.host.detach(&self.id);
            running.stop().await;
            self.context.emit(SupervisorEvent::Stopped {
                id: self.id.clone(),
            });
        } else if self.supervised {
            self.context.host.detach(&self.id);
        }
        // Requests that slipped in before the close are answered (the app is stopped now).
        while let Ok(request) = requests.try_recv() {
            let superseded = || Error::LaunchFailed {
                id: self.id.clone(),
                reason: "superseded",
                message: "the app's supervision ended while this request waited; try again".into(),
            };
            match request {
                AppRequest::Launch(reply) => {
                    let _ = reply.send(Err(superseded()));
                }
                AppRequest::Reload { reply, .. } => {
                    let _ = reply.send(Err(superseded()));
                }
                AppRequest::Stop(reply) => {
                    let _ = reply.send(Ok(()));
                }
            }
        }
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let _ = ended.send((self.id.clone(), generation));
    }

    fn publish(&self) {
        let snapshot = Snapshot {
            state: match (&self.running, self.launching, self.gave_up) {
                (_, true, _) => AppState::Launching,
                (Some(running), false, _) => AppState::Running { pid: running.pid() },
                (None, false, true) => AppState::GaveUp,
                (None, false, false) => AppState::Restarting,
            },
            sandbox: self.running.as_ref().map(|r| r.sandbox().clone()),
            channel: self
                .running
                .as_ref()
                .map(|r| (r.manifest().clone(), r.channel())),
        };
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = Some(snapshot);
    }

    async fn handle(&mut self, request: AppRequest, cancel: &CancellationToken) -> Flow {
        match request {
            AppRequest::Launch(reply) => {
                if let Some(running) = &self.running {
                    let _ = reply.send(Ok(running.pid()));
                    return Flow::Continue;
                }
                match self.start(cancel).await {
                    Ok(pid) => {
                        // A launch by request is a fresh start: earlier crashes are forgiven.
                        self.restarts.clear();
                        self.restart_at = None;
                        self.gave_up = false;
                        self.publish();
                        self.context.emit(SupervisorEvent::Launched {
                            id: self.id.clone(),
                            pid,
                        });
                        let _ = reply.send(Ok(pid));
                        Flow::Continue
                    }
                    Err(error) => {
                        let _ = reply.send(Err(error));
                        self.end_if_unsupervised()
                    }
                }
            }
            AppRequest::Reload {
                suppress_within,
                reply,
            } => {
                if !self.supervised || self.gave_up {
                    // Not running yet, or given up on: new files are a new chance (a developer
                    // fixed the crash).
                    self.supervised = self.supervised && !self.gave_up;
                    self.restarts.clear();
                    self.restart_at = None;
                    self.gave_up = false;
                    return match self.start(cancel).await {
                        Ok(pid) => {
                            self.publish();
                            self.context.emit(SupervisorEvent::Launched {
                                id: self.id.clone(),
                                pid,
                            });
                            let _ = reply.send(Ok(Reload::Started(pid)));
                            Flow::Continue
                        }
                        Err(error) => {
                            let _ = reply.send(Err(error));
                            self.end_if_unsupervised()
                        }
                    };
                }
                if let Some(window) = suppress_within
                    && (self.restart_at.is_some() || self.started_at.elapsed() < window)
                {
                    let _ = reply.send(Ok(Reload::Suppressed));
                    return Flow::Continue;
                }
                if let Some(running) = self.running.take() {
                    running.stop().await;
                }
                match self.start(cancel).await {
                    Ok(pid) => {
                        self.restart_at = None;
                        self.publish();
                        self.context.emit(SupervisorEvent::Restarted {
                            id: self.id.clone(),
                            pid,
                        });
                        let _ = reply.send(Ok(Reload::Started(pid)));
                    }
                    Err(error) => {
                        self.failed(error.to_string()).await;
                        let _ = reply.send(Err(error));
                    }
                }
                Flow::Continue
            }
            AppRequest::Stop(reply) => {
                if self.running.is_some() {
                    self.context.host.depart(&self.id).await;
                }
                self.context.host.detach(&self.id);
                if let Some(running) = self.running.take() {
                    running.stop().await;
                }
                self.supervised = false;
                self.context.emit(SupervisorEvent::Stopped {
                    id: self.id.clone(),
                });
                let _ = reply.send(Ok(()));
                Flow::End
            }
        }
    }

    fn end_if_unsupervised(&mut self) -> Flow {
        if self.supervised {
            self.publish();
            Flow::Continue
        } else {
            Flow::EndIfIdle
        }
    }

    /// Launches (in a launch slot), attaches capabilities; the app is then running.
    async fn start(&mut self, cancel: &CancellationToken) -> Result<u32> {
        self.launching = true;
        self.publish();
        let result = self.launch(cancel).await;
        self.launching = false;
        let running = result?;
        let pid = running.pid();
        self.running = Some(running);
        self.supervised = true;
        self.started_at = Instant::now();
        Ok(pid)
    }

    async fn launch(&self, cancel: &CancellationToken) -> Result<RunningApp> {
        let _slot = tokio::select! {
            slot = self.context.slots.acquire() => slot.map_err(|_| gone())?,
            () = cancel.cancelled() => return Err(gone()),
        };
        let running = self.context.launcher.launch(&self.id).await?;
        if let Err(error) = self.context.host.attach(&running).await {
            running.stop().await;
            return Err(error);
        }
        Ok(running)
    }

    async fn check_health(&mut self) {
        let Some(running) = &self.running else {
            return;
        };
        if let Err(error) = running.health().await {
            self.failed(error.to_string()).await;
        }
    }

    /// The app died or is unhealthy: stop what is left of it, then schedule a restart or give up.
    async fn failed(&mut self, reason: String) {
        if let Some(running) = self.running.take() {
            running.stop().await;
        }
        let now = Instant::now();
        while self
            .restarts
            .front()
            .is_some_and(|at| now.duration_since(*at) > RESTART_WINDOW)
        {
            self.restarts.pop_front();
        }
        let config = &self.context.config;
        if self.restarts.len() >= config.max_restarts {
            self.gave_up = true;
            self.restart_at = None;
            let restarts = self.restarts.len();
            tracing::warn!(app = self.id, restarts, "too many restarts: giving up");
            self.context.host.detach(&self.id);
            self.publish();
            self.context.emit(SupervisorEvent::GaveUp {
                id: self.id.clone(),
                restarts,
            });
            return;
        }
        let exponent = u32::try_from(self.restarts.len())
            .unwrap_or(u32::MAX)
            .min(16);
        let delay = config
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(exponent))
            .min(config.max_backoff);
        self.restart_at = Some(now + delay);
        self.publish();
        tracing::warn!(app = self.id, ?delay, "app failed ({reason}); restarting");
        self.context.emit(SupervisorEvent::Failed {
            id: self.id.clone(),
            reason,
            delay,
        });
    }

    async fn restart(&mut self, cancel: &CancellationToken) {
        self.restart_at = None;
        self.restarts.push_back(Instant::now());
        match self.start(cancel).await {
            Ok(pid) => {
                self.publish();
                self.context.emit(SupervisorEvent::Restarted {
                    id: self.id.clone(),
                    pid,
                });
            }
            Err(error) => self.failed(error.to_string()).await,
        }
    }
}
