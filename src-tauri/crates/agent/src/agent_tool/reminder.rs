//! The `reminder` resource: one-shot and repeating (cron) reminders kept by the scheduler (the
//! built-in one, or an app that provides `schedule`), reached through the [`ScheduleSlot`].
//! Models call it many names (routine, schedule, cron, job, event, calendar, alarm, timer); all
//! lead here.
//!
//! Approvals: reminders are Osprey's own data, and what a reminder does when it fires is an
//! agent turn with origin `system`, whose every tool call meets the policy and origin rules on
//! its own; so creating, changing, pausing and running one needs no approval. `delete` cannot be
//! undone and goes through the approval policy, as memory's does.
//!
//! A reminder may also run a shell `command` when it fires, before its turn (the output goes
//! with the prompt). Nobody may be there to ask then, so the person is asked when the command is
//! set, every time and at every level, and the safeguard judges it then too; when it fires it
//! runs through the registry like any shell call (the kernel sandbox, the safeguard, the
//! creator's origin rules), approved for that exact command only.
//!
//! A reminder may also `deliver` its output to a connected channel (`{channel, to, thread_id}`)
//! when it fires, besides keeping it in its session: that sends on the person's behalf later,
//! with nobody to ask, so setting it is asked like a command is (every time, at every level).
//!
//! The reminder keeps the origin of the call that created it (`user` in a chat, `system` when a
//! reminder's own turn creates another), and by default the session it was created in, so its
//! turns continue that conversation.

use osprey_db::ReminderKind;
use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, invalid, json_result};
use crate::outbox::Delivery;
use crate::scheduler::{CreateReminder, ScheduleBackend, UpdateReminder, spec};

/// The resource's line in the tool's description.
pub(super) const SUMMARY: &str = "reminder: things to do or say later, once (`in 5 min`, \
     `tomorrow 9am`, `friday 17:00`, an RFC 3339 time) or repeating (cron such as `0 9 * * 1-5`, \
     `@daily`, or `every day at 9am`); when one fires, its prompt runs as an agent turn in its \
     session. Also for alarms, timers, routines and calendar-like events.";

/// History rows returned when no limit is given.
const DEFAULT_HISTORY: u32 = 20;

/// Adds the resource and its fields to the table.
pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let domain = domain.resource(
        "reminder",
        &[
            "reminders",
            "routine",
            "routines",
            "schedule",
            "schedules",
            "cron",
            "job",
            "jobs",
            "event",
            "events",
            "calendar",
            "alarm",
            "alarms",
            "timer",
            "timers",
        ],
        &[
            (
                "create",
                "Schedule a reminder: `schedule` says when, `prompt` what to do or say",
                Free,
            ),
            (
                "list",
                "List reminders (all, or one session's) with their next times",
                Free,
            ),
            ("get", "One reminder by id", Free),
            (
                "update",
                "Change a reminder's title, prompt, command, delivery, schedule or time zone",
                Free,
            ),
            ("delete", "Delete a reminder and its history", Required),
            ("pause", "Stop a reminder from firing until resumed", Free),
            (
                "resume",
                "Let a paused reminder fire again (a repeating one from its next time)",
                Free,
            ),
            ("run", "Fire a reminder now, outside its schedule", Free),
            ("history", "A reminder's past runs, newest first", Free),
        ],
    );
    let domain = field(
        domain,
        "schedule",
        FieldType::String,
        &format!("reminder: when it fires; {}", spec::EXAMPLES),
        &["reminder.create"],
    );
    let domain = field(
        domain,
        "prompt",
        FieldType::String,
        "reminder: what to do or say when it fires (you will be given it as the request)",
        &["reminder.create"],
    );
    let domain = field(
        domain,
        "title",
        FieldType::String,
        "reminder: a short name (default: the prompt's start)",
        &[],
    );
    let domain = field(
        domain,
        "command",
        FieldType::String,
        "reminder: a shell command to run when it fires, before the prompt (its output is given with the prompt); the person is asked when it is set; an empty string removes it on update",
        &[],
    );
    let domain = field(
        domain,
        "deliver",
        FieldType::Object,
        "reminder: also send its output, when it fires, to a connected channel: {channel, to, thread_id} (message list shows the channels); the person is asked when it is set; null removes it on update",
        &[],
    );
    let domain = field(
        domain,
        "timezone",
        FieldType::String,
        "reminder: IANA time zone for local times and cron (default: the computer's)",
        &[],
    );
    let domain = field(
        domain,
        "session_id",
        FieldType::String,
        "reminder: the session its turns run in (default: the current one; `new` for a fresh session each time); for list, only that session's",
        &[],
    );
    let domain = field(
        domain,
        "id",
        FieldType::Integer,
        "reminder: a reminder's id",
        &[
            "reminder.get",
            "reminder.update",
            "reminder.delete",
            "reminder.pause",
            "reminder.resume",
            "reminder.run",
            "reminder.history",
        ],
    );
    field(
        domain,
        "limit",
        FieldType::Integer,
        "At most this many results",
        &[],
    )
}

/// A reminder call that sets a shell command: the safeguard judges the command now, and the
/// person is asked every time, at every level (it will run later with nobody to ask).
pub(super) fn command_facts(facts: CallFacts, call: &Call, command: &str) -> CallFacts {
    let when = call
        .str("schedule")
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    let why =
        "a reminder's command runs later without asking anyone, so it is asked when it is set";
    CallFacts {
        summary: format!("{}{when}: run `{command}` when it fires", facts.summary),
        command: Some(command.to_string()),
        // The table calls create and update free; this call is not.
        needs_approval: Some(why.into()),
        ask_every_time: Some(why.into()),
        ..facts
    }
}

/// A reminder call that sets `deliver`: the output will go out later with nobody to ask, so the
/// person is asked now, every time, at every level.
pub(super) fn deliver_facts(facts: CallFacts, delivery: &Value) -> CallFacts {
    let channel = delivery["channel"].as_str().unwrap_or("?");
    let to = delivery["to"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(|t| format!(" to {t}"))
        .unwrap_or_default();
    let why = "a reminder's output is sent out later without asking anyone, so where it goes is \
               asked when it is set";
    CallFacts {
        summary: format!("{}: send its output via {channel}{to}", facts.summary),
        app: Some(channel.split('/').next().unwrap_or(channel).to_string()),
        needs_approval: Some(why.into()),
        ask_every_time: Some(why.into()),
        ..facts
    }
}

/// `deliver` from the call: `None` when absent, `Some(None)` when null (remove on update).
fn delivery_of(call: &Call) -> Result<Option<Option<Delivery>>, ToolResult> {
    match call.input.get("deliver") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(value) => serde_json::from_value::<Delivery>(value.clone())
            .map(|d| Some(Some(d)))
            .map_err(|e| {
                invalid(format!(
                    "`deliver` must be {{\"channel\": ..., \"to\": ..., \"thread_id\": ...}}: {e}"
                ))
            }),
    }
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let Some(backend) = tool.schedule.get() else {
        return ToolResult::error(
            ErrorCode::ToolFailed,
            "reminders are not available: the scheduler is not running in this Osprey (it runs in the desktop app)",
        );
    };
    dispatch(backend.as_ref(), ctx, &call)
        .await
        .unwrap_or_else(|e| e)
}

async fn dispatch(backend: &dyn ScheduleBackend, ctx: &ToolContext, call: &Call) -> Outcome {
    match call.action() {
        "create" => create(backend, ctx, call).await,
        "list" => list(backend, call).await,
        "update" => update(backend, call).await,
        "get" => {
            let reminder = backend.get(id_of(call)?).await.map_err(scheduler_error)?;
            Ok(json_result(&json!({"reminder": reminder})))
        }
        "delete" => {
            let id = id_of(call)?;
            backend.delete(id.clone()).await.map_err(scheduler_error)?;
            Ok(json_result(&json!({"deleted": id})))
        }
        "pause" => {
            let reminder = backend.pause(id_of(call)?).await.map_err(scheduler_error)?;
            Ok(json_result(&json!({"paused": reminder})))
        }
        "resume" => {
            let reminder = backend
                .resume(id_of(call)?)
                .await
                .map_err(scheduler_error)?;
            Ok(json_result(&json!({"resumed": reminder})))
        }
        "run" => {
            let run = backend
                .run_now(id_of(call)?)
                .await
                .map_err(scheduler_error)?;
            Ok(json_result(&json!({"started": run})))
        }
        "history" => {
            let id = id_of(call)?;
            let limit = call
                .u64("limit")
                .map(|l| l.clamp(1, 200) as u32)
                .unwrap_or(DEFAULT_HISTORY);
            let runs = backend
                .history(id.clone(), Some(limit))
                .await
                .map_err(scheduler_error)?;
            Ok(json_result(&json!({"reminder_id": id, "runs": runs})))
        }
        other => Err(ToolResult::error(
            ErrorCode::InvalidInput,
            format!("reminder has no action `{other}`"),
        )),
    }
}

async fn create(backend: &dyn ScheduleBackend, ctx: &ToolContext, call: &Call) -> Outcome {
    let session_id = match call.str("session_id").map(str::trim) {
        Some("new") | Some("none") => None,
        Some(session) => Some(session.to_string()),
        None => ctx.session_id.clone(),
    };
    let reminder = backend
        .create(CreateReminder {
            title: call.str("title").map(str::to_string),
            prompt: call.str("prompt").unwrap_or_default().to_string(),
            command: call.str("command").map(str::to_string),
            deliver: delivery_of(call)?.flatten(),
            schedule: call.str("schedule").unwrap_or_default().to_string(),
            kind: None,
            timezone: call.str("timezone").map(str::to_string),
            session_id,
            origin: ctx.origin.as_str().to_string(),
            paused: false,
        })
        .await
        .map_err(scheduler_error)?;
    Ok(json_result(&json!({"created": reminder})))
}

async fn list(backend: &dyn ScheduleBackend, call: &Call) -> Outcome {
    let reminders = backend
        .list(call.str("session_id").map(str::to_string))
        .await
        .map_err(scheduler_error)?;
    let limit = call.u64("limit").map(|l| l as usize).unwrap_or(usize::MAX);
    let total = reminders.len();
    let shown: Vec<_> = reminders.into_iter().take(limit).collect();
    Ok(json_result(
        &json!({"total": total, "reminders": shown, "kept_by": backend.name()}),
    ))
}

async fn update(backend: &dyn ScheduleBackend, call: &Call) -> Outcome {
    let id = id_of(call)?;
    let change = UpdateReminder {
        title: call.str("title").map(str::to_string),
        prompt: call.str("prompt").map(str::to_string),
        command: call
            .str("command")
            .map(|c| Some(c.to_string()).filter(|c| !c.trim().is_empty())),
        deliver: delivery_of(call)?,
        schedule: call.str("schedule").map(str::to_string),
        kind: None::<ReminderKind>,
        timezone: call.str("timezone").map(str::to_string),
        session_id: call.str("session_id").map(|s| match s.trim() {
            "new" | "none" => None,
            session => Some(session.to_string()),
        }),
    };
    if change.title.is_none()
        && change.prompt.is_none()
        && change.command.is_none()
        && change.deliver.is_none()
        && change.schedule.is_none()
        && change.timezone.is_none()
        && change.session_id.is_none()
    {
        return Err(invalid(
            "update needs something to change: `title`, `prompt`, `command`, `deliver`, `schedule`, `timezone` or `session_id`",
        ));
    }
    let reminder = backend.update(id, change).await.map_err(scheduler_error)?;
    Ok(json_result(&json!({"updated": reminder})))
}

fn id_of(call: &Call) -> Result<String, ToolResult> {
    match call.input.get("id") {
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err(invalid(
            "this action needs the reminder's `id` (list the reminders to see them)",
        )),
    }
}

fn scheduler_error(error: crate::Error) -> ToolResult {
    let code = match &error {
        crate::Error::InvalidSchedule(_) | crate::Error::ReminderNotFound(_) => {
            ErrorCode::InvalidInput
        }
        _ => ErrorCode::ToolFailed,
    };
    ToolResult::error(code, error.to_string())
}
