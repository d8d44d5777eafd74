//! The reminders' bookkeeping without the firing: create, change, pause, resume, delete, read.
//! The scheduler task uses it for its requests, and [`StoredReminders`] offers it to a process
//! that does not run the scheduler (`osprey tool` from a terminal while the desktop app fires).

use std::sync::Arc;

use chrono_tz::Tz;
use futures::future::BoxFuture;
use osprey_db::{NewReminder, ReminderKind, ReminderRow, Reminders};

use super::{
    Clock, CreateReminder, Reminder, ReminderRunInfo, ScheduleBackend, UpdateReminder, reminder_of,
    run_of, spec,
};
use crate::{Error, Result};

/// Titles made from the prompt are cut to this many characters.
const TITLE_CHARS: usize = 60;

#[derive(Clone)]
pub(super) struct Book {
    pub(super) repo: Reminders,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) timezone: Tz,
}

impl Book {
    pub(super) fn list(&self, session_id: Option<&str>) -> Result<Vec<Reminder>> {
        Ok(self
            .repo
            .list(session_id)?
            .iter()
            .map(reminder_of)
            .collect())
    }

    pub(super) fn row(&self, id: &str) -> Result<ReminderRow> {
        let not_found = || Error::ReminderNotFound(id.to_string());
        let number: i64 = id.trim().parse().map_err(|_| not_found())?;
        self.repo.get(number)?.ok_or_else(not_found)
    }

    pub(super) fn zone_of(&self, name: Option<&str>) -> Result<Tz> {
        match name {
            Some(name) if !name.trim().is_empty() => spec::parse_timezone(name),
            _ => Ok(self.timezone),
        }
    }

    pub(super) fn create(&self, create: CreateReminder) -> Result<super::Reminder> {
        let prompt = create.prompt.trim();
        if prompt.is_empty() {
            return Err(Error::InvalidSchedule(
                "a reminder needs a `prompt`: what to remind of, or what to do when it fires"
                    .into(),
            ));
        }
        let tz = self.zone_of(create.timezone.as_deref())?;
        let now = self.clock.now_ms();
        let plan = spec::plan(create.kind, &create.schedule, tz, now)?;
        let title = match create.title.as_deref().map(str::trim) {
            Some(title) if !title.is_empty() => title.to_string(),
            _ => shorten(prompt, TITLE_CHARS),
        };
        let command = create
            .command
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        let deliver = create.deliver.as_ref().map(delivery_json).transpose()?;
        let row = self.repo.create(&NewReminder {
            session_id: create.session_id.as_deref(),
            title: &title,
            prompt,
            command,
            deliver: deliver.as_deref(),
            kind: plan.kind,
            schedule: &plan.schedule,
            timezone: tz.name(),
            next_run_ms: Some(plan.next_run_ms),
            enabled: !create.paused,
            origin: &create.origin,
            created_ms: now,
        })?;
        Ok(reminder_of(&row))
    }

    pub(super) fn update(&self, id: &str, change: UpdateReminder) -> Result<super::Reminder> {
        let mut row = self.row(id)?;
        let now = self.clock.now_ms();
        if let Some(title) = change.title {
            row.title = title;
        }
        if let Some(prompt) = change.prompt {
            if prompt.trim().is_empty() {
                return Err(Error::InvalidSchedule("`prompt` must not be empty".into()));
            }
            row.prompt = prompt;
        }
        if let Some(command) = change.command {
            row.command = command
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty());
        }
        if let Some(deliver) = change.deliver {
            row.deliver = deliver.as_ref().map(delivery_json).transpose()?;
        }
        if let Some(session) = change.session_id {
            row.session_id = session;
        }
        let zone_changed = change.timezone.is_some();
        if let Some(zone) = change.timezone.as_deref() {
            row.timezone = self.zone_of(Some(zone))?.name().to_string();
        }
        let tz = self.zone_of(Some(&row.timezone))?;
        if let Some(schedule) = change.schedule.as_deref() {
            let plan = spec::plan(change.kind, schedule, tz, now)?;
            row.kind = plan.kind;
            row.schedule = plan.schedule;
            row.next_run_ms = Some(plan.next_run_ms);
        } else if change.kind.is_some_and(|kind| kind != row.kind) {
            return Err(Error::InvalidSchedule(
                "changing `kind` needs a new `schedule` to go with it".into(),
            ));
        } else if zone_changed && row.kind == ReminderKind::Cron && row.next_run_ms.is_some() {
            row.next_run_ms = Some(next_cron(&row, tz, now)?);
        }
        row.updated_ms = now;
        self.repo.update(&row)?;
        Ok(reminder_of(&row))
    }

    pub(super) fn delete(&self, id: &str) -> Result<()> {
        let row = self.row(id)?;
        self.repo.delete(row.id)?;
        Ok(())
    }

    pub(super) fn set_enabled(&self, id: &str, enabled: bool) -> Result<super::Reminder> {
        let mut row = self.row(id)?;
        let now = self.clock.now_ms();
        if enabled && !row.enabled {
            match row.kind {
                // Times missed while paused are skipped: the next one is after now.
                ReminderKind::Cron => {
                    let tz = self.zone_of(Some(&row.timezone))?;
                    row.next_run_ms = Some(next_cron(&row, tz, now)?);
                }
                // A one-shot that came due while paused fires now (see fire_due).
                ReminderKind::OneShot if row.next_run_ms.is_none() => {
                    return Err(Error::InvalidSchedule(format!(
                        "reminder {} was a one-shot and has already fired; give it a new time with update (schedule: `in 1 hour`, `tomorrow 9am`...)",
                        row.id
                    )));
                }
                ReminderKind::OneShot => {}
            }
        }
        row.enabled = enabled;
        row.updated_ms = now;
        self.repo.update(&row)?;
        Ok(reminder_of(&row))
    }

    pub(super) fn history(&self, id: &str, limit: Option<u32>) -> Result<Vec<ReminderRunInfo>> {
        let row = self.row(id)?;
        Ok(self.repo.runs(row.id, limit)?.iter().map(run_of).collect())
    }
}

/// Reminders straight on the database, for a process that does not run the scheduler: every
/// operation but `run_now` works; a scheduler running elsewhere (the desktop app) re-reads the
/// earliest time at least once a minute, so what is created here fires there on time.
#[derive(Clone)]
pub struct StoredReminders {
    book: Book,
}

impl std::fmt::Debug for StoredReminders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredReminders").finish_non_exhaustive()
    }
}

impl StoredReminders {
    pub fn new(db: &osprey_db::Database, clock: Arc<dyn Clock>, timezone: Tz) -> Self {
        StoredReminders {
            book: Book {
                repo: db.reminders(),
                clock,
                timezone,
            },
        }
    }
}

impl ScheduleBackend for StoredReminders {
    fn name(&self) -> String {
        "stored".into()
    }

    fn create(&self, request: CreateReminder) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move { self.book.create(request) })
    }

    fn update(&self, id: String, change: UpdateReminder) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move { self.book.update(&id, change) })
    }

    fn delete(&self, id: String) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.book.delete(&id) })
    }

    fn list(&self, session_id: Option<String>) -> BoxFuture<'_, Result<Vec<Reminder>>> {
        Box::pin(async move { self.book.list(session_id.as_deref()) })
    }

    fn get(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move { self.book.row(&id).map(|row| reminder_of(&row)) })
    }

    fn pause(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move { self.book.set_enabled(&id, false) })
    }

    fn resume(&self, id: String) -> BoxFuture<'_, Result<Reminder>> {
        Box::pin(async move { self.book.set_enabled(&id, true) })
    }

    fn run_now(&self, id: String) -> BoxFuture<'_, Result<ReminderRunInfo>> {
        Box::pin(async move {
            self.book.row(&id)?;
            Err(Error::SchedulerStopped(
                "reminders run only where the scheduler runs (the desktop app); this one was not started".into(),
            ))
        })
    }

    fn history(
        &self,
        id: String,
        limit: Option<u32>,
    ) -> BoxFuture<'_, Result<Vec<ReminderRunInfo>>> {
        Box::pin(async move { self.book.history(&id, limit) })
    }
}

/// The reminder's next cron time after `after_ms`.
pub(super) fn next_cron(row: &ReminderRow, tz: Tz, after_ms: i64) -> Result<i64> {
    let cron = spec::parse_cron(&row.schedule)?;
    spec::next_cron_ms(&cron, tz, after_ms)
}

/// At most `chars` characters, with an ellipsis when cut.
pub(super) fn shorten(text: &str, chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_string(),
    }
}

/// A delivery as stored: checked (a channel is named) and written as JSON.
fn delivery_json(delivery: &crate::outbox::Delivery) -> Result<String> {
    if delivery.channel.trim().is_empty() {
        return Err(Error::InvalidSchedule(
            "`deliver` needs a `channel` (message list shows the connected channels)".into(),
        ));
    }
    serde_json::to_string(delivery)
        .map_err(|e| Error::InvalidSchedule(format!("`deliver` cannot be stored: {e}")))
}
