//! Reminders and the built-in scheduler. A reminder is a prompt with a schedule: once (`in 5 min`,
//! `tomorrow 9am`, an RFC 3339 time) or repeating (a cron expression in the reminder's time
//! zone). When it fires, a [`ReminderHandler`] (core's: an agent turn with origin `system`, or a
//! notification when no provider is configured) does the work, and the run lands in the
//! reminder's history.
//!
//! The [`Scheduler`] is a task that owns the state and takes requests over a channel, as every
//! long-lived subsystem does: it sleeps until the earliest `next_run_ms` (woken early by any
//! request), fires what is due, and computes the next cron time. Reminders live in SQLite, so a
//! restart picks them up: a one-shot whose time passed while Osprey was down fires once at start,
//! and a cron reminder that missed several times fires once (coalesced), then keeps its schedule.
//! A run is recorded (and the next time moved) before the handler starts, so a crash mid-run
//! never fires the same occurrence twice; the interrupted run says so in the history.
//!
//! "Now" comes from a [`Clock`], so tests move time by hand while the scheduler still runs as a
//! real task on real SQLite. [`ScheduleBackend`] is what the agent tool talks to: the built-in
//! scheduler implements it, and core can put an app that provides `schedule` in its place
//! through the [`ScheduleSlot`].

mod book;
mod clock;
pub mod spec;
mod task;

use std::sync::{Arc, Mutex, RwLock};

use chrono::TimeZone;
use futures::future::BoxFuture;
use osprey_db::{Database, ReminderKind, ReminderRow, ReminderRun, RunOutcome, RunTrigger};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use book::StoredReminders;
pub use chrono_tz::Tz;
pub use clock::{Clock, ManualClock, SystemClock};

use crate::{Error, Result};

/// A reminder as the agent tool and the shells see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reminder {
    pub id: String,
    pub title: String,
    /// What the agent is asked (or the notification says) when it fires.
    pub prompt: String,
    /// A shell command run first when it fires, as approved when it was set; its output goes
    /// with the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Where its output is delivered besides its session, as approved when it was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliver: Option<crate::outbox::Delivery>,
    /// `one_shot` or `cron`.
    pub kind: String,
    /// The cron expression, or the one-shot time as it was given.
    pub schedule: String,
    pub timezone: String,
    /// The session its turns run in; none: a new session each time.
    pub session_id: Option<String>,
    /// When it fires next (none once a one-shot has fired), in ms and as local RFC 3339.
    pub next_run_ms: Option<i64>,
    pub next_run: Option<String>,
    /// `false` while paused.
    pub enabled: bool,
    /// Who created it.
    pub origin: String,
    pub created_ms: i64,
    pub last_run_ms: Option<i64>,
}

/// One run of a reminder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReminderRunInfo {
    pub id: String,
    pub reminder_id: String,
    /// `schedule`, `catch_up` (missed while Osprey was down) or `manual`.
    pub trigger: String,
    pub scheduled_ms: Option<i64>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    /// `running`, `ok`, `error` or `interrupted`.
    pub outcome: String,
    pub session_id: Option<String>,
    pub error: Option<String>,
    pub output: Option<String>,
}

/// What a new reminder is.
#[derive(Clone, Debug, Default)]
pub struct CreateReminder {
    /// A short name; the start of the prompt when not given.
    pub title: Option<String>,
    pub prompt: String,
    /// A shell command to run first when it fires (the caller has had it approved).
    pub command: Option<String>,
    /// Where to deliver the output (the caller has had it approved).
    pub deliver: Option<crate::outbox::Delivery>,
    /// A one-shot time, a cron expression or an `every ...` phrase (see [`spec::EXAMPLES`]).
    pub schedule: String,
    /// Forces how `schedule` is read; guessed when not given.
    pub kind: Option<ReminderKind>,
    /// An IANA zone; the scheduler's (the machine's) when not given.
    pub timezone: Option<String>,
    pub session_id: Option<String>,
    /// Who asks (`user`, `system`, an app id...).
    pub origin: String,
    /// Created paused.
    pub paused: bool,
}

/// A change to a reminder; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct UpdateReminder {
    pub title: Option<String>,
    pub prompt: Option<String>,
    /// `Some(None)` (or an empty command) removes the command.
    pub command: Option<Option<String>>,
    /// `Some(None)` stops delivering the output elsewhere.
    pub deliver: Option<Option<crate::outbox::Delivery>>,
    /// A new schedule (read as `kind` when given, else guessed).
    pub schedule: Option<String>,
    pub kind: Option<ReminderKind>,
    pub timezone: Option<String>,
    /// `Some(None)` detaches it from its session.
    pub session_id: Option<Option<String>>,
}

/// A reminder firing, handed to the [`ReminderHandler`].
#[derive(Clone, Debug)]
pub struct Firing {
    pub reminder: Reminder,
    pub run_id: String,
    pub trigger: RunTrigger,
    /// The occurrence this run stands for (`None` for a manual run).
    pub scheduled_ms: Option<i64>,
    /// Cancelled when the scheduler shuts down.
    pub cancel: CancellationToken,
}

/// What a successful firing produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FireReport {
    /// The session the turn ran in.
    pub session_id: Option<String>,
    /// A short summary for the history (the reply's start, "notified").
    pub output: Option<String>,
}

/// Does the work when a reminder fires. An error is recorded in the run's history; it never
/// stops the scheduler (a panic neither).
pub trait ReminderHandler: Send + Sync + 'static {
    fn fire(&self, firing: Firing) -> BoxFuture<'static, Result<FireReport, String>>;
}

/// What the scheduler tells listeners (core turns these into UI events).
#[derive(Clone, Debug)]
pub enum SchedulerEvent {
    Fired {
        /// Boxed: a reminder is much larger than the other event.
        reminder: Box<Reminder>,
        run_id: String,
        trigger: RunTrigger,
    },
    Finished {
        reminder_id: String,
        run_id: String,
        outcome: RunOutcome,
        error: Option<String>,
        output: Option<String>,
    },
}

/// The reminder operations the agent tool (and the shells) use. The built-in [`Scheduler`]
/// implements it; core adapts an app that provides `schedule` into it.
pub trait ScheduleBackend: Send + Sync + 'static {
    /// Who keeps the reminders (`built-in`, or the app's id), for messages.
    fn name(&self) -> String;
    fn create(&self, request: CreateReminder) -> BoxFuture<'_, Result<Reminder>>;
    fn update(&self, id: String, change: UpdateReminder) -> BoxFuture<'_, Result<Reminder>>;
    fn delete(&self, id: String) -> BoxFuture<'_, Result<()>>;
    /// Oldest first; those of one session when given.
    fn list(&self, session_id: Option<String>) -> BoxFuture<'_, Result<Vec<Reminder>>>;
    fn get(&self, id: String) -> BoxFuture<'_, Result<Reminder>>;
    fn pause(&self, id: String) -> BoxFuture<'_, Result<Reminder>>;
    fn resume(&self, id: String) -> BoxFuture<'_, Result<Reminder>>;
    /// Starts a run now, outside the schedule; returns the run as it started.
    fn run_now(&self, id: String) -> BoxFuture<'_, Result<ReminderRunInfo>>;
    /// Newest first.
    fn history(
        &self,
        id: String,
        limit: Option<u32>,
    ) -> BoxFuture<'_, Result<Vec<ReminderRunInfo>>>;
}

/// Where the agent tool finds the current [`ScheduleBackend`]: empty until core starts the
/// scheduler, and swappable (an app providing `schedule` takes the built-in one's place). Cheap
/// to clone; every clone sees the same backend.
#[derive(Clone, Default)]
pub struct ScheduleSlot {
    backend: Arc<RwLock<Option<Arc<dyn ScheduleBackend>>>>,
}

impl std::fmt::Debug for ScheduleSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleSlot")
            .field("backend", &self.get().map(|b| b.name()))
            .finish()
    }
}

impl ScheduleSlot {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `backend` in place; returns the one it replaced.
    pub fn set(&self, backend: Arc<dyn ScheduleBackend>) -> Option<Arc<dyn ScheduleBackend>> {
        self.write().replace(backend)
    }

    pub fn clear(&self) -> Option<Arc<dyn ScheduleBackend>> {
        self.write().take()
    }

    pub fn get(&self) -> Option<Arc<dyn ScheduleBackend>> {
        self.backend
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Option<Arc<dyn ScheduleBackend>>> {
        // The guarded value is a plain Option: a panic elsewhere cannot leave it half-written.
        self.backend
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How to run the built-in scheduler.
#[derive(Clone)]
pub struct SchedulerConfig {
    pub clock: Arc<dyn Clock>,
    /// The zone for reminders created without one, and for reading local times.
    pub timezone: Tz,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            clock: Arc::new(SystemClock),
            timezone: spec::local_timezone(),
        }
    }
}

impl std::fmt::Debug for SchedulerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerConfig")
            .field("timezone", &self.timezone)
            .finish_non_exhaustive()
    }
}

/// A request to the scheduler task, with where to send the answer.
enum Request {
    Create(CreateReminder, Reply<Reminder>),
    Update(String, UpdateReminder, Reply<Reminder>),
    Delete(String, Reply<()>),
    List(Option<String>, Reply<Vec<Reminder>>),
    Get(String, Reply<Reminder>),
    Pause(String, Reply<Reminder>),
    Resume(String, Reply<Reminder>),
    RunNow(String, Reply<ReminderRunInfo>),
    History(String, Option<u32>, Reply<Vec<ReminderRunInfo>>),
}

type Reply<T> = oneshot::Sender<Result<T>>;

/// Requests waiting for the task before senders wait too.
const REQUEST_QUEUE: usize = 64;
/// Events a slow listener may fall behind before it loses the oldest.
const EVENT_CAPACITY: usize = 256;

/// A handle on the built-in scheduler task. Cheap to clone; the task stops when
/// [`Scheduler::shutdown`] is called or the last handle is dropped.
#[derive(Clone)]
pub struct Scheduler {
    inner: Arc<Handle>,
}

struct Handle {
    requests: mpsc::Sender<Request>,
    events: broadcast::Sender<SchedulerEvent>,
    cancel: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("stopped", &self.inner.cancel.is_cancelled())
            .finish()
    }
}

impl Scheduler {
    /// Loads the reminders from `db` and starts the task on the current tokio runtime. Runs
    /// left `running` by a previous process are marked interrupted, and what came due while
    /// Osprey was down fires at once.
    pub fn start(
        db: &Database,
        handler: Arc<dyn ReminderHandler>,
        config: SchedulerConfig,
    ) -> Result<Scheduler> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::Config("the scheduler must be started inside a tokio runtime".into())
        })?;
        let (requests, receiver) = mpsc::channel(REQUEST_QUEUE);
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let cancel = CancellationToken::new();
        let actor = task::Actor::new(
            db.reminders(),
            handler,
            config,
            events.clone(),
            cancel.clone(),
        )?;
        let task = runtime.spawn(actor.run(receiver));
        Ok(Scheduler {
            inner: Arc::new(Handle {
                requests,
                events,
                cancel,
                task: Mutex::new(Some(task)),
            }),
        })
    }

    /// Firings and finished runs from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SchedulerEvent> {
        self.inner.events.subscribe()
    }

    /// Stops the task (running firings are told to cancel) and waits until it has ended.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        let task = self
            .inner
            .task
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.cancel.is_cancelled() || self.inner.requests.is_closed()
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> Result<T> {
        let stopped = || Error::SchedulerStopped("the reminder scheduler has stopped".into());
        let (reply, answer) = oneshot::channel();
        self.inner
            .requests
            .send(make(reply))
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

impl ScheduleBackend for Scheduler {
    fn name(&self) -> String {
        "built-in".into()
    }

    fn create(&self, request: CreateReminder) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(self.ask(|reply| Request::Create(request, reply)))
    }

    fn update(&self, id: String, change: UpdateReminder) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(self.ask(|reply| Request::Update(id, change, reply)))
    }

    fn delete(&self, id: String) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.ask(|reply| Request::Delete(id, reply)))
    }

    fn list(&self, session_id: Option<String>) -> BoxFuture<'_, Result<Vec<Reminder>>> {
        Box::pin(self.ask(|reply| Request::List(session_id, reply)))
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(self.ask(|reply| Request::Get(id, reply)))
    }

    fn pause(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(self.ask(|reply| Request::Pause(id, reply)))
    }

    fn resume(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(self.ask(|reply| Request::Resume(id, reply)))
    }

    fn run_now(&self, id: String) -> BoxFuture<'_, Result<ReminderRunInfo>> {
        Box::pin(self.ask(|reply| Request::RunNow(id, reply)))
    }

    fn history(
        &self,
        id: String,
        limit: Option<u32>,
    ) -> BoxFuture<'_, Result<Vec<ReminderRunInfo>>> {
        Box::pin(self.ask(move |reply| Request::History(id, limit, reply)))
    }
}

/// The DTO of a stored reminder; `next_run` is written in the reminder's own zone.
pub fn reminder_of(row: &ReminderRow) -> Reminder {
    let tz: Tz = row.timezone.parse().unwrap_or(Tz::UTC);
    Reminder {
        id: row.id.to_string(),
        title: row.title.clone(),
        prompt: row.prompt.clone(),
        command: row.command.clone(),
        // Written by this crate; a value that does not parse (a hand-edited file) delivers
        // nowhere rather than somewhere unintended.
        deliver: row
            .deliver
            .as_deref()
            .and_then(|json| serde_json::from_str(json).ok()),
        kind: row.kind.as_str().to_string(),
        schedule: row.schedule.clone(),
        timezone: row.timezone.clone(),
        session_id: row.session_id.clone(),
        next_run_ms: row.next_run_ms,
        next_run: row.next_run_ms.and_then(|ms| local_rfc3339(tz, ms)),
        enabled: row.enabled,
        origin: row.origin.clone(),
        created_ms: row.created_ms,
        last_run_ms: row.last_run_ms,
    }
}

/// `ms` as an RFC 3339 time in `tz` (`2026-11-22T10:05:00+01:00`).
pub fn local_rfc3339(tz: Tz, ms: i64) -> Option<String> {
    tz.timestamp_millis_opt(ms)
        .single()
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The DTO of a stored run.
pub fn run_of(run: &ReminderRun) -> ReminderRunInfo {
    ReminderRunInfo {
        id: run.id.to_string(),
        reminder_id: run.reminder_id.to_string(),
        trigger: run.trigger.as_str().to_string(),
        scheduled_ms: run.scheduled_ms,
        started_ms: run.started_ms,
        finished_ms: run.finished_ms,
        outcome: run.outcome.as_str().to_string(),
        session_id: run.session_id.clone(),
        error: run.error.clone(),
        output: run.output.clone(),
    }
}
