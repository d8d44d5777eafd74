//! The `message` resource. `send` with `session_id` posts into another session, where the
//! person sees it (a reminder's turn telling the person's chat what it found, a sub-agent
//! leaving a note). It is stored as an assistant message of that session, so its next turn sees
//! it as said, and `session.message_append` subscribers (the UI) hear of it. A session in the
//! middle of a turn is refused, the current one included: a message slipped between a tool call
//! and its result would corrupt that conversation (for the current session the reply itself is
//! the way to speak).
//!
//! `send` with `channel` goes out of Osprey through a comm or channel app ([`crate::outbox`]),
//! to `to`, optionally in a thread and answering a message. That speaks for the person to
//! someone else, so it is asked under the default policy (the table calls `send` free for
//! sessions; the call's facts raise it). `list` shows the channels the agent can reach.

use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, FieldType, ToolContext};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::{Value, json};

use super::{AgentTool, Outcome, field, invalid, json_result};
use crate::message::Message;
use crate::outbox::{NOT_AVAILABLE, OutboundAction, OutboundMessage};
use crate::runner::SESSION_MESSAGE_APPEND;

/// Buttons or quick replies accepted with one message.
const MAX_ACTIONS: usize = 16;

/// The longest message accepted, in bytes.
const MAX_TEXT: usize = 32 * 1024;

pub(super) const SUMMARY: &str = "message: post a message into another session (the person sees \
     it there), or send one out through a connected channel (a chat or mail bridge, a channel \
     app: `channel`, `to`, optional `thread_id`, `reply_to`; asked first); `list` shows the \
     channels; to speak in this session, just reply.";

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::None as Free;
    let domain = domain.resource(
        "message",
        &["messages", "msg", "notify", "post", "channels"],
        &[
            (
                "send",
                "Post `text` into the session `session_id` as a message from you, or send it out \
                 through the connected channel `channel` to `to` (asked first)",
                Free,
            ),
            (
                "list",
                "The connected channels: name, app, kind, whether it can send and receive, status",
                Free,
            ),
        ],
    );
    let domain = field(
        domain,
        "text",
        FieldType::String,
        "message: what to say",
        &["message.send"],
    );
    let domain = field(
        domain,
        "session_id",
        FieldType::String,
        "A session's id (message: where to post; session: which session, default this one)",
        &[],
    );
    let domain = field(
        domain,
        "channel",
        FieldType::String,
        "message: a connected channel to send through instead of a session: a comm bridge's app id (`bridge`) or `<app>/<channel>` (`bridge/feed`); message list shows them",
        &[],
    );
    let domain = field(
        domain,
        "to",
        FieldType::String,
        "message: the recipient in the channel's terms (an address, a user, a room); comm: the other agent's id",
        &[],
    );
    let domain = field(
        domain,
        "thread_id",
        FieldType::String,
        "message: the conversation or thread to post in",
        &[],
    );
    let domain = field(
        domain,
        "reply_to",
        FieldType::String,
        "message: the id of the message this answers",
        &[],
    );
    field(
        domain,
        "actions",
        FieldType::Array(Box::new(FieldType::Object)),
        "message: buttons or quick replies to offer, each {id, label} (at most 16)",
        &[],
    )
}

/// A send to a channel speaks for the person to someone else: asked, whatever the table says.
pub(super) fn channel_facts(facts: CallFacts, call: &Call, channel: &str) -> CallFacts {
    let to = call
        .str("to")
        .filter(|t| !t.trim().is_empty())
        .map(|t| format!(" to {t}"))
        .unwrap_or_default();
    let text: String = call
        .str("text")
        .unwrap_or_default()
        .chars()
        .take(80)
        .collect();
    CallFacts {
        summary: format!("message send via {channel}{to}: \"{text}\""),
        app: Some(channel.split('/').next().unwrap_or(channel).to_string()),
        needs_approval: Some("it sends a message out of Osprey on the person's behalf".into()),
        ..facts
    }
}

pub(super) async fn run(tool: &AgentTool, ctx: &ToolContext, call: Call) -> ToolResult {
    let result = match call.action() {
        "send" if nonempty(&call, "channel").is_some() => send_out(tool, &call).await,
        "send" => send(tool, ctx, &call).await,
        "list" => list(tool).await,
        other => Err(invalid(format!("message has no action `{other}`"))),
    };
    result.unwrap_or_else(|e| e)
}

fn nonempty<'a>(call: &'a Call, name: &str) -> Option<&'a str> {
    call.str(name).map(str::trim).filter(|s| !s.is_empty())
}

/// `text`, trimmed, not empty and within [`MAX_TEXT`].
fn text_of(call: &Call) -> Result<&str, ToolResult> {
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
    Ok(text)
}

async fn list(tool: &AgentTool) -> Outcome {
    let outbox = tool
        .outbox
        .get()
        .ok_or_else(|| ToolResult::error(ErrorCode::ToolFailed, NOT_AVAILABLE))?;
    let channels = outbox.channels().await;
    Ok(json_result(&json!({
        "channels": channels,
        "naming": "a comm bridge is named by its app id; a channel app's channel by <app>/<channel>",
    })))
}

async fn send_out(tool: &AgentTool, call: &Call) -> Outcome {
    let text = text_of(call)?;
    if nonempty(call, "session_id").is_some() {
        return Err(invalid(
            "give `channel` (send out) or `session_id` (post into a session), not both",
        ));
    }
    let outbox = tool
        .outbox
        .get()
        .ok_or_else(|| ToolResult::error(ErrorCode::ToolFailed, NOT_AVAILABLE))?;
    let actions = match call.input.get("actions") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => serde_json::from_value::<Vec<OutboundAction>>(value.clone())
            .map_err(|e| invalid(format!("`actions` must be a list of {{id, label}}: {e}")))?,
    };
    if actions.len() > MAX_ACTIONS {
        return Err(invalid(format!("at most {MAX_ACTIONS} actions")));
    }
    let message = OutboundMessage {
        channel: nonempty(call, "channel").unwrap_or_default().to_string(),
        to: nonempty(call, "to").unwrap_or_default().to_string(),
        text: text.to_string(),
        reply_to: nonempty(call, "reply_to").unwrap_or_default().to_string(),
        thread_id: nonempty(call, "thread_id").unwrap_or_default().to_string(),
        actions,
    };
    let sent = outbox
        .send(message)
        .await
        .map_err(|why| ToolResult::error(ErrorCode::ToolFailed, why))?;
    Ok(json_result(
        &json!({"sent": true, "channel": sent.channel, "id": sent.id}),
    ))
}

async fn send(tool: &AgentTool, ctx: &ToolContext, call: &Call) -> Outcome {
    let text = text_of(call)?;
    let target = nonempty(call, "session_id").ok_or_else(|| {
        invalid(
            "message send needs `session_id` (the session to post into) or `channel` (a \
             connected channel to send through; message list shows them)",
        )
    })?;
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
