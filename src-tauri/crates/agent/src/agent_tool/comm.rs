//! The `comm` resource: messaging other agents over comm apps that carry topics (see
//! [`crate::outbox`] and the comm protocol's lifecycle). `send` reaches another agent by its id
//! with a topic and a message type; `subscribe`/`unsubscribe` choose the topics whose messages
//! reach this agent (they arrive as comm turns, like a person's message through the bridge);
//! `topics` lists what the bridge offers; `status` shows the connection, the registered agent id
//! and the subscriptions.
//!
//! Approvals: `send` speaks for the person to someone outside Osprey, and `subscribe` lets
//! outside messages start turns here, so both go through the approval policy. `unsubscribe`
//! only narrows what reaches the agent, and `topics` and `status` only read, so they are free.

use osprey_tools::{ApprovalNeed, Call, CallFacts, Domain, FieldType};
use osprey_types::{ErrorCode, ToolResult};
use serde_json::Value;

use super::{AgentTool, Outcome, field, invalid, json_result};
use crate::outbox::{CommOperation, NOT_AVAILABLE};

pub(super) const SUMMARY: &str = "comm: messages to and from other agents over a comm app with \
     topics: send (to an agent id, with topic and message_type; asked first), subscribe, \
     unsubscribe, topics, status.";

/// The longest topic or message type accepted, in bytes.
const MAX_NAME: usize = 256;
/// The longest text, in bytes.
const MAX_TEXT: usize = 32 * 1024;

pub(super) fn table(domain: Domain) -> Domain {
    use ApprovalNeed::{None as Free, Required};
    let domain = domain.resource(
        "comm",
        &["agents", "a2a", "topic", "topics", "pubsub"],
        &[
            (
                "send",
                "Send `text` (and an optional JSON `payload`) to the agent `to` on `topic`, with a `message_type`",
                Required,
            ),
            (
                "subscribe",
                "Receive the messages published on `topic` (they arrive as comm messages)",
                Required,
            ),
            ("unsubscribe", "Stop receiving `topic`", Free),
            ("topics", "The topics the comm app offers", Free),
            (
                "status",
                "Each comm app's connection, the registered agent id and the subscriptions",
                Free,
            ),
        ],
    );
    let domain = field(
        domain,
        "topic",
        FieldType::String,
        "comm: the topic",
        &["comm.send", "comm.subscribe", "comm.unsubscribe"],
    );
    // Declared by `message` (its recipient); required here, so a bare `send` with a session or
    // a channel is still inferred to be a message.
    let domain = field(
        domain,
        "to",
        FieldType::String,
        "comm: the other agent's id",
        &["comm.send"],
    );
    let domain = field(
        domain,
        "message_type",
        FieldType::String,
        "comm: what kind of message (`request`, `response`, `event`, ...; default `message`)",
        &[],
    );
    let domain = field(
        domain,
        "payload",
        FieldType::Object,
        "comm: structured data sent with the text",
        &[],
    );
    field(
        domain,
        "app",
        FieldType::String,
        "comm: which comm app to use when more than one runs (comm status lists them)",
        &[],
    )
}

/// A one-line summary a person can judge.
pub(super) fn facts(facts: CallFacts, call: &Call) -> CallFacts {
    let topic = call.str("topic").unwrap_or_default();
    let summary = match call.action() {
        "send" => format!(
            "comm send to agent {} on topic {topic}: \"{}\"",
            call.str("to").unwrap_or("?"),
            call.str("text")
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect::<String>()
        ),
        "subscribe" | "unsubscribe" => format!("comm {} {topic}", call.action()),
        _ => return facts,
    };
    CallFacts {
        summary,
        app: call.str("app").map(str::to_string),
        ..facts
    }
}

fn bounded<'a>(call: &'a Call, name: &str, max: usize) -> Result<Option<&'a str>, ToolResult> {
    match call.str(name).map(str::trim).filter(|s| !s.is_empty()) {
        Some(value) if value.len() > max => Err(invalid(format!(
            "`{name}` is {} bytes; the most is {max}",
            value.len()
        ))),
        other => Ok(other),
    }
}

fn required<'a>(call: &'a Call, name: &str, max: usize) -> Result<&'a str, ToolResult> {
    bounded(call, name, max)?
        .ok_or_else(|| invalid(format!("comm {} needs `{name}`", call.action())))
}

fn operation(call: &Call) -> Result<CommOperation, ToolResult> {
    let app = bounded(call, "app", MAX_NAME)?.map(str::to_string);
    Ok(match call.action() {
        "send" => {
            let payload = match call.input.get("payload") {
                None | Some(Value::Null) => None,
                Some(value @ Value::Object(_)) => Some(value.clone()),
                Some(_) => return Err(invalid("`payload` must be a JSON object")),
            };
            let text = bounded(call, "text", MAX_TEXT)?.unwrap_or_default();
            if text.is_empty() && payload.is_none() {
                return Err(invalid("comm send needs `text` or `payload`"));
            }
            CommOperation::Send {
                app,
                to: required(call, "to", MAX_NAME)?.to_string(),
                topic: required(call, "topic", MAX_NAME)?.to_string(),
                message_type: bounded(call, "message_type", MAX_NAME)?
                    .unwrap_or("message")
                    .to_string(),
                text: text.to_string(),
                payload,
            }
        }
        "subscribe" => CommOperation::Subscribe {
            app,
            topic: required(call, "topic", MAX_NAME)?.to_string(),
        },
        "unsubscribe" => CommOperation::Unsubscribe {
            app,
            topic: required(call, "topic", MAX_NAME)?.to_string(),
        },
        "topics" => CommOperation::Topics { app },
        "status" => CommOperation::Status { app },
        other => return Err(invalid(format!("comm has no action `{other}`"))),
    })
}

pub(super) async fn run(tool: &AgentTool, call: Call) -> ToolResult {
    let result: Outcome = async {
        let operation = operation(&call)?;
        let outbox = tool
            .outbox
            .get()
            .ok_or_else(|| ToolResult::error(ErrorCode::ToolFailed, NOT_AVAILABLE))?;
        let answer = outbox
            .comm(operation)
            .await
            .map_err(|why| ToolResult::error(ErrorCode::ToolFailed, why))?;
        Ok(json_result(&answer))
    }
    .await;
    result.unwrap_or_else(|e| e)
}
