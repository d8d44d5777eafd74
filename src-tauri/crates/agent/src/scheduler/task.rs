//! The scheduler task: the only writer of reminders. Before answering any request and after
//! every wake it fires what is due, so a request always sees the state as of "now".

use std::collections::HashSet;
use std::sync::Arc;

use osprey_db::{
    NextRun, ReminderKind, ReminderRow, Reminders, RunFinish, RunOutcome, RunStart, RunTrigger,
};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::book::{Book, next_cron, shorten};
use super::{
    Clock, Firing, ReminderHandler, ReminderRunInfo, Request, SchedulerConfig, SchedulerEvent,
    reminder_of, run_of,
};
use crate::{Error, Result};

/// Output summaries in the history are cut to this many characters.
pub(super) const OUTPUT_CHARS: usize = 500;

pub(super) struct Actor {
    book: Book,
    repo: Reminders,
    handler: Arc<dyn ReminderHandler>,
    clock: Arc<dyn Clock>,
    events: broadcast::Sender<SchedulerEvent>,
    cancel: CancellationToken,
    /// When this scheduler started: an occurrence before it was missed while Osprey was down.
    started_ms: i64,
    /// Reminders with a run in progress: a due occurrence of one is skipped, not stacked.
    running: HashSet<i64>,
    finished_sender: mpsc::UnboundedSender<i64>,
    finished: mpsc::UnboundedReceiver<i64>,
}

impl Actor {
    pub(super) fn new(
        repo: Reminders,
        handler: Arc<dyn ReminderHandler>,
        config: SchedulerConfig,
        events: broadcast::Sender<SchedulerEvent>,
        cancel: CancellationToken,
    ) -> Result<Self> {
        let started_ms = config.clock.now_ms();
        // Nothing runs before this scheduler starts; what a previous process left running was
        // cut off.
        let interrupted = repo.interrupt_running(started_ms)?;
        if interrupted > 0 {
            tracing::warn!(
                interrupted,
                "reminder runs were cut off by the last shutdown"
            );
        }
        let (finished_sender, finished) = mpsc::unbounded_channel();
        Ok(Actor {
            book: Book {
                repo: repo.clone(),
                clock: config.clock.clone(),
                timezone: config.timezone,
            },
            repo,
            handler,
            clock: config.clock,
            events,
            cancel,
            started_ms,
            running: HashSet::new(),
            finished_sender,
            finished,
        })
    }

    pub(super) async fn run(mut self, mut requests: mpsc::Receiver<Request>) {
        loop {
            self.fire_due();
            let next = match self.repo.next_due_ms() {
                Ok(next) => next,
                Err(error) => {
                    tracing::error!(%error, "reading the next reminder time");
                    // Storage trouble: try again in a minute rather than spin or stop.
                    Some(self.clock.now_ms() + 60_000)
                }
            };
            let sleep = match next {
                Some(at) => self.clock.sleep_until(at),
                None => Box::pin(std::future::pending()),
            };
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                request = requests.recv() => match request {
                    Some(request) => {
                        self.fire_due();
                        self.handle(request);
                    }
                    // Every handle is gone.
                    None => break,
                },
                Some(id) = self.finished.recv() => {
                    self.running.remove(&id);
                }
                _ = sleep => {}
            }
        }
        // Firings still running are asked to stop; their runs are recorded as they end, or
        // marked interrupted at the next start.
        self.cancel.cancel();
    }

    fn handle(&mut self, request: Request) {
        // A dropped receiver means the asker gave up waiting; nothing to do about it.
        match request {
            Request::Create(create, reply) => {
                let _ = reply.send(self.book.create(create));
            }
            Request::Update(id, change, reply) => {
                let _ = reply.send(self.book.update(&id, change));
            }
            Request::Delete(id, reply) => {
                let _ = reply.send(self.book.delete(&id));
            }
            Request::List(session, reply) => {
                let _ = reply.send(self.book.list(session.as_deref()));
            }
            Request::Get(id, reply) => {
                let _ = reply.send(self.book.row(&id).map(|row| reminder_of(&row)));
            }
            Request::Pause(id, reply) => {
                let _ = reply.send(self.set_enabled(&id, false));
            }
            Request::Resume(id, reply) => {
                let _ = reply.send(self.set_enabled(&id, true));
            }
            Request::RunNow(id, reply) => {
                let _ = reply.send(self.run_now(&id));
            }
            Request::History(id, limit, reply) => {
                let _ = reply.send(self.book.history(&id, limit));
            }
        }
    }

    fn set_enabled(&mut self, id: &str, enabled: bool) -> Result<super::Reminder> {
        self.book.set_enabled(id, enabled)?;
        // Resuming a one-shot that came due while paused fires it before the answer goes out,
        // and the answer shows it fired.
        self.fire_due();
        self.book.row(id).map(|row| reminder_of(&row))
    }

    fn run_now(&mut self, id: &str) -> Result<ReminderRunInfo> {
        let row = self.book.row(id)?;
        if self.running.contains(&row.id) {
            return Err(Error::InvalidSchedule(format!(
                "reminder {} is running right now; see its history for the outcome",
                row.id
            )));
        }
        let run_id = self
            .start(&row, RunTrigger::Manual, None, NextRun::Keep)?
            .ok_or_else(|| Error::ReminderNotFound(id.to_string()))?;
        let run = self
            .repo
            .run(run_id)?
            .ok_or_else(|| Error::ReminderNotFound(id.to_string()))?;
        Ok(run_of(&run))
    }

    /// Fires every enabled reminder whose time has come, once each however many of its times
    /// passed, and moves it to its next time.
    fn fire_due(&mut self) {
        let now = self.clock.now_ms();
        let due = match self.repo.due(now) {
            Ok(due) => due,
            Err(error) => {
                tracing::error!(%error, "reading due reminders");
                return;
            }
        };
        for row in due {
            let scheduled = row.next_run_ms.unwrap_or(now);
            let next = match row.kind {
                ReminderKind::OneShot => Ok(None),
                ReminderKind::Cron => self
                    .book
                    .zone_of(Some(&row.timezone))
                    .and_then(|tz| next_cron(&row, tz, now))
                    .map(Some),
            };
            let next = match next {
                Ok(next) => next,
                Err(error) => {
                    self.give_up(&row, now, &error.to_string());
                    continue;
                }
            };
            if self.running.contains(&row.id) {
                // Still busy with an earlier run: skip this occurrence rather than stack runs.
                tracing::info!(
                    reminder = row.id,
                    "skipping an occurrence while the last run is in progress"
                );
                let mut moved = row.clone();
                moved.next_run_ms = next;
                if let Err(error) = self.repo.update(&moved) {
                    tracing::error!(%error, "moving a reminder's next time");
                }
                continue;
            }
            let trigger = if scheduled < self.started_ms {
                RunTrigger::CatchUp
            } else {
                RunTrigger::Schedule
            };
            if let Err(error) = self.start(&row, trigger, Some(scheduled), NextRun::Set(next)) {
                tracing::error!(%error, reminder = row.id, "starting a reminder run");
            }
        }
    }

    /// A reminder whose next time cannot be computed (its zone vanished from the database, its
    /// expression was edited by hand) is paused, with the reason in its history, instead of
    /// being retried forever.
    fn give_up(&mut self, row: &ReminderRow, now: i64, reason: &str) {
        tracing::warn!(
            reminder = row.id,
            reason,
            "pausing a reminder that cannot be scheduled"
        );
        let result = (|| -> Result<()> {
            if let Some(run_id) = self.repo.start_run(&RunStart {
                reminder_id: row.id,
                trigger: RunTrigger::Schedule,
                scheduled_ms: row.next_run_ms,
                started_ms: now,
                next_run: NextRun::Set(None),
            })? {
                self.repo.finish_run(&RunFinish {
                    run_id,
                    finished_ms: now,
                    outcome: RunOutcome::Error,
                    session_id: None,
                    error: Some(&format!("paused: {reason}")),
                    output: None,
                })?;
            }
            let mut paused = self.repo.get(row.id)?.unwrap_or_else(|| row.clone());
            paused.enabled = false;
            paused.updated_ms = now;
            self.repo.update(&paused)?;
            Ok(())
        })();
        if let Err(error) = result {
            tracing::error!(%error, "pausing a reminder");
        }
    }

    /// Records the run (moving the reminder's next time in the same transaction) and hands it
    /// to the handler on its own task. `None` when the reminder is gone.
    fn start(
        &mut self,
        row: &ReminderRow,
        trigger: RunTrigger,
        scheduled_ms: Option<i64>,
        next_run: NextRun,
    ) -> Result<Option<i64>> {
        let started_ms = self.clock.now_ms();
        let Some(run_id) = self.repo.start_run(&RunStart {
            reminder_id: row.id,
            trigger,
            scheduled_ms,
            started_ms,
            next_run,
        })?
        else {
            return Ok(None);
        };
        self.running.insert(row.id);
        let reminder = reminder_of(&self.repo.get(row.id)?.unwrap_or_else(|| row.clone()));
        let _ = self.events.send(SchedulerEvent::Fired {
            reminder: Box::new(reminder.clone()),
            run_id: run_id.to_string(),
            trigger,
        });
        let firing = Firing {
            reminder,
            run_id: run_id.to_string(),
            trigger,
            scheduled_ms,
            cancel: self.cancel.child_token(),
        };
        let work = self.handler.fire(firing);
        let repo = self.repo.clone();
        let clock = self.clock.clone();
        let events = self.events.clone();
        let finished = self.finished_sender.clone();
        let reminder_id = row.id;
        tokio::spawn(async move {
            // The handler runs on a task of its own so a panic in it is caught here and lands
            // in the history like any other failure.
            let result = match tokio::spawn(work).await {
                Ok(result) => result,
                Err(join) if join.is_panic() => Err("the reminder handler panicked".to_string()),
                Err(_) => Err("the reminder run was cancelled".to_string()),
            };
            let (outcome, session, output, error) = match &result {
                Ok(report) => (
                    RunOutcome::Ok,
                    report.session_id.as_deref(),
                    report.output.as_deref().map(|o| shorten(o, OUTPUT_CHARS)),
                    None,
                ),
                Err(error) => (RunOutcome::Error, None, None, Some(error.as_str())),
            };
            if let Err(db_error) = repo.finish_run(&RunFinish {
                run_id,
                finished_ms: clock.now_ms(),
                outcome,
                session_id: session,
                error,
                output: output.as_deref(),
            }) {
                tracing::error!(%db_error, "recording the end of a reminder run");
            }
            let _ = events.send(SchedulerEvent::Finished {
                reminder_id: reminder_id.to_string(),
                run_id: run_id.to_string(),
                outcome,
                error: error.map(str::to_string),
                output,
            });
            let _ = finished.send(reminder_id);
        });
        Ok(Some(run_id))
    }
}
