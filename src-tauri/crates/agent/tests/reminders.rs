//! Reminders end to end: the scheduler as a real tokio task on a real SQLite file, with a clock
//! the test moves by hand (so nothing waits minutes, and nothing sleeps and hopes: every wait is
//! on an event or a condition with a deadline), and the agent tool's reminder resource through a
//! real registry.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeZone;
use futures::future::BoxFuture;
use osprey_agent::scheduler::{
    CreateReminder, FireReport, Firing, ReminderHandler, SchedulerEvent, UpdateReminder,
};
use osprey_agent::{
    AgentTool, Error, ManualClock, ScheduleBackend, ScheduleSlot, Scheduler, SchedulerConfig,
};
use osprey_db::{Database, RunOutcome, RunTrigger};
use osprey_tools::{Level, Policy, Registry, RegistryConfig, ToolContext};
use osprey_types::{Origin, ToolResult};
use serde_json::{Value, json};
use tokio::sync::broadcast;

const MINUTE: i64 = 60_000;
const DEADLINE: Duration = Duration::from_secs(10);

/// Sunday 2026-11-22 10:00 in Berlin.
fn start_ms() -> i64 {
    chrono_tz::Europe::Berlin
        .with_ymd_and_hms(2026, 11, 22, 10, 0, 0)
        .unwrap()
        .timestamp_millis()
}

/// Remembers every firing; fails on prompts that say so.
#[derive(Default)]
struct Recorder {
    fired: Mutex<Vec<Firing>>,
}

impl Recorder {
    fn prompts(&self) -> Vec<String> {
        self.fired
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.reminder.prompt.clone())
            .collect()
    }
}

impl ReminderHandler for Recorder {
    fn fire(&self, firing: Firing) -> BoxFuture<'static, Result<FireReport, String>> {
        let prompt = firing.reminder.prompt.clone();
        let session = firing.reminder.session_id.clone();
        self.fired.lock().unwrap().push(firing);
        Box::pin(async move {
            if prompt.contains("fail") {
                return Err(format!("could not do `{prompt}`"));
            }
            if prompt.contains("panic") {
                panic!("handler bug");
            }
            if prompt.contains("block") {
                std::future::pending::<()>().await;
            }
            Ok(FireReport {
                session_id: session.or(Some("fresh".into())),
                output: Some(format!("done: {prompt}")),
            })
        })
    }
}

struct Setup {
    scheduler: Scheduler,
    clock: ManualClock,
    recorder: Arc<Recorder>,
    events: broadcast::Receiver<SchedulerEvent>,
}

fn start(db: &Database, clock: &ManualClock) -> Setup {
    let recorder = Arc::new(Recorder::default());
    let scheduler = Scheduler::start(
        db,
        recorder.clone(),
        SchedulerConfig {
            clock: Arc::new(clock.clone()),
            timezone: chrono_tz::Europe::Berlin,
        },
    )
    .unwrap();
    let events = scheduler.subscribe();
    Setup {
        scheduler,
        clock: clock.clone(),
        recorder,
        events,
    }
}

fn memory_setup() -> Setup {
    let db = Database::open_in_memory().unwrap();
    start(&db, &ManualClock::new(start_ms()))
}

fn create(prompt: &str, schedule: &str) -> CreateReminder {
    CreateReminder {
        prompt: prompt.into(),
        schedule: schedule.into(),
        origin: "user".into(),
        ..Default::default()
    }
}

/// The next finished run, within the deadline.
async fn finished(
    events: &mut broadcast::Receiver<SchedulerEvent>,
) -> (String, RunOutcome, Option<String>) {
    tokio::time::timeout(DEADLINE, async {
        loop {
            match events.recv().await.expect("the scheduler is running") {
                SchedulerEvent::Finished {
                    reminder_id,
                    outcome,
                    error,
                    ..
                } => return (reminder_id, outcome, error),
                SchedulerEvent::Fired { .. } => {}
            }
        }
    })
    .await
    .expect("a run finished before the deadline")
}

/// Waits until `condition` holds, checking after every scheduler event (or every 20 ms).
async fn until(what: &str, mut condition: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_one_shot_fires_at_its_time_once_and_the_run_is_recorded() {
    let mut s = memory_setup();
    let reminder = s
        .scheduler
        .create(create("stretch", "in 5 min"))
        .await
        .unwrap();
    assert_eq!(reminder.kind, "one_shot");
    assert_eq!(reminder.next_run_ms, Some(start_ms() + 5 * MINUTE));
    assert_eq!(
        reminder.next_run.as_deref(),
        Some("2026-11-22T10:05:00+01:00")
    );
    assert_eq!(reminder.timezone, "Europe/Berlin");
    assert_eq!(reminder.title, "stretch");

    // A minute early: every request first fires what is due, so this answer is authoritative.
    s.clock.advance(Duration::from_secs(4 * 60));
    assert!(
        s.scheduler
            .history(reminder.id.clone(), None)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.recorder.prompts().is_empty());

    s.clock.advance(Duration::from_secs(60));
    let (id, outcome, error) = finished(&mut s.events).await;
    assert_eq!(
        (id.as_str(), outcome, error),
        (reminder.id.as_str(), RunOutcome::Ok, None)
    );
    let runs = s
        .scheduler
        .history(reminder.id.clone(), None)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].trigger, RunTrigger::Schedule.as_str());
    assert_eq!(runs[0].scheduled_ms, Some(start_ms() + 5 * MINUTE));
    assert_eq!(runs[0].outcome, "ok");
    assert_eq!(runs[0].output.as_deref(), Some("done: stretch"));
    assert_eq!(runs[0].session_id.as_deref(), Some("fresh"));
    let after = s.scheduler.get(reminder.id.clone()).await.unwrap();
    assert_eq!(after.next_run_ms, None);
    assert_eq!(after.last_run_ms, Some(start_ms() + 5 * MINUTE));

    // Much later, it has still fired exactly once.
    s.clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(
        s.scheduler.history(reminder.id, None).await.unwrap().len(),
        1
    );
    assert_eq!(s.recorder.prompts(), vec!["stretch"]);
}

#[tokio::test]
async fn cron_reminders_fire_on_each_match_and_compute_the_next_time() {
    let mut s = memory_setup();
    let reminder = s
        .scheduler
        .create(create("stand up", "*/10 * * * *"))
        .await
        .unwrap();
    assert_eq!(reminder.kind, "cron");
    assert_eq!(reminder.next_run_ms, Some(start_ms() + 10 * MINUTE));
    for n in 1..=3 {
        s.clock.set(start_ms() + n * 10 * MINUTE);
        finished(&mut s.events).await;
        let now = s.scheduler.get(reminder.id.clone()).await.unwrap();
        assert_eq!(now.next_run_ms, Some(start_ms() + (n + 1) * 10 * MINUTE));
    }
    let runs = s
        .scheduler
        .history(reminder.id.clone(), Some(2))
        .await
        .unwrap();
    assert_eq!(runs.len(), 2, "the limit applies");
    assert_eq!(
        runs[0].scheduled_ms,
        Some(start_ms() + 30 * MINUTE),
        "newest first"
    );

    // Plain-English repeats become cron in the reminder's zone.
    let daily = s
        .scheduler
        .create(CreateReminder {
            timezone: Some("America/New_York".into()),
            ..create("news", "every weekday at 8:30")
        })
        .await
        .unwrap();
    assert_eq!(daily.schedule, "30 8 * * 1-5");
    assert_eq!(daily.next_run.as_deref(), Some("2026-11-23T08:30:00-05:00"));
}

#[tokio::test]
async fn paused_reminders_do_not_fire_and_resume_from_their_next_time() {
    let mut s = memory_setup();
    let cron = s
        .scheduler
        .create(create("water the plants", "*/10 * * * *"))
        .await
        .unwrap();
    let once = s
        .scheduler
        .create(create("call Sam", "in 15 min"))
        .await
        .unwrap();
    assert!(!s.scheduler.pause(cron.id.clone()).await.unwrap().enabled);
    assert!(!s.scheduler.pause(once.id.clone()).await.unwrap().enabled);

    s.clock.advance(Duration::from_secs(35 * 60));
    assert!(
        s.scheduler
            .history(cron.id.clone(), None)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.scheduler
            .history(once.id.clone(), None)
            .await
            .unwrap()
            .is_empty()
    );

    // The repeating one skips what it missed while paused: next is 10:40, not 10:10.
    let resumed = s.scheduler.resume(cron.id.clone()).await.unwrap();
    assert!(resumed.enabled);
    assert_eq!(resumed.next_run_ms, Some(start_ms() + 40 * MINUTE));
    assert!(
        s.scheduler
            .history(cron.id.clone(), None)
            .await
            .unwrap()
            .is_empty()
    );

    // The one-shot came due while paused: resuming fires it.
    s.scheduler.resume(once.id.clone()).await.unwrap();
    let (id, outcome, _) = finished(&mut s.events).await;
    assert_eq!((id, outcome), (once.id.clone(), RunOutcome::Ok));
    // And once fired, it cannot be resumed again without a new time.
    s.scheduler.pause(once.id.clone()).await.unwrap();
    let err = s.scheduler.resume(once.id.clone()).await.unwrap_err();
    assert!(err.to_string().contains("already fired"), "{err}");
    let rearmed = s
        .scheduler
        .update(
            once.id.clone(),
            UpdateReminder {
                schedule: Some("tomorrow 9am".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(rearmed.next_run_ms.is_some());
}

#[tokio::test]
async fn run_now_fires_at_once_without_moving_the_schedule() {
    let mut s = memory_setup();
    let reminder = s
        .scheduler
        .create(create("check the oven", "in 1 hour"))
        .await
        .unwrap();
    let run = s.scheduler.run_now(reminder.id.clone()).await.unwrap();
    assert_eq!(run.trigger, "manual");
    assert_eq!(run.outcome, "running");
    assert_eq!(run.scheduled_ms, None);
    finished(&mut s.events).await;
    let after = s.scheduler.get(reminder.id.clone()).await.unwrap();
    assert_eq!(after.next_run_ms, Some(start_ms() + 60 * MINUTE));
    let history = s
        .scheduler
        .history(reminder.id.clone(), None)
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].outcome, "ok");
    // Its own time still comes.
    s.clock.advance(Duration::from_secs(3600));
    finished(&mut s.events).await;
    assert_eq!(
        s.scheduler.history(reminder.id, None).await.unwrap().len(),
        2
    );
}

#[tokio::test]
async fn handler_errors_and_panics_land_in_the_history_and_the_scheduler_keeps_going() {
    let mut s = memory_setup();
    let failing = s
        .scheduler
        .create(create("fail loudly", "in 1 min"))
        .await
        .unwrap();
    let panicking = s
        .scheduler
        .create(create("panic now", "in 2 min"))
        .await
        .unwrap();
    let fine = s
        .scheduler
        .create(create("all good", "in 3 min"))
        .await
        .unwrap();

    s.clock.advance(Duration::from_secs(60));
    let (id, outcome, error) = finished(&mut s.events).await;
    assert_eq!((id, outcome), (failing.id.clone(), RunOutcome::Error));
    assert_eq!(error.as_deref(), Some("could not do `fail loudly`"));

    s.clock.advance(Duration::from_secs(60));
    let (id, outcome, error) = finished(&mut s.events).await;
    assert_eq!((id, outcome), (panicking.id.clone(), RunOutcome::Error));
    assert!(error.unwrap().contains("panicked"));

    s.clock.advance(Duration::from_secs(60));
    let (id, outcome, _) = finished(&mut s.events).await;
    assert_eq!((id, outcome), (fine.id.clone(), RunOutcome::Ok));

    let history = s.scheduler.history(failing.id, None).await.unwrap();
    assert_eq!(history[0].outcome, "error");
    assert_eq!(
        history[0].error.as_deref(),
        Some("could not do `fail loudly`")
    );
    assert!(!s.scheduler.is_stopped());
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_with_examples_and_changes_nothing() {
    let s = memory_setup();
    let err = s
        .scheduler
        .create(create("x", "whenever you like"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSchedule(_)));
    assert!(err.to_string().contains("in 5 min"), "{err}");
    let err = s
        .scheduler
        .create(create("x", "0 25 * * *"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("five fields"), "{err}");
    let err = s
        .scheduler
        .create(create("  ", "in 5 min"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("prompt"), "{err}");
    let err = s
        .scheduler
        .create(CreateReminder {
            timezone: Some("Mars/Base".into()),
            ..create("x", "in 5 min")
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Europe/Berlin"), "{err}");
    assert!(s.scheduler.list(None).await.unwrap().is_empty());

    let kept = s
        .scheduler
        .create(create("keep me", "in 5 min"))
        .await
        .unwrap();
    let err = s
        .scheduler
        .update(
            kept.id.clone(),
            UpdateReminder {
                schedule: Some("yesterday".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSchedule(_)));
    assert_eq!(s.scheduler.get(kept.id.clone()).await.unwrap(), kept);
    for id in ["999", "abc"] {
        let err = s.scheduler.get(id.into()).await.unwrap_err();
        assert!(matches!(err, Error::ReminderNotFound(_)), "{err}");
    }
    s.scheduler.delete(kept.id.clone()).await.unwrap();
    assert!(matches!(
        s.scheduler.delete(kept.id).await.unwrap_err(),
        Error::ReminderNotFound(_)
    ));
}

#[tokio::test]
async fn a_reminder_firing_after_a_restart_fires_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_ms());
    let (once, cron, blocked) = {
        let db = Database::open_in(dir.path()).unwrap();
        let mut first = start(&db, &clock);
        let once = first
            .scheduler
            .create(create("take the cake out", "in 5 min"))
            .await
            .unwrap();
        let cron = first
            .scheduler
            .create(create("stand up", "*/10 * * * *"))
            .await
            .unwrap();
        // A run in progress when Osprey stops.
        let blocked = first
            .scheduler
            .create(create("block forever", "in 1 day"))
            .await
            .unwrap();
        first.scheduler.run_now(blocked.id.clone()).await.unwrap();
        let _ = &mut first.events;
        first.scheduler.shutdown().await;
        assert!(first.scheduler.is_stopped());
        assert!(
            first
                .recorder
                .prompts()
                .iter()
                .all(|p| p == "block forever")
        );
        (once, cron, blocked)
    };

    // Down for an hour and five minutes: the one-shot's time and six cron times pass.
    clock.set(start_ms() + 65 * MINUTE);
    let db = Database::open_in(dir.path()).unwrap();
    let mut second = start(&db, &clock);
    let mut done = vec![
        finished(&mut second.events).await.0,
        finished(&mut second.events).await.0,
    ];
    done.sort();
    let mut expected = vec![once.id.clone(), cron.id.clone()];
    expected.sort();
    assert_eq!(done, expected);

    for id in [&once.id, &cron.id] {
        let runs = second.scheduler.history(id.clone(), None).await.unwrap();
        assert_eq!(runs.len(), 1, "reminder {id} fired once: {runs:?}");
        assert_eq!(runs[0].trigger, "catch_up");
        assert_eq!(runs[0].outcome, "ok");
    }
    // The cron resumes its schedule from now: 11:10, not any missed time.
    let cron_now = second.scheduler.get(cron.id.clone()).await.unwrap();
    assert_eq!(cron_now.next_run_ms, Some(start_ms() + 70 * MINUTE));
    assert_eq!(
        second
            .scheduler
            .get(once.id.clone())
            .await
            .unwrap()
            .next_run_ms,
        None
    );
    // The run cut off by the shutdown says so.
    let blocked_runs = second
        .scheduler
        .history(blocked.id.clone(), None)
        .await
        .unwrap();
    assert_eq!(blocked_runs.len(), 1);
    assert_eq!(blocked_runs[0].outcome, "interrupted");

    // Time goes on: the cron fires on schedule, the one-shot never again.
    second.clock.set(start_ms() + 70 * MINUTE);
    let (id, _, _) = finished(&mut second.events).await;
    assert_eq!(id, cron.id);
    let runs = second
        .scheduler
        .history(cron.id.clone(), None)
        .await
        .unwrap();
    assert_eq!(runs[0].trigger, "schedule");
    assert_eq!(runs.len(), 2);
    assert_eq!(
        second.scheduler.history(once.id, None).await.unwrap().len(),
        1
    );
    let fired = second.recorder.prompts();
    assert_eq!(
        fired.iter().filter(|p| *p == "take the cake out").count(),
        1
    );
}

#[tokio::test]
async fn dropping_every_handle_stops_the_task() {
    let s = memory_setup();
    let weak = s.scheduler.clone();
    drop(s);
    // The clone still answers; once it is dropped too, the channel closes and the task ends.
    assert!(weak.list(None).await.unwrap().is_empty());
    let events = weak.subscribe();
    drop(weak);
    let mut events = events;
    let closed = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Err(broadcast::error::RecvError::Closed) = events.recv().await {
                return;
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the scheduler task ended and dropped its event sender"
    );
}

// --- the agent tool ---

struct ToolFixture {
    registry: Registry,
    scheduler: Scheduler,
    clock: ManualClock,
    events: broadcast::Receiver<SchedulerEvent>,
    _dir: tempfile::TempDir,
}

fn tool_fixture() -> ToolFixture {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let clock = ManualClock::new(start_ms());
    let setup = start(&db, &clock);
    let slot = ScheduleSlot::new();
    slot.set(Arc::new(setup.scheduler.clone()));
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        dir.path().join("data"),
    ));
    registry.register_domain(AgentTool::new(&db).with_schedule(slot));
    ToolFixture {
        registry,
        scheduler: setup.scheduler,
        clock,
        events: setup.events,
        _dir: dir,
    }
}

async fn call(f: &ToolFixture, origin: Origin, input: Value) -> ToolResult {
    let ctx = ToolContext::new(origin, Duration::from_secs(30)).with_session("chat-1");
    f.registry.execute(&ctx, "agent", input).await
}

fn body(result: &ToolResult) -> Value {
    assert!(!result.is_error, "{result:?}");
    serde_json::from_str(&result.text_content()).unwrap()
}

#[tokio::test]
async fn the_agent_tool_round_trip_with_aliases_and_origins() {
    let mut f = tool_fixture();
    let created = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "alarm", "action": "create", "schedule": "in 5 min",
                   "prompt": "Tell me to leave for the train"}),
        )
        .await,
    );
    let alarm = &created["created"];
    assert_eq!(alarm["origin"], "user");
    assert_eq!(
        alarm["session_id"], "chat-1",
        "it runs in the session it was made in"
    );
    assert_eq!(alarm["kind"], "one_shot");
    let id = alarm["id"].as_str().unwrap().parse::<i64>().unwrap();

    // Every alias is the reminder resource; a missing resource is inferred from the fields.
    for alias in [
        "routine", "schedule", "cron", "job", "event", "calendar", "timer", "reminder",
    ] {
        let got = body(
            &call(
                &f,
                Origin::User,
                json!({"resource": alias, "action": "get", "id": id}),
            )
            .await,
        );
        assert_eq!(got["reminder"]["id"], id.to_string(), "{alias}");
    }
    let inferred = body(
        &call(
            &f,
            Origin::System,
            json!({"action": "create", "schedule": "every day at 7am", "prompt": "Morning briefing",
                   "session_id": "new"}),
        )
        .await,
    );
    let routine = &inferred["created"];
    assert_eq!(
        routine["origin"], "system",
        "made during a reminder's own turn"
    );
    assert_eq!(routine["session_id"], Value::Null);
    assert_eq!(routine["schedule"], "0 7 * * *");
    let routine_id = routine["id"].as_str().unwrap().to_string();

    let listed = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "routine", "action": "list"}),
        )
        .await,
    );
    assert_eq!(listed["total"], 2);
    assert_eq!(listed["kept_by"], "built-in");

    let paused = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "cron", "action": "pause", "id": routine_id}),
        )
        .await,
    );
    assert_eq!(paused["paused"]["enabled"], false);
    let updated = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "reminder", "action": "update", "id": id, "title": "train"}),
        )
        .await,
    );
    assert_eq!(updated["updated"]["title"], "train");

    let started = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "timer", "action": "run", "id": id}),
        )
        .await,
    );
    assert_eq!(started["started"]["trigger"], "manual");
    finished(&mut f.events).await;
    let history = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "alarm", "action": "history", "id": id}),
        )
        .await,
    );
    assert_eq!(history["runs"].as_array().unwrap().len(), 1);

    // Errors a model can act on: examples for a bad schedule, the fields for a missing one.
    let bad = call(
        &f,
        Origin::User,
        json!({"resource": "alarm", "action": "create", "schedule": "soonish", "prompt": "x"}),
    )
    .await;
    assert!(bad.is_error);
    assert!(
        bad.text_content().contains("tomorrow 9am"),
        "{}",
        bad.text_content()
    );
    let missing = call(
        &f,
        Origin::User,
        json!({"resource": "alarm", "action": "create", "prompt": "x"}),
    )
    .await;
    assert!(missing.is_error);
    assert!(
        missing.text_content().contains("schedule"),
        "{}",
        missing.text_content()
    );
    let unknown = call(
        &f,
        Origin::User,
        json!({"resource": "alarm", "action": "get", "id": 4242}),
    )
    .await;
    assert!(
        unknown.text_content().contains("no reminder"),
        "{}",
        unknown.text_content()
    );

    // The alarm still fires at its time, as scheduled.
    f.clock.advance(Duration::from_secs(5 * 60));
    let (fired, outcome, _) = finished(&mut f.events).await;
    assert_eq!((fired, outcome), (id.to_string(), RunOutcome::Ok));
    until("two runs in the history", async || {
        f.scheduler
            .history(id.to_string(), None)
            .await
            .unwrap()
            .len()
            == 2
    })
    .await;
}

#[tokio::test]
async fn deleting_a_reminder_through_the_tool_needs_approval() {
    let f = tool_fixture();
    let created = body(
        &call(
            &f,
            Origin::User,
            json!({"resource": "reminder", "action": "create", "schedule": "in 1 hour", "prompt": "x"}),
        )
        .await,
    );
    let id = created["created"]["id"].as_str().unwrap().to_string();
    // No one is attached to approve: the registry's default broker denies.
    let denied = call(
        &f,
        Origin::User,
        json!({"resource": "reminder", "action": "delete", "id": id}),
    )
    .await;
    assert!(denied.is_error, "{denied:?}");
    assert!(f.scheduler.get(id).await.is_ok(), "still there");
}

#[tokio::test]
async fn without_a_scheduler_the_tool_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let registry = Registry::new(RegistryConfig::new(
        Policy::at_level(Level::Allowlist),
        dir.path().join("data"),
    ));
    registry.register_domain(AgentTool::new(&db));
    let ctx = ToolContext::new(Origin::User, Duration::from_secs(30));
    let result = registry
        .execute(
            &ctx,
            "agent",
            json!({"resource": "alarm", "action": "list"}),
        )
        .await;
    assert!(result.is_error);
    assert!(
        result.text_content().contains("scheduler is not running"),
        "{}",
        result.text_content()
    );
}

#[tokio::test]
async fn stored_reminders_work_without_the_scheduler_and_the_scheduler_fires_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open_in(dir.path()).unwrap();
    let clock = ManualClock::new(start_ms());
    // A process without the scheduler (a terminal) creates and pauses; it cannot run.
    let stored = osprey_agent::scheduler::StoredReminders::new(
        &db,
        Arc::new(clock.clone()),
        chrono_tz::Europe::Berlin,
    );
    assert_eq!(stored.name(), "stored");
    let made = stored
        .create(create("from the terminal", "in 5 min"))
        .await
        .unwrap();
    let err = stored.run_now(made.id.clone()).await.unwrap_err();
    assert!(matches!(err, Error::SchedulerStopped(_)), "{err}");
    assert!(!stored.pause(made.id.clone()).await.unwrap().enabled);
    assert!(stored.resume(made.id.clone()).await.unwrap().enabled);
    // The scheduler (the desktop) on the same file fires it at its time.
    let other = Database::open_in(dir.path()).unwrap();
    let mut s = start(&other, &clock);
    s.clock.advance(Duration::from_secs(5 * 60));
    let (id, outcome, _) = finished(&mut s.events).await;
    assert_eq!((id, outcome), (made.id.clone(), RunOutcome::Ok));
    assert_eq!(stored.history(made.id, None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn on_the_system_clock_a_reminder_fires_for_real() {
    let db = Database::open_in_memory().unwrap();
    let recorder = Arc::new(Recorder::default());
    let scheduler = Scheduler::start(&db, recorder.clone(), SchedulerConfig::default()).unwrap();
    let mut events = scheduler.subscribe();
    let started = std::time::Instant::now();
    let reminder = scheduler.create(create("tick", "in 1s")).await.unwrap();
    let (id, outcome, _) = finished(&mut events).await;
    assert_eq!((id, outcome), (reminder.id, RunOutcome::Ok));
    // Not before its time (the clock has millisecond resolution; allow for the rounding).
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(recorder.prompts(), vec!["tick"]);
}

#[tokio::test]
async fn a_run_still_going_makes_the_next_occurrence_skip_instead_of_stacking() {
    let mut s = memory_setup();
    let slow = s
        .scheduler
        .create(create("block the line", "*/10 * * * *"))
        .await
        .unwrap();
    s.clock.set(start_ms() + 10 * MINUTE);
    until("the first run started", async || {
        s.recorder.prompts().len() == 1
    })
    .await;
    // Its next time comes while the first run still blocks: skipped, and moved on.
    s.clock.set(start_ms() + 20 * MINUTE);
    let now = s.scheduler.get(slow.id.clone()).await.unwrap();
    assert_eq!(now.next_run_ms, Some(start_ms() + 30 * MINUTE));
    let runs = s.scheduler.history(slow.id.clone(), None).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].outcome, "running");
    assert_eq!(s.recorder.prompts().len(), 1);
    // Run now refuses too, with the reason.
    let err = s.scheduler.run_now(slow.id).await.unwrap_err();
    assert!(err.to_string().contains("running right now"), "{err}");
    let _ = &mut s.events;
}

#[tokio::test]
async fn a_reminder_that_can_no_longer_be_scheduled_is_paused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_ms());
    let id = {
        let db = Database::open_in(dir.path()).unwrap();
        let first = start(&db, &clock);
        let made = first
            .scheduler
            .create(create("daily", "@daily"))
            .await
            .unwrap();
        first.scheduler.shutdown().await;
        // Edited by hand (or a zone dropped from the time zone database).
        db.with_conn(|c| {
            c.execute(
                "UPDATE reminders SET timezone = 'Mars/Olympus' WHERE id = ?1",
                [made.id.parse::<i64>().unwrap()],
            )?;
            Ok(())
        })
        .unwrap();
        made.id
    };
    clock.set(start_ms() + 24 * 60 * MINUTE);
    let db = Database::open_in(dir.path()).unwrap();
    let second = start(&db, &clock);
    let reminder = second.scheduler.get(id.clone()).await.unwrap();
    assert!(!reminder.enabled, "paused rather than retried forever");
    let runs = second.scheduler.history(id, None).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].outcome, "error");
    assert!(
        runs[0].error.as_deref().unwrap().contains("Mars/Olympus"),
        "{runs:?}"
    );
    assert!(second.recorder.prompts().is_empty(), "it did not fire");
}

#[tokio::test]
async fn two_schedulers_on_one_file_fire_an_occurrence_once() {
    // The desktop app and a second Osprey process on the same data directory. Whether both see
    // an occurrence due at the same moment is down to timing; the compare-and-set that makes
    // the loser start nothing is pinned by the db crate's unit test.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_ms());
    let first_db = Database::open_in(dir.path()).unwrap();
    let second_db = Database::open_in(dir.path()).unwrap();
    let mut first = start(&first_db, &clock);
    let mut second = start(&second_db, &clock);
    let once = first
        .scheduler
        .create(create("only once", "in 5 min"))
        .await
        .unwrap();
    let cron = first
        .scheduler
        .create(create("every ten", "*/10 * * * *"))
        .await
        .unwrap();
    clock.set(start_ms() + 10 * MINUTE);
    // Whoever fired them, both schedulers have now looked at what is due.
    for s in [&first, &second] {
        s.scheduler.list(None).await.unwrap();
    }
    for id in [&once.id, &cron.id] {
        let runs = second.scheduler.history(id.clone(), None).await.unwrap();
        assert_eq!(runs.len(), 1, "{id}: {runs:?}");
    }
    let fired = first.recorder.prompts().len() + second.recorder.prompts().len();
    assert_eq!(fired, 2);
    // Let the runs finish before the schedulers go.
    let mut done = 0;
    while done < 2 {
        tokio::select! {
            _ = finished(&mut first.events) => done += 1,
            _ = finished(&mut second.events) => done += 1,
        }
    }
}
