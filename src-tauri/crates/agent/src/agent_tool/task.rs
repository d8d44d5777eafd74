//! The `task` resource: sub-agents (see `crate::subagent` for depth, policy, cancellation and
//! timeouts). `spawn` waits for the child's answer by default; with `wait: false` it returns the
//! task id at once and `status` / `result` poll it. A session sees and cancels only the children
//! it spawned. None of the actions needs approval: every tool call the child makes goes through
//! the registry under a policy at most as loose as the parent's.

use std::time::{Duration, Instant};

use osprey_db::SubAgentTask;
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, Level, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, invalid, json_result, session_of};
use crate::subagent::{SpawnRequest, SubAgents};

/// The resource's line in the tool's description.
pub(super) const SUMMARY: &str = "task: delegate work to a sub-agent that runs its own turn \
     (spawn waits for its answer unless wait is false; then poll status/result); with \
     agent_type it runs as that role with only the role's tools (types lists them); an \
     interactive one takes follow-ups (route); branch forks this conversation and its answer \
     joins it at your next turn; a sub-agent reports progress with set_status.";

/// How long `spawn` leaves for the registry's own deadline when it waits.
const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::None as Free;
    let domain = domain.resource(
        "task",
        &[
            "tasks",
            "subagent",
            "subagents",
            "sub_agent",
            "sub-agent",
            "agent",
            "delegate",
        ],
        &[
            (
                "spawn",
                "Start a sub-agent on `prompt`; waits for its answer unless `wait` is false",
                Free,
            ),
            (
                "branch",
                "Fork this conversation into a sub-agent that thinks or researches `prompt` in \
                 parallel; its answer joins the conversation at your next turn",
                Free,
            ),
            ("status", "Where a sub-agent task stands", Free),
            (
                "result",
                "A sub-agent's answer (with `wait: true`, waits up to `timeout_seconds`)",
                Free,
            ),
            (
                "list",
                "The sub-agent tasks this session spawned, newest first",
                Free,
            ),
            ("cancel", "Stop a running sub-agent", Free),
            (
                "route",
                "Send a follow-up `message` to an interactive sub-agent (spawned with `interactive: true`)",
                Free,
            ),
            (
                "set_status",
                "As a sub-agent: report where your work stands (`text`), without stopping",
                Free,
            ),
            (
                "types",
                "The agent types a spawn can name, with their tools and models",
                Free,
            ),
        ],
    );
    let domain = field(
        domain,
        "prompt",
        FieldType::String,
        "task: what the sub-agent should do, self-contained (it does not see this conversation)",
        &["task.spawn", "task.branch"],
    );
    let domain = field(
        domain,
        "wait",
        FieldType::Boolean,
        "task: wait for the answer (spawn: default true; result: default false)",
        &[],
    );
    let domain = field(
        domain,
        "timeout_seconds",
        FieldType::Integer,
        "task: the sub-agent's deadline (default 300); for result, how long to wait",
        &[],
    );
    let domain = field(
        domain,
        "model",
        FieldType::String,
        "task: the model the sub-agent should use (default this one)",
        &[],
    );
    let domain = field(
        domain,
        "system",
        FieldType::String,
        "task: guidance for the sub-agent (its role, constraints, the form of the answer)",
        &[],
    );
    let domain = field(
        domain,
        "interactive",
        FieldType::Boolean,
        "task: keep the sub-agent for follow-ups through `route` after it answers",
        &[],
    );
    let domain = field(
        domain,
        "message",
        FieldType::String,
        "task: the follow-up for an interactive sub-agent",
        &["task.route"],
    );
    let domain = field(
        domain,
        "text",
        FieldType::String,
        "task: where your work stands, in a line",
        &["task.set_status"],
    );
    let domain = field(
        domain,
        "agent_type",
        FieldType::String,
        "task: the role the sub-agent runs as, with only that role's tools (researcher, writer, \
         planner, critic, summarizer, coder, desktop-operator, browser-operator, or one the \
         person defined; `types` lists them); leave out for a worker with your tools except \
         memory and the conversation's own (session, message, comm, reminder, branch, route)",
        &[],
    );
    let domain = field(
        domain,
        "policy",
        FieldType::String,
        "task: a stricter approval level for the sub-agent (deny: nothing that needs approval \
         runs); it is never looser than yours",
        &[],
    )
    .one_of(&["deny", "allowlist", "full"]);
    field(
        domain,
        "id",
        FieldType::Integer,
        "task: a sub-agent task's id",
        &["task.status", "task.result", "task.cancel", "task.route"],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = async {
        let subagents = tool.subagents.as_ref().ok_or_else(|| {
            ToolResult::error(
                ErrorCode::ToolFailed,
                "sub-agents are not available here (no model runner is attached); do the work yourself",
            )
        })?;
        let session = session_of(ctx)?;
        match call.action() {
            "spawn" | "branch" => spawn(subagents, ctx, &call).await,
            "status" => Ok(json_result(&task_json(&subagents.get(session, id_of(&call)?).map_err(failed)?))),
            "result" => result(subagents, ctx, session, &call).await,
            "list" => {
                let limit = call.u64("limit").unwrap_or(20).clamp(1, 200) as u32;
                let tasks = subagents.list(session, limit).map_err(failed)?;
                let rows: Vec<Value> = tasks.iter().map(task_json).collect();
                Ok(json_result(&json!({"count": rows.len(), "tasks": rows})))
            }
            "types" => Ok(json_result(&types_json(subagents))),
            "route" => route(subagents, ctx, session, &call).await,
            "set_status" => {
                let task = subagents
                    .set_status(ctx, call.str("text").unwrap_or_default())
                    .map_err(failed)?;
                Ok(json_result(&json!({"id": task.id, "progress": task.progress,
                    "note": "reported; carry on with the task"})))
            }
            "cancel" => {
                let task = subagents
                    .cancel(session, id_of(&call)?)
                    .await
                    .map_err(failed)?;
                Ok(json_result(&task_json(&task)))
            }
            other => Err(invalid(format!("task has no action `{other}`"))),
        }
    }
    .await;
    result.unwrap_or_else(|e| e)
}

/// Whether a spawn or route waits (default yes) and the child's deadline: `timeout_seconds`,
/// and when waiting at most what the call's own deadline leaves, so the child's timeout, not the
/// registry's, ends it.
fn wait_and_timeout(subagents: &SubAgents, ctx: &ToolContext, call: &Call) -> (bool, Duration) {
    let wait = call.bool("wait").unwrap_or(true);
    let mut timeout = call
        .u64("timeout_seconds")
        .map(Duration::from_secs)
        .unwrap_or(subagents.config().default_timeout);
    if wait {
        let left = ctx
            .deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(DEADLINE_MARGIN);
        timeout = timeout.min(left.max(Duration::from_secs(1)));
    }
    (wait, timeout)
}

async fn spawn(subagents: &SubAgents, ctx: &ToolContext, call: &Call) -> Outcome {
    let branch = call.action() == "branch";
    let (wait, timeout) = wait_and_timeout(subagents, ctx, call);
    // A branch never blocks the conversation: its answer is delivered later.
    let wait = wait && !branch;
    let level = call
        .str("policy")
        .map(|p| p.parse::<Level>().map_err(invalid))
        .transpose()?;
    let spawned = subagents
        .spawn(
            ctx,
            SpawnRequest {
                prompt: call.str("prompt").unwrap_or_default().to_string(),
                system: call.str("system").map(String::from),
                model: call.str("model").map(String::from),
                timeout: Some(timeout),
                level,
                agent_type: call.str("agent_type").map(String::from),
                interactive: call.bool("interactive").unwrap_or(false),
                branch,
            },
        )
        .map_err(failed)?;
    let role = |mut body: Value| {
        if let Some(agent_type) = &spawned.agent_type {
            body["agent_type"] = json!(agent_type);
            body["tools"] = json!(spawned.scope.as_ref().map(|s| s.describe()));
            if !spawned.dropped.is_empty() {
                body["not_available"] = json!(spawned.dropped);
            }
        }
        body
    };
    let task = spawned.task.clone();
    if !wait {
        let mut body = role(task_json(&task));
        if branch {
            body["note"] = json!(
                "the branch works in parallel; its answer joins this conversation at your next \
                 turn (or ask for it with `result`)"
            );
            return Ok(json_result(&body));
        }
        body["note"] = json!(format!(
            "the sub-agent runs on; ask for it with {{\"resource\": \"task\", \"action\": \"result\", \"id\": {}, \"wait\": true}}",
            task.id
        ));
        return Ok(json_result(&body));
    }
    // The child's own deadline ends it; the wait needs no timer of its own beyond that.
    let session = session_of(ctx)?;
    let task = subagents
        .wait(
            session,
            task.id,
            timeout + Duration::from_secs(30),
            &ctx.cancel,
        )
        .await
        .map_err(failed)?;
    finished_with(&task, role(task_json(&task)))
}

async fn route(subagents: &SubAgents, ctx: &ToolContext, session: &str, call: &Call) -> Outcome {
    let id = id_of(call)?;
    let (wait, timeout) = wait_and_timeout(subagents, ctx, call);
    let task = subagents
        .route(ctx, id, call.str("message").unwrap_or_default(), timeout)
        .map_err(failed)?;
    if !wait {
        let mut body = task_json(&task);
        body["status"] = json!("running");
        body["note"] = json!("the follow-up is on its way; ask for the answer with `result`");
        return Ok(json_result(&body));
    }
    let task = subagents
        .wait(session, id, timeout + Duration::from_secs(30), &ctx.cancel)
        .await
        .map_err(failed)?;
    finished(&task)
}

async fn result(subagents: &SubAgents, ctx: &ToolContext, session: &str, call: &Call) -> Outcome {
    let id = id_of(call)?;
    let task = if call.bool("wait") == Some(true) {
        let timeout = call
            .u64("timeout_seconds")
            .map(Duration::from_secs)
            .unwrap_or(subagents.config().default_timeout);
        let left = ctx
            .deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(DEADLINE_MARGIN);
        subagents
            .wait(session, id, timeout.min(left), &ctx.cancel)
            .await
    } else {
        subagents.get(session, id)
    }
    .map_err(failed)?;
    if task.status == "running" {
        let mut body = task_json(&task);
        body["note"] = json!("still running; ask again later, or with `wait: true` to wait for it");
        return Ok(json_result(&body));
    }
    finished(&task)
}

/// The tool result for a task that ended: its answer, or an error saying how it ended.
fn finished(task: &SubAgentTask) -> Outcome {
    finished_with(task, task_json(task))
}

fn finished_with(task: &SubAgentTask, body: Value) -> Outcome {
    let body = body.to_string();
    match task.status.as_str() {
        "done" => Ok(ToolResult::text(body)),
        "running" => Err(ToolResult::error(
            ErrorCode::Cancelled,
            format!("stopped waiting for the sub-agent (the call was cancelled): {body}"),
        )),
        "timed_out" => Err(ToolResult::error(ErrorCode::Timeout, body)),
        "cancelled" | "interrupted" => Err(ToolResult::error(ErrorCode::Cancelled, body)),
        _ => Err(ToolResult::error(ErrorCode::ToolFailed, body)),
    }
}

/// The agent types (name, description, model, tools, packs not here) and the role files that
/// were refused.
fn types_json(subagents: &SubAgents) -> Value {
    let roles = subagents.roles();
    let types: Vec<Value> = roles
        .types()
        .map(|t| {
            json!({
                "name": t.manifest.name,
                "description": t.manifest.description,
                "model": t.model(),
                "packs": t.manifest.packs,
                "tools": t.scope.describe(),
                "not_available": t.unavailable_packs,
            })
        })
        .collect();
    json!({
        "count": types.len(),
        "types": types,
        "refused_files": roles.problems().iter()
            .filter(|p| !p.source.starts_with("built-in "))
            .collect::<Vec<_>>(),
    })
}

fn task_json(task: &SubAgentTask) -> Value {
    json!({
        "id": task.id,
        "status": task.status,
        "answer": task.result,
        "error": task.error,
        "session_id": task.session_id,
        "depth": task.depth,
        "prompt": task.prompt,
        "model": task.model,
        "agent_type": task.agent_type,
        "created_ms": task.created_ms,
        "finished_ms": task.finished_ms,
        "progress": task.progress,
    })
}

fn id_of(call: &Call) -> Result<i64, ToolResult> {
    call.input
        .get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| invalid(format!("task {} needs `id`", call.action())))
}

fn failed(message: String) -> ToolResult {
    ToolResult::error(ErrorCode::ToolFailed, message)
}
