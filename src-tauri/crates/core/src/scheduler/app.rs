//! An installed app that provides `schedule` as the reminder backend: the agent tool's reminder
//! operations become `ScheduleService` calls, and the app's `Triggers` stream drives the same
//! handler the built-in scheduler uses (an origin-`system` turn). Osprey still reads the schedule
//! text (so the app gets a normalized five-field cron or a Unix time, never "tomorrow 9am"), and
//! keeps what the protocol has no field for (the session, the creator's origin) in the
//! schedule's `payload_json`.
//!
//! The app holds that payload and could rewrite it: claim a schedule was the person's own (so
//! its turns fire as `system`, where the shell is allowed) or plant a prompt under a sealed
//! origin. So the payload carries a seal, an HMAC-SHA256 over the app id, origin, session,
//! creation time and prompt under a key only Osprey holds (in its secret store, out of every
//! app's reach). A schedule whose seal does not verify is the app's own: its origin is
//! `app:<id>` (which fires under the rules for messages from outside) and it joins no session.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use osprey_agent::scheduler::{
    CreateReminder, Firing, Reminder, ReminderRunInfo, Tz, UpdateReminder, local_rfc3339, spec,
};
use osprey_agent::{Error, ReminderHandler, Result, ScheduleBackend};
use osprey_db::{ReminderKind, RunTrigger};
use osprey_rpc::AppChannel;
use osprey_rpc::v1::schedule::Timing;
use osprey_rpc::v1::schedule_service_client::ScheduleServiceClient;
use osprey_rpc::v1::{
    CreateScheduleRequest, HistoryRequest, ListSchedulesRequest, Schedule, ScheduleId, ScheduleRun,
    TriggersRequest,
};
use serde_json::json;
use sha2::Sha256;
use tokio_util::sync::CancellationToken;

/// Gives the app's channel when it runs (the supervisor's, or a test's).
pub type ChannelSource = Arc<dyn Fn() -> BoxFuture<'static, Result<AppChannel>> + Send + Sync>;

/// How long to wait before listening for triggers again after the stream broke.
const RELISTEN_AFTER: Duration = Duration::from_secs(2);
/// Page size when listing an app's schedules.
const PAGE: u32 = 200;

/// The reminder backend an app's `ScheduleService` offers.
#[derive(Clone)]
pub struct AppScheduler {
    app_id: String,
    channel: ChannelSource,
    timezone: Tz,
    seal: Seal,
}

/// Seals what Osprey stores in a schedule's payload (see the module notes).
#[derive(Clone)]
pub struct Seal {
    /// `None` when no key nobody can guess could be made: nothing is sealed, nothing verifies.
    key: Option<[u8; 32]>,
}

impl Seal {
    /// A seal under `key` (kept by the core in its secret store).
    pub fn new(key: [u8; 32]) -> Seal {
        Seal { key: Some(key) }
    }

    /// A seal whose key lives as long as this process: schedules sealed under it are trusted
    /// only until Osprey restarts (fail closed when no lasting key can be kept).
    pub fn ephemeral() -> Seal {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            tracing::warn!("no randomness for the schedule seal; app schedules are untrusted");
            return Seal { key: None };
        }
        Seal::new(key)
    }

    /// The MAC over what `payload` says of the schedule (origin, session, creation time) and
    /// its prompt; `None` without a key or when the payload lacks those.
    fn mac(&self, app_id: &str, payload: &serde_json::Value, prompt: &str) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.key.as_ref()?).ok()?;
        let message = json!([
            "osprey-schedule-seal-v1",
            app_id,
            payload["origin"].as_str()?,
            payload["session_id"].as_str(),
            payload["created_ms"].as_i64()?,
            prompt
        ]);
        mac.update(message.to_string().as_bytes());
        Some(mac)
    }

    /// Puts the seal of `payload` and `prompt` into `payload` (or takes a stale one out).
    fn seal(&self, app_id: &str, payload: &mut serde_json::Value, prompt: &str) {
        let tag = self
            .mac(app_id, payload, prompt)
            .map(|mac| hex::encode(mac.finalize().into_bytes()));
        match (tag, payload.as_object_mut()) {
            (Some(tag), Some(fields)) => {
                fields.insert("seal".into(), json!(tag));
            }
            (None, Some(fields)) => {
                fields.remove("seal");
            }
            _ => {}
        }
    }

    fn verifies(&self, app_id: &str, payload: &serde_json::Value, prompt: &str) -> bool {
        let Some(seal) = payload["seal"].as_str().and_then(|s| hex::decode(s).ok()) else {
            return false;
        };
        self.mac(app_id, payload, prompt)
            .is_some_and(|mac| mac.verify_slice(&seal).is_ok())
    }
}

impl AppScheduler {
    /// An app scheduler whose seal lasts this process only; the core gives it its lasting seal
    /// with [`AppScheduler::with_seal`] when it attaches it.
    pub fn new(app_id: impl Into<String>, channel: ChannelSource, timezone: Tz) -> AppScheduler {
        AppScheduler {
            app_id: app_id.into(),
            channel,
            timezone,
            seal: Seal::ephemeral(),
        }
    }

    pub fn with_seal(mut self, seal: Seal) -> AppScheduler {
        self.seal = seal;
        self
    }

    /// The app's scheduler reached through the supervisor (the app must be running).
    #[cfg(unix)]
    pub fn from_supervisor(
        app_id: &str,
        supervisor: osprey_apps::supervisor::Supervisor,
        timezone: Tz,
    ) -> AppScheduler {
        let id = app_id.to_string();
        let source: ChannelSource = Arc::new(move || {
            let supervisor = supervisor.clone();
            let id = id.clone();
            Box::pin(async move {
                match supervisor.channel(&id).await {
                    Ok(Some((_, channel))) => Ok(channel),
                    Ok(None) => Err(Error::SchedulerStopped(format!(
                        "the schedule app `{id}` is not running"
                    ))),
                    Err(error) => Err(Error::SchedulerStopped(format!(
                        "the schedule app `{id}`: {error}"
                    ))),
                }
            })
        });
        AppScheduler::new(app_id, source, timezone)
    }

    async fn client(&self) -> Result<ScheduleServiceClient<AppChannel>> {
        Ok(ScheduleServiceClient::new((self.channel)().await?))
    }

    fn status_error(&self, id: Option<&str>, status: tonic::Status) -> Error {
        match (status.code(), id) {
            (tonic::Code::NotFound, Some(id)) => Error::ReminderNotFound(id.to_string()),
            (tonic::Code::InvalidArgument, _) => Error::InvalidSchedule(format!(
                "the schedule app `{}` refused it: {}",
                self.app_id,
                status.message()
            )),
            _ => Error::SchedulerStopped(format!(
                "the schedule app `{}` failed: {} ({:?})",
                self.app_id,
                status.message(),
                status.code()
            )),
        }
    }

    /// Listens on the app's `Triggers` stream until `cancel`, handing every fired schedule to
    /// `handler`; a broken stream is listened to again after a pause.
    pub fn listen(
        &self,
        handler: Arc<dyn ReminderHandler>,
        cancel: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            while !cancel.is_cancelled() {
                let result = tokio::select! {
                    _ = cancel.cancelled() => break,
                    result = this.listen_once(&handler, &cancel) => result,
                };
                if let Err(error) = result {
                    tracing::warn!(app = %this.app_id, %error, "schedule triggers stream ended");
                }
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(RELISTEN_AFTER) => {}
                }
            }
        })
    }

    async fn listen_once(
        &self,
        handler: &Arc<dyn ReminderHandler>,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let mut stream = self
            .client()
            .await?
            .triggers(TriggersRequest {})
            .await
            .map_err(|s| self.status_error(None, s))?
            .into_inner();
        while let Some(run) = stream.next().await {
            let run = run.map_err(|s| self.status_error(None, s))?;
            let reminder = match self.get(run.schedule_id.clone()).await {
                Ok(reminder) => reminder,
                // Gone already: the run still carries its prompt.
                Err(_) => Reminder {
                    id: run.schedule_id.clone(),
                    title: run.prompt.chars().take(60).collect(),
                    prompt: run.prompt.clone(),
                    command: None,
                    deliver: None,
                    kind: String::new(),
                    schedule: String::new(),
                    timezone: self.timezone.name().into(),
                    session_id: None,
                    next_run_ms: None,
                    next_run: None,
                    enabled: true,
                    origin: format!("app:{}", self.app_id),
                    created_ms: run.fired_at_ms,
                    last_run_ms: Some(run.fired_at_ms),
                },
            };
            let firing = Firing {
                reminder,
                run_id: run.run_id.clone(),
                trigger: if run.trigger == "manual" {
                    RunTrigger::Manual
                } else {
                    RunTrigger::Schedule
                },
                scheduled_ms: Some(run.fired_at_ms),
                cancel: cancel.child_token(),
            };
            // The app keeps the history; the outcome is only logged here.
            let work = handler.fire(firing);
            let app = self.app_id.clone();
            tokio::spawn(async move {
                if let Err(error) = work.await {
                    tracing::warn!(%app, %error, "a reminder from the schedule app failed");
                }
            });
        }
        Ok(())
    }

    fn reminder_of(&self, schedule: Schedule) -> Reminder {
        let extra: serde_json::Value =
            serde_json::from_str(&schedule.payload_json).unwrap_or_default();
        let tz: Tz = schedule.timezone.parse().unwrap_or(self.timezone);
        let (kind, text) = match &schedule.timing {
            Some(Timing::Cron(expression)) => ("cron", expression.clone()),
            Some(Timing::AtMs(at)) => (
                "one_shot",
                extra["schedule"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| rfc3339(tz, *at).unwrap_or_default()),
            ),
            None => ("", String::new()),
        };
        let next = (schedule.next_run_ms > 0).then_some(schedule.next_run_ms);
        // Only what Osprey sealed is believed; otherwise the schedule is the app's own.
        let sealed = self.seal.verifies(&self.app_id, &extra, &schedule.prompt);
        if !sealed && extra.get("origin").is_some() {
            tracing::warn!(app = %self.app_id, schedule = %schedule.id, "a schedule's origin is not sealed by this Osprey; treating it as the app's own");
        }
        Reminder {
            id: schedule.id,
            title: schedule.name,
            prompt: schedule.prompt,
            // Never read back from the app: a command the app could write would run as
            // approved (see `refuse_command`); nor a delivery, for the same reason.
            command: None,
            deliver: None,
            kind: kind.into(),
            schedule: text,
            timezone: tz.name().into(),
            session_id: extra["session_id"]
                .as_str()
                .filter(|_| sealed)
                .map(str::to_string),
            next_run_ms: next,
            next_run: next.and_then(|ms| rfc3339(tz, ms)),
            enabled: schedule.enabled,
            origin: extra["origin"]
                .as_str()
                .filter(|_| sealed)
                .map(str::to_string)
                .unwrap_or_else(|| format!("app:{}", self.app_id)),
            created_ms: extra["created_ms"].as_i64().unwrap_or_default(),
            last_run_ms: None,
        }
    }

    /// Reads `schedule` as Osprey does and sets the schedule's timing from it.
    fn set_timing(&self, schedule: &mut Schedule, text: &str, tz: Tz) -> Result<()> {
        let plan = spec::plan(None, text, tz, osprey_db::now_ms())?;
        schedule.timing = Some(match plan.kind {
            ReminderKind::Cron => Timing::Cron(plan.schedule),
            ReminderKind::OneShot => Timing::AtMs(plan.next_run_ms),
        });
        schedule.next_run_ms = plan.next_run_ms;
        Ok(())
    }

    /// Reminders that run a command stay with Osprey's built-in scheduler: a command kept by
    /// the app would come back from it, and the app could change it into one nobody approved.
    fn refuse_command(&self, command: Option<&str>) -> Result<()> {
        match command.map(str::trim) {
            Some(command) if !command.is_empty() => Err(Error::InvalidSchedule(format!(
                "reminders here are kept by the schedule app `{}`, which cannot be trusted with a \
                 command to run: make it a reminder without `command`, or remove the app to use \
                 Osprey's built-in scheduler",
                self.app_id
            ))),
            _ => Ok(()),
        }
    }

    /// Likewise a delivery: the app could point it at another channel or recipient.
    fn refuse_delivery(&self, set: bool) -> Result<()> {
        if set {
            return Err(Error::InvalidSchedule(format!(
                "reminders here are kept by the schedule app `{}`, which cannot be trusted with \
                 where a reminder's output is sent: make it a reminder without `deliver`, or \
                 remove the app to use Osprey's built-in scheduler",
                self.app_id
            )));
        }
        Ok(())
    }

    fn zone(&self, name: Option<&str>) -> Result<Tz> {
        match name {
            Some(name) if !name.trim().is_empty() => spec::parse_timezone(name),
            _ => Ok(self.timezone),
        }
    }

    async fn fetch(&self, id: &str) -> Result<Schedule> {
        self.client()
            .await?
            .get_schedule(ScheduleId { id: id.into() })
            .await
            .map(|r| r.into_inner())
            .map_err(|s| self.status_error(Some(id), s))
    }
}

fn rfc3339(tz: Tz, ms: i64) -> Option<String> {
    local_rfc3339(tz, ms)
}

fn run_of(run: ScheduleRun) -> ReminderRunInfo {
    let outcome = match run.status.as_str() {
        "pending" => "running",
        "failed" => "error",
        other => other,
    };
    ReminderRunInfo {
        id: run.run_id,
        reminder_id: run.schedule_id,
        trigger: if run.trigger == "manual" {
            "manual".into()
        } else {
            "schedule".into()
        },
        scheduled_ms: None,
        started_ms: run.fired_at_ms,
        finished_ms: None,
        outcome: outcome.into(),
        session_id: None,
        error: (!run.error.is_empty()).then_some(run.error),
        output: None,
    }
}

impl ScheduleBackend for AppScheduler {
    fn name(&self) -> String {
        format!("app:{}", self.app_id)
    }

    fn create(&self, request: CreateReminder) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move {
            self.refuse_command(request.command.as_deref())?;
            self.refuse_delivery(request.deliver.is_some())?;
            let prompt = request.prompt.trim();
            if prompt.is_empty() {
                return Err(Error::InvalidSchedule(
                    "a reminder needs a `prompt`: what to remind of, or what to do when it fires"
                        .into(),
                ));
            }
            let tz = self.zone(request.timezone.as_deref())?;
            let mut schedule = Schedule {
                name: request
                    .title
                    .clone()
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| prompt.chars().take(60).collect()),
                timezone: tz.name().into(),
                enabled: !request.paused,
                prompt: prompt.into(),
                payload_json: {
                    let mut payload = json!({
                        "session_id": request.session_id,
                        "origin": request.origin,
                        "schedule": request.schedule.trim(),
                        "created_ms": osprey_db::now_ms(),
                    });
                    self.seal.seal(&self.app_id, &mut payload, prompt);
                    payload.to_string()
                },
                ..Default::default()
            };
            self.set_timing(&mut schedule, &request.schedule, tz)?;
            let created = self
                .client()
                .await?
                .create_schedule(CreateScheduleRequest {
                    schedule: Some(schedule),
                })
                .await
                .map_err(|s| self.status_error(None, s))?
                .into_inner();
            Ok(self.reminder_of(created))
        })
    }

    fn update(&self, id: String, change: UpdateReminder) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move {
            self.refuse_command(change.command.as_ref().and_then(Option::as_deref))?;
            self.refuse_delivery(matches!(change.deliver, Some(Some(_))))?;
            let mut schedule = self.fetch(&id).await?;
            let mut extra: serde_json::Value =
                serde_json::from_str(&schedule.payload_json).unwrap_or_else(|_| json!({}));
            // A change keeps a sealed origin only when the app had not altered it.
            let sealed = self.seal.verifies(&self.app_id, &extra, &schedule.prompt);
            if let Some(title) = change.title {
                schedule.name = title;
            }
            if let Some(prompt) = change.prompt {
                schedule.prompt = prompt;
            }
            if let Some(session) = change.session_id {
                extra["session_id"] = json!(session);
            }
            if let Some(zone) = change.timezone.as_deref() {
                schedule.timezone = self.zone(Some(zone))?.name().into();
            }
            let tz = self.zone(Some(&schedule.timezone))?;
            if let Some(text) = change.schedule.as_deref() {
                self.set_timing(&mut schedule, text, tz)?;
                extra["schedule"] = json!(text.trim());
            }
            if sealed {
                self.seal.seal(&self.app_id, &mut extra, &schedule.prompt);
            } else if let Some(fields) = extra.as_object_mut() {
                fields.remove("seal");
            }
            schedule.payload_json = extra.to_string();
            let updated = self
                .client()
                .await?
                .update_schedule(schedule)
                .await
                .map_err(|s| self.status_error(Some(&id), s))?
                .into_inner();
            Ok(self.reminder_of(updated))
        })
    }

    fn delete(&self, id: String) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.client()
                .await?
                .delete_schedule(ScheduleId { id: id.clone() })
                .await
                .map_err(|s| self.status_error(Some(&id), s))?;
            Ok(())
        })
    }

    fn list(&self, session_id: Option<String>) -> BoxFuture<'_, Result<Vec<Reminder>>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let mut all = Vec::new();
            let mut page_token = String::new();
            loop {
                let page = client
                    .list_schedules(ListSchedulesRequest {
                        page_size: PAGE,
                        page_token: page_token.clone(),
                    })
                    .await
                    .map_err(|s| self.status_error(None, s))?
                    .into_inner();
                all.extend(page.schedules.into_iter().map(|s| self.reminder_of(s)));
                if page.next_page_token.is_empty() || page.next_page_token == page_token {
                    break;
                }
                page_token = page.next_page_token;
            }
            if let Some(session) = session_id {
                all.retain(|r| r.session_id.as_deref() == Some(session.as_str()));
            }
            Ok(all)
        })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move { Ok(self.reminder_of(self.fetch(&id).await?)) })
    }

    fn pause(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move {
            let schedule = self
                .client()
                .await?
                .disable_schedule(ScheduleId { id: id.clone() })
                .await
                .map_err(|s| self.status_error(Some(&id), s))?
                .into_inner();
            Ok(self.reminder_of(schedule))
        })
    }

    fn resume(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move {
            let schedule = self
                .client()
                .await?
                .enable_schedule(ScheduleId { id: id.clone() })
                .await
                .map_err(|s| self.status_error(Some(&id), s))?
                .into_inner();
            Ok(self.reminder_of(schedule))
        })
    }

    fn run_now(&self, id: String) -> BoxFuture<'_, Result<ReminderRunInfo>> {
        Box::pin(async move {
            let run = self
                .client()
                .await?
                .trigger_schedule(ScheduleId { id: id.clone() })
                .await
                .map_err(|s| self.status_error(Some(&id), s))?
                .into_inner();
            Ok(run_of(run))
        })
    }

    fn history(
        &self,
        id: String,
        limit: Option<u32>,
    ) -> BoxFuture<'_, Result<Vec<ReminderRunInfo>>> {
        Box::pin(async move {
            let runs = self
                .client()
                .await?
                .history(HistoryRequest {
                    schedule_id: id.clone(),
                    limit: limit.unwrap_or(0),
                })
                .await
                .map_err(|s| self.status_error(Some(&id), s))?
                .into_inner();
            Ok(runs.runs.into_iter().map(run_of).collect())
        })
    }
}
