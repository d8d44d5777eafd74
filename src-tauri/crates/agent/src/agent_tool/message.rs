//! The `message` resource: post a message into another session, where the person sees it (a
//! reminder's turn telling the person's chat what it found, a sub-agent leaving a note). It is
//! stored as an assistant message of that session, so its next turn sees it as said, and
//! `session.message_append` subscribers (the UI) hear of it. A session in the middle of a turn is
//! refused, the current one included: a message slipped between a tool call and its result would
//! corrupt that conversation (for the current session the reply itself is the way to speak).

use osprey_tools::{ApprovalNeed, Call, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::json;

use super::{AgentTool, Outcome, field, invalid, json_result};
use crate::message::Message;
use crate::runner::SESSION_MESSAGE_APPEND;

/// The longest message accepted, in bytes.
const MAX_TEXT: usize = 32 * 1024;

pub(super) const SUMMARY: &str = "message: post a message into another session (the person sees \
     it there); to speak in this session, just reply.";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::None as Free;
    let domain = domain.resource(
        "message",
        &["messages", "msg", "notify", "post"],
        &[(
            "send",
            "Post `text` into the session `session_id` as a message from you",
            Free,
        )],
    );
    let domain = field(
        domain,
        "text",
        FieldType::String,
        "message: what to say",
        &["message.send"],
    );
    field(
        domain,
        "session_id",
        FieldType::String,
        "A session's id (message: where to post; session: which session, default this one)",
        &["message.send"],
    )
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = match call.action() {
        "send" => send(tool, ctx, &call).await,
        other => Err(invalid(format!("message has no action `{other}`"))),
    };
    result.unwrap_or_else(|e| e)
}

async fn send(tool: &AgentTool, ctx: &ToolContext, call: &Call) -> Outcome {
    let text = call.str("text").unwrap_or_default().trim();
    if text.is_empty() {
        return Err(invalid("`text` must not be empty"));
    }
    if text.len() > MAX_TEXT {
        return Err(invalid(format!(
            "`text` is {} bytes; the most is {MAX_TEXT}",
            text.len()
        )));
    }
    let target = call
        .str("session_id")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("message send needs `session_id`: the session to post into"))?;
    if ctx.session_id.as_deref() == Some(target) {
        return Err(invalid(
            "that is this session: to tell the person something here, say it in your reply",
        ));
    }
    let session = tool
        .sessions
        .get(target)
        .map_err(db_error)?
        .ok_or_else(|| {
            ToolResult::error(
                ErrorCode::ToolFailed,
                format!("there is no session `{target}`; session list shows them"),
            )
        })?;
    if session.status == "running" {
        return Err(ToolResult::error(
            ErrorCode::ToolFailed,
            format!(
                "session `{target}` is in the middle of a turn; post again once it is idle \
                 (session status shows it)"
            ),
        ));
    }
    let message = Message::assistant_text(text);
    let content = serde_json::to_value(&message.content).map_err(|e| {
        ToolResult::error(
            ErrorCode::ToolFailed,
            format!("cannot store the message: {e}"),
        )
    })?;
    let seq = tool
        .sessions
        .append_message(target, message.role.as_str(), &content, None)
        .map_err(db_error)?;
    if let Some(hooks) = tool.hooks_for(SESSION_MESSAGE_APPEND) {
        let payload = json!({
            "session_id": target,
            "seq": seq,
            "role": message.role,
            "content": content,
            "from_session_id": ctx.session_id,
        });
        hooks.do_action(SESSION_MESSAGE_APPEND, payload).await;
    }
    Ok(json_result(
        &json!({"sent": true, "session_id": target, "seq": seq}),
    ))
}

fn db_error(error: osprey_db::Error) -> ToolResult {
    super::db_error("session", error)
}
