//! The `work` resource: the session's to-do list, which the model keeps to plan and track a
//! multi-step job (create the steps, mark them `in_progress` and `done`). Each session has its own
//! list (a sub-agent's is its own too); it is the model's scratch plan, so no action needs
//! approval.

use osprey_db::{WorkStatus, WorkTask, WorkTaskChange};
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, invalid, json_result, session_of};

pub(super) const SUMMARY: &str = "work: this session's to-do list (create the steps of a job, \
     update their status pending / in_progress / done as you go, list them).";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::None as Free;
    let domain = domain.resource(
        "work",
        &[
            "todo",
            "todos",
            "to_do",
            "to-do",
            "checklist",
            "work_task",
            "work_tasks",
            "plan",
        ],
        &[
            ("create", "Add a step to the to-do list", Free),
            (
                "update",
                "Change a step's status, title or notes (empty notes clear them)",
                Free,
            ),
            ("delete", "Remove a step", Free),
            (
                "list",
                "The to-do list in order, optionally only one status",
                Free,
            ),
        ],
    );
    let domain = field(
        domain,
        "title",
        FieldType::String,
        "work: the step, in a few words",
        &["work.create"],
    );
    let domain = field(
        domain,
        "status",
        FieldType::String,
        "work: pending, in_progress or done",
        &[],
    )
    .one_of(&["pending", "in_progress", "done"]);
    let domain = field(
        domain,
        "notes",
        FieldType::String,
        "work: details, findings, what is left",
        &[],
    );
    field(
        domain,
        "id",
        FieldType::Integer,
        "work: a step's id",
        &["work.update", "work.delete"],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = (|| {
        let session = session_of(ctx)?;
        let status = match call.str("status") {
            None => None,
            Some(text) => Some(WorkStatus::parse(text).ok_or_else(|| {
                invalid(format!(
                    "unknown status `{text}`; use pending, in_progress or done"
                ))
            })?),
        };
        match call.action() {
            "create" => {
                let title = call.str("title").unwrap_or_default().trim();
                if title.is_empty() {
                    return Err(invalid("`title` must not be empty"));
                }
                let task = tool
                    .work
                    .create(
                        session,
                        title,
                        status.unwrap_or(WorkStatus::Pending),
                        call.str("notes").filter(|n| !n.trim().is_empty()),
                    )
                    .map_err(db_error)?;
                list_result(tool, session, Some(json!({"created": task_json(&task)})))
            }
            "update" => {
                let id = id_of(&call)?;
                let title = call.str("title").map(str::trim);
                if title == Some("") {
                    return Err(invalid("`title` must not be empty"));
                }
                let change = WorkTaskChange {
                    title,
                    status,
                    notes: call.str("notes"),
                };
                if change.title.is_none() && change.status.is_none() && change.notes.is_none() {
                    return Err(invalid(
                        "work update needs at least one of `status`, `title`, `notes`",
                    ));
                }
                match tool.work.update(session, id, &change).map_err(db_error)? {
                    Some(task) => {
                        list_result(tool, session, Some(json!({"updated": task_json(&task)})))
                    }
                    None => Err(no_such(id)),
                }
            }
            "delete" => {
                let id = id_of(&call)?;
                if tool.work.delete(session, id).map_err(db_error)? {
                    list_result(tool, session, Some(json!({"deleted": id})))
                } else {
                    Err(no_such(id))
                }
            }
            "list" => {
                let tasks = tool.work.list(session, status).map_err(db_error)?;
                Ok(json_result(&json!({
                    "count": tasks.len(),
                    "tasks": tasks.iter().map(task_json).collect::<Vec<_>>(),
                })))
            }
            other => Err(invalid(format!("work has no action `{other}`"))),
        }
    })();
    result.unwrap_or_else(|e| e)
}

/// A change's result carries the whole list, so the model sees its plan after every edit.
fn list_result(tool: &AgentTool, session: &str, head: Option<Value>) -> Outcome {
    let tasks = tool.work.list(session, None).map_err(db_error)?;
    let mut body = head.unwrap_or_else(|| json!({}));
    let done = tasks
        .iter()
        .filter(|t| t.status == WorkStatus::Done)
        .count();
    body["progress"] = json!(format!("{done} of {} done", tasks.len()));
    body["tasks"] = json!(tasks.iter().map(task_json).collect::<Vec<_>>());
    Ok(json_result(&body))
}

fn task_json(task: &WorkTask) -> Value {
    json!({
        "id": task.id,
        "title": task.title,
        "status": task.status.as_str(),
        "notes": task.notes,
    })
}

fn id_of(call: &Call) -> Result<i64, ToolResult> {
    call.input
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid(format!("work {} needs `id`", call.action())))
}

fn no_such(id: i64) -> ToolResult {
    ToolResult::error(
        ErrorCode::ToolFailed,
        format!("this session's to-do list has no step {id}; `list` shows the ids"),
    )
}

fn db_error(error: osprey_db::Error) -> ToolResult {
    super::db_error("work task", error)
}
