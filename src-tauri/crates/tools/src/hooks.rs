//! Hook points the registry calls, behind a trait so the app platform can plug its dispatcher in
//! without this crate knowing about apps. With no subscribers a hook costs one check and no JSON.

use futures::future::BoxFuture;
use serde_json::Value;

/// The filter run on every call before the security layers; may rewrite the input or handle the
/// call itself (payload `{tool, resource, action, input, origin, session_id}`).
pub const TOOL_PRE_EXECUTE: &str = "tool.pre_execute";
/// The filter run on every result; may rewrite it (payload adds `result`).
pub const TOOL_POST_EXECUTE: &str = "tool.post_execute";
/// Filter: the outgoing model request (`{session_id, system, messages}`); may rewrite both.
pub const MESSAGE_PRE_SEND: &str = "message.pre_send";
/// Filter: the model's finished reply (`{session_id, message}`); may rewrite it.
pub const MESSAGE_POST_RECEIVE: &str = "message.post_receive";
/// Action: a piece of the reply's text as it streams (`{session_id, step, text}`), in order.
pub const RESPONSE_STREAM: &str = "response.stream";
/// Action: a turn opened a session that did not exist (`{session_id, origin}`).
pub const SESSION_START: &str = "session.start";
/// Action: a message was persisted (`{session_id, seq, role, content}`).
pub const SESSION_MESSAGE_APPEND: &str = "session.message_append";
/// Filter: the system prompt's sections (`{session_id, sections: [{name, text}]}`).
pub const PROMPT_SYSTEM_SECTIONS: &str = "prompt.system_sections";
/// Filter: steering before each model call (`{session_id, step, steering: []}`).
pub const STEERING_GENERATE: &str = "steering.generate";
/// Filter: a memory about to be stored by the `agent` tool (may rewrite or handle it).
pub const MEMORY_PRE_STORE: &str = "memory.pre_store";
/// Filter: a memory query, from the `agent` tool or the prompt (may rewrite or answer it).
pub const MEMORY_PRE_RECALL: &str = "memory.pre_recall";

/// Every hook point Osprey fires, and so every name an app may subscribe to: the list is the
/// code, not a wish list (a test in osprey-agent checks the runner fires each agent hook).
pub const KNOWN_HOOKS: &[&str] = &[
    TOOL_PRE_EXECUTE,
    TOOL_POST_EXECUTE,
    MESSAGE_PRE_SEND,
    MESSAGE_POST_RECEIVE,
    RESPONSE_STREAM,
    SESSION_START,
    SESSION_MESSAGE_APPEND,
    PROMPT_SYSTEM_SECTIONS,
    STEERING_GENERATE,
    MEMORY_PRE_STORE,
    MEMORY_PRE_RECALL,
];

/// Names earlier versions of the format listed, with the hook that does that job now, so a
/// manifest using one is refused with the name to use.
pub const RENAMED_HOOKS: &[(&str, &str)] = &[
    ("prompt.system", PROMPT_SYSTEM_SECTIONS),
    ("model.pre_request", MESSAGE_PRE_SEND),
    ("model.post_response", MESSAGE_POST_RECEIVE),
];

/// Why `hook` cannot be subscribed to, or `None` when it is a known hook.
pub fn unknown_hook(hook: &str) -> Option<String> {
    if KNOWN_HOOKS.contains(&hook) {
        return None;
    }
    Some(match RENAMED_HOOKS.iter().find(|(old, _)| *old == hook) {
        Some((_, now)) => format!("unknown hook `{hook}`: use `{now}`"),
        None => format!("unknown hook `{hook}` (known: {})", KNOWN_HOOKS.join(", ")),
    })
}

/// What a filter chain returned.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterOutcome {
    /// The payload after every filter ran.
    pub payload: Value,
    /// A filter handled the call: the built-in step is skipped. For `tool.pre_execute` the
    /// payload's `result` holds the tool result.
    pub handled: bool,
}

/// Dispatches filters and actions to subscribers (the app platform's hook apps).
pub trait HookDispatcher: Send + Sync {
    /// Must be cheap (no allocation, no JSON): the registry checks it on every call.
    fn has_subscribers(&self, hook: &str) -> bool;
    fn apply_filter<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome>;
    fn do_action<'a>(&'a self, hook: &'a str, payload: Value) -> BoxFuture<'a, ()>;
}

/// The dispatcher with no subscribers.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl HookDispatcher for NoHooks {
    fn has_subscribers(&self, _hook: &str) -> bool {
        false
    }
    fn apply_filter<'a>(&'a self, _hook: &'a str, payload: Value) -> BoxFuture<'a, FilterOutcome> {
        Box::pin(async move {
            FilterOutcome {
                payload,
                handled: false,
            }
        })
    }
    fn do_action<'a>(&'a self, _hook: &'a str, _payload: Value) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}
