//! Reminders: one-shot and cron schedules with the prompt to run when they fire, and the history
//! of their runs. This repository only stores; parsing schedules and computing the next time is
//! the scheduler's job (osprey-agent). Times are milliseconds since the Unix epoch and are passed
//! in rather than read from the clock, so the scheduler's controllable clock decides "now".
//!
//! Firing is recorded before the work starts ([`Reminders::start_run`] advances `next_run_ms`
//! and inserts a `running` row in one transaction), so a crash mid-run never fires the same
//! occurrence twice; the run is marked `interrupted` by [`Reminders::interrupt_running`] at the
//! next start.

use rusqlite::{OptionalExtension, Row, params};

use crate::{Database, Result};

/// How a reminder's schedule is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReminderKind {
    /// Fires once at `next_run_ms`.
    OneShot,
    /// Fires on every match of a cron expression.
    Cron,
}

impl ReminderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReminderKind::OneShot => "one_shot",
            ReminderKind::Cron => "cron",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "one_shot" => Some(ReminderKind::OneShot),
            "cron" => Some(ReminderKind::Cron),
            _ => None,
        }
    }
}

/// Why a run started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunTrigger {
    /// Its time came while the scheduler was running.
    Schedule,
    /// Its time (or several, coalesced) passed while Osprey was not running.
    CatchUp,
    /// Someone asked to run it now.
    Manual,
}

impl RunTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            RunTrigger::Schedule => "schedule",
            RunTrigger::CatchUp => "catch_up",
            RunTrigger::Manual => "manual",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "schedule" => Some(RunTrigger::Schedule),
            "catch_up" => Some(RunTrigger::CatchUp),
            "manual" => Some(RunTrigger::Manual),
            _ => None,
        }
    }
}

/// How a run ended (or that it has not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunOutcome {
    Running,
    Ok,
    Error,
    /// Osprey stopped while it ran.
    Interrupted,
}

impl RunOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Running => "running",
            RunOutcome::Ok => "ok",
            RunOutcome::Error => "error",
            RunOutcome::Interrupted => "interrupted",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "running" => Some(RunOutcome::Running),
            "ok" => Some(RunOutcome::Ok),
            "error" => Some(RunOutcome::Error),
            "interrupted" => Some(RunOutcome::Interrupted),
            _ => None,
        }
    }
}

/// One stored reminder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReminderRow {
    pub id: i64,
    /// The session its turns run in; `None` runs each firing in a new session.
    pub session_id: Option<String>,
    pub title: String,
    /// What the agent is asked (or the notification says) when it fires.
    pub prompt: String,
    /// A shell command run first when it fires (its output goes with the prompt).
    pub command: Option<String>,
    /// Where the output is delivered besides the session (JSON the scheduler defines: channel,
    /// recipient, thread).
    pub deliver: Option<String>,
    pub kind: ReminderKind,
    /// The schedule as given: the original one-shot text or the cron expression.
    pub schedule: String,
    /// The IANA time zone cron times are computed in.
    pub timezone: String,
    /// When it fires next; `None` once a one-shot has fired.
    pub next_run_ms: Option<i64>,
    /// `false` while paused.
    pub enabled: bool,
    /// Who created it (`user`, `system`, an app id...).
    pub origin: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub last_run_ms: Option<i64>,
}

/// What a new reminder starts with.
#[derive(Clone, Debug)]
pub struct NewReminder<'a> {
    pub session_id: Option<&'a str>,
    pub title: &'a str,
    pub prompt: &'a str,
    pub command: Option<&'a str>,
    pub deliver: Option<&'a str>,
    pub kind: ReminderKind,
    pub schedule: &'a str,
    pub timezone: &'a str,
    pub next_run_ms: Option<i64>,
    pub enabled: bool,
    pub origin: &'a str,
    pub created_ms: i64,
}

/// One run in a reminder's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReminderRun {
    pub id: i64,
    pub reminder_id: i64,
    pub trigger: RunTrigger,
    /// The occurrence it stands for (`None` for a manual run).
    pub scheduled_ms: Option<i64>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    pub outcome: RunOutcome,
    /// The session the turn ran in, when there was one.
    pub session_id: Option<String>,
    pub error: Option<String>,
    /// A short summary of what the run produced.
    pub output: Option<String>,
}

/// What starting a run does to the reminder's next time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextRun {
    /// Leave it (a manual run does not consume the scheduled occurrence).
    Keep,
    /// Move it (`None`: a one-shot is done).
    Set(Option<i64>),
}

/// The start of a run.
#[derive(Clone, Copy, Debug)]
pub struct RunStart {
    pub reminder_id: i64,
    pub trigger: RunTrigger,
    pub scheduled_ms: Option<i64>,
    pub started_ms: i64,
    pub next_run: NextRun,
}

/// The end of a run.
#[derive(Clone, Debug)]
pub struct RunFinish<'a> {
    pub run_id: i64,
    pub finished_ms: i64,
    pub outcome: RunOutcome,
    pub session_id: Option<&'a str>,
    pub error: Option<&'a str>,
    pub output: Option<&'a str>,
}

/// The reminders repository.
#[derive(Clone, Debug)]
pub struct Reminders {
    db: Database,
}

const REMINDER_COLUMNS: &str = "id, session_id, title, prompt, kind, schedule, timezone, next_run_ms, enabled, origin, created_ms, updated_ms, last_run_ms, command, deliver";

const RUN_COLUMNS: &str = "id, reminder_id, trigger, scheduled_ms, started_ms, finished_ms, outcome, session_id, error, output";

fn bad_text(column: usize, value: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        rusqlite::types::Type::Text,
        format!("unknown value `{value}`").into(),
    )
}

fn reminder_row(row: &Row<'_>) -> rusqlite::Result<ReminderRow> {
    let kind: String = row.get(4)?;
    Ok(ReminderRow {
        id: row.get(0)?,
        session_id: row.get(1)?,
        title: row.get(2)?,
        prompt: row.get(3)?,
        kind: ReminderKind::parse(&kind).ok_or_else(|| bad_text(4, kind))?,
        schedule: row.get(5)?,
        timezone: row.get(6)?,
        next_run_ms: row.get(7)?,
        enabled: row.get(8)?,
        origin: row.get(9)?,
        created_ms: row.get(10)?,
        updated_ms: row.get(11)?,
        last_run_ms: row.get(12)?,
        command: row.get(13)?,
        deliver: row.get(14)?,
    })
}

fn run_row(row: &Row<'_>) -> rusqlite::Result<ReminderRun> {
    let trigger: String = row.get(2)?;
    let outcome: String = row.get(6)?;
    Ok(ReminderRun {
        id: row.get(0)?,
        reminder_id: row.get(1)?,
        trigger: RunTrigger::parse(&trigger).ok_or_else(|| bad_text(2, trigger))?,
        scheduled_ms: row.get(3)?,
        started_ms: row.get(4)?,
        finished_ms: row.get(5)?,
        outcome: RunOutcome::parse(&outcome).ok_or_else(|| bad_text(6, outcome))?,
        session_id: row.get(7)?,
        error: row.get(8)?,
        output: row.get(9)?,
    })
}

impl Reminders {
    pub(crate) fn new(db: Database) -> Self {
        Reminders { db }
    }

    pub fn create(&self, new: &NewReminder<'_>) -> Result<ReminderRow> {
        let id = self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO reminders (session_id, title, prompt, kind, schedule, timezone,
                     next_run_ms, enabled, origin, created_ms, updated_ms, command, deliver)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12)",
                params![
                    new.session_id,
                    new.title,
                    new.prompt,
                    new.kind.as_str(),
                    new.schedule,
                    new.timezone,
                    new.next_run_ms,
                    new.enabled,
                    new.origin,
                    new.created_ms,
                    new.command,
                    new.deliver
                ],
            )?;
            Ok(c.last_insert_rowid())
        })?;
        self.get(id)?
            .ok_or(crate::Error::Sqlite(rusqlite::Error::QueryReturnedNoRows))
    }

    pub fn get(&self, id: i64) -> Result<Option<ReminderRow>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {REMINDER_COLUMNS} FROM reminders WHERE id = ?1"),
                [id],
                reminder_row,
            )
            .optional()?)
        })
    }

    /// All reminders, oldest first; only those of one session when `session_id` is given.
    pub fn list(&self, session_id: Option<&str>) -> Result<Vec<ReminderRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {REMINDER_COLUMNS} FROM reminders
                 WHERE ?1 IS NULL OR session_id = ?1 ORDER BY id"
            ))?;
            let rows = stmt.query_map([session_id], reminder_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Writes every mutable field of `row` (all but id, origin and created_ms); `false` when no
    /// such reminder exists.
    pub fn update(&self, row: &ReminderRow) -> Result<bool> {
        self.db.with_conn(|c| {
            let changed = c.execute(
                "UPDATE reminders SET session_id = ?2, title = ?3, prompt = ?4, kind = ?5,
                     schedule = ?6, timezone = ?7, next_run_ms = ?8, enabled = ?9,
                     updated_ms = ?10, last_run_ms = ?11, command = ?12, deliver = ?13
                 WHERE id = ?1",
                params![
                    row.id,
                    row.session_id,
                    row.title,
                    row.prompt,
                    row.kind.as_str(),
                    row.schedule,
                    row.timezone,
                    row.next_run_ms,
                    row.enabled,
                    row.updated_ms,
                    row.last_run_ms,
                    row.command,
                    row.deliver
                ],
            )?;
            Ok(changed > 0)
        })
    }

    /// Deletes the reminder and its history; `false` when it did not exist.
    pub fn delete(&self, id: i64) -> Result<bool> {
        self.db
            .with_conn(|c| Ok(c.execute("DELETE FROM reminders WHERE id = ?1", [id])? > 0))
    }

    /// Enabled reminders whose time is at or before `now_ms`, earliest first.
    pub fn due(&self, now_ms: i64) -> Result<Vec<ReminderRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {REMINDER_COLUMNS} FROM reminders
                 WHERE enabled = 1 AND next_run_ms IS NOT NULL AND next_run_ms <= ?1
                 ORDER BY next_run_ms, id"
            ))?;
            let rows = stmt.query_map([now_ms], reminder_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The earliest time any enabled reminder fires.
    pub fn next_due_ms(&self) -> Result<Option<i64>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                "SELECT min(next_run_ms) FROM reminders WHERE enabled = 1 AND next_run_ms IS NOT NULL",
                [],
                |r| r.get(0),
            )?)
        })
    }

    /// Records the start of a run and moves the reminder's next time, in one transaction.
    /// Returns the run's id, or `None` when the reminder no longer exists or (when moving the
    /// next time) its next time is no longer `scheduled_ms`: someone else started that run.
    pub fn start_run(&self, start: &RunStart) -> Result<Option<i64>> {
        self.db.with_conn(|c| {
            let tx = c.transaction()?;
            let changed = match start.next_run {
                NextRun::Keep => tx.execute(
                    "UPDATE reminders SET last_run_ms = ?2 WHERE id = ?1",
                    params![start.reminder_id, start.started_ms],
                )?,
                // Only if the occurrence is still the one this run stands for: a second
                // scheduler on the same file (another Osprey process) that saw it due too
                // finds it taken and starts nothing.
                NextRun::Set(next) => tx.execute(
                    "UPDATE reminders SET last_run_ms = ?2, next_run_ms = ?3
                     WHERE id = ?1 AND next_run_ms IS ?4",
                    params![
                        start.reminder_id,
                        start.started_ms,
                        next,
                        start.scheduled_ms
                    ],
                )?,
            };
            if changed == 0 {
                return Ok(None);
            }
            tx.execute(
                "INSERT INTO reminder_runs (reminder_id, trigger, scheduled_ms, started_ms, outcome)
                 VALUES (?1, ?2, ?3, ?4, 'running')",
                params![
                    start.reminder_id,
                    start.trigger.as_str(),
                    start.scheduled_ms,
                    start.started_ms
                ],
            )?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            Ok(Some(id))
        })
    }

    /// Records how a run ended; `false` when the run is gone (its reminder was deleted).
    pub fn finish_run(&self, finish: &RunFinish<'_>) -> Result<bool> {
        self.db.with_conn(|c| {
            let changed = c.execute(
                "UPDATE reminder_runs SET finished_ms = ?2, outcome = ?3, session_id = ?4,
                     error = ?5, output = ?6
                 WHERE id = ?1",
                params![
                    finish.run_id,
                    finish.finished_ms,
                    finish.outcome.as_str(),
                    finish.session_id,
                    finish.error,
                    finish.output
                ],
            )?;
            Ok(changed > 0)
        })
    }

    /// Marks runs still `running` as `interrupted`: called at start, when none can be running.
    pub fn interrupt_running(&self, now_ms: i64) -> Result<usize> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "UPDATE reminder_runs SET outcome = 'interrupted', finished_ms = ?1,
                     error = 'Osprey stopped while this run was in progress'
                 WHERE outcome = 'running'",
                [now_ms],
            )?)
        })
    }

    pub fn run(&self, run_id: i64) -> Result<Option<ReminderRun>> {
        self.db.with_conn(|c| {
            Ok(c.query_row(
                &format!("SELECT {RUN_COLUMNS} FROM reminder_runs WHERE id = ?1"),
                [run_id],
                run_row,
            )
            .optional()?)
        })
    }

    /// A reminder's runs, newest first.
    pub fn runs(&self, reminder_id: i64, limit: Option<u32>) -> Result<Vec<ReminderRun>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM reminder_runs WHERE reminder_id = ?1
                 ORDER BY id DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(
                params![reminder_id, limit.map(i64::from).unwrap_or(-1)],
                run_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_reminder(next: Option<i64>) -> NewReminder<'static> {
        NewReminder {
            session_id: Some("s1"),
            title: "stretch",
            prompt: "Remind me to stretch",
            command: None,
            deliver: None,
            kind: ReminderKind::OneShot,
            schedule: "in 5 min",
            timezone: "UTC",
            next_run_ms: next,
            enabled: true,
            origin: "user",
            created_ms: 1_000,
        }
    }

    #[test]
    fn create_get_list_update_delete_round_trip() {
        let db = Database::open_in_memory().unwrap();
        let repo = db.reminders();
        let a = repo.create(&new_reminder(Some(5_000))).unwrap();
        let b = repo
            .create(&NewReminder {
                session_id: None,
                kind: ReminderKind::Cron,
                schedule: "0 9 * * *",
                ..new_reminder(Some(9_000))
            })
            .unwrap();
        assert_eq!(a.kind, ReminderKind::OneShot);
        assert_eq!(a.created_ms, 1_000);
        assert_eq!(repo.get(a.id).unwrap().unwrap(), a);
        assert_eq!(repo.list(None).unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(repo.list(Some("s1")).unwrap(), vec![a.clone()]);

        let mut changed = a.clone();
        changed.title = "walk".into();
        changed.command = Some("date".into());
        changed.deliver = Some(r#"{"channel":"bridge"}"#.into());
        changed.enabled = false;
        changed.updated_ms = 2_000;
        assert!(repo.update(&changed).unwrap());
        assert_eq!(repo.get(a.id).unwrap().unwrap(), changed);

        assert!(repo.delete(a.id).unwrap());
        assert!(!repo.delete(a.id).unwrap());
        assert_eq!(repo.get(a.id).unwrap(), None);
        assert!(!repo.update(&changed).unwrap());
    }

    #[test]
    fn due_and_next_skip_paused_and_finished_reminders() {
        let db = Database::open_in_memory().unwrap();
        let repo = db.reminders();
        let early = repo.create(&new_reminder(Some(5_000))).unwrap();
        let paused = repo
            .create(&NewReminder {
                enabled: false,
                ..new_reminder(Some(1_000))
            })
            .unwrap();
        repo.create(&new_reminder(None)).unwrap();
        let late = repo.create(&new_reminder(Some(8_000))).unwrap();
        assert_eq!(repo.next_due_ms().unwrap(), Some(5_000));
        assert!(repo.due(4_999).unwrap().is_empty());
        let due: Vec<i64> = repo.due(8_000).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(due, vec![early.id, late.id]);
        assert!(!due.contains(&paused.id));
    }

    #[test]
    fn a_run_advances_the_schedule_atomically_and_history_is_newest_first() {
        let db = Database::open_in_memory().unwrap();
        let repo = db.reminders();
        let r = repo.create(&new_reminder(Some(5_000))).unwrap();
        let first = repo
            .start_run(&RunStart {
                reminder_id: r.id,
                trigger: RunTrigger::Schedule,
                scheduled_ms: Some(5_000),
                started_ms: 5_010,
                next_run: NextRun::Set(None),
            })
            .unwrap()
            .unwrap();
        let stored = repo.get(r.id).unwrap().unwrap();
        assert_eq!(stored.next_run_ms, None);
        // The same occurrence cannot be started twice.
        let again = repo
            .start_run(&RunStart {
                reminder_id: r.id,
                trigger: RunTrigger::Schedule,
                scheduled_ms: Some(5_000),
                started_ms: 5_011,
                next_run: NextRun::Set(None),
            })
            .unwrap();
        assert_eq!(again, None);
        assert_eq!(stored.last_run_ms, Some(5_010));
        assert_eq!(
            repo.run(first).unwrap().unwrap().outcome,
            RunOutcome::Running
        );
        assert!(
            repo.finish_run(&RunFinish {
                run_id: first,
                finished_ms: 5_020,
                outcome: RunOutcome::Error,
                session_id: Some("s9"),
                error: Some("provider down"),
                output: None,
            })
            .unwrap()
        );

        let second = repo
            .start_run(&RunStart {
                reminder_id: r.id,
                trigger: RunTrigger::Manual,
                scheduled_ms: None,
                started_ms: 6_000,
                next_run: NextRun::Keep,
            })
            .unwrap()
            .unwrap();
        let runs = repo.runs(r.id, None).unwrap();
        assert_eq!(
            runs.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![second, first]
        );
        assert_eq!(runs[1].error.as_deref(), Some("provider down"));
        assert_eq!(runs[1].session_id.as_deref(), Some("s9"));
        assert_eq!(runs[1].finished_ms, Some(5_020));
        assert_eq!(repo.runs(r.id, Some(1)).unwrap().len(), 1);

        // A restart finds the manual run still "running": it is marked interrupted.
        assert_eq!(repo.interrupt_running(7_000).unwrap(), 1);
        let run = repo.run(second).unwrap().unwrap();
        assert_eq!(run.outcome, RunOutcome::Interrupted);
        assert_eq!(run.finished_ms, Some(7_000));

        // Deleting the reminder takes its history with it; a late finish is a no-op.
        repo.delete(r.id).unwrap();
        assert!(repo.runs(r.id, None).unwrap().is_empty());
        assert!(
            !repo
                .finish_run(&RunFinish {
                    run_id: second,
                    finished_ms: 8_000,
                    outcome: RunOutcome::Ok,
                    session_id: None,
                    error: None,
                    output: None,
                })
                .unwrap()
        );
        assert_eq!(
            repo.start_run(&RunStart {
                reminder_id: r.id,
                trigger: RunTrigger::Manual,
                scheduled_ms: None,
                started_ms: 9_000,
                next_run: NextRun::Keep,
            })
            .unwrap(),
            None
        );
    }
}
