//! The `graph` resource: the task graph a conversation's agents share. The conversation and
//! every sub-agent under it (however deep) see one graph, named by the root conversation's
//! session. Tasks have dependencies; a task is blocked until every dependency is done.
//!
//! Two roles, gated by the registry through tool packs, not by the prompt: a worker (the
//! `task-graph-worker` pack: `list_tasks`, `get_task`, `submit_result`) takes a task and submits
//! its result; an orchestrator (`task-graph-orchestrator`: every action) also creates tasks with
//! dependencies, completes submitted ones and rejects them back to `deferred` with feedback. A
//! conversation without a role's tool set (the person's own) is an orchestrator. No action
//! needs approval: the graph is the agents' own scratch work, like the to-do list.

use osprey_db::{GraphStatus, GraphTask};
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, db_error, field, invalid, json_result, session_of};

pub(super) const SUMMARY: &str = "graph: the task graph this conversation's agents share \
     (workers list_tasks, get_task, submit_result; orchestrators also create_task with \
     depends_on, complete_task, reject_task back to deferred).";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::None as Free;
    let domain = domain.resource(
        "graph",
        &["task_graph", "taskgraph", "board"],
        &[
            (
                "list_tasks",
                "Every task of the graph with its status, dependencies and whether it is ready",
                Free,
            ),
            ("get_task", "One task with its result and feedback", Free),
            (
                "submit_result",
                "Hand in `result` for a task whose dependencies are done",
                Free,
            ),
            (
                "create_task",
                "Add a task (`title`, `description`, `depends_on` ids) (orchestrators)",
                Free,
            ),
            (
                "complete_task",
                "Accept a task's result and mark it done (orchestrators)",
                Free,
            ),
            (
                "reject_task",
                "Send a task back to deferred with `feedback` (orchestrators)",
                Free,
            ),
        ],
    );
    let domain = field(
        domain,
        "title",
        FieldType::String,
        "graph: the task, in a few words",
        &["graph.create_task"],
    );
    let domain = field(
        domain,
        "description",
        FieldType::String,
        "graph: what the task needs, self-contained",
        &[],
    );
    let domain = field(
        domain,
        "depends_on",
        FieldType::Array(Box::new(FieldType::Integer)),
        "graph: ids of tasks that must be done first",
        &[],
    );
    let domain = field(
        domain,
        "result",
        FieldType::String,
        "graph: the task's result",
        &["graph.submit_result"],
    );
    let domain = field(
        domain,
        "feedback",
        FieldType::String,
        "graph: why the result was rejected and what to do instead",
        &["graph.reject_task"],
    );
    field(
        domain,
        "id",
        FieldType::Integer,
        "graph: a task's id",
        &[
            "graph.get_task",
            "graph.submit_result",
            "graph.complete_task",
            "graph.reject_task",
        ],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = (|| {
        let session = session_of(ctx)?;
        let graph = graph_of(tool, session)?;
        let graph = graph.as_str();
        let tasks = &tool.graph;
        let storage = |e| db_error("task graph", e);
        match call.action() {
            "list_tasks" => {
                let all = tasks.list(graph).map_err(storage)?;
                let rows: Vec<Value> = all.iter().map(|t| task_json(t, &all)).collect();
                Ok(json_result(
                    &json!({"graph": graph, "count": rows.len(), "tasks": rows}),
                ))
            }
            "get_task" => {
                let (task, all) = find(tool, graph, &call)?;
                Ok(json_result(&task_json(&task, &all)))
            }
            "create_task" => {
                let title = call.str("title").unwrap_or_default().trim();
                if title.is_empty() {
                    return Err(invalid("create_task needs a `title`"));
                }
                let depends_on: Vec<i64> = call
                    .input
                    .get("depends_on")
                    .and_then(Value::as_array)
                    .map(|ids| ids.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default();
                let created = tasks
                    .create(graph, title, call.str("description"), &depends_on, session)
                    .map_err(storage)?
                    .ok_or_else(|| {
                        invalid(format!(
                            "`depends_on` names a task this graph does not have ({depends_on:?}); \
                             `list_tasks` shows its ids"
                        ))
                    })?;
                notify(tool, graph);
                let all = tasks.list(graph).map_err(storage)?;
                Ok(json_result(&task_json(&created, &all)))
            }
            action @ ("submit_result" | "complete_task" | "reject_task") => {
                let (task, all) = find(tool, graph, &call)?;
                let blocked = blocked_by(&task, &all);
                let (status, result, feedback, by) = match action {
                    "submit_result" => {
                        refuse_if(task.status == GraphStatus::Done, &task, "is already done")?;
                        refuse_if(!blocked.is_empty(), &task, &blocked_note(&blocked))?;
                        (
                            GraphStatus::Submitted,
                            call.str("result"),
                            None,
                            Some(session),
                        )
                    }
                    "complete_task" => {
                        refuse_if(task.status == GraphStatus::Done, &task, "is already done")?;
                        refuse_if(!blocked.is_empty(), &task, &blocked_note(&blocked))?;
                        (GraphStatus::Done, call.str("result"), None, None)
                    }
                    _ => {
                        refuse_if(
                            task.status == GraphStatus::Done,
                            &task,
                            "is done; create a new task for more work",
                        )?;
                        (GraphStatus::Deferred, None, call.str("feedback"), None)
                    }
                };
                let changed = tasks
                    .set_status(graph, task.id, status, result, feedback, by)
                    .map_err(storage)?
                    .ok_or_else(|| not_found(task.id))?;
                notify(tool, graph);
                let all = tasks.list(graph).map_err(storage)?;
                Ok(json_result(&task_json(&changed, &all)))
            }
            other => Err(invalid(format!("graph has no action `{other}`"))),
        }
    })();
    result.unwrap_or_else(|e| e)
}

/// The graph a session belongs to: its root conversation's session, found by walking up the
/// sub-agent links (a child's session row names its parent).
fn graph_of(tool: &AgentTool, session: &str) -> Result<String, ToolResult> {
    tool.subagent_tasks
        .root_session(session)
        .map_err(|e| db_error("sub-agent task", e))
}

/// Tells whoever shows the team (the desktop's panel) that the graph changed.
fn notify(tool: &AgentTool, graph: &str) {
    if let Some(subagents) = &tool.subagents {
        subagents.notify(graph);
    }
}

fn find(
    tool: &AgentTool,
    graph: &str,
    call: &Call,
) -> Result<(GraphTask, Vec<GraphTask>), ToolResult> {
    let id = call
        .input
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid(format!("{} needs `id`", call.action())))?;
    let all = tool
        .graph
        .list(graph)
        .map_err(|e| db_error("task graph", e))?;
    let task = all
        .iter()
        .find(|t| t.id == id)
        .cloned()
        .ok_or_else(|| not_found(id))?;
    Ok((task, all))
}

fn not_found(id: i64) -> ToolResult {
    invalid(format!(
        "this conversation's task graph has no task {id}; `list_tasks` shows its tasks"
    ))
}

fn refuse_if(condition: bool, task: &GraphTask, why: &str) -> Result<(), ToolResult> {
    if condition {
        return Err(ToolResult::error(
            ErrorCode::ToolFailed,
            format!("task {} ({}) {why}", task.id, task.title),
        ));
    }
    Ok(())
}

fn blocked_note(blocked: &[i64]) -> String {
    format!("is blocked: it depends on {blocked:?}, which are not done yet")
}

/// The task's dependencies that are not done.
fn blocked_by(task: &GraphTask, all: &[GraphTask]) -> Vec<i64> {
    task.blocked_by(all)
}

fn task_json(task: &GraphTask, all: &[GraphTask]) -> Value {
    let blocked = blocked_by(task, all);
    let ready =
        blocked.is_empty() && matches!(task.status, GraphStatus::Open | GraphStatus::Deferred);
    json!({
        "id": task.id,
        "title": task.title,
        "description": task.description,
        "status": task.status.as_str(),
        "ready": ready,
        "depends_on": task.depends_on,
        "blocked_by": blocked,
        "result": task.result,
        "feedback": task.feedback,
        "created_by": task.created_by,
        "submitted_by": task.submitted_by,
    })
}
