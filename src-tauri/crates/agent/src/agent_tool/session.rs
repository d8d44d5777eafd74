//! The `session` resource: the stored conversations. `list`, `history` and `status` only read;
//! `clear` forgets a session's messages and tool calls but keeps the session itself (its id,
//! title, origin, its to-do list and sub-agent links), so it can go on afresh. Clearing cannot
//! be undone, so it goes through the approval policy, and a session in the middle of a turn
//! (the current one included) is refused: its runner is still writing to it.

use osprey_db::{SessionRow, StoredMessage, WorkStatus};
use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, invalid, json_result};
use crate::message::Part;

/// A message's text in `history` is cut to this many characters.
const HISTORY_TEXT: usize = 2000;

pub(super) const SUMMARY: &str = "session: the stored conversations (list them, read one's \
     history, its status, or clear its messages).";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let domain = domain.resource(
        "session",
        &[
            "sessions",
            "chat",
            "chats",
            "conversation",
            "conversations",
            "history",
        ],
        &[
            ("list", "Sessions, most recently active first", Free),
            (
                "history",
                "A session's latest messages (default this session)",
                Free,
            ),
            (
                "status",
                "A session's state, size, to-do progress and sub-agents (default this session)",
                Free,
            ),
            (
                "clear",
                "Forget a session's messages and tool calls (the session stays)",
                Required,
            ),
        ],
    );
    field(
        domain,
        "session_id",
        FieldType::String,
        "A session's id (message: where to post; session: which session, default this one)",
        &["session.clear"],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = match call.action() {
        "list" => list(tool, &call),
        "history" => history(tool, ctx, &call),
        "status" => status(tool, ctx, &call),
        "clear" => clear(tool, &call),
        other => Err(invalid(format!("session has no action `{other}`"))),
    };
    result.unwrap_or_else(|e| e)
}

fn list(tool: &AgentTool, call: &Call) -> Outcome {
    let limit = call.u64("limit").unwrap_or(20).clamp(1, 200) as u32;
    let rows = tool.sessions.list(Some(limit)).map_err(db_error)?;
    let rows: Vec<Value> = rows.iter().map(session_json).collect();
    Ok(json_result(&json!({"count": rows.len(), "sessions": rows})))
}

/// The session named in the call, else the call's own.
fn target<'a>(ctx: &'a ToolContext, call: &'a Call) -> Result<&'a str, ToolResult> {
    call.str("session_id")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .or(ctx.session_id.as_deref())
        .ok_or_else(|| invalid("name the session with `session_id` (this call has none)"))
}

fn existing(tool: &AgentTool, id: &str) -> Result<SessionRow, ToolResult> {
    tool.sessions.get(id).map_err(db_error)?.ok_or_else(|| {
        ToolResult::error(
            ErrorCode::ToolFailed,
            format!("there is no session `{id}`; session list shows them"),
        )
    })
}

fn history(tool: &AgentTool, ctx: &ToolContext, call: &Call) -> Outcome {
    let id = target(ctx, call)?;
    existing(tool, id)?;
    let limit = call.u64("limit").unwrap_or(20).clamp(1, 200) as usize;
    let offset = call.u64("offset").unwrap_or(0) as usize;
    let messages = tool.sessions.messages(id).map_err(db_error)?;
    let total = messages.len();
    // The latest `limit` messages, `offset` back from the end, oldest first.
    let end = total.saturating_sub(offset);
    let start = end.saturating_sub(limit);
    let rows: Vec<Value> = messages[start..end].iter().map(message_json).collect();
    Ok(json_result(
        &json!({"session_id": id, "total": total, "messages": rows}),
    ))
}

fn status(tool: &AgentTool, ctx: &ToolContext, call: &Call) -> Outcome {
    let id = target(ctx, call)?;
    let row = existing(tool, id)?;
    let mut body = session_json(&row);
    let work = tool.work.list(id, None).map_err(db_error)?;
    let done = work.iter().filter(|t| t.status == WorkStatus::Done).count();
    body["todo"] = json!(format!("{done} of {} done", work.len()));
    let calls = tool.sessions.tool_calls(id).map_err(db_error)?;
    body["tool_calls"] = json!(calls.len());
    if let Some(subagents) = &tool.subagents {
        let tasks = subagents
            .list(id, 200)
            .map_err(|message| ToolResult::error(ErrorCode::ToolFailed, message))?;
        let running = tasks.iter().filter(|t| t.status == "running").count();
        body["subagents"] = json!({"spawned": tasks.len(), "running": running});
    }
    Ok(json_result(&body))
}

fn clear(tool: &AgentTool, call: &Call) -> Outcome {
    let id = call
        .str("session_id")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("session clear needs `session_id`"))?;
    let row = existing(tool, id)?;
    if row.status == "running" {
        return Err(ToolResult::error(
            ErrorCode::ToolFailed,
            format!("session `{id}` is in the middle of a turn; clear it once it is idle"),
        ));
    }
    tool.sessions.clear(id).map_err(db_error)?;
    Ok(json_result(
        &json!({"cleared": id, "messages_removed": row.message_count}),
    ))
}

fn session_json(row: &SessionRow) -> Value {
    json!({
        "id": row.id,
        "title": row.title,
        "origin": row.origin,
        "status": row.status,
        "model": row.model,
        "messages": row.message_count,
        "created_ms": row.created_ms,
        "updated_ms": row.updated_ms,
    })
}

/// A stored message as the model reads it: its text (cut), the tools it called, the results.
fn message_json(message: &StoredMessage) -> Value {
    let parts: Vec<Part> = serde_json::from_value(message.content.clone()).unwrap_or_default();
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut results = 0;
    for part in &parts {
        match part {
            Part::Text { text: t } => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(t);
            }
            Part::ToolCall { name, .. } => calls.push(name.clone()),
            Part::ToolResult { .. } => results += 1,
            Part::Image { .. } | Part::Thinking { .. } => {}
        }
    }
    if text.chars().count() > HISTORY_TEXT {
        text = text.chars().take(HISTORY_TEXT).collect::<String>() + "…";
    }
    let mut v = json!({"seq": message.seq, "role": message.role, "text": text});
    if !calls.is_empty() {
        v["tool_calls"] = json!(calls);
    }
    if results > 0 {
        v["tool_results"] = json!(results);
    }
    v
}

fn db_error(error: osprey_db::Error) -> ToolResult {
    super::db_error("session", error)
}
